/*
 * half.cu — the `fused` strategy's kernel on the int8 repack (the HALF class: f16 operands,
 * f32 accumulation). W is read from the int8 strategy's fragment-order copy (int8.cu: nibbles
 * for q4_0/q4_1/q4_K, int8 quants otherwise, f32 scale and min per sub-block) and decoded to
 * f16 in registers; X is rounded to f16 once per call (h16_x_kernel); mma.sync m16n8k16 with
 * f32 accumulators, one chain of MMAs over k (or over a split of k) in increasing steps of 16.
 * A second kernel, h16_wg_kernel (sm_90a), feeds the same A fragments to wgmma m64nNk16 with X
 * from shared memory; forced only for now (h16_choose says why).
 *
 * Values. Every W element is the f16 rounding (RNE) of its exact f32 dequantized value — the
 * same f16 as the cached_f16 copy and the shared-memory kernel of fused.cu:
 * - q4_0, q5_0, q8_0 (no min, d_w = the block's f16 d): the quant q (|q| <= 128) is made an
 *   exact f16 by the magic-number trick (nibble or byte ORed into the mantissa of 1024, one
 *   f16 subtraction or FMA), then one f16 multiply by d: mul.rn.f16x2 rounds the exact
 *   product d*q once, and d*q is exact in f32 (<= 19 bits), so the result is RNE16(fl32(d*q)).
 * - the others: q as above, converted to f32 (exact), w = fma(d_w, q, mn_w) in f32 (d_w * q is
 *   exact, so this equals the type's fl32(fl32(d_w * q) + mn_w)), rounded once to f16
 *   (cvt.rn.f16x2.f32).
 * Error bound per output (docs/CUDA.md "Strategies"), u = 2^-11, u32 = 2^-24:
 *     |y - y_exact| <= (2u + u^2 + k*u32) * sum_e |x_e| |w_e|   (+ f16 underflow, |v| < 2^-24).
 *
 * Fragment order. The repack gives lane L = 4g + t, for 16 rows and 64 columns, the bytes of
 * columns 4t..4t+3 (and 16 + 4t..) of rows g and g + 8 (the A fragment of mma.m16n8k32). The
 * f16 MMA m16n8k16 wants, per 16 columns, slots 2t, 2t+1, 2t+8, 2t+9 of rows g, g+8. The dot
 * product over a 16-column group does not depend on which slot holds which column as long as
 * A and B agree, so slot 2t + e holds column 4t + 2e and slot 8 + 2t + e column 4t + 1 + 2e:
 * the half2 of bytes 0 and 2 (one LOP3 on the nibble word) is slots (2t, 2t+1), that of bytes
 * 1 and 3 slots (2t+8, 2t+9). X is stored to match: within each 16 columns the 8 even columns,
 * then the 8 odd ones (h16_x_kernel), and B is loaded by ldmatrix as for a plain row.
 *
 * Kernel: CTA of WM x WN warps, warp tile 16*MI W rows x 8*NI X rows (MI x NI MMA tiles), k in
 * stages of 64 columns through a cp.async pipeline of S stages: the W tiles of the stage (one
 * linear run), the X rows (128 bytes, padded to 144 in shared memory: ldmatrix conflict-free),
 * the stage's W scales (and mins). An output's MMA chain does not depend on the tile, so the
 * tile choice (h16_choose, from m, n and k) never changes a result. Where the tiles are too
 * few to fill the GPU the stages are split over blockIdx.z (split-k): each split's chain goes
 * to the workspace and i8_reduce_kernel adds the partials in split order, another grouping of
 * the sum; the split depends on n, so it is never made in batch-invariant mode (one chain per
 * output there). Deterministic: no atomics.
 * Sources: PTX ISA "Matrix Fragments for mma.m16n8k16 with floating point type", "ldmatrix".
 */
#include <stdint.h>

#include <cuda_fp16.h>

#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"
#include "cuda/int8_layout.cuh"

#define H16_BK 64                 /* columns per pipeline stage */
#define H16_XROW (H16_BK * 2 + 16) /* shared X row stride in bytes */

/* ---------------------------------------------------------------------------------------
 * X: f32 rows -> f16 (RNE) in the permuted column order, n_pad x k_pad, padding zero.
 * ------------------------------------------------------------------------------------- */

/* Thread (row j, quarter q of the group c of 16 columns: columns 16c + 4q .. + 3): columns 4q
 * and 4q + 2 go to positions 2q, 2q + 1 (word q of the group), columns 4q + 1 and 4q + 3 to
 * 8 + 2q, 9 + 2q (word 4 + q): position p < 8 <- column 16c + 2p, p >= 8 <- 16c + 2(p - 8) + 1.
 * vec: X rows 16-byte aligned (x and ldx), so a quarter inside k is one float4 load and a
 * warp reads 512 contiguous bytes of a row per load. Both loads give the same floats. */
__global__ void h16_x_kernel(const float *__restrict__ x, int64_t n, int64_t n_pad, int64_t k, int64_t ldx,
                             int64_t k_pad, int vec, uint16_t *__restrict__ dst) {
    const int64_t quarters = k_pad / 4, total = n_pad * quarters;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = idx / quarters, c4 = idx - j * quarters, col = 4 * c4;
        float4 v;
        if (vec && j < n && col + 4 <= k) {
            v = __ldg((const float4 *)(x + j * ldx + col));
        } else {
            const bool in = j < n;
            v.x = in && col < k ? x[j * ldx + col] : 0.0f;
            v.y = in && col + 1 < k ? x[j * ldx + col + 1] : 0.0f;
            v.z = in && col + 2 < k ? x[j * ldx + col + 2] : 0.0f;
            v.w = in && col + 3 < k ? x[j * ldx + col + 3] : 0.0f;
        }
        const __half2 even = __floats2half2_rn(v.x, v.z), odd = __floats2half2_rn(v.y, v.w);
        uint32_t *d = (uint32_t *)(dst + j * k_pad + 16 * (c4 >> 2)) + (c4 & 3);
        memcpy(d, &even, 4);
        memcpy(d + 4, &odd, 4);
    }
}

