/*
 * fp8.cu — kernels of the `fp8` strategy (sm_89+): rows of f32 quantized to E4M3 with one
 * scale per row, and the epilogue that applies the row scales to the f32 product.
 *
 * Quantization of a row v[0..k): amax = max |v_e|; scale = amax / 448 (448 = the largest
 * finite E4M3 value; scale = 1 for an all-zero row); q_e = E4M3(v_e / scale), round to
 * nearest even (__nv_cvt_float_to_fp8, __NV_SATFINITE: |v_e / scale| <= 448 by construction,
 * so nothing saturates). Columns k..k_pad-1 and rows past `rows` (up to rows_pad) are written
 * as zeros (scale 0) on every call, so padding never holds stale values. A non-finite amax
 * raises *flag (if flag is not NULL).
 */
#include <cuda_fp8.h>

#include "cuda/cuda_internal.h"

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
fp8_rows_kernel(const float *src, int64_t rows, int64_t k, int64_t ld, int64_t k_pad, uint8_t *dst,
                float *scale, int *flag) {
    __shared__ float red[kThreads / 32];
    const int64_t r = blockIdx.x;
    uint8_t *out = dst + r * k_pad;
    if (r >= rows) { /* padding row: zeros */
        for (int64_t e = threadIdx.x; e < k_pad; e += kThreads) out[e] = 0;
        if (threadIdx.x == 0) scale[r] = 0.0f;
        return;
    }
    const float *v = src + r * ld;
    float amax = 0.0f;
    for (int64_t e = threadIdx.x; e < k; e += kThreads) amax = fmaxf(amax, fabsf(v[e]));
    /* fmaxf drops NaN: count non-finite values separately */
    bool bad = false;
    for (int64_t e = threadIdx.x; e < k; e += kThreads) bad |= !isfinite(v[e]);
    for (int off = 16; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
    bad = __any_sync(0xFFFFFFFFu, bad);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = bad ? __int_as_float(0x7FC00000) : amax;
    __syncthreads();
    float a = 0.0f;
    bool any_bad = false;
#pragma unroll
    for (int i = 0; i < kThreads / 32; i++) {
        any_bad |= isnan(red[i]);
        a = fmaxf(a, red[i]);
    }
    if (any_bad && flag != NULL && threadIdx.x == 0) atomicOr(flag, 1);
    const float s = a > 0.0f ? __fdiv_rn(a, 448.0f) : 1.0f;
    if (threadIdx.x == 0) scale[r] = any_bad ? __int_as_float(0x7FC00000) : s;
    for (int64_t e = threadIdx.x; e < k_pad; e += kThreads)
        out[e] = e < k ? (uint8_t)__nv_cvt_float_to_fp8(__fdiv_rn(v[e], s), __NV_SATFINITE, __NV_E4M3) : 0;
}

__global__ void fp8_epilogue_kernel(const float *d, int64_t ldd, const float *sw, const float *sx,
                                    int64_t m, int64_t n, float *y, int64_t ldy) {
    const int64_t total = m * n;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = i / m, r = i % m;
        y[t * ldy + r] = __fmul_rn(__fmul_rn(d[t * ldd + r], sw[r]), sx[t]);
    }
}

} // namespace

extern "C" cudaError_t qmm_cuda_fp8_rows(const float *src, int64_t rows, int64_t rows_pad, int64_t k,
                                         int64_t ld, int64_t k_pad, uint8_t *dst, float *scale,
                                         int *flag, cudaStream_t stream) {
    if (rows_pad > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    fp8_rows_kernel<<<(unsigned)rows_pad, kThreads, 0, stream>>>(src, rows, k, ld, k_pad, dst, scale, flag);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cuda_fp8_epilogue(const float *d, int64_t ldd, const float *sw, const float *sx,
                                             int64_t m, int64_t n, float *y, int64_t ldy,
                                             cudaStream_t stream) {
    const int64_t b = (m * n + kThreads - 1) / kThreads;
    fp8_epilogue_kernel<<<(unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b), kThreads, 0, stream>>>(
        d, ldd, sw, sx, m, n, y, ldy);
    return cudaGetLastError();
}
