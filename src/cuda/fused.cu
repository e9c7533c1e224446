/*
 * fused.cu — the `fused` strategy: tensor-core GEMM (mma.sync m16n8k16, f16 inputs, f32
 * accumulators) that dequantizes each W tile into shared memory as it goes; W never exists
 * dequantized in device memory.
 *
 * Block tile: 64 rows of W x 128 tokens, k in steps of 32; 8 warps (2 along m x 4 along n),
 * each warp 32 rows x 32 tokens = 2 x 4 mma tiles of 16 x 8 (32 f32 accumulators a thread).
 * Data path, per k step s (fourth version):
 * - Raw copy (cp.async, 16-byte, STAGES = 3 deep): the packed bytes of W's rows, as whole
 *   quant blocks ("chunks" of KSW elements: the 256-element super-block for K-quants, which
 *   then serves 8 steps, so its scales arrive once; one 32-element block for the legacy
 *   types; 32 elements for the float types; one block of a unit-codec type, 32, 64 or 256
 *   elements), copied from the 16-byte-aligned address at or below the row's chunk start,
 *   so every row (any row_bytes, any alignment: rows of 17-byte blocks may start at odd bytes) is
 *   copied with 16-byte transfers; the offset (0..15) is kept and added when decoding. Block
 *   size and bytes come from the type's descriptor (qmm_cuda_type, dequant.cuh). X's 128 x 32 f32
 *   tile is copied the same way (cp.async zero-fills tokens >= n and elements >= k).
 * - Decode: each thread decodes one group of 8 consecutive elements of one row (a group never
 *   crosses a scale: every scale covers >= 16 elements) from shared memory with the production
 *   decoder qmm_cuda_group8<T> (exact f32: qmm_cuda_dequant<T> 8 times, the calls sharing the
 *   block address, d/dmin and the scale decode, which the compiler computes once; for a
 *   unit-codec type one call of its codec, a group being one unit), rounds each value once to f16 and
 *   writes the 8 halves with one 16-byte store into the f16 W tile (rows padded to 40 halves
 *   = 80 bytes so that ldmatrix's 8 row addresses fall in 8 different bank groups).
 * - MMA: A fragments by ldmatrix.x4 from the W tile; B fragments straight from the f32 X tile
 *   (float2 loads, rounded once to f16 by __floats2half2_rn; rows padded to 40 floats: the
 *   16 lanes of a half-warp hit 32 different banks).
 * Barriers per step: (1) after the wait for step s's copies — then the copies of step s+2 are
 *   issued into the slot read in step s-1 and the W tile (read by step s-1's MMAs) is
 *   rewritten; (2) after the decode, before the MMAs. Chunk c of W lives in raw slot
 *   c % WSLOTS: WSLOTS = 3 when a chunk is one step (the slot rewritten at step s was last read
 *   at step s-1), 2 for K-quants (a chunk is 8 steps; the chunk loaded at step s replaces the
 *   one that ended at least 6 steps earlier) and for 64-element blocks (2 steps: the
 *   replaced chunk ended at step s - 1).
 * Fallbacks kept exact: a 16-byte piece of W that is not entirely inside [w, w + m*row_bytes)
 * is copied byte by byte (only what is inside); X that is not 16-byte aligned (base or ldx)
 * is copied with 4-byte cp.async.
 * Shared memory (dynamic): X 3 x 128 x 40 x 4 = 61440 bytes, W tile 5120, raw 12288..30720
 * (q6_K: 2 x 64 x 240): at most 97280 bytes, 2 blocks an SM. __launch_bounds__(256, 2).
 * Precision: each element of W is dequantized exactly and rounded once to f16; X is rounded
 * once to f16; products are exact in f32 and summed in f32. Error per output, with
 * u = 2^-11 (f16 unit roundoff) and u32 = 2^-24:
 *     |y - y_exact| <= (2u + u^2 + k*u32) * sum_e |x_e| |w_e|   (plus f16 underflow of tiny
 *     values, |v| < 2^-24 flushed to 0).
 * Batch invariance and determinism: every output is one chain of MMAs over k in steps of 16,
 * in increasing k, whatever n, m, the token's position in its tile or the grid; no atomics,
 * no split-k. Tails: rows >= m are zero rows of the W tile, tokens >= n and elements >= k
 * (float types only; quant types have k a multiple of their block) are zeros, and results
 * outside m x n are not stored. Rows over blockIdx.x (up to 2^31 - 1 tiles), token tiles over
 * blockIdx.y with a grid-stride loop.
 * Requires every |w| <= 65504 (the caller checks this at weights creation); |x| >= 65520
 * becomes Inf (visible, not saturated). Needs sm_80+ (mma.sync f16, ldmatrix, cp.async).
 */
