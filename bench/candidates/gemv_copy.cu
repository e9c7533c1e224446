/*
 * gemv_copy.cu — a `qmm bench --candidate` kernel that computes exactly what the production
 * CUDA gemv kernel (src/cuda/gemv.cu) computes, in the same order, so it must pass
 * bit-identical. It is the starting point for a new gemv candidate and the tool's own check
 * (tests/test_candidate_cli.py): if production's order of operations changes, this file
 * must follow it (the order is documented at the top of src/cuda/gemv.cu).
 *
 * The order (production's, as of the quad layout): one warp per row of W; lane l takes the
 * quads q = l, l + 32, ... (elements 4q..4q+3, each decoded by qmm_cuda_dequant<T>, the
 * production decoder; elements >= k of a float type's last quad are 0) in increasing q and,
 * per token, accumulates fmaf(w, x, acc) in element order; then the warp's 32 partials are
 * summed by the butterfly __shfl_xor_sync 16, 8, 4, 2, 1 and lane t stores token t.
 * Tokens: groups of NT = 1, 2, 4 or 8 (the smallest >= n, at most 8), blockIdx.y strides over
 * the groups; slots past n repeat the last token (computed, not stored).
 *
 * Geometry: one warp per row, so rows_per_block = threads_per_block / 32.
 */
#include "cuda/dequant.cuh"

extern "C" __device__ const int qmm_candidate_geometry[][2] = {{8, 256}, {4, 128}, {2, 64}, {1, 32}};

template <int T, int NT>
__device__ __forceinline__ void gemv_rows(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m,
                                          int64_t k, int64_t n, const float *__restrict__ x,
                                          int64_t ldx, float *__restrict__ y, int64_t ldy) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= m) return;
    const uint8_t *row = w + r * row_bytes;
    const int64_t quads = (k + 3) / 4;
    const int64_t groups = (n + NT - 1) / NT;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * NT;
        const float *xt[NT];
        float acc[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) {
            xt[t] = x + (t0 + t < n ? t0 + t : n - 1) * ldx;
            acc[t] = 0.0f;
        }
        for (int64_t q = lane; q < quads; q += 32) {
            const int64_t e = 4 * q;
            float wv[4], xv[NT][4];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const bool in = e + j < k;
                wv[j] = in ? qmm_cuda_dequant<T>(row, e + j) : 0.0f;
#pragma unroll
                for (int t = 0; t < NT; t++) xv[t][j] = in ? __ldg(xt[t] + e + j) : 0.0f;
            }
#pragma unroll
            for (int t = 0; t < NT; t++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[t] = fmaf(wv[j], xv[t][j], acc[t]);
        }
#pragma unroll
        for (int t = 0; t < NT; t++)
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) acc[t] += __shfl_xor_sync(0xFFFFFFFFu, acc[t], off);
        float mine = acc[0];
#pragma unroll
        for (int t = 1; t < NT; t++)
            if (lane == t) mine = acc[t];
        if (lane < NT && t0 + lane < n) y[(t0 + lane) * ldy + r] = mine;
    }
}

extern "C" __global__ void qmm_candidate(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k,
                                         int64_t n, const float *x, int64_t ldx, float *y,
                                         int64_t ldy) {
    /* n is the same for every thread: a uniform branch, as production's choice of instance */
    if (n <= 1) gemv_rows<QMM_CANDIDATE_TYPE, 1>(w, row_bytes, m, k, n, x, ldx, y, ldy);
    else if (n <= 2) gemv_rows<QMM_CANDIDATE_TYPE, 2>(w, row_bytes, m, k, n, x, ldx, y, ldy);
    else if (n <= 4) gemv_rows<QMM_CANDIDATE_TYPE, 4>(w, row_bytes, m, k, n, x, ldx, y, ldy);
    else gemv_rows<QMM_CANDIDATE_TYPE, 8>(w, row_bytes, m, k, n, x, ldx, y, ldy);
}