/* ---------------------------------------------------------------------------------------
 * W decode: one half2 register of the f16 A fragment
 * ------------------------------------------------------------------------------------- */

/* How a type's values are formed from its repacked quants (see the top of this file). */
enum { H16_HMUL = 0, H16_F32 = 1 };
template <int T> struct h16_mode {
    static constexpr int v = (T == QMM_TYPE_Q4_0 || T == QMM_TYPE_Q5_0 || T == QMM_TYPE_Q8_0) ? H16_HMUL : H16_F32;
};

__device__ __forceinline__ uint32_t h2_sub(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("sub.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
__device__ __forceinline__ uint32_t h2_fma(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ uint32_t h2_mul(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
__device__ __forceinline__ uint32_t h2_splat(float v) { /* v exactly representable in f16 */
    const uint32_t h = __half_as_ushort(__float2half_rn(v));
    return h | h << 16;
}

/* The exact quants of two elements as an f16x2: x is the raw half2 "1024 + q" (LO: nibble or
 * byte in the low mantissa bits) or "1024 + 16q" (HI: the high nibble), OFF the value offset. */
template <int FMT, bool HI> __device__ __forceinline__ uint32_t h16_quants(uint32_t x) {
    constexpr int OFF = FMT == I8_FMT_NIB_S ? 8 : FMT == I8_FMT_S8 ? 128 : 0;
    if constexpr (HI) /* (1024 + 16q) / 16 - (64 + OFF) = q - OFF, exact */
        return h2_fma(x, 0x2C002C00u /* 1/16 */, h2_splat(-(64.0f + OFF)));
    else
        return h2_sub(x, h2_splat(1024.0f + OFF));
}

/* The f16x2 of W values from the exact quants q2 of one row with scale dw and min mw. */
template <int MODE, bool MIN> __device__ __forceinline__ uint32_t h16_values(uint32_t q2, uint32_t d2, float dw, float mw) {
    if constexpr (MODE == H16_HMUL) {
        return h2_mul(q2, d2);
    } else {
        __half2 qh;
        memcpy(&qh, &q2, 4);
        const float2 q = __half22float2(qh);
        const float lo = MIN ? __fmaf_rn(dw, q.x, mw) : __fmul_rn(dw, q.x);
        const float hi = MIN ? __fmaf_rn(dw, q.y, mw) : __fmul_rn(dw, q.y);
        const __half2 r = __floats2half2_rn(lo, hi);
        uint32_t u;
        memcpy(&u, &r, 4);
        return u;
    }
}

/* Raw half2 of bytes (0, 2) (B13 = false) or (1, 3) of word p: nibble formats take the low
 * (HI = false) or high nibble, s8 the byte with its sign bit flipped (p pre-XORed). */
template <int FMT, bool HI, bool B13> __device__ __forceinline__ uint32_t h16_raw(uint32_t p) {
    if constexpr (FMT == I8_FMT_S8) {
        return __byte_perm(p, 0x64646464u, B13 ? 0x4341 : 0x4240);
    } else {
        const uint32_t v = B13 ? p >> 8 : p;
        return (v & (HI ? 0x00F000F0u : 0x000F000Fu)) | 0x64006400u;
    }
}

/* The four A registers of one m16 x k16 MMA: words pg (row g) and pg8 (row g + 8) of the
 * 16-column group, the scales (and f16 splat for HMUL) of both rows. */
template <int FMT, int MODE, bool MIN, bool HI>
__device__ __forceinline__ void h16_fragment(uint32_t pg, uint32_t pg8, const float (&dw)[2], const float (&mw)[2],
                                             const uint32_t (&d2)[2], uint32_t (&a)[4]) {
    a[0] = h16_values<MODE, MIN>(h16_quants<FMT, HI>(h16_raw<FMT, HI, false>(pg)), d2[0], dw[0], mw[0]);
    a[1] = h16_values<MODE, MIN>(h16_quants<FMT, HI>(h16_raw<FMT, HI, false>(pg8)), d2[1], dw[1], mw[1]);
    a[2] = h16_values<MODE, MIN>(h16_quants<FMT, HI>(h16_raw<FMT, HI, true>(pg)), d2[0], dw[0], mw[0]);
    a[3] = h16_values<MODE, MIN>(h16_quants<FMT, HI>(h16_raw<FMT, HI, true>(pg8)), d2[1], dw[1], mw[1]);
}

__device__ __forceinline__ void h16_mma(const uint32_t (&a)[4], uint32_t b0, uint32_t b1, float (&c)[4]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* ldmatrix.x4 (as i8_ldsm_x4) without a memory clobber, so that the compiler may keep shared
 * loads of the scales across it; the barriers order it against the cp.async copies. */
__device__ __forceinline__ void h16_ldsm_x4(uint32_t (&r)[4], const void *p) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

/* ---------------------------------------------------------------------------------------
 * GEMM
 * ------------------------------------------------------------------------------------- */

/* out + z * zs + j * ldo + i receives output (i, j) (of split z when split, else the sum). */
struct h16_args {
    const uint8_t *wq;
    const float *wd, *wm;
    const uint16_t *x16;
    float *out;
    int64_t ldo, zs, m, m_pad, nc, k_pad;
    int nblk; /* 32-blocks of k */
    int sps;  /* stages per split (blockIdx.z) */
};

/* WM x WN warps, each MI x NI MMA tiles (16 W rows x 8 X rows each). */
template <int G, bool MIN, int FMT, int WM, int WN, int MI, int NI, int S> struct h16_geom {
    static constexpr int BM = 16 * MI * WM, BN = 8 * NI * WN, THREADS = 32 * WM * WN, NS = H16_BK / G;
    static constexpr int TB = i8_tile_bytes<FMT>::v;
    static constexpr int W_BYTES = BM / 16 * TB, X_BYTES = BN * H16_XROW;
    static constexpr int OFF_X = W_BYTES, OFF_DW = OFF_X + X_BYTES, OFF_MW = OFF_DW + NS * BM * 4;
    static constexpr int STAGE = OFF_MW + (MIN ? NS * BM * 4 : 0);
    static constexpr int SMEM = STAGE * S;
    static_assert(STAGE % 16 == 0 && BM % 64 == 0 && 128 % BN == 0 && NI % 2 == 0 && (MI == 2 || MI == 4),
                  "stage alignment, 64-row scale groups, X rows within n_pad, warp rows of 32 or 64");
};

/* The 16-byte copies of stage st's W tiles (one linear run) and W scales (and mins) into
 * stage slot s, shared by both kernels (geometry Q: BM, NS, TB, W_BYTES, OFF_DW, OFF_MW;
 * T threads). Fixed trip counts (unrolled). */
template <class Q, bool MIN, int T>
__device__ __forceinline__ void h16_copy_w_scales(uint8_t *s, const h16_args &a, int st, int64_t i0, int64_t mt16,
                                                  int tid) {
    constexpr int NWC = Q::W_BYTES / 16, NSC = Q::NS * Q::BM / 4 * (MIN ? 2 : 1);
    const uint8_t *wb = a.wq + ((int64_t)st * mt16 + i0 / 16) * Q::TB + 16 * tid;
#pragma unroll
    for (int it = 0; it < (NWC + T - 1) / T; it++)
        if (NWC % T == 0 || tid + it * T < NWC) i8_cp16(s + 16 * tid + 16 * T * it, wb + 16 * T * it);
#pragma unroll
    for (int it = 0; it < (NSC + T - 1) / T; it++) {
        const int c = tid + it * T;
        if (NSC % T == 0 || c < NSC) {
            const bool mins = MIN && c >= NSC / 2;
            const int cc = mins ? c - NSC / 2 : c, sub = cc / (Q::BM / 4), col = 4 * (cc % (Q::BM / 4));
            const float *src = (mins ? a.wm : a.wd) + ((int64_t)st * Q::NS + sub) * a.m_pad + i0 + col;
            i8_cp16(s + (mins ? Q::OFF_MW : Q::OFF_DW) + 4 * (sub * Q::BM + col), src);
        }
    }
}

template <int G, bool MIN, int FMT, int MODE, int WM, int WN, int MI, int NI, int S>
__global__ void __launch_bounds__(32 * WM * WN) h16_gemm_kernel(const h16_args a) {
    typedef h16_geom<G, MIN, FMT, WM, WN, MI, NI, S> Q;
    extern __shared__ __align__(16) uint8_t h16_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2;
    const int wm = warp % WM, wn = warp / WM;
    const int64_t i0 = (int64_t)blockIdx.x * Q::BM, j0 = (int64_t)blockIdx.y * Q::BN;
    const int nst_all = (a.nblk + 1) / 2; /* stages holding data */
    const int st0 = (int)blockIdx.z * a.sps, st1 = min(nst_all, st0 + a.sps);
    const int64_t mt16 = a.m_pad / 16;

    /* The 16-byte copies of stage st into slot: W tiles and scales (h16_copy_w_scales), X rows.
     * Addresses from a per-stage base plus offsets that are constants or formed once per
     * thread (no per-copy registers). */
    constexpr int T = Q::THREADS, NXC = Q::BN * 8;
    static_assert(T % 8 == 0, "whole X rows per pass");
    const int64_t xrow = 2 * a.k_pad, xstep = (T / 8) * xrow; /* bytes per X row, per pass */
    const uint8_t *const xsrc = (const uint8_t *)(a.x16 + j0 * a.k_pad) + (tid >> 3) * xrow + 16 * (tid & 7);
    const int xdst = Q::OFF_X + (tid >> 3) * H16_XROW + 16 * (tid & 7);
    auto load = [&](int slot, int st) {
        uint8_t *s = h16_smem + slot * Q::STAGE;
        h16_copy_w_scales<Q, MIN, T>(s, a, st, i0, mt16, tid);
        const uint8_t *xb = xsrc + 2 * H16_BK * (int64_t)st;
#pragma unroll
        for (int it = 0; it < (NXC + T - 1) / T; it++)
            if (NXC % T == 0 || tid + it * T < NXC) i8_cp16(s + xdst + it * (T / 8) * H16_XROW, xb + it * xstep);
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;

    /* this warp's rows in the permuted scale layout: rows 16mi + 8e + g of its 64-row group
     * at 8g + 2mi + e; a 32-row warp holds half of a group (mi 0, 1 of the group's 0..3) */
    const int rows0 = 16 * MI * wm;
    const int spos = (rows0 & ~63) + 8 * g + (MI == 2 ? 4 * ((rows0 >> 5) & 1) : 0);

#pragma unroll
    for (int i = 0; i < S - 1; i++) {
        if (st0 + i < st1) load(i, st0 + i);
        i8_commit();
    }
    for (int st = st0; st < st1; st++) {
        i8_wait<S - 2>();
        __syncthreads(); /* stage st landed; every warp is done with the slot refilled next */
        if (st + S - 1 < st1) load((st - st0 + S - 1) % S, st + S - 1);
        i8_commit();
        const uint8_t *s = h16_smem + ((st - st0) % S) * Q::STAGE;
        /* the lane's quant words of its MI m16 tiles: nibbles 4 words (both 32-column halves),
         * s8 4 words per half */
        uint32_t pk[MI][FMT == I8_FMT_S8 ? 8 : 4];
#pragma unroll
        for (int mi = 0; mi < MI; mi++) {
            const uint8_t *tile = s + (MI * wm + mi) * Q::TB + 16 * lane;
            const uint4 v = *(const uint4 *)tile;
            pk[mi][0] = v.x, pk[mi][1] = v.y, pk[mi][2] = v.z, pk[mi][3] = v.w;
            if constexpr (FMT == I8_FMT_S8) {
                const uint4 u = *(const uint4 *)(tile + 512);
                pk[mi][4] = u.x, pk[mi][5] = u.y, pk[mi][6] = u.z, pk[mi][7] = u.w;
#pragma unroll
                for (int j = 0; j < 8; j++) pk[mi][j] ^= 0x80808080u;
            }
        }
        float dw[MI][2], mw[MI][2];
        uint32_t d2[MI][2];
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            if (2 * st + (kk >> 1) >= a.nblk) break; /* the padding block of an odd nblk */
            const int h = kk >> 1, c = kk & 1;
            if (G == 16 || c == 0) { /* the scales of sub-block kk (G = 16) or h (G = 32) */
                const int sub = G == 32 ? h : kk;
                const float *sd = (const float *)(s + Q::OFF_DW) + sub * Q::BM + spos;
                const float *sm = (const float *)(s + Q::OFF_MW) + sub * Q::BM + spos;
#pragma unroll
                for (int q = 0; q < MI / 2; q++) {
                    const float4 d4 = *(const float4 *)(sd + 4 * q);
                    dw[2 * q][0] = d4.x, dw[2 * q][1] = d4.y, dw[2 * q + 1][0] = d4.z, dw[2 * q + 1][1] = d4.w;
                    if (MIN) {
                        const float4 m4 = *(const float4 *)(sm + 4 * q);
                        mw[2 * q][0] = m4.x, mw[2 * q][1] = m4.y, mw[2 * q + 1][0] = m4.z, mw[2 * q + 1][1] = m4.w;
                    }
                }
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    if (!MIN) mw[mi][0] = mw[mi][1] = 0.0f;
                    if (MODE == H16_HMUL) d2[mi][0] = h2_splat(dw[mi][0]), d2[mi][1] = h2_splat(dw[mi][1]);
                    else d2[mi][0] = d2[mi][1] = 0;
                }
            }
            uint32_t A[MI][4];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                const int jw = FMT == I8_FMT_S8 ? 4 * h + 2 * c : 2 * c;
                if (FMT != I8_FMT_S8 && h == 1)
                    h16_fragment<FMT, MODE, MIN, true>(pk[mi][jw], pk[mi][jw + 1], dw[mi], mw[mi], d2[mi], A[mi]);
                else
                    h16_fragment<FMT, MODE, MIN, false>(pk[mi][jw], pk[mi][jw + 1], dw[mi], mw[mi], d2[mi], A[mi]);
            }
#pragma unroll
            for (int p = 0; p < NI / 2; p++) {
                uint32_t b[4];
                h16_ldsm_x4(b, s + Q::OFF_X + (wn * 8 * NI + 16 * p + ((lane >> 4) & 1) * 8 + (lane & 7)) * H16_XROW +
                                   32 * kk + ((lane >> 3) & 1) * 16);
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    h16_mma(A[mi], b[0], b[1], acc[mi][2 * p]);
                    h16_mma(A[mi], b[2], b[3], acc[mi][2 * p + 1]);
                }
            }
        }
    }
    i8_wait<0>();

    const int t = lane & 3;
    float *out = a.out + (int64_t)blockIdx.z * a.zs;
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t i = i0 + rows0 + 16 * mi + 8 * (e >> 1) + g;
                const int64_t j = j0 + wn * 8 * NI + 8 * ni + 2 * t + (e & 1);
                if (i < a.m && j < a.nc) out[j * a.ldo + i] = acc[mi][ni][e];
            }
}

/* ---------------------------------------------------------------------------------------
 * GEMM with wgmma (sm_90a): the same W fragments, one warpgroup per 64 W rows
 * ------------------------------------------------------------------------------------- */

/* The A operand of `wgmma.mma_async.m64nNk16` in registers is, per warp w of the warpgroup,
 * rows 16w..16w+15 in the register layout of mma.m16n8k16's A fragment: the four registers
 * h16_fragment makes. B (X, N tokens x 16 columns) is read from shared memory through a
 * matrix descriptor, K-major without swizzle: 8 x 8 core matrices of 128 contiguous bytes
 * (token r of the core matrix at 16r), core matrix (token group ng, column group kc) of a
 * stage at (8 ng + kc) * 128, so the leading (k) offset is 128 bytes and the stride (token)
 * offset 1024. The accumulator layout is mma.m16n8k16's C fragment per 8 tokens. Sources:
 * PTX ISA "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (register fragments,
 * shared memory matrix layout, matrix descriptor). */
template <int N> __device__ __forceinline__ void h16_wgmma(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc);
template <> __device__ __forceinline__ void h16_wgmma<64>(float (&d)[32], const uint32_t (&a)[4], uint64_t desc) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, 1, 1, 1, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
template <> __device__ __forceinline__ void h16_wgmma<128>(float (&d)[64], const uint32_t (&a)[4], uint64_t desc) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, 1, 1, 1, 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
__device__ __forceinline__ uint64_t h16_wg_desc(unsigned saddr) {
    return (uint64_t)((saddr >> 4) & 0x3FFF) | (uint64_t)(128 >> 4) << 16 | (uint64_t)(1024 >> 4) << 32;
}
template <int N> __device__ __forceinline__ void h16_wg_pin(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* WGM warpgroups along W rows (64 each), BN X rows, S stages (S - 2 copies in flight). */
template <int G, bool MIN, int FMT, int WGM, int BN, int S> struct h16_wg_geom {
    static constexpr int BM = 64 * WGM, THREADS = 128 * WGM, NS = H16_BK / G;
    static constexpr int TB = i8_tile_bytes<FMT>::v;
    static constexpr int W_BYTES = BM / 16 * TB, X_BYTES = BN * 2 * H16_BK;
    static constexpr int OFF_X = W_BYTES, OFF_DW = OFF_X + X_BYTES, OFF_MW = OFF_DW + NS * BM * 4;
    static constexpr int STAGE = OFF_MW + (MIN ? NS * BM * 4 : 0);
    static constexpr int SMEM = STAGE * S;
    static_assert(STAGE % 128 == 0 && 128 % BN == 0 && BN % 64 == 0 && S >= 3,
                  "core-matrix alignment, X rows within n_pad, wgmma N of 64 or 128, a copy in flight");
};

template <int G, bool MIN, int FMT, int MODE, int WGM, int BN, int S>
__global__ void __launch_bounds__(128 * WGM) h16_wg_kernel(const h16_args a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef h16_wg_geom<G, MIN, FMT, WGM, BN, S> Q;
    extern __shared__ __align__(128) uint8_t h16_wg_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3, wg = warp >> 2, w = warp & 3;
    const int64_t i0 = (int64_t)blockIdx.x * Q::BM, j0 = (int64_t)blockIdx.y * BN;
    const int nst_all = (a.nblk + 1) / 2;
    const int st0 = (int)blockIdx.z * a.sps, st1 = min(nst_all, st0 + a.sps);
    const int64_t mt16 = a.m_pad / 16;

    /* copy c of the X rows: token 8 (c / 64) + c % 8, columns 8 ((c / 8) % 8) .. + 7 of the
     * stage, to byte 16 c of the slot's X (its core matrix (c / 64, (c / 8) % 8), row c % 8) */
    constexpr int T = Q::THREADS, NXC = BN * 8;
    auto load = [&](int slot, int st) {
        uint8_t *s = h16_wg_smem + slot * Q::STAGE;
        h16_copy_w_scales<Q, MIN, T>(s, a, st, i0, mt16, tid);
#pragma unroll
        for (int it = 0; it < (NXC + T - 1) / T; it++) {
            const int c = tid + it * T;
            if (NXC % T == 0 || c < NXC) {
                const int64_t tok = j0 + 8 * (c >> 6) + (c & 7);
                i8_cp16(s + Q::OFF_X + 16 * c, a.x16 + tok * a.k_pad + H16_BK * (int64_t)st + 8 * ((c >> 3) & 7));
            }
        }
    };

    float acc[BN / 2];
#pragma unroll
    for (int e = 0; e < BN / 2; e++) acc[e] = 0.0f;
    /* rows g and g + 8 of this warp's m16 tile (tile 4 wg + w of the CTA) in the permuted
     * scale layout: positions 8g + 2w + e of the warpgroup's 64-row group */
    const int spos = 64 * wg + 8 * g + 2 * w;

#pragma unroll
    for (int i = 0; i < S - 2; i++) {
        if (st0 + i < st1) load(i, st0 + i);
        i8_commit();
    }
    /* One stage with A fragments `A`. Its MMAs stay in flight past the next stage's decode
     * (wait_group 1), so consecutive stages write two register sets (A0, A1): a set is
     * written again only after the group that read it is complete (PTX: the registers of
     * an in-flight wgmma must not be modified). */
    auto step = [&](int st, uint32_t (&A)[4][4]) {
        i8_wait<S - 3>();
        /* this thread's cp.async writes (generic proxy) made visible to wgmma's reads (async
         * proxy), then the barrier for the other threads' */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads(); /* stage st landed; every warpgroup's MMAs of stage st - 2 are done */
        if (st + S - 2 < st1) load((st - st0 + S - 2) % S, st + S - 2);
        i8_commit();
        const uint8_t *s = h16_wg_smem + ((st - st0) % S) * Q::STAGE;
        uint32_t pk[FMT == I8_FMT_S8 ? 8 : 4];
        {
            const uint8_t *tile = s + (4 * wg + w) * Q::TB + 16 * lane;
            const uint4 v = *(const uint4 *)tile;
            pk[0] = v.x, pk[1] = v.y, pk[2] = v.z, pk[3] = v.w;
            if constexpr (FMT == I8_FMT_S8) {
                const uint4 u = *(const uint4 *)(tile + 512);
                pk[4] = u.x, pk[5] = u.y, pk[6] = u.z, pk[7] = u.w;
#pragma unroll
                for (int j = 0; j < 8; j++) pk[j] ^= 0x80808080u;
            }
        }
        const bool two = 2 * st + 1 < a.nblk; /* else the second 32-block is the padding of an odd nblk */
        float dw[2], mw[2] = {0.0f, 0.0f};
        uint32_t d2[2] = {0, 0};
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            const int h = kk >> 1, c = kk & 1;
            if (G == 16 || c == 0) {
                const int sub = G == 32 ? h : kk;
                const float2 d = *(const float2 *)((const float *)(s + Q::OFF_DW) + sub * Q::BM + spos);
                dw[0] = d.x, dw[1] = d.y;
                if (MIN) {
                    const float2 m = *(const float2 *)((const float *)(s + Q::OFF_MW) + sub * Q::BM + spos);
                    mw[0] = m.x, mw[1] = m.y;
                }
                if (MODE == H16_HMUL) d2[0] = h2_splat(dw[0]), d2[1] = h2_splat(dw[1]);
            }
            const int jw = FMT == I8_FMT_S8 ? 4 * h + 2 * c : 2 * c;
            if (FMT != I8_FMT_S8 && h == 1)
                h16_fragment<FMT, MODE, MIN, true>(pk[jw], pk[jw + 1], dw, mw, d2, A[kk]);
            else
                h16_fragment<FMT, MODE, MIN, false>(pk[jw], pk[jw + 1], dw, mw, d2, A[kk]);
        }
        const unsigned xs = (unsigned)__cvta_generic_to_shared(s + Q::OFF_X);
        h16_wg_pin(acc);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
            if (kk < 2 || two) h16_wgmma<BN>(acc, A[kk], h16_wg_desc(xs + 256 * kk));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        h16_wg_pin(acc);
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    };
    uint32_t A0[4][4], A1[4][4];
    for (int st = st0; st < st1; st += 2) {
        step(st, A0);
        if (st + 1 < st1) step(st + 1, A1);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    h16_wg_pin(acc);
    i8_wait<0>();

    float *out = a.out + (int64_t)blockIdx.z * a.zs;
#pragma unroll
    for (int ni = 0; ni < BN / 8; ni++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int64_t i = i0 + 64 * wg + 16 * w + 8 * (e >> 1) + g;
            const int64_t j = j0 + 8 * ni + 2 * t + (e & 1);
            if (i < a.m && j < a.nc) out[j * a.ldo + i] = acc[4 * ni + e];
        }
#else
    __trap(); /* never launched: h16_wg_available() is false where this code is loaded */
#endif
}

/* ---------------------------------------------------------------------------------------
 * Host
 * ------------------------------------------------------------------------------------- */

/* Tile configurations {WM, WN, MI, NI, S} (warps along W rows and X rows, MMA tiles per warp,
 * pipeline stages) and the rate of each on a loaded SM, in multiply-adds per microsecond, for
 * the types whose W values are formed in f16 (q4_0, q5_0, q8_0) and in f32 (the others): the
 * kernel-time model h16_choose uses. Measured on the H200 with `bash bench/half_run.sh` (step
 * sweep; bench/results/h200-fused-repack.md), q4_0 and q4_K 4608x1024 at n = 512,
 * where every configuration fills the GPU. */
struct h16_cfg {
    int wg; /* 0: mma.sync (h16_gemm_kernel), 1: wgmma (h16_wg_kernel, sm_90a; wm warpgroups, mi 4, wn 1) */
    int wm, wn, mi, ni, stages;
    double rate_f16, rate_f32;
};
static const h16_cfg k_h16_cfg[] = {
    {0, 2, 2, 2, 8, 4, 0.64e6, 0.64e6}, /* 64 x 128 */
    {0, 4, 1, 2, 8, 4, 0.86e6, 0.77e6}, /* 128 x 64 */
    {0, 2, 2, 2, 4, 3, 0.81e6, 0.64e6}, /* 64 x 64 */
    {0, 2, 1, 4, 8, 4, 0.76e6, 0.66e6}, /* 128 x 64, 2 warps of 64 x 64 */
    {0, 2, 2, 4, 8, 4, 0.71e6, 0.70e6}, /* 128 x 128 */
    {0, 1, 2, 4, 8, 4, 0.50e6, 0.50e6}, /* 64 x 128, 2 warps */
    /* wgmma (rates from the same sweep: q4_0 / q4_K 4608x1024 n = 512 against c1's time) */
    {1, 2, 1, 4, 16, 4, 0.68e6, 0.62e6}, /* 128 x 128 */
    {1, 2, 1, 4, 8, 4, 0.78e6, 0.71e6},  /* 128 x 64 */
    {1, 1, 1, 4, 16, 4, 0.49e6, 0.38e6}, /* 64 x 128 */
    {1, 1, 1, 4, 8, 4, 0.55e6, 0.52e6},  /* 64 x 64 */
};
/* Of the same model: a CTA alone on its SM takes about H16_STAGE_US per stage, and every CTA
 * pays about H16_FILL stages of pipeline fill (small shapes of the same sweep). */
#define H16_STAGE_US 0.7
#define H16_FILL 2
#define H16_NCFG ((int)(sizeof k_h16_cfg / sizeof k_h16_cfg[0]))
/* Partials of split-k (beyond them: no split). */
#define H16_PARTIAL_BYTES ((size_t)16 << 20)

static int g_h16_cfg = -1, g_h16_split = -1;
extern "C" void qmm_cuda_half_force(int cfg, int split) {
    g_h16_cfg = cfg >= 0 && cfg < H16_NCFG ? cfg : -1;
    g_h16_split = split >= 1 && split <= 16 ? split : -1;
}

static size_t h16_x_bytes(int64_t k) {
    return ((size_t)QMM_CUDA_X_CHUNK * (size_t)qmm_cuda_int8_pad(k) * sizeof(uint16_t) + 255) / 256 * 256;
}

/* X in f16 for one chunk of QMM_CUDA_X_CHUNK rows, then the split-k partials. */
extern "C" size_t qmm_cuda_half_workspace_bytes(int64_t k) { return h16_x_bytes(k) + H16_PARTIAL_BYTES; }

/* Launches kernel `kern` (BM x BN outputs per CTA), or (per_sm not NULL) only says how many
 * of its CTAs fit an SM (0: beyond the device's shared memory per block). `done` and
 * `resident` belong to the kernel instantiation. */
template <class K>
static cudaError_t h16_run(K kern, int smem, int threads, int bm, int bn, unsigned long long *done, int (&resident)[64],
                           const h16_args *a, int nz, int *per_sm, cudaStream_t s) {
    if (per_sm != NULL) {
        int dev = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e != cudaSuccess) return e;
        if (dev < 0 || dev >= 64) return cudaErrorInvalidDevice;
        static int optin[64]; /* the device's opt-in shared memory per block */
        if (optin[dev] == 0) {
            e = cudaDeviceGetAttribute(&optin[dev], cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
            if (e != cudaSuccess) return e;
        }
        if (smem > optin[dev]) { /* e.g. 128x128 on a 99 KB GPU (sm_86, sm_89) */
            *per_sm = 0;
            return cudaSuccess;
        }
        e = i8_smem_attr(kern, smem, done);
        if (e != cudaSuccess) return e;
        if (resident[dev] == 0) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident[dev], kern, threads, smem);
        *per_sm = resident[dev] > 0 ? resident[dev] : 1;
        return e;
    }
    cudaError_t e = i8_smem_attr(kern, smem, done);
    if (e != cudaSuccess) return e;
    const dim3 grid((unsigned)((a->m + bm - 1) / bm), (unsigned)((a->nc + bn - 1) / bn), (unsigned)nz);
    kern<<<grid, threads, smem, s>>>(*a);
    return cudaGetLastError();
}

template <int G, bool MIN, int FMT, int MODE> struct h16_kernels {
    template <int WM, int WN, int MI, int NI, int S>
    static cudaError_t gemm1(const h16_args *a, int nz, int *per_sm, cudaStream_t s) {
        typedef h16_geom<G, MIN, FMT, WM, WN, MI, NI, S> Q;
        static unsigned long long done = 0;
        static int resident[64]; /* CTAs per SM, per device */
        return h16_run(h16_gemm_kernel<G, MIN, FMT, MODE, WM, WN, MI, NI, S>, Q::SMEM, Q::THREADS, Q::BM, Q::BN, &done,
                       resident, a, nz, per_sm, s);
    }
    template <int WGM, int BN, int S> static cudaError_t gemm_wg(const h16_args *a, int nz, int *per_sm, cudaStream_t s) {
        typedef h16_wg_geom<G, MIN, FMT, WGM, BN, S> Q;
        static unsigned long long done = 0;
        static int resident[64];
        return h16_run(h16_wg_kernel<G, MIN, FMT, MODE, WGM, BN, S>, Q::SMEM, Q::THREADS, Q::BM, BN, &done, resident, a,
                       nz, per_sm, s);
    }
    static cudaError_t gemm(int cfg, const h16_args *a, int nz, int *per_sm, cudaStream_t s) {
        switch (cfg) {
        case 0: return gemm1<2, 2, 2, 8, 4>(a, nz, per_sm, s);
        case 1: return gemm1<4, 1, 2, 8, 4>(a, nz, per_sm, s);
        case 2: return gemm1<2, 2, 2, 4, 3>(a, nz, per_sm, s);
        case 3: return gemm1<2, 1, 4, 8, 4>(a, nz, per_sm, s);
        case 4: return gemm1<2, 2, 4, 8, 4>(a, nz, per_sm, s);
        case 5: return gemm1<1, 2, 4, 8, 4>(a, nz, per_sm, s);
        case 6: return gemm_wg<2, 128, 4>(a, nz, per_sm, s);
        case 7: return gemm_wg<2, 64, 4>(a, nz, per_sm, s);
        case 8: return gemm_wg<1, 128, 4>(a, nz, per_sm, s);
        default: return gemm_wg<1, 64, 4>(a, nz, per_sm, s);
        }
    }
};

/* Launches configuration cfg, or (per_sm not NULL) only says how many of its CTAs fit an SM. */
template <int T> struct h16_launch {
    static void run(int cfg, const h16_args *a, int nz, int *per_sm, cudaStream_t s, cudaError_t *e) {
        typedef qmm_cuda_type<T> D;
        if constexpr (!D::int8) {
            *e = cudaErrorInvalidValue;
        } else {
            *e = h16_kernels<D::int8_sub_block, D::int8_min, i8_fmt<T>::v, h16_mode<T>::v>::gemm(cfg, a, nz, per_sm, s);
        }
    }
};

template <int T> struct h16_mode_of {
    static void run(int *mode) { *mode = h16_mode<T>::v; }
};

/* 1 in the sm_90a code of this file, 0 in any other: which code the device loaded, read once
 * per device (qmm_cuda_half_probe, at context creation: a copy from the device, so never
 * during a graph capture). An architecture list with both 90 and 90a holds two sm_90 codes;
 * the flag says which of them the driver chose. */
__device__ int h16_wg_code =
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    1;
#else
    0;
#endif

/* per device: 0 not probed, 1 available, -1 not; written at context creation, read by any
 * thread (relaxed atomics: a stale 0 only means "not available" for that call) */
static signed char h16_wg_state[64];

/* Whether the wgmma configurations can run: a build with sm_90a code (CMake defines
 * QMM_CUDA_WGMMA when CMAKE_CUDA_ARCHITECTURES holds 90a) whose loaded code on the current
 * device is the sm_90a one (h16_wg_code; sm_90a code runs on compute capability 9.0 only). */
extern "C" void qmm_cuda_half_probe(void) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64 ||
        __atomic_load_n(&h16_wg_state[dev], __ATOMIC_RELAXED) != 0)
        return;
    int code = 0;