#include <cuda_fp16.h>

#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

namespace {

constexpr int kBM = 64, kBN = 128, kBK = 32, kThreads = 256, kStages = 3;
constexpr int kWPad = kBK + 8; /* halves per W tile row */
constexpr int kXPad = kBK + 8; /* floats per X tile row */
constexpr int kGroup = 8;      /* W elements a thread decodes per step */
static_assert(kBM * kBK == kThreads * kGroup, "one group of W a thread per step");
static_assert(kBN * kBK / 4 % kThreads == 0, "X pieces per thread");

/* Geometry of the raw W copy for type T. */
template <int T> struct FusedGeom {
    static constexpr int qk = qmm_cuda_type<T>::qk, bb = qmm_cuda_type<T>::bytes; /* the descriptor */
    static constexpr int ksw = qk > kBK ? qk : kBK;                 /* elements per chunk */
    static_assert(ksw % kBK == 0 && ksw % qk == 0, "chunk split");
    static_assert((qk & (qk - 1)) == 0, "power-of-two blocks: in-block index by mask");
    static constexpr int steps = ksw / kBK;                          /* steps per chunk */
    static constexpr int chunk_bytes = ksw / qk * bb;                /* packed bytes per row */
    static constexpr int raw = (15 + chunk_bytes + 15) / 16 * 16;    /* shared bytes per row */
    static constexpr int pieces = raw / 16;                          /* 16-byte copies per row */
    static constexpr int slots = steps == 1 ? kStages : 2;
    /* The chunk issued at step s (for steps s + kStages - 1 ..) replaces the one `slots`
     * chunks earlier, whose last step s + kStages - 1 - (slots - 1) * steps must be <= s - 1
     * (read before this step's first barrier). */
    static_assert((slots - 1) * steps >= kStages - 1, "raw slot reuse distance");
    static constexpr int x_bytes = kStages * kBN * kXPad * 4;
    static constexpr int w_bytes = kBM * kWPad * 2;
    static constexpr int smem = x_bytes + w_bytes + slots * kBM * raw;
};

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async4(void *dst, const void *src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t half2_bits(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b); /* a in the low half */
    return *(const uint32_t *)&h;
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const half *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p))
                 : "memory");
}

__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Issues the copies of step s: X's 128 x 32 tile into slot s % kStages and, when step s starts a
 * chunk of W, the chunk's packed bytes of the 64 rows into raw slot chunk % slots. */
