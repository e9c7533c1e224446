/*
 * gemv.cu — the `gemv` strategy: one warp per row of W, W decoded in registers a unit at a
 * time (qmm_cuda_part<T>: whole quant groups per thread, exact), f32 products and sums.
 *
 * A block of 8 warps handles 8 rows (so m = 4608 gives 576 blocks, one wave on 132 SMs).
 * Lane l of a row's warp takes units u = l, l + 32, ... of the row (consecutive lanes read
 * consecutive bytes) and, for each token, accumulates w * x with fmaf in the order in which
 * the unit decoder yields its elements; the warp then sums its 32 partials by a fixed
 * butterfly (__shfl_xor_sync). Which lane takes which element, and the order, depend on k
 * only, never on n, on the other tokens or on m: every output is bit-identical for every n
 * (batch-invariant) and run to run (no atomics, no shared memory).
 *
 * Tokens: a launch handles NT = 1, 2, 4 or 8 tokens per warp (the smallest >= n, at most
 * QMM_CUDA_GEMV_TOKENS); blockIdx.y walks groups of NT tokens. Token slots past n repeat
 * the last token (computed, never stored) so the inner loop has no predicates.
 */
#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

namespace {

constexpr int kWarps = 8; /* rows of W per block */
constexpr int kThreads = kWarps * 32;

template <int T, int NT>
__global__ void __launch_bounds__(kThreads)
gemv_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k, int64_t n,
            const float *__restrict__ x, int64_t ldx, float *__restrict__ y, int64_t ldy) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (r >= m) return; /* whole warps leave; nothing below synchronizes the block */
    const uint8_t *row = w + r * row_bytes;
    const int64_t units = qmm_cuda_part<T>::units(k);
    const int64_t groups = (n + NT - 1) / NT;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * NT;
        const float *xt[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) xt[t] = x + (t0 + t < n ? t0 + t : n - 1) * ldx;
        float acc[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) acc[t] = 0.0f;
        for (int64_t u = lane; u < units; u += 32) {
            qmm_cuda_part<T>::decode(row, u, k, [&](int64_t e, float wv) {
#pragma unroll
                for (int t = 0; t < NT; t++) acc[t] = fmaf(wv, __ldg(xt[t] + e), acc[t]);
            });
        }
#pragma unroll
        for (int t = 0; t < NT; t++) {
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) acc[t] += __shfl_xor_sync(0xFFFFFFFFu, acc[t], off);
        }
        /* every lane holds the sums; lane t stores token t */
        float mine = acc[0];
#pragma unroll
        for (int t = 1; t < NT; t++)
            if (lane == t) mine = acc[t];
        if (lane < NT && t0 + lane < n) y[(t0 + lane) * ldy + r] = mine;
    }
}

template <int T> struct GemvLaunch {
    static void run(const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                    int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
        const int nt = n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : 8;
        const int64_t groups = (n + nt - 1) / nt;
        dim3 grid((unsigned)((m + kWarps - 1) / kWarps), (unsigned)(groups < 65535 ? groups : 65535));
        const uint8_t *wb = (const uint8_t *)w;
        switch (nt) {
        case 1: gemv_kernel<T, 1><<<grid, kThreads, 0, s>>>(wb, row_bytes, m, k, n, x, ldx, y, ldy); break;
        case 2: gemv_kernel<T, 2><<<grid, kThreads, 0, s>>>(wb, row_bytes, m, k, n, x, ldx, y, ldy); break;
        case 4: gemv_kernel<T, 4><<<grid, kThreads, 0, s>>>(wb, row_bytes, m, k, n, x, ldx, y, ldy); break;
        default: gemv_kernel<T, 8><<<grid, kThreads, 0, s>>>(wb, row_bytes, m, k, n, x, ldx, y, ldy); break;
        }
    }
};

static_assert(QMM_CUDA_GEMV_TOKENS == 8, "gemv_kernel instantiates NT = 1, 2, 4, 8");

} // namespace

extern "C" cudaError_t qmm_cuda_gemv(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                     int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy,
                                     cudaStream_t stream) {
    if ((m + kWarps - 1) / kWarps > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    if (!qmm_cuda_dispatch_type<GemvLaunch>(type, w, row_bytes, m, k, n, x, ldx, y, ldy, stream))
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