#if defined(QMM_CUDA_WGMMA)
    const cudaError_t e = cudaMemcpyFromSymbol(&code, h16_wg_code, sizeof code);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not left behind for the caller */
        /* no code of this file for the device: not available for good; any other failure
         * (out of memory while loading, a capture in progress): probed again next time */
        if (e != cudaErrorNoKernelImageForDevice && e != cudaErrorInvalidDeviceFunction &&
            e != cudaErrorInvalidSymbol)
            return;
        code = 0;
    }
#endif
    __atomic_store_n(&h16_wg_state[dev], (signed char)(code == 1 ? 1 : -1), __ATOMIC_RELAXED);
}

/* Not probed on this device (no context made on it): not available. */
static bool h16_wg_available(void) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
    return __atomic_load_n(&h16_wg_state[dev], __ATOMIC_RELAXED) > 0;
}

extern "C" int qmm_cuda_half_configs(void) { return H16_NCFG; }
extern "C" int qmm_cuda_half_wgmma_available(void) { return h16_wg_available() ? 1 : 0; }
extern "C" int qmm_cuda_half_wgmma_expected(void) {
#if defined(QMM_CUDA_WGMMA_SOLE)
    int dev = 0, major = 0, minor = 0;
    return cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
           minor == 0;
#else
    return 0;
#endif
}
extern "C" int qmm_cuda_half_config_wgmma(int cfg) { return cfg >= 0 && cfg < H16_NCFG ? k_h16_cfg[cfg].wg : -1; }

