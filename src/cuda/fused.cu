/*
 * fused.cu — the `fused` strategy: tensor-core GEMM (mma.sync m16n8k16, f16 inputs, f32
 * accumulators) that dequantizes each W tile into shared memory as it goes; W never exists
 * dequantized in device memory.
 *
 * Block tile: 64 rows of W x 128 tokens, k in steps of 32; 8 warps (2 along m x 4 along n),
 * each warp 32 rows x 32 tokens = 2 x 4 mma tiles of 16 x 8 (32 f32 accumulators a thread).
 * Per k step a thread decodes 2 quads of W (qmm_cuda_quad<T>: 4 elements, the production
 * decoder qmm_cuda_dequant<T>, exact f32) and converts 4 float4 of X, rounds each value once
 * to f16 and stores them to shared memory (8-byte stores); warps read their fragments with
 * ldmatrix.x4 (rows padded from 32 to 40 halves = 80 bytes, so the 8 row addresses of one
 * 8x8 matrix fall in 8 different 16-byte bank groups: no conflicts).
 * Choices and why:
 * - 128 tokens per tile: every W element is decoded once per block tile, i.e. n/128 times in
 *   all. Decoding (10..30 instructions a quad) costs more than the MMA it feeds, so the tile
 *   is widest along n; 64 rows keep enough blocks for small m (m = 1024, n = 512: 64 blocks
 *   of 8 warps; m = 4608: 288).
 * - Two shared buffers, one barrier per k step: step s stores into buffer s&1, waits at the
 *   barrier, then loads and decodes step s+1 into registers (global loads in flight while the
 *   MMAs of step s run), then runs the MMAs of step s. A buffer is rewritten two steps after
 *   it was read, with a barrier between. Plain 16-byte __ldg loads with register staging
 *   instead of cp.async: W must pass through the decoder (registers) anyway, and X is
 *   converted to f16 on the way.
 * - __launch_bounds__(256, 2): at most 128 registers, 2 blocks (16 warps) an SM; 30 KB of
 *   static shared memory a block. ptxas -v: no spills.
 * Precision: each element of W is dequantized exactly and rounded once to f16; X is rounded
 * once to f16; products are exact in f32 and summed in f32. Error per output, with
 * u = 2^-11 (f16 unit roundoff) and u32 = 2^-24:
 *     |y - y_exact| <= (2u + u^2 + k*u32) * sum_e |x_e| |w_e|   (plus f16 underflow of tiny
 *     values, |v| < 2^-24 flushed to 0).
 * Batch invariance and determinism: every output is one chain of MMAs over k in steps of 16,
 * in increasing k, whatever n, m, the token's position in its tile or the grid; no atomics,
 * no split-k. Tails: rows >= m, tokens >= n and elements >= k (float types only) enter the
 * tile as zeros and are not read; results outside m x n are not stored. Rows over
 * blockIdx.x (up to 2^31 - 1 tiles), token tiles over blockIdx.y with a grid-stride loop.
 * Requires every |w| <= 65504 (the caller checks this at weights creation); |x| >= 65520
 * becomes Inf (visible, not saturated). Needs sm_80+ (mma.sync f16, ldmatrix).
 */
#include <cuda_fp16.h>

#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

namespace {

constexpr int kBM = 64, kBN = 128, kBK = 32, kThreads = 256;
constexpr int kPad = kBK + 8;                                   /* halves per shared row */
constexpr int kWQuads = kBM * kBK / 4 / kThreads;               /* 2 quads of W a thread */
constexpr int kXQuads = kBN * kBK / 4 / kThreads;               /* 4 quads of X a thread */
static_assert(kWQuads * kThreads * 4 == kBM * kBK && kXQuads * kThreads * 4 == kBN * kBK, "tile split");

struct __align__(16) FusedSmem {
    half w[2][kBM][kPad];
    half x[2][kBN][kPad];
};

__device__ __forceinline__ uint2 to_half4(float4 v) {
    const __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
    return make_uint2(*(const uint32_t *)&lo, *(const uint32_t *)&hi);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const half *p) {
    const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a)
                 : "memory");
}

__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Element e..e+3 of token row p (zeros at e >= k; 16-byte load when allowed). */
__device__ __forceinline__ float4 fused_load_x(const float *__restrict__ p, bool vec, int64_t e, int64_t k) {
    if (vec && e + 4 <= k) return __ldg((const float4 *)(p + e));
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; j++) v[j] = e + j < k ? __ldg(p + e + j) : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

