/*
 * gemv_copy.cu — a `qmm bench --candidate` kernel that computes exactly what the production
 * CUDA gemv kernel (src/cuda/gemv.cu) computes, in the same order, so it must pass
 * bit-identical. It is the starting point for a new gemv candidate and the tool's own check
 * (tests/test_candidate_cli.py): if production's order of operations changes, this file
 * must follow it (the order is documented at the top of src/cuda/gemv.cu).
 *
 * The order (production's, as of the per-unit layout with X in shared memory): lane l of a
 * row's warp takes the units u = l, l + 32, ... of qmm_cuda_part<T> (whole quant groups,
 * decoded by the production decoder) in increasing u and, per token, accumulates
 * fmaf(w, x, acc) in the order the unit decoder yields the elements; then the warp's 32
 * partials are summed by the butterfly __shfl_xor_sync 16, 8, 4, 2, 1 and lane t stores
 * token t. Tokens: groups of NT = 1, 2, 4 or 8 (the smallest >= n, at most 8), blockIdx.y
 * strides over the groups; slots past n repeat the last token (computed, not stored).
 * X is staged in shared memory by chunks of 1024 elements per token (production's chunks may
 * be longer and its warps may take two rows: neither changes a row's order). Positions: the
 * XOR swizzle below (production's layout until commit 8e5e424; production now stores chunks
 * quad-major, gemv_pos in gemv.cu). Where an X value sits in shared memory moves no product,
 * so the results stay bit-identical; timing this copy against production compares layouts.
 *
 * Geometry: one warp per row, so rows_per_block = threads_per_block / 32.
 */
#include "cuda/dequant.cuh"

extern "C" __device__ const int qmm_candidate_geometry[][2] = {{8, 256}, {4, 128}, {2, 64}, {1, 32}};

constexpr int kChunk = 1024; /* elements of X per token per staging: a multiple of 32 units */

/* Bits 0..4 of the chunk offset XORed with the bits that tell a step's 32 units apart, so the
 * 32 lanes of a step read 32 different banks (production's layout before gemv_pos). Every
 * case permutes elements within aligned groups of 4 to 32, so it is correct for any type
 * (a layout moves no product): the default (q2_K, q3_K, q6_K and every unit-codec type)
 * only costs bank conflicts where it does not fit the type's units. */
template <int T> __device__ __forceinline__ int swizzle(int e) {
    switch (T) {
    case QMM_TYPE_F32:
    case QMM_TYPE_F16:
    case QMM_TYPE_BF16: return e ^ ((e >> 5) & 3);
    case QMM_TYPE_Q4_0:
    case QMM_TYPE_Q4_1:
    case QMM_TYPE_Q5_0:
    case QMM_TYPE_Q5_1: return e ^ ((e >> 5) & 3) ^ ((e >> 3) & 16);
    case QMM_TYPE_Q8_0: return e ^ ((e >> 5) & 7);
    case QMM_TYPE_Q4_K:
    case QMM_TYPE_Q5_K: return e ^ ((e >> 6) & 15);
    default: return e ^ ((e >> 7) & 3);
    }
}

template <int T, int NT>
__device__ __forceinline__ void gemv_rows(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m,
                                          int64_t k, int64_t n, const float *__restrict__ x,
                                          int64_t ldx, float *__restrict__ y, int64_t ldy, float *xs) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const bool live = r < m; /* rows past m stage X and meet the barriers, nothing else */
    const uint8_t *row = w + (live ? r : 0) * row_bytes;
    const int64_t groups = (n + NT - 1) / NT;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * NT;
        float acc[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) acc[t] = 0.0f;
        for (int64_t c0 = 0; c0 < k; c0 += kChunk) {
            const int kc = (int)(k - c0 < kChunk ? k - c0 : kChunk);
            __syncthreads();
            for (int i = threadIdx.x; i < NT * kc; i += blockDim.x) {
                const int t = i / kc, e = i - t * kc;
                const int64_t tok = t0 + t < n ? t0 + t : n - 1;
                xs[t * kChunk + swizzle<T>(e)] = x[tok * ldx + c0 + e];
            }
            __syncthreads();
            if (!live) continue;
            const int64_t u1 = qmm_cuda_part<T>::units(c0 + kc);
            for (int64_t u = qmm_cuda_part<T>::units(c0) + lane; u < u1; u += 32)
                qmm_cuda_part<T>::decode(row, u, k, [&](int64_t e, float wv) {
                    const float *xe = xs + swizzle<T>((int)(e - c0));
#pragma unroll
                    for (int t = 0; t < NT; t++) acc[t] = fmaf(wv, xe[t * kChunk], acc[t]);
                });
        }
        if (!live) continue;
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
    __shared__ float xs[8 * kChunk];
    /* n is the same for every thread: a uniform branch, as production's choice of instance */
    if (n <= 1) gemv_rows<QMM_CANDIDATE_TYPE, 1>(w, row_bytes, m, k, n, x, ldx, y, ldy, xs);
    else if (n <= 2) gemv_rows<QMM_CANDIDATE_TYPE, 2>(w, row_bytes, m, k, n, x, ldx, y, ldy, xs);
    else if (n <= 4) gemv_rows<QMM_CANDIDATE_TYPE, 4>(w, row_bytes, m, k, n, x, ldx, y, ldy, xs);
    else gemv_rows<QMM_CANDIDATE_TYPE, 8>(w, row_bytes, m, k, n, x, ldx, y, ldy, xs);
}