/* The configuration and split with the least modelled time: per SM, the larger of its share
 * of the multiply-adds at the configuration's rate and, for each round of resident CTAs, the chain of one
 * CTA's stages (plus the pipeline fill); a split adds its partials' traffic and the reduce
 * launch. A split changes the sum's grouping (partials added in split order), so it is 1 when
 * `invariant`; the tile never changes a result. */
static cudaError_t h16_choose(int type, int64_t m, int64_t nc, int nst, bool invariant, int *cfg, int *split) {
    const int sms = i8_sms();
    int mode = H16_F32;
    if (!qmm_cuda_dispatch_type<h16_mode_of>(type, &mode)) return cudaErrorInvalidValue;
    const bool f16_values = mode == H16_HMUL;
    double best = 1e300;
    *cfg = 0;
    *split = 1;
    for (int c = 0; c < H16_NCFG; c++) {
        const h16_cfg &q = k_h16_cfg[c];
        /* the wgmma configurations are not chosen: their best is 0.90-1.14x the best mma.sync
         * one's time over the sweep (bench/results/h200-fused-wgmma.md), slower on the large
         * shapes at n = 512; forced only (tests, bench) until the model's rates for them are
         * checked against a sweep */
        if (q.wg) continue;
        int per_sm = 1;
        cudaError_t e = cudaSuccess;
        if (!qmm_cuda_dispatch_type<h16_launch>(type, c, (const h16_args *)NULL, 0, &per_sm, (cudaStream_t)0, &e))
            return cudaErrorInvalidValue;
        if (e != cudaSuccess) return e;
        if (per_sm == 0) continue; /* beyond the device's shared memory per block */
        const int64_t bm = 16 * q.mi * q.wm, bn = 8 * q.ni * q.wn;
        const int64_t tiles = ((m + bm - 1) / bm) * ((nc + bn - 1) / bn);
        const double rate = f16_values ? q.rate_f16 : q.rate_f32;
        for (int sp = 1; sp <= (invariant ? 1 : 16); sp *= 2) {
            if (sp > nst || (sp > 1 && (size_t)sp * (size_t)(m * nc) * sizeof(float) > H16_PARTIAL_BYTES)) break;
            const int64_t units = tiles * sp, stages = (nst + sp - 1) / sp + H16_FILL;
            const double rounds = (double)((units + (int64_t)sms * per_sm - 1) / ((int64_t)sms * per_sm));
            const double work = (double)units / sms * (double)stages * (double)(bm * bn * 64) / rate;
            double t = rounds * (double)stages * H16_STAGE_US;
            if (work > t) t = work;
            if (sp > 1) t += (double)(sp + 1) * (double)(m * nc) * 4.0 / 3.0e6 + 1.5;
            if (t < best) best = t, *cfg = c, *split = sp;
        }
    }
    return best < 1e300 ? cudaSuccess : cudaErrorInvalidConfiguration;
}

