// fused.wgsl — the register-tile GEMM: Y[t][r] = sum over e of X[t][e] * W[r][e].
//
// A workgroup of WG_M x WG_N threads computes a (4 WG_M) x (4 WG_N) tile of outputs: rows
// 4 WG_M wid.x .. of W (output columns), tokens 4 WG_N wid.y .. of X. Thread (tx, ty) holds
// the 4 x 4 outputs rows 4 tx .. 4 tx + 3, tokens 4 ty .. 4 ty + 3 in four named vec4
// accumulators (acc_j: the four rows for token j; an indexed accumulator array would spill).
// Per k-step of TILE_K: the W tile (4 WG_M rows x TILE_K) is dequantized into workgroup
// memory once, 8 elements per decode (qmm_dec8 of the type's snippet), and the X tile
// (4 WG_N tokens x TILE_K) loaded beside it, 8 consecutive elements of one token per thread
// with all 8 loads and the row's shift issued before any is used (x_tile8: one element per
// thread and loop trip, each load waiting on its shift's, made every k-step latency-bound:
// 1.4-1.7x slower on the H200, bench/results/h200-webgpu-xload.md), both k-major as vec4
// (4 rows, 4 tokens); then
// TILE_K rank-1 updates, unrolled by 4. Accumulation in f32, in increasing k for every
// output (F32 class; the same order for every n: batch-invariant). X is read through x_bits8
// and Y written through y_store (common.wgsl: the power-of-two scaling of tiny rows).
//
// Constants WG_M, WG_N, TILE_K come from the host (qmm_wgpu_source) ahead of the shared
// snippets (common.wgsl: bindings, P, load_w8).

const BM: u32 = 4u * WG_M;     // rows of W per workgroup
const BN: u32 = 4u * WG_N;     // tokens per workgroup
const THREADS: u32 = WG_M * WG_N;
const CHUNKS: u32 = TILE_K / 8u; // decodes of 8 per W row and k-step

var<workgroup> ws: array<vec4<f32>, TILE_K * WG_M>; // ws[kk * WG_M + r4]: rows 4 r4 .. 4 r4 + 3
var<workgroup> xs: array<vec4<f32>, TILE_K * WG_N>; // xs[kk * WG_N + t4]: tokens 4 t4 .. 4 t4 + 3

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

// Elements e .. e+7 of X row tt (token t of the tile) into xs at kk .. kk+7: zero beyond the
// dispatch's tokens or beyond k; through the row's shift (common.wgsl) when it has one.
fn x_tile8(t: u32, kk: u32, tt: u32, e: u32) {
    var lo = vec4<f32>(0.0);
    var hi = vec4<f32>(0.0);
    if (tt < P.n && e < P.k) {
        let b = x_bits8(P.x_off + tt * P.ldx + e, e);
        let s = S[tt];
        lo = x_f32x4(b.lo, s);
        hi = x_f32x4(b.hi, s);
    }
    let q = t >> 2u;
    let lane = t & 3u;
    xs[kk * WG_N + q][lane] = lo.x;
    xs[(kk + 1u) * WG_N + q][lane] = lo.y;
    xs[(kk + 2u) * WG_N + q][lane] = lo.z;
    xs[(kk + 3u) * WG_N + q][lane] = lo.w;
    xs[(kk + 4u) * WG_N + q][lane] = hi.x;
    xs[(kk + 5u) * WG_N + q][lane] = hi.y;
    xs[(kk + 6u) * WG_N + q][lane] = hi.z;
    xs[(kk + 7u) * WG_N + q][lane] = hi.w;
}

@compute @workgroup_size(WG_M, WG_N, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * WG_M + tx;
    let row0 = wid.x * BM;
    let tok0 = wid.y * BN;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < P.k; k0 += TILE_K) {
        // W tile: consecutive threads decode consecutive 8-element pieces of one row
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
        // X tile: four consecutive threads read one token's TILE_K elements, 8 each: every
        // global load of the step is issued before any value is used
        for (var c = tid; c < BN * CHUNKS; c += THREADS) {
            let t = c / CHUNKS;
            let kk = (c % CHUNKS) * 8u;
            x_tile8(t, kk, tok0 + t, k0 + kk);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TILE_K; kk += 4u) {
            let a0 = ws[kk * WG_M + tx];
            let b0 = xs[kk * WG_N + ty];
            acc0 += a0 * b0.x;
            acc1 += a0 * b0.y;
            acc2 += a0 * b0.z;
            acc3 += a0 * b0.w;
            let a1 = ws[(kk + 1u) * WG_M + tx];
            let b1 = xs[(kk + 1u) * WG_N + ty];
            acc0 += a1 * b1.x;
            acc1 += a1 * b1.y;
            acc2 += a1 * b1.z;
            acc3 += a1 * b1.w;
            let a2 = ws[(kk + 2u) * WG_M + tx];
            let b2 = xs[(kk + 2u) * WG_N + ty];
            acc0 += a2 * b2.x;
            acc1 += a2 * b2.y;
            acc2 += a2 * b2.z;
            acc3 += a2 * b2.w;
            let a3 = ws[(kk + 3u) * WG_M + tx];
            let b3 = xs[(kk + 3u) * WG_N + ty];
            acc0 += a3 * b3.x;
            acc1 += a3 * b3.y;
            acc2 += a3 * b3.z;
            acc3 += a3 * b3.w;
        }
        workgroupBarrier();
    }
    let r0 = row0 + 4u * tx;
    let t0 = tok0 + 4u * ty;
    store_row(t0, r0, acc0);
    store_row(t0 + 1u, r0, acc1);
    store_row(t0 + 2u, r0, acc2);
    store_row(t0 + 3u, r0, acc3);
}
