/*
 * gemv.cu — the `gemv` strategy: W streamed once per group of QMM_CUDA_GEMV_TOKENS tokens,
 * dequantized on the fly (qmm_cuda_dequant, exact), f32 products and sums.
 *
 * A block of 8 warps handles 2 rows of W. The rows are staged through shared memory in
 * segments of whole blocks (<= 4 KiB per row, coalesced 16-bit loads), then the 4 warps of a
 * row split each segment: lane l of slice s accumulates segment elements 32*s + l + 128*i,
 * segment after segment, in order (fmaf), the warp sums its 32 partials by
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

/* Bytes of one row staged in shared memory at a time (whole quantization blocks). */
constexpr int kSegBytes = 4096;

template <int T>
__global__ void __launch_bounds__(kThreads)
gemv_kernel(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
            int64_t ldx, float *y, int64_t ldy, int64_t block_size, int64_t block_bytes) {
    __shared__ __align__(16) uint8_t seg[kRows][kSegBytes];
    __shared__ float partial[kRows * kSlices][kTokens];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int ri = warp / kSlices, slice = warp % kSlices;
    const int64_t r0 = (int64_t)blockIdx.x * kRows;
    const int64_t seg_blocks = kSegBytes / block_bytes;
    const int64_t seg_elems = seg_blocks * block_size;
    const int64_t groups = (n + kTokens - 1) / kTokens;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * kTokens;
        const int nt = (int)(n - t0 < kTokens ? n - t0 : kTokens);
        const float *xg = x + t0 * ldx;
        float acc[kTokens];
#pragma unroll
        for (int t = 0; t < kTokens; t++) acc[t] = 0.0f;
        for (int64_t e0 = 0; e0 < k; e0 += seg_elems) {
            /* stage the segment of both rows (16-bit loads: rows and blocks are 2-aligned) */
            const int64_t ne = k - e0 < seg_elems ? k - e0 : seg_elems;
            const int half_words = (int)(ne / block_size * block_bytes / 2);
            const int64_t byte0 = e0 / block_size * block_bytes;
            for (int i = threadIdx.x; i < kRows * half_words; i += kThreads) {
                const int rr = i / half_words, j = i % half_words;
                const int64_t r = r0 + rr;
                if (r < m)
                    ((uint16_t *)seg[rr])[j] = ((const uint16_t *)(w + r * row_bytes + byte0))[j];
            }
            __syncthreads();
            if (r0 + ri < m) {
#pragma unroll 4
                for (int64_t e = 32 * slice + lane; e < ne; e += 32 * kSlices) {
                    const float wv = qmm_cuda_dequant<T>(seg[ri], e);
#pragma unroll
                    for (int t = 0; t < kTokens; t++)
                        if (t < nt) acc[t] = fmaf(wv, xg[t * ldx + e0 + e], acc[t]);
                }
            }
            __syncthreads();
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
            const int64_t ro = r0 + rr;
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

/* Elements and bytes of one quantization block of type T. */
template <int T> struct BlockShape { static constexpr int64_t size = 1, bytes = 4; };
template <> struct BlockShape<QMM_TYPE_F16> { static constexpr int64_t size = 1, bytes = 2; };
template <> struct BlockShape<QMM_TYPE_BF16> { static constexpr int64_t size = 1, bytes = 2; };
template <> struct BlockShape<QMM_TYPE_Q4_0> { static constexpr int64_t size = QK4_0, bytes = sizeof(block_q4_0); };
template <> struct BlockShape<QMM_TYPE_Q4_1> { static constexpr int64_t size = QK4_1, bytes = sizeof(block_q4_1); };
template <> struct BlockShape<QMM_TYPE_Q5_0> { static constexpr int64_t size = QK5_0, bytes = sizeof(block_q5_0); };
template <> struct BlockShape<QMM_TYPE_Q5_1> { static constexpr int64_t size = QK5_1, bytes = sizeof(block_q5_1); };
template <> struct BlockShape<QMM_TYPE_Q8_0> { static constexpr int64_t size = QK8_0, bytes = sizeof(block_q8_0); };
template <> struct BlockShape<QMM_TYPE_Q2_K> { static constexpr int64_t size = QK_K, bytes = sizeof(block_q2_K); };
template <> struct BlockShape<QMM_TYPE_Q3_K> { static constexpr int64_t size = QK_K, bytes = sizeof(block_q3_K); };
template <> struct BlockShape<QMM_TYPE_Q4_K> { static constexpr int64_t size = QK_K, bytes = sizeof(block_q4_K); };
template <> struct BlockShape<QMM_TYPE_Q5_K> { static constexpr int64_t size = QK_K, bytes = sizeof(block_q5_K); };
template <> struct BlockShape<QMM_TYPE_Q6_K> { static constexpr int64_t size = QK_K, bytes = sizeof(block_q6_K); };

template <int T> struct GemvLaunch {
    static void run(const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                    int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
        const int64_t groups = (n + kTokens - 1) / kTokens;
        dim3 grid((unsigned)((m + kRows - 1) / kRows), (unsigned)(groups < 65535 ? groups : 65535));
        gemv_kernel<T><<<grid, kThreads, 0, s>>>((const uint8_t *)w, row_bytes, m, k, n, x, ldx, y, ldy,
                                                 BlockShape<T>::size, BlockShape<T>::bytes);
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
