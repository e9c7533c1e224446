/*
 * gemv.cu — the `gemv` strategy: one warp per row of W, W decoded in registers four elements
 * at a time (qmm_cuda_quad<T>, exact: the production decoder qmm_cuda_dequant<T>), f32 products
 * and f32 sums.
 *
 * Work split and order (the order defines the result, so it is fixed by k alone):
 * - A block of 8 warps handles 8 rows (m = 4608 gives 576 blocks, about 4 per SM on 132 SMs;
 *   a warp leaving early at the m tail never meets a barrier: there is none).
 * - Lane l of a row's warp takes the quads q = l, l + 32, l + 64, ... (elements 4q..4q+3),
 *   in increasing q, and for each token accumulates w*x by fmaf in element order 4q, 4q+1,
 *   4q+2, 4q+3 into its own f32 partial. The warp then sums its 32 partials by a fixed
 *   butterfly (__shfl_xor_sync 16, 8, 4, 2, 1). Which lane takes which element, and the order,
 *   depend on k only — never on n, on the other tokens, on the token's slot or on m — so every
 *   output is bit-identical for every n (batch-invariant) and run to run (no atomics, no
 *   shared memory). The CPU kernels use another order: the results agree within the F32
 *   class's limits, not bit for bit.
 *
 * Why quads (the previous version gave each lane whole quant groups, e.g. elements 4i..4i+3
 * and 16+4i.. of a q4_0 block, or 32 elements of a q4_K super-block): X is the traffic that
 * limits this kernel, not W. Every element of W needs NT floats of X (4*NT bytes from L1/L2)
 * against 0.56 bytes of q4_0 from DRAM. With quads, one warp-wide 16-byte load of X per token
 * covers 512 contiguous bytes (4 L1 wavefronts, nothing wasted), where the group layout read
 * 4-byte scalars spread over 1 KB (8 wavefronts for 128 useful bytes). The W bytes of a quad
 * come from the same 18..210-byte block that 1..64 neighbouring lanes read too, so W's
 * loads stay coalesced; the decode of d/dmin and of the 6-bit q4_K/q5_K scales is done once
 * per quad (the compiler shares it between the four elements of a quad, which always lie in
 * one sub-block).
 * X: 16-byte loads when x is 16-byte aligned and ldx a multiple of 4 (a warp-uniform branch
 * decided once per launch), 4-byte loads otherwise; the float types' last partial quad reads
 * only the elements below k.
 *
 * Tokens: a launch handles NT = 1, 2, 4 or 8 tokens per warp (the smallest >= n, at most
 * QMM_CUDA_GEMV_TOKENS); blockIdx.y walks groups of NT tokens (grid-stride beyond 65535).
 * Token slots past n repeat the last token (computed, never stored) so the inner loop has no
 * predicates. Registers: NT accumulators + NT float4 of X + one float4 of W in flight, times
 * the unroll of 2 quads (up to 219 for f32 at NT = 8, 64..127 for the quantized types).
 * __launch_bounds__(256, 1): with the bare bound ptxas capped some instances at 64 or 128
 * registers and spilled (q4_0 NT = 1, q5_K NT = 1, q8_0 NT = 8); with it, ptxas -v shows no
 * spills for any type and NT (sm_90a). Occupancy is then set by registers: 64 registers give
 * 4 blocks (32 warps) an SM, 128 give 2 — enough loads in flight for the n = 1 case, where
 * the W bytes from DRAM are the limit.
 */
#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

namespace {

constexpr int kWarps = 8; /* rows of W per block */
constexpr int kThreads = kWarps * 32;

__device__ __forceinline__ float4 gemv_load_x(const float *__restrict__ p, bool vec, int64_t e, int64_t k) {
    if (vec && e + 4 <= k) return __ldg((const float4 *)(p + e));
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; j++) v[j] = e + j < k ? __ldg(p + e + j) : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

template <int T, int NT>
__global__ void __launch_bounds__(kThreads, 1)
gemv_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k, int64_t n,
            const float *__restrict__ x, int64_t ldx, float *__restrict__ y, int64_t ldy) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5);
    if (r >= m) return; /* whole warps leave; nothing below synchronizes the block */
    const uint8_t *row = w + r * row_bytes;
    const int64_t quads = (k + 3) / 4;
    const bool vec = ((uintptr_t)x & 15u) == 0 && (ldx & 3) == 0;
    const int64_t groups = (n + NT - 1) / NT;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * NT;
        const float *xt[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) xt[t] = x + (t0 + t < n ? t0 + t : n - 1) * ldx;
        float acc[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) acc[t] = 0.0f;
#pragma unroll 2
        for (int64_t q = lane; q < quads; q += 32) {
            const int64_t e = 4 * q;
            const float4 wv = qmm_cuda_quad<T>(row, e, k);
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float4 xv = gemv_load_x(xt[t], vec, e, k);
                acc[t] = fmaf(wv.x, xv.x, acc[t]);
                acc[t] = fmaf(wv.y, xv.y, acc[t]);
                acc[t] = fmaf(wv.z, xv.z, acc[t]);
                acc[t] = fmaf(wv.w, xv.w, acc[t]);
            }
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
