// fused_prefetch.wgsl — a candidate for `qmm bench --candidate`: fused.wgsl with the next k
// step's W piece and X values loaded into registers while the current step's rank-1 updates
// run (one decode of 8 and eight X values per thread per step: the geometry must satisfy
// TILE_K = 2 WG_N = 2 WG_M, e.g. 16 x 16 x 32; const_assert refuses others), the same sums in
// the same order.
//
// fused.wgsl — the register-tile GEMM: Y[t][r] = sum over e of X[t][e] * W[r][e].
//
// A workgroup of WG_M x WG_N threads computes a (4 WG_M) x (4 WG_N) tile of outputs: rows
// 4 WG_M wid.x .. of W (output columns), tokens 4 WG_N wid.y .. of X. Thread (tx, ty) holds
// the 4 x 4 outputs rows 4 tx .. 4 tx + 3, tokens 4 ty .. 4 ty + 3 in four named vec4
// accumulators (acc_j: the four rows for token j; an indexed accumulator array would spill).
// Per k-step of TILE_K: the W tile (4 WG_M rows x TILE_K) is dequantized into workgroup
// memory once, 8 elements per decode (qmm_dec8 of the type's snippet), and the X tile
// (4 WG_N tokens x TILE_K) loaded beside it, both k-major as vec4 (4 rows, 4 tokens); then
// TILE_K rank-1 updates, unrolled by 4. Accumulation in f32, in increasing k for every
// output (F32 class; the same order for every n: batch-invariant). X is read through x_at
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

const_assert BM * CHUNKS == THREADS;
const_assert BN * TILE_K == 8u * THREADS;

// X element (token tok0 + c / TILE_K, k0 + c % TILE_K), 0 outside.
fn x_piece(tok0: u32, k0: u32, c: u32) -> f32 {
    let t = tok0 + c / TILE_K;
    let e = k0 + c % TILE_K;
    if (t < P.n && e < P.k) {
        return x_at(P.x_off + t * P.ldx + e, S[t]);
    }
    return 0.0;
}

fn x_store(c: u32, v: f32) {
    let t = c / TILE_K;
    xs[(c % TILE_K) * WG_N + (t >> 2u)][t & 3u] = v;
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
    let wr = tid / CHUNKS;
    let wkk = (tid % CHUNKS) * 8u;
    let wbase = wkk * WG_M + (wr >> 2u);
    let wlane = wr & 3u;
    var w = load_w8(row0 + wr, wkk);
    var x0 = x_piece(tok0, 0u, tid);
    var x1 = x_piece(tok0, 0u, tid + THREADS);
    var x2 = x_piece(tok0, 0u, tid + 2u * THREADS);
    var x3 = x_piece(tok0, 0u, tid + 3u * THREADS);
    var x4 = x_piece(tok0, 0u, tid + 4u * THREADS);
    var x5 = x_piece(tok0, 0u, tid + 5u * THREADS);
    var x6 = x_piece(tok0, 0u, tid + 6u * THREADS);
    var x7 = x_piece(tok0, 0u, tid + 7u * THREADS);
    for (var k0 = 0u; k0 < P.k; k0 += TILE_K) {
        ws[wbase][wlane] = w.lo.x;
        ws[wbase + WG_M][wlane] = w.lo.y;
        ws[wbase + 2u * WG_M][wlane] = w.lo.z;
        ws[wbase + 3u * WG_M][wlane] = w.lo.w;
        ws[wbase + 4u * WG_M][wlane] = w.hi.x;
        ws[wbase + 5u * WG_M][wlane] = w.hi.y;
        ws[wbase + 6u * WG_M][wlane] = w.hi.z;
        ws[wbase + 7u * WG_M][wlane] = w.hi.w;
        x_store(tid, x0);
        x_store(tid + THREADS, x1);
        x_store(tid + 2u * THREADS, x2);
        x_store(tid + 3u * THREADS, x3);
        x_store(tid + 4u * THREADS, x4);
        x_store(tid + 5u * THREADS, x5);
        x_store(tid + 6u * THREADS, x6);
        x_store(tid + 7u * THREADS, x7);
        workgroupBarrier();
        let kn = k0 + TILE_K; // the next step's pieces (zeros past k), in flight during the updates
        w = load_w8(row0 + wr, kn + wkk);
        x0 = x_piece(tok0, kn, tid);
        x1 = x_piece(tok0, kn, tid + THREADS);
        x2 = x_piece(tok0, kn, tid + 2u * THREADS);
        x3 = x_piece(tok0, kn, tid + 3u * THREADS);
        x4 = x_piece(tok0, kn, tid + 4u * THREADS);
        x5 = x_piece(tok0, kn, tid + 5u * THREADS);
        x6 = x_piece(tok0, kn, tid + 6u * THREADS);
        x7 = x_piece(tok0, kn, tid + 7u * THREADS);
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
