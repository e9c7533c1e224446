/*
 * int8_layout.cuh — what the kernels that read the int8 repack share (int8.cu, half.cu): the
 * padding granule, the two quant formats of the repack and their tile bytes (the layout itself
 * is written at the top of int8.cu and in docs/CUDA.md "int8"), the cp.async and ldmatrix
 * wrappers, and two launch helpers.
 */
#pragma once
#include <stdint.h>

#include <atomic>

#include "cuda/cuda_internal.h"

#define I8_PAD 128    /* m_pad, k_pad granule (qmm_cuda_int8_pad) */

/* W formats of the repack: int8 quants, or nibbles read as 16q (u8) / 16(q - 8) (s8). */
enum { I8_FMT_S8 = 0, I8_FMT_NIB_U = 1, I8_FMT_NIB_S = 2 };
template <int T> struct i8_fmt {
    static constexpr int v = T == QMM_TYPE_Q4_0                          ? I8_FMT_NIB_S
                             : (T == QMM_TYPE_Q4_1 || T == QMM_TYPE_Q4_K) ? I8_FMT_NIB_U
                                                                         : I8_FMT_S8;
};
/* Bytes of one 16 x 64 quant tile. */
template <int FMT> struct i8_tile_bytes { static constexpr int v = FMT == I8_FMT_S8 ? 1024 : 512; };

__device__ __forceinline__ void i8_cp16(void *smem, const void *gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void i8_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void i8_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* Four 8 x 16-byte matrices of shared memory: lane l gives the address of row l % 8 of
 * matrix l / 8; thread T receives bytes 4(T%4)..+3 of row T/4 of matrix i in r_i. */
__device__ __forceinline__ void i8_ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(s)
                 : "memory");
}

/* Raises the dynamic shared-memory limit of kernel f on the current device once per device. */
template <class K> static inline cudaError_t i8_smem_attr(K f, int bytes, unsigned long long *done) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const unsigned long long bit = dev < 64 ? 1ull << dev : 0;
    if (bit != 0 && (*done & bit)) return cudaSuccess;
    e = cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess) *done |= bit;
    return e;
}

/* Whether kernel f's code on the current device was compiled for sm_90+ (so it holds its
 * griddepcontrol instructions): not when the driver JIT-compiled a build's compute_80 PTX for
 * a newer GPU. Cached per device in `cached` (0 unknown, 1 yes, -1 no; threads that race
 * store the same value). */
template <class K> static inline bool i8_sm90_code(K f, std::atomic<signed char> (&cached)[64]) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
    signed char v = cached[dev].load(std::memory_order_relaxed);
    if (v == 0) {
        cudaFuncAttributes fa;
        v = cudaFuncGetAttributes(&fa, f) == cudaSuccess && fa.ptxVersion >= 90 && fa.binaryVersion >= 90 ? 1 : -1;
        cached[dev].store(v, std::memory_order_relaxed);
    }
    return v > 0;
}

/* The multiprocessor count of the current device (cached per device). */
static inline int i8_sms(void) {
    static int cached[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 132;
    if (cached[dev] == 0) {
        int v = 0;
        if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || v <= 0) v = 132;
        cached[dev] = v;
    }
    return cached[dev];
}

/* Split-k: y[j][i] = p_0 + p_1 + ... (in split order) of the partials ws[z * zs + j * m + i]. */
static __global__ void i8_reduce_kernel(const float *__restrict__ ws, int64_t zs, int nz, int64_t m, int64_t nc,
                                 float *__restrict__ y, int64_t ldy) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= m * nc) return;
    const int64_t j = idx / m, i = idx - j * m;
    float v = ws[idx];
    for (int z = 1; z < nz; z++) v = __fadd_rn(v, ws[z * zs + idx]);
    y[j * ldy + i] = v;
}