/* Whether configuration cfg fits the current device (for a forced one). */
static cudaError_t h16_fits(int type, int cfg, bool *fits) {
    *fits = false;
    if (k_h16_cfg[cfg].wg && !h16_wg_available()) return cudaSuccess;
    int per_sm = 0;
    cudaError_t e = cudaSuccess;
    if (!qmm_cuda_dispatch_type<h16_launch>(type, cfg, (const h16_args *)NULL, 0, &per_sm, (cudaStream_t)0, &e))
        return cudaErrorInvalidValue;
    *fits = per_sm > 0;
    return e;
}

extern "C" cudaError_t qmm_cuda_half_matmul(int type, const void *wq, const float *wd, const float *wm,
                                            int64_t m, int64_t k, int64_t n, const float *x, int64_t ldx,
                                            float *y, int64_t ldy, bool invariant, void *workspace,
                                            cudaStream_t stream) {
    if (!qmm_cuda_int8_has_type(type)) return cudaErrorInvalidValue;
    const int64_t m_pad = qmm_cuda_int8_pad(m), k_pad = qmm_cuda_int8_pad(k);
    if ((m + 63) / 64 > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    uint16_t *x16 = (uint16_t *)workspace;
    float *part = (float *)((uint8_t *)workspace + h16_x_bytes(k));
    const int nblk = (int)(k / 32), nst = (nblk + 1) / 2;
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int64_t nc = n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK;
        const int64_t n_pad = qmm_cuda_int8_pad(nc);
        const int64_t total = n_pad * (k_pad / 4), tb = 256;
        const int64_t blocks = (total + tb - 1) / tb < 65535 * 8 ? (total + tb - 1) / tb : 65535 * 8;
        const int vec = (uintptr_t)x % 16 == 0 && ldx % 4 == 0;
        h16_x_kernel<<<(unsigned)blocks, (unsigned)tb, 0, stream>>>(x + t0 * ldx, nc, n_pad, k, ldx, k_pad, vec, x16);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
        int cfg = 0, split = 1;
        e = h16_choose(type, m, nc, nst, invariant, &cfg, &split);
        if (e != cudaSuccess) return e;
        if (g_h16_cfg >= 0) {
            bool fits = false;
            e = h16_fits(type, g_h16_cfg, &fits);
            if (e != cudaSuccess) return e;
            if (fits) cfg = g_h16_cfg;
        }
        if (g_h16_split >= 1 && !invariant) split = g_h16_split;
        if (split > nst || (size_t)split * (size_t)(m * nc) * sizeof(float) > H16_PARTIAL_BYTES) split = 1;
        float *yc = y + t0 * ldy;
        h16_args a;
        a.wq = (const uint8_t *)wq;
        a.wd = wd;
        a.wm = wm;
        a.x16 = x16;
        a.out = split > 1 ? part : yc;
        a.ldo = split > 1 ? m : ldy;
        a.zs = split > 1 ? m * nc : 0;
        a.m = m;
        a.m_pad = m_pad;
        a.nc = nc;
        a.k_pad = k_pad;
        a.nblk = nblk;
        a.sps = (nst + split - 1) / split;
        const int nz = (nst + a.sps - 1) / a.sps;
        if (!qmm_cuda_dispatch_type<h16_launch>(type, cfg, (const h16_args *)&a, nz, (int *)NULL, stream, &e))
            return cudaErrorInvalidValue;
        if (e != cudaSuccess) return e;
        if (nz > 1) {
            const int64_t outs = m * nc, rb = 256;
            i8_reduce_kernel<<<(unsigned)((outs + rb - 1) / rb), (unsigned)rb, 0, stream>>>(part, m * nc, nz, m, nc, yc,
                                                                                            ldy);
            e = cudaGetLastError();
            if (e != cudaSuccess) return e;
        }
    }
    return cudaSuccess;
}
