/*
 * gemv.cu — the `gemv` strategy: one warp per row of W, up to QMM_CUDA_GEMV_TOKENS tokens per
 * launch block row, W dequantized on the fly (qmm_cuda_dequant, exact), f32 products and sums.
 *
 * Lane l accumulates elements e = l, l+32, ... of its row in order (fmaf), then the warp sums
 * its 32 partials by a fixed butterfly (__shfl_xor_sync): the reduction order depends on k
 * only, never on n or on other tokens, so every output is bit-identical for every n
 * (batch-invariant) and run to run (no atomics).
 */
#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

namespace {

constexpr int kWarps = 8; /* rows per block */
constexpr int kTokens = QMM_CUDA_GEMV_TOKENS;

template <int T>
__global__ void __launch_bounds__(kWarps * 32)
gemv_kernel(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
            int64_t ldx, float *y, int64_t ldy) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (r >= m) return;
    const uint8_t *row = w + r * row_bytes;
    const int64_t groups = (n + kTokens - 1) / kTokens;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * kTokens;
        const int nt = (int)(n - t0 < kTokens ? n - t0 : kTokens);
        const float *xg = x + t0 * ldx;
        float acc[kTokens];
#pragma unroll
        for (int t = 0; t < kTokens; t++) acc[t] = 0.0f;
        for (int64_t e = lane; e < k; e += 32) {
            const float wv = qmm_cuda_dequant<T>(row, e);
#pragma unroll
            for (int t = 0; t < kTokens; t++)
                if (t < nt) acc[t] = fmaf(wv, xg[t * ldx + e], acc[t]);
        }
#pragma unroll
        for (int t = 0; t < kTokens; t++) {
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) acc[t] += __shfl_xor_sync(0xFFFFFFFFu, acc[t], off);
        }
        if (lane == 0) {
#pragma unroll
            for (int t = 0; t < kTokens; t++)
                if (t < nt) y[(t0 + t) * ldy + r] = acc[t];
        }
    }
}

template <int T> struct GemvLaunch {
    static void run(const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                    int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
        const int64_t groups = (n + kTokens - 1) / kTokens;
        dim3 grid((unsigned)((m + kWarps - 1) / kWarps), (unsigned)(groups < 65535 ? groups : 65535));
        gemv_kernel<T><<<grid, kWarps * 32, 0, s>>>((const uint8_t *)w, row_bytes, m, k, n, x, ldx, y, ldy);
    }
};

} // namespace

extern "C" cudaError_t qmm_cuda_gemv(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                     int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy,
                                     cudaStream_t stream) {
    if ((m + kWarps - 1) / kWarps > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    if (!qmm_cuda_dispatch_type<GemvLaunch>(type, w, row_bytes, m, k, n, x, ldx, y, ldy, stream))
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
