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
#include <stdint.h>

#include <cuda_fp8.h>

#include "cuda/cuda_internal.h"

namespace {

constexpr int kThreads = 256;

/* Elements [e, e + 4) of row v (zeros from k on). VEC: row v is 16-byte aligned, so a full
 * quad is one float4 load. */
template <bool VEC> __device__ __forceinline__ float4 load_quad(const float *v, int64_t e, int64_t k) {
    if (VEC && e + 4 <= k) return *reinterpret_cast<const float4 *>(v + e);
    return make_float4(e < k ? v[e] : 0.0f, e + 1 < k ? v[e + 1] : 0.0f, e + 2 < k ? v[e + 2] : 0.0f,
                       e + 3 < k ? v[e + 3] : 0.0f);
}

/* E4M3 bits of v / s, round to nearest even; 0 for a column at or past k. */
__device__ __forceinline__ uint32_t e4m3_bits(float v, float s, bool in) {
    return in ? (uint32_t)(uint8_t)__nv_cvt_float_to_fp8(__fdiv_rn(v, s), __NV_SATFINITE, __NV_E4M3) : 0u;
}

/* Bytes [e, e + 4) of a row of k_pad bytes (those below k_pad) = the 4 bytes of b, lowest
 * first; word: out + e is 4-byte aligned and the quad is whole (one 4-byte store). */
__device__ __forceinline__ void store_quad(uint8_t *out, int64_t e, int64_t k_pad, bool word, uint32_t b) {
    if (word) {
        *reinterpret_cast<uint32_t *>(out + e) = b;
        return;
    }
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (e + j < k_pad) out[e + j] = (uint8_t)(b >> (8 * j));
}

/* One block per row r (blockIdx.x), one quad of 4 columns per thread and step: pass 1 finds
 * max |v| and whether any value is non-finite (fmaxf drops NaN, so they are tracked apart;
 * the max does not depend on the order), pass 2 writes the 4 E4M3 bytes of a quad as one
 * 4-byte store (bytes one by one where dst or k_pad is not a multiple of 4). VEC: src 16-byte
 * aligned and ld % 4 == 0 (float4 loads; a last partial quad is loaded element by element).
 * For a row holding a non-finite value the bytes depend on the thread layout (the max skips
 * the warps that saw one), but its scale is NaN, so every output of that token is NaN. */
template <bool VEC>
__global__ void __launch_bounds__(kThreads)
fp8_rows_kernel(const float *src, int64_t rows, int64_t k, int64_t ld, int64_t k_pad, uint8_t *dst,
                float *scale, int *flag) {
    __shared__ float red[kThreads / 32];
    const int64_t r = blockIdx.x;
    uint8_t *out = dst + r * k_pad;
    const int64_t quads = (k_pad + 3) / 4;
    const bool word = k_pad % 4 == 0 && (uintptr_t)dst % 4 == 0; /* every out + 4i 4-byte aligned */
    if (r >= rows) { /* padding row: zeros */
        for (int64_t i = threadIdx.x; i < quads; i += kThreads) store_quad(out, 4 * i, k_pad, word, 0u);
        if (threadIdx.x == 0) scale[r] = 0.0f;
        return;
    }
    const float *v = src + r * ld;
    float amax = 0.0f;
    bool bad = false;
    for (int64_t e = 4 * (int64_t)threadIdx.x; e < k; e += 4 * kThreads) {
        const float4 f = load_quad<VEC>(v, e, k); /* zeros past k change neither */
        amax = fmaxf(fmaxf(amax, fmaxf(fabsf(f.x), fabsf(f.y))), fmaxf(fabsf(f.z), fabsf(f.w)));
        bad |= !isfinite(f.x) || !isfinite(f.y) || !isfinite(f.z) || !isfinite(f.w);
    }
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
    for (int64_t i = threadIdx.x; i < quads; i += kThreads) {
        const int64_t e = 4 * i;
        const float4 f = load_quad<VEC>(v, e, k);
        store_quad(out, e, k_pad, word,
                   e4m3_bits(f.x, s, e < k) | e4m3_bits(f.y, s, e + 1 < k) << 8 |
                       e4m3_bits(f.z, s, e + 2 < k) << 16 | e4m3_bits(f.w, s, e + 3 < k) << 24);
    }
}

/* Token t over blockIdx.y (striding by gridDim.y), rows r over blockIdx.x (grid-stride): no
 * per-element division. */
__global__ void __launch_bounds__(kThreads)
fp8_epilogue_kernel(const float *d, int64_t ldd, const float *sw, const float *sx, int64_t m, int64_t n,
                    float *y, int64_t ldy) {
    for (int64_t t = blockIdx.y; t < n; t += gridDim.y) {
        const float st = sx[t];
        for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < m; r += (int64_t)gridDim.x * blockDim.x)
            y[t * ldy + r] = __fmul_rn(__fmul_rn(d[t * ldd + r], sw[r]), st);
    }
}

} // namespace

extern "C" cudaError_t qmm_cuda_fp8_rows(const float *src, int64_t rows, int64_t rows_pad, int64_t k,
                                         int64_t ld, int64_t k_pad, uint8_t *dst, float *scale,
                                         int *flag, cudaStream_t stream) {
    if (rows_pad > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    if (rows_pad <= 0) return cudaSuccess; /* nothing launched */
    if ((uintptr_t)src % 16 == 0 && ld % 4 == 0)
        fp8_rows_kernel<true><<<(unsigned)rows_pad, kThreads, 0, stream>>>(src, rows, k, ld, k_pad, dst, scale, flag);
    else
        fp8_rows_kernel<false><<<(unsigned)rows_pad, kThreads, 0, stream>>>(src, rows, k, ld, k_pad, dst, scale, flag);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cuda_fp8_epilogue(const float *d, int64_t ldd, const float *sw, const float *sx,
                                             int64_t m, int64_t n, float *y, int64_t ldy,
                                             cudaStream_t stream) {
    if (m <= 0 || n <= 0) return cudaSuccess; /* nothing launched */
    const int64_t b = (m + kThreads - 1) / kThreads;
    const dim3 grid((unsigned)(b > 65535 ? 65535 : b), (unsigned)(n < 65535 ? n : 65535));
    fp8_epilogue_kernel<<<grid, kThreads, 0, stream>>>(d, ldd, sw, sx, m, n, y, ldy);
    return cudaGetLastError();
}