template <int T>
__device__ __forceinline__ void fused_issue(int64_t s, float *sx, uint8_t *sraw, const uint8_t *__restrict__ w,
                                            const uint8_t *w_end, size_t row_bytes, int64_t m0, int64_t m,
                                            int64_t k, const float *__restrict__ x, int64_t ldx, int64_t n0,
                                            int64_t n, bool xvec) {
    using G = FusedGeom<T>;
    const int tid = threadIdx.x;
    const int64_t k0 = s * kBK;
    float *dx = sx + (int)(s % kStages) * (kBN * kXPad);
#pragma unroll
    for (int i = 0; i < kBN * kBK / 4 / kThreads; i++) {
        const int c = tid + i * kThreads, tok = c / (kBK / 4), part = c % (kBK / 4);
        const int64_t t = n0 + tok, e = k0 + 4 * part;
        float *dst = dx + tok * kXPad + 4 * part;
        const int64_t left = t < n ? k - e : 0; /* valid elements from e on */
        const float *src = x + (t < n ? t : 0) * ldx + (left > 0 ? e : 0);
        if (xvec && left >= 4) {
            cp_async16(dst, src, 16);
        } else { /* partial or empty quads too: a 16-byte copy with src-size < 16 would still
                  * name bytes past the end of X (compute-sanitizer reports it) */
#pragma unroll
            for (int j = 0; j < 4; j++) cp_async4(dst + j, left > j ? src + j : src, left > j ? 4 : 0);
        }
    }
    if (s % G::steps == 0) {
        const int64_t c = s / G::steps;
        uint8_t *dw = sraw + (int)(c % G::slots) * (kBM * G::raw);
        const int64_t boff = c * G::ksw / G::qk * G::bb; /* the chunk's byte offset in a row */
        for (int p = tid; p < kBM * G::pieces; p += kThreads) {
            const int r = p / G::pieces, piece = p % G::pieces;
            if (m0 + r >= m) continue; /* never decoded */
            const uint8_t *a = w + (m0 + r) * (int64_t)row_bytes + boff;
            if (16 * piece >= (int)((uintptr_t)a & 15u) + G::chunk_bytes) continue; /* past the chunk */
            const uint8_t *src = (const uint8_t *)((uintptr_t)a & ~(uintptr_t)15) + 16 * piece;
            uint8_t *dst = dw + r * G::raw + 16 * piece;
            if (src >= w && src + 16 <= w_end) {
                cp_async16(dst, src, 16);
            } else {
                for (int j = 0; j < 16; j++) dst[j] = (src + j >= w && src + j < w_end) ? src[j] : 0;
            }
        }
    }
}

