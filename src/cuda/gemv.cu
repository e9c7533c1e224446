/*
 * gemv.cu — the `gemv` strategy: W streamed once per group of QMM_CUDA_GEMV_TOKENS tokens,
 * dequantized on the fly (qmm_cuda_dequant, exact), f32 products and sums.
 *
 * A block of 8 warps handles 2 rows of W; the 4 warps of a row split k: lane l of slice s
 * accumulates elements e = 32*s + l + 128*i in order (fmaf), the warp sums its 32 partials by
 * a fixed butterfly (__shfl_xor_sync), and one thread adds the 4 slice sums in slice order.
 * The reduction order depends on k only, never on n or on other tokens, so every output is
 * bit-identical for every n (batch-invariant) and run to run (no atomics).
 */
#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

namespace {

constexpr int kRows = 2;                 /* rows of W per block */
constexpr int kSlices = 4;               /* warps per row, splitting k */
constexpr int kThreads = kRows * kSlices * 32;
constexpr int kTokens = QMM_CUDA_GEMV_TOKENS;

template <int T>
__global__ void __launch_bounds__(kThreads)
gemv_kernel(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
            int64_t ldx, float *y, int64_t ldy) {
    __shared__ float partial[kRows * kSlices][kTokens];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int ri = warp / kSlices, slice = warp % kSlices;
    const int64_t r = (int64_t)blockIdx.x * kRows + ri;
    const bool live = r < m;
    const uint8_t *row = w + (live ? r : 0) * row_bytes;
    const int64_t groups = (n + kTokens - 1) / kTokens;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * kTokens;
        const int nt = (int)(n - t0 < kTokens ? n - t0 : kTokens);
        const float *xg = x + t0 * ldx;
        float acc[kTokens];
#pragma unroll
        for (int t = 0; t < kTokens; t++) acc[t] = 0.0f;
        if (live) {
#pragma unroll 4
            for (int64_t e = 32 * slice + lane; e < k; e += 32 * kSlices) {
                const float wv = qmm_cuda_dequant<T>(row, e);
#pragma unroll
                for (int t = 0; t < kTokens; t++)
                    if (t < nt) acc[t] = fmaf(wv, xg[t * ldx + e], acc[t]);
            }
        }
#pragma unroll
        for (int t = 0; t < kTokens; t++) {
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) acc[t] += __shfl_xor_sync(0xFFFFFFFFu, acc[t], off);
        }
        if (lane == 0) {
#pragma unroll
            for (int t = 0; t < kTokens; t++) partial[warp][t] = acc[t];
        }
        __syncthreads();
        if (threadIdx.x < kRows * kTokens) {
            const int rr = threadIdx.x / kTokens, t = threadIdx.x % kTokens;
            const int64_t ro = (int64_t)blockIdx.x * kRows + rr;
            if (ro < m && t < nt) {
                float sum = partial[rr * kSlices][t];
#pragma unroll
                for (int s = 1; s < kSlices; s++) sum += partial[rr * kSlices + s][t];
                y[(t0 + t) * ldy + ro] = sum;
            }
        }
        __syncthreads();
    }
}

template <int T> struct GemvLaunch {
    static void run(const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                    int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
        const int64_t groups = (n + kTokens - 1) / kTokens;
        dim3 grid((unsigned)((m + kRows - 1) / kRows), (unsigned)(groups < 65535 ? groups : 65535));
        gemv_kernel<T><<<grid, kThreads, 0, s>>>((const uint8_t *)w, row_bytes, m, k, n, x, ldx, y, ldy);
    }
};

} // namespace

extern "C" cudaError_t qmm_cuda_gemv(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                     int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy,
                                     cudaStream_t stream) {
    if ((m + kRows - 1) / kRows > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    if (!qmm_cuda_dispatch_type<GemvLaunch>(type, w, row_bytes, m, k, n, x, ldx, y, ldy, stream))
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