template <int T>
__global__ void __launch_bounds__(kThreads, 2)
fused_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k, int64_t n,
             const float *__restrict__ x, int64_t ldx, float *__restrict__ y, int64_t ldy) {
    __shared__ FusedSmem sm;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp & 1, wn = warp >> 1; /* warp's 32 rows and 32 tokens in the tile */
    const int64_t m0 = (int64_t)blockIdx.x * kBM;
    const int64_t ntiles = (n + kBN - 1) / kBN, ksteps = (k + kBK - 1) / kBK;
    const bool vec = ((uintptr_t)x & 15u) == 0 && (ldx & 3) == 0;

    /* This thread's quads: W row tid/8 (+32), X token tid/8 (+32, +64, +96), column 4*(tid%8). */
    const int qrow = tid >> 3, qcol = 4 * (tid & 7);
    const uint8_t *wrow[kWQuads];
    bool wok[kWQuads];
#pragma unroll
    for (int s = 0; s < kWQuads; s++) {
        const int64_t r = m0 + qrow + s * (kThreads / 8);
        wok[s] = r < m;
        wrow[s] = w + (wok[s] ? r : 0) * row_bytes;
    }

    for (int64_t tile = blockIdx.y; tile < ntiles; tile += gridDim.y) {
        const int64_t n0 = tile * kBN;
        const float *xrow[kXQuads];
        bool xok[kXQuads];
#pragma unroll
        for (int s = 0; s < kXQuads; s++) {
            const int64_t t = n0 + qrow + s * (kThreads / 8);
            xok[s] = t < n;
            xrow[s] = x + (xok[s] ? t : 0) * ldx;
        }
        float acc[2][4][4];
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int v = 0; v < 4; v++) acc[i][j][v] = 0.0f;

        float4 wq[kWQuads], xq[kXQuads];
        const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int s = 0; s < kWQuads; s++) wq[s] = wok[s] ? qmm_cuda_quad<T>(wrow[s], qcol, k) : zero;
#pragma unroll
        for (int s = 0; s < kXQuads; s++) xq[s] = xok[s] ? fused_load_x(xrow[s], vec, qcol, k) : zero;

        for (int64_t ks = 0; ks < ksteps; ks++) {
            const int buf = (int)(ks & 1);
#pragma unroll
            for (int s = 0; s < kWQuads; s++)
                *(uint2 *)&sm.w[buf][qrow + s * (kThreads / 8)][qcol] = to_half4(wq[s]);
#pragma unroll
            for (int s = 0; s < kXQuads; s++)
                *(uint2 *)&sm.x[buf][qrow + s * (kThreads / 8)][qcol] = to_half4(xq[s]);
            __syncthreads();
            if (ks + 1 < ksteps) {
                const int64_t e = (ks + 1) * kBK + qcol;
#pragma unroll
                for (int s = 0; s < kWQuads; s++) wq[s] = wok[s] ? qmm_cuda_quad<T>(wrow[s], e, k) : zero;
#pragma unroll
                for (int s = 0; s < kXQuads; s++) xq[s] = xok[s] ? fused_load_x(xrow[s], vec, e, k) : zero;
            }
#pragma unroll
            for (int kk = 0; kk < kBK; kk += 16) {
                uint32_t a[2][4], b[2][4];
#pragma unroll
                for (int i = 0; i < 2; i++)
                    ldmatrix_x4(a[i], &sm.w[buf][32 * wm + 16 * i + (lane & 15)][kk + 8 * (lane >> 4)]);
#pragma unroll
                for (int j = 0; j < 2; j++)
                    ldmatrix_x4(b[j], &sm.x[buf][32 * wn + 16 * j + (lane & 7) + 8 * (lane >> 4)]
                                               [kk + 8 * ((lane >> 3) & 1)]);
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        mma_16816(acc[i][j], a[i], b[j >> 1][2 * (j & 1)], b[j >> 1][2 * (j & 1) + 1]);
            }
        }
        /* Accumulator v of tile (i, j): row 16i + lane/4 (+8 for v >= 2), token 8j + 2(lane%4)
         * + (v & 1), in the warp's 32 x 32. */
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int v = 0; v < 4; v++) {
                    const int64_t r = m0 + 32 * wm + 16 * i + (lane >> 2) + 8 * (v >> 1);
                    const int64_t t = n0 + 32 * wn + 8 * j + 2 * (lane & 3) + (v & 1);
                    if (r < m && t < n) y[t * ldy + r] = acc[i][j][v];
                }
        __syncthreads(); /* the next tile's first stores go to buffer 0, read in this tile */
    }
}

template <int T> struct FusedLaunch {
    static void run(const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                    int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
        const int64_t ntiles = (n + kBN - 1) / kBN;
        dim3 grid((unsigned)((m + kBM - 1) / kBM), (unsigned)(ntiles < 65535 ? ntiles : 65535));
        fused_kernel<T><<<grid, kThreads, 0, s>>>((const uint8_t *)w, row_bytes, m, k, n, x, ldx, y, ldy);
    }
};

} // namespace

extern "C" cudaError_t qmm_cuda_fused(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                      int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy,
                                      cudaStream_t stream) {
    if ((m + kBM - 1) / kBM > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    if (!qmm_cuda_dispatch_type<FusedLaunch>(type, w, row_bytes, m, k, n, x, ldx, y, ldy, stream))
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