template <int T>
__global__ void __launch_bounds__(kThreads, 2)
fused_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k, int64_t n,
             const float *__restrict__ x, int64_t ldx, float *__restrict__ y, int64_t ldy) {
    using G = FusedGeom<T>;
    extern __shared__ __align__(16) uint8_t fused_smem[];
    float *sx = (float *)fused_smem;
    half *sw = (half *)(fused_smem + G::x_bytes);
    uint8_t *sraw = fused_smem + G::x_bytes + G::w_bytes;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp & 1, wn = warp >> 1; /* warp's 32 rows and 32 tokens in the tile */
    const int64_t m0 = (int64_t)blockIdx.x * kBM;
    const int64_t ntiles = (n + kBN - 1) / kBN, ksteps = (k + kBK - 1) / kBK;
    const bool xvec = ((uintptr_t)x & 15u) == 0 && (ldx & 3) == 0;
    const uint8_t *w_end = w + m * (int64_t)row_bytes;

    /* This thread's decode group: row drow, elements 8*dgrp..8*dgrp+7 of each step. */
    const int drow = tid / (kBK / kGroup), dgrp = tid % (kBK / kGroup);
    const bool drow_ok = m0 + drow < m;
    const uint8_t *drow_ptr = w + (drow_ok ? m0 + drow : 0) * (int64_t)row_bytes;
    uint4 *wdst = (uint4 *)(sw + drow * kWPad + kGroup * dgrp);

    for (int64_t tile = blockIdx.y; tile < ntiles; tile += gridDim.y) {
        const int64_t n0 = tile * kBN;
        float acc[2][4][4];
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int v = 0; v < 4; v++) acc[i][j][v] = 0.0f;

#pragma unroll
        for (int s = 0; s < kStages - 1; s++) {
            if (s < ksteps) fused_issue<T>(s, sx, sraw, w, w_end, row_bytes, m0, m, k, x, ldx, n0, n, xvec);
            cp_async_commit();
        }

        for (int64_t s = 0; s < ksteps; s++) {
            cp_async_wait<kStages - 2>();
            __syncthreads(); /* step s's copies visible; step s-1's reads of its slots done */
            if (s + kStages - 1 < ksteps)
                fused_issue<T>(s + kStages - 1, sx, sraw, w, w_end, row_bytes, m0, m, k, x, ldx, n0, n, xvec);
            cp_async_commit();

            /* Decode: 8 elements of row drow at k = s*32 + 8*dgrp, exact, rounded once to f16. */
            {
                const int64_t c = s / G::steps;
                const uint8_t *raw = sraw + (int)(c % G::slots) * (kBM * G::raw) + drow * G::raw;
                const int64_t boff = c * G::ksw / G::qk * G::bb;
                raw += (int)(((uintptr_t)(drow_ptr + boff)) & 15u); /* the chunk's first block */
                const int e0 = (int)(s % G::steps) * kBK + kGroup * dgrp; /* element in the chunk */
                const int64_t left = k - (s * kBK + kGroup * dgrp);     /* float types' k tail */
                /* The group's block and its first element in the block, written so that the
                 * compiler sees i0 + j (j < 8) stay in one block: the 8 calls then share the
                 * block address, d/dmin and the scale decode. */
                const uint8_t *blk = raw + (G::qk > 1 ? e0 / G::qk * G::bb : 0);
                const unsigned i0 = G::qk > 1 ? ((unsigned)e0 & (unsigned)(G::qk - 1) & ~7u) : (unsigned)e0;
                float v[kGroup];
                if (drow_ok && (G::qk > 1 || left >= kGroup)) {
                    qmm_cuda_group8<T>(blk, i0, v);
                } else {
#pragma unroll
                    for (int j = 0; j < kGroup; j++)
                        v[j] = drow_ok && j < left ? qmm_cuda_dequant<T>(blk, (int64_t)(i0 | (unsigned)j)) : 0.0f;
                }
                *wdst = make_uint4(half2_bits(v[0], v[1]), half2_bits(v[2], v[3]), half2_bits(v[4], v[5]),
                                   half2_bits(v[6], v[7]));
            }
            __syncthreads(); /* W tile complete */

            const float *xs = sx + (int)(s % kStages) * (kBN * kXPad);
#pragma unroll
            for (int kk = 0; kk < kBK; kk += 16) {
                uint32_t a[2][4];
#pragma unroll
                for (int i = 0; i < 2; i++)
                    ldmatrix_x4(a[i], &sw[(32 * wm + 16 * i + (lane & 15)) * kWPad + kk + 8 * (lane >> 4)]);
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    /* B fragment: token 8j + lane/4 of the warp's 32, k = kk + 2(lane%4) (+1, +8, +9). */
                    const float *xp = xs + (32 * wn + 8 * j + (lane >> 2)) * kXPad + kk + 2 * (lane & 3);
                    const float2 lo = *(const float2 *)xp, hi = *(const float2 *)(xp + 8);
                    const uint32_t b0 = half2_bits(lo.x, lo.y), b1 = half2_bits(hi.x, hi.y);
#pragma unroll
                    for (int i = 0; i < 2; i++) mma_16816(acc[i][j], a[i], b0, b1);
                }
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
        cp_async_wait<0>();
        __syncthreads(); /* the next tile's first copies go to slots read in this tile */
    }
}

template <int T> struct FusedLaunch {
    static void run(const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                    int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
        const int64_t ntiles = (n + kBN - 1) / kBN;
        dim3 grid((unsigned)((m + kBM - 1) / kBM), (unsigned)(ntiles < 65535 ? ntiles : 65535));
        if (cudaFuncSetAttribute(fused_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, FusedGeom<T>::smem) !=
            cudaSuccess)
            return; /* the error stays set; the caller reads it with cudaGetLastError */
        fused_kernel<T><<<grid, kThreads, FusedGeom<T>::smem, s>>>((const uint8_t *)w, row_bytes, m, k, n, x, ldx,
                                                                   y, ldy);
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
