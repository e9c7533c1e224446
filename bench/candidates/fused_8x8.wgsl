// fused_8x8.wgsl — a candidate for `qmm bench --candidate`: the register-tile GEMM of
// fused.wgsl with 8 x 8 outputs per thread instead of 4 x 4, on the same workgroup tile
// (4 WG_M rows x 4 WG_N tokens, so it runs on the production dispatch) with a quarter of the
// threads: (WG_M / 2) x (WG_N / 2). Thread (tx, ty) holds rows 4 tx .. 4 tx + 3 and
// 4 (tx + WG_M / 2) .. + 3, tokens 4 ty .. + 3 and 4 (ty + WG_N / 2) .. + 3, in 16 named vec4
// accumulators (aAB_j: row block A, token block B, token j of it). Per k step 4 vec4 loads
// from workgroup memory feed 64 multiply-adds (fused.wgsl: 2 loads, 16). Every output is the
// same f32 sum in increasing k as in fused.wgsl, so the outputs are meant to be bit-identical.

const BM: u32 = 4u * WG_M;
const BN: u32 = 4u * WG_N;
const HM: u32 = WG_M / 2u;
const HN: u32 = WG_N / 2u;
const THREADS: u32 = HM * HN;
const CHUNKS: u32 = TILE_K / 8u;

var<workgroup> ws: array<vec4<f32>, TILE_K * WG_M>;
var<workgroup> xs: array<vec4<f32>, TILE_K * WG_N>;

fn store_row(t: u32, r0: u32, acc: vec4<f32>) {
    if (t >= P.n) {
        return;
    }
    let y = P.y_off + t * P.ldy + r0;
    if (r0 < P.rows) { y_store(y, t, r0, acc.x); }
    if (r0 + 1u < P.rows) { y_store(y + 1u, t, r0 + 1u, acc.y); }
    if (r0 + 2u < P.rows) { y_store(y + 2u, t, r0 + 2u, acc.z); }
    if (r0 + 3u < P.rows) { y_store(y + 3u, t, r0 + 3u, acc.w); }
}

@compute @workgroup_size(HM, HN, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * HM + tx;
    let row0 = wid.x * BM;
    let tok0 = wid.y * BN;
    var a00_0 = vec4<f32>(0.0); var a00_1 = vec4<f32>(0.0); var a00_2 = vec4<f32>(0.0); var a00_3 = vec4<f32>(0.0);
    var a01_0 = vec4<f32>(0.0); var a01_1 = vec4<f32>(0.0); var a01_2 = vec4<f32>(0.0); var a01_3 = vec4<f32>(0.0);
    var a10_0 = vec4<f32>(0.0); var a10_1 = vec4<f32>(0.0); var a10_2 = vec4<f32>(0.0); var a10_3 = vec4<f32>(0.0);
    var a11_0 = vec4<f32>(0.0); var a11_1 = vec4<f32>(0.0); var a11_2 = vec4<f32>(0.0); var a11_3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < P.k; k0 += TILE_K) {
        for (var c = tid; c < BM * CHUNKS; c += THREADS) {
            let r = c / CHUNKS;
            let kk = (c % CHUNKS) * 8u;
            let w = load_w8(row0 + r, k0 + kk);
            let base = kk * WG_M + (r >> 2u);
            let lane = r & 3u;
            ws[base][lane] = w.lo.x;
            ws[base + WG_M][lane] = w.lo.y;
            ws[base + 2u * WG_M][lane] = w.lo.z;
            ws[base + 3u * WG_M][lane] = w.lo.w;
            ws[base + 4u * WG_M][lane] = w.hi.x;
            ws[base + 5u * WG_M][lane] = w.hi.y;
            ws[base + 6u * WG_M][lane] = w.hi.z;
            ws[base + 7u * WG_M][lane] = w.hi.w;
        }
        for (var c = tid; c < BN * TILE_K; c += THREADS) {
            let t = c / TILE_K;
            let kk = c % TILE_K;
            let e = k0 + kk;
            var v = 0.0;
            if (tok0 + t < P.n && e < P.k) {
                v = x_at(P.x_off + (tok0 + t) * P.ldx + e, S[tok0 + t]);
            }
            xs[kk * WG_N + (t >> 2u)][t & 3u] = v;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TILE_K; kk += 1u) {
            let w0 = ws[kk * WG_M + tx];
            let w1 = ws[kk * WG_M + tx + HM];
            let x0 = xs[kk * WG_N + ty];
            let x1 = xs[kk * WG_N + ty + HN];
            a00_0 += w0 * x0.x; a00_1 += w0 * x0.y; a00_2 += w0 * x0.z; a00_3 += w0 * x0.w;
            a01_0 += w0 * x1.x; a01_1 += w0 * x1.y; a01_2 += w0 * x1.z; a01_3 += w0 * x1.w;
            a10_0 += w1 * x0.x; a10_1 += w1 * x0.y; a10_2 += w1 * x0.z; a10_3 += w1 * x0.w;
            a11_0 += w1 * x1.x; a11_1 += w1 * x1.y; a11_2 += w1 * x1.z; a11_3 += w1 * x1.w;
        }
        workgroupBarrier();
    }
    let r0 = row0 + 4u * tx;
    let r1 = row0 + 4u * (tx + HM);
    let t0 = tok0 + 4u * ty;
    let t1 = tok0 + 4u * (ty + HN);
    store_row(t0, r0, a00_0); store_row(t0 + 1u, r0, a00_1); store_row(t0 + 2u, r0, a00_2); store_row(t0 + 3u, r0, a00_3);
    store_row(t1, r0, a01_0); store_row(t1 + 1u, r0, a01_1); store_row(t1 + 2u, r0, a01_2); store_row(t1 + 3u, r0, a01_3);
    store_row(t0, r1, a10_0); store_row(t0 + 1u, r1, a10_1); store_row(t0 + 2u, r1, a10_2); store_row(t0 + 3u, r1, a10_3);
    store_row(t1, r1, a11_0); store_row(t1 + 1u, r1, a11_1); store_row(t1 + 2u, r1, a11_2); store_row(t1 + 3u, r1, a11_3);
}
