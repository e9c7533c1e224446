/*
 * half.cu — the `fused` strategy's kernel on the int8 repack (the HALF class: f16 operands,
 * f32 accumulation). W is read from the int8 strategy's fragment-order copy (int8.cu: nibbles
 * for q4_0/q4_1/q4_K, int8 quants otherwise, f32 scale and min per sub-block) and decoded to
 * f16 in registers; X is rounded to f16 once per call (h16_x_kernel); mma.sync m16n8k16 with
 * f32 accumulators, one chain of MMAs over k in increasing steps of 16 for every output.
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
 * Kernel: CTA of WM x WN warps, warp tile 32 W rows x 8*NI X rows (2 x NI MMA tiles), k in
 * stages of 64 columns through a 4-stage cp.async pipeline: the W tiles of the stage (one
 * linear run), the X rows (128 bytes, padded to 144 in shared memory: ldmatrix conflict-free),
 * the stage's W scales (and mins). No split-k: the CTA owns its outputs, so the tile choice
 * (h16_choose, from m and n) never changes a result; batch-invariant and deterministic.
 * Sources: PTX ISA "Matrix Fragments for mma.m16n8k16 with floating point type", "ldmatrix".
 */
#include <stdint.h>

#include <cuda_fp16.h>

#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"
#include "cuda/int8_layout.cuh"

#define H16_BK 64                 /* columns per pipeline stage */
#define H16_STAGES 4
#define H16_XROW (H16_BK * 2 + 16) /* shared X row stride in bytes */

/* ---------------------------------------------------------------------------------------
 * X: f32 rows -> f16 (RNE) in the permuted column order, n_pad x k_pad, padding zero.
 * ------------------------------------------------------------------------------------- */

/* Thread (row j, group c of 16 columns): position p < 8 <- column 16c + 2p, p >= 8 <- 16c +
 * 2(p - 8) + 1. */
__global__ void h16_x_kernel(const float *__restrict__ x, int64_t n, int64_t n_pad, int64_t k, int64_t ldx,
                             int64_t k_pad, uint16_t *__restrict__ dst) {
    const int64_t groups = k_pad / 16, total = n_pad * groups;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = idx / groups, c = idx - j * groups;
        uint32_t h[8];
        uint16_t v[16];
#pragma unroll
        for (int p = 0; p < 16; p++) {
            const int64_t col = 16 * c + (p < 8 ? 2 * p : 2 * (p - 8) + 1);
            const float f = j < n && col < k ? x[j * ldx + col] : 0.0f;
            v[p] = __half_as_ushort(__float2half_rn(f));
        }
#pragma unroll
        for (int p = 0; p < 8; p++) h[p] = (uint32_t)v[2 * p] | (uint32_t)v[2 * p + 1] << 16;
        uint4 *d = (uint4 *)(dst + j * k_pad + 16 * c);
        d[0] = make_uint4(h[0], h[1], h[2], h[3]);
        d[1] = make_uint4(h[4], h[5], h[6], h[7]);
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

/* ---------------------------------------------------------------------------------------
 * GEMM
 * ------------------------------------------------------------------------------------- */

struct h16_args {
    const uint8_t *wq;
    const float *wd, *wm;
    const uint16_t *x16;
    float *y;
    int64_t ldy, m, m_pad, nc, k_pad;
    int nblk; /* 32-blocks of k */
};

template <int G, bool MIN, int FMT, int WM, int WN, int NI> struct h16_geom {
    static constexpr int BM = 32 * WM, BN = 8 * NI * WN, THREADS = 32 * WM * WN, NS = H16_BK / G;
    static constexpr int TB = i8_tile_bytes<FMT>::v;
    static constexpr int W_BYTES = BM / 16 * TB, X_BYTES = BN * H16_XROW;
    static constexpr int OFF_X = W_BYTES, OFF_DW = OFF_X + X_BYTES, OFF_MW = OFF_DW + NS * BM * 4;
    static constexpr int STAGE = OFF_MW + (MIN ? NS * BM * 4 : 0);
    static constexpr int SMEM = STAGE * H16_STAGES;
    static_assert(STAGE % 16 == 0 && BM >= 64 && BN <= 128 && NI % 2 == 0, "stage alignment, 64-row scale groups");
};

template <int G, bool MIN, int FMT, int MODE, int WM, int WN, int NI>
__global__ void __launch_bounds__(32 * WM * WN) h16_gemm_kernel(const h16_args a) {
    typedef h16_geom<G, MIN, FMT, WM, WN, NI> Q;
    extern __shared__ __align__(16) uint8_t h16_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2;
    const int wm = warp % WM, wn = warp / WM;
    const int64_t i0 = (int64_t)blockIdx.x * Q::BM, j0 = (int64_t)blockIdx.y * Q::BN;
    const int nst = (a.nblk + 1) / 2; /* stages holding data */
    const int64_t mt16 = a.m_pad / 16;

    /* The 16-byte copies of one stage, c = 0 .. NC-1: W tiles, X rows, W scales, W mins. */
    constexpr int NWC = Q::W_BYTES / 16, NXC = Q::BN * 8, NDW = Q::NS * Q::BM / 4, NMW = MIN ? NDW : 0;
    constexpr int NC = NWC + NXC + NDW + NMW, SLOTS = (NC + Q::THREADS - 1) / Q::THREADS;
    const uint8_t *src[SLOTS];
    int dst[SLOTS], step[SLOTS];
#pragma unroll
    for (int it = 0; it < SLOTS; it++) {
        int c = tid + it * Q::THREADS;
        if (c >= NC) c = NC - 1;
        if (c < NWC) {
            src[it] = a.wq + (i0 / 16) * Q::TB + 16 * c;
            dst[it] = 16 * c;
            step[it] = (int)(mt16 * Q::TB);
        } else if ((c -= NWC) < NXC) {
            const int r = c >> 3, col = c & 7;
            src[it] = (const uint8_t *)(a.x16 + (j0 + r) * a.k_pad) + 16 * col;
            dst[it] = Q::OFF_X + r * H16_XROW + 16 * col;
            step[it] = 2 * H16_BK;
        } else {
            c -= NXC;
            const bool mins = c >= NDW;
            if (mins) c -= NDW;
            const int sub = c / (Q::BM / 4), col = 4 * (c % (Q::BM / 4));
            src[it] = (const uint8_t *)((mins ? a.wm : a.wd) + (int64_t)sub * a.m_pad + i0 + col);
            dst[it] = (mins ? Q::OFF_MW : Q::OFF_DW) + 4 * (sub * Q::BM + col);
            step[it] = (int)(4 * Q::NS * a.m_pad);
        }
    }
    auto load = [&](int slot) {
        uint8_t *s = h16_smem + slot * Q::STAGE;
#pragma unroll
        for (int it = 0; it < SLOTS; it++) {
            if (NC % Q::THREADS == 0 || tid + it * Q::THREADS < NC) i8_cp16(s + dst[it], src[it]);
            src[it] += step[it];
        }
    };

    float acc[2][NI][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;

#pragma unroll
    for (int i = 0; i < H16_STAGES - 1; i++) {
        if (i < nst) load(i);
        i8_commit();
    }
    for (int st = 0; st < nst; st++) {
        i8_wait<H16_STAGES - 2>();
        __syncthreads(); /* stage st landed; every warp is done with the slot refilled next */
        if (st + H16_STAGES - 1 < nst) load((st + H16_STAGES - 1) % H16_STAGES);
        i8_commit();
        const uint8_t *s = h16_smem + (st % H16_STAGES) * Q::STAGE;
        /* the lane's quant words of its two m16 tiles: nibbles 4 words (both 32-column halves),
         * s8 4 words per half */
        uint32_t pk[2][FMT == I8_FMT_S8 ? 8 : 4];
#pragma unroll
        for (int mi = 0; mi < 2; mi++) {
            const uint8_t *tile = s + (2 * wm + mi) * Q::TB + 16 * lane;
            const uint4 v = *(const uint4 *)tile;
            pk[mi][0] = v.x, pk[mi][1] = v.y, pk[mi][2] = v.z, pk[mi][3] = v.w;
            if constexpr (FMT == I8_FMT_S8) {
                const uint4 u = *(const uint4 *)(tile + 512);
                pk[mi][4] = u.x, pk[mi][5] = u.y, pk[mi][6] = u.z, pk[mi][7] = u.w;
#pragma unroll
                for (int j = 0; j < 8; j++) pk[mi][j] ^= 0x80808080u;
            }
        }
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            if (2 * st + (kk >> 1) >= a.nblk) break; /* the padding block of an odd nblk */
            const int h = kk >> 1, c = kk & 1, sub = G == 32 ? h : kk;
            const int wpos = sub * Q::BM + (wm >> 1) * 64 + 8 * g + 4 * (wm & 1);
            const float4 dw4 = *(const float4 *)((const float *)(s + Q::OFF_DW) + wpos);
            float4 mw4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (MIN) mw4 = *(const float4 *)((const float *)(s + Q::OFF_MW) + wpos);
            uint32_t A[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const float dw[2] = {mi ? dw4.z : dw4.x, mi ? dw4.w : dw4.y};
                const float mw[2] = {mi ? mw4.z : mw4.x, mi ? mw4.w : mw4.y};
                uint32_t d2[2] = {0, 0};
                if (MODE == H16_HMUL) d2[0] = h2_splat(dw[0]), d2[1] = h2_splat(dw[1]);
                const int jw = FMT == I8_FMT_S8 ? 4 * h + 2 * c : 2 * c;
                if (FMT != I8_FMT_S8 && h == 1)
                    h16_fragment<FMT, MODE, MIN, true>(pk[mi][jw], pk[mi][jw + 1], dw, mw, d2, A[mi]);
                else
                    h16_fragment<FMT, MODE, MIN, false>(pk[mi][jw], pk[mi][jw + 1], dw, mw, d2, A[mi]);
            }
#pragma unroll
            for (int p = 0; p < NI / 2; p++) {
                uint32_t b[4];
                i8_ldsm_x4(b[0], b[1], b[2], b[3],
                           s + Q::OFF_X + (wn * 8 * NI + 16 * p + ((lane >> 4) & 1) * 8 + (lane & 7)) * H16_XROW +
                               32 * kk + ((lane >> 3) & 1) * 16);
#pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    h16_mma(A[mi], b[0], b[1], acc[mi][2 * p]);
                    h16_mma(A[mi], b[2], b[3], acc[mi][2 * p + 1]);
                }
            }
        }
    }
    i8_wait<0>();

    const int t = lane & 3;
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t i = i0 + wm * 32 + 16 * mi + 8 * (e >> 1) + g;
                const int64_t j = j0 + wn * 8 * NI + 8 * ni + 2 * t + (e & 1);
                if (i < a.m && j < a.nc) a.y[j * a.ldy + i] = acc[mi][ni][e];
            }
}

/* ---------------------------------------------------------------------------------------
 * Host
 * ------------------------------------------------------------------------------------- */

/* Tile configurations: warps along W rows, along X rows, MMA tiles of 8 X rows per warp. */
static const int k_h16_cfg[][3] = {{2, 2, 8}, {4, 2, 8}, {4, 1, 8}, {2, 2, 4}};
#define H16_NCFG 4

static int g_h16_cfg = -1;
extern "C" void qmm_cuda_half_force(int cfg) { g_h16_cfg = cfg >= 0 && cfg < H16_NCFG ? cfg : -1; }

/* X in f16 for one chunk of QMM_CUDA_X_CHUNK rows (n_pad = rows rounded up to 128). */
extern "C" size_t qmm_cuda_half_workspace_bytes(int64_t k) {
    return (size_t)QMM_CUDA_X_CHUNK * (size_t)qmm_cuda_int8_pad(k) * sizeof(uint16_t);
}

template <int G, bool MIN, int FMT, int MODE> struct h16_kernels {
    template <int WM, int WN, int NI> static cudaError_t gemm1(const h16_args &a, cudaStream_t s) {
        typedef h16_geom<G, MIN, FMT, WM, WN, NI> Q;
        static unsigned long long done = 0;
        cudaError_t e = i8_smem_attr(h16_gemm_kernel<G, MIN, FMT, MODE, WM, WN, NI>, Q::SMEM, &done);
        if (e != cudaSuccess) return e;
        const dim3 grid((unsigned)((a.m + Q::BM - 1) / Q::BM), (unsigned)((a.nc + Q::BN - 1) / Q::BN));
        h16_gemm_kernel<G, MIN, FMT, MODE, WM, WN, NI><<<grid, Q::THREADS, Q::SMEM, s>>>(a);
        return cudaGetLastError();
    }
    static cudaError_t gemm(int cfg, const h16_args &a, cudaStream_t s) {
        switch (cfg) {
        case 0: return gemm1<2, 2, 8>(a, s);
        case 1: return gemm1<4, 2, 8>(a, s);
        case 2: return gemm1<4, 1, 8>(a, s);
        default: return gemm1<2, 2, 4>(a, s);
        }
    }
};

template <int T> struct h16_launch {
    static void run(int cfg, const h16_args *a, cudaStream_t s, cudaError_t *e) {
        typedef qmm_cuda_type<T> D;
        if constexpr (!D::int8) {
            *e = cudaErrorInvalidValue;
        } else {
            *e = h16_kernels<D::int8_sub_block, D::int8_min, i8_fmt<T>::v, h16_mode<T>::v>::gemm(cfg, *a, s);
        }
    }
};

/* The configuration with the least modelled time: waves of CTAs (a 4-warp CTA: 2 per SM, an
 * 8-warp CTA: 1) times the CTA's padded outputs, plus a per-tile overhead. Any choice gives the
 * same bits. */
static int h16_choose(int64_t m, int64_t nc) {
    const int sms = i8_sms();
    double best = 1e300;
    int cfg = 0;
    for (int c = 0; c < H16_NCFG; c++) {
        const int wm = k_h16_cfg[c][0], wn = k_h16_cfg[c][1], ni = k_h16_cfg[c][2];
        const int64_t bm = 32 * wm, bn = 8 * ni * wn, per_sm = wm * wn <= 4 ? 2 : 1;
        const int64_t tiles = ((m + bm - 1) / bm) * ((nc + bn - 1) / bn);
        const double waves = (double)((tiles + sms * per_sm - 1) / (sms * per_sm));
        const double t = waves * (double)(bm * bn) * per_sm * (1.0 + 16.0 / bm + 16.0 / bn);
        if (t < best) best = t, cfg = c;
    }
    return cfg;
}

extern "C" cudaError_t qmm_cuda_half_matmul(int type, const void *wq, const float *wd, const float *wm,
                                            int64_t m, int64_t k, int64_t n, const float *x, int64_t ldx,
                                            float *y, int64_t ldy, void *workspace, cudaStream_t stream) {
    if (!qmm_cuda_int8_has_type(type)) return cudaErrorInvalidValue;
    const int64_t m_pad = qmm_cuda_int8_pad(m), k_pad = qmm_cuda_int8_pad(k);
    if ((m + 63) / 64 > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    uint16_t *x16 = (uint16_t *)workspace;
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int64_t nc = n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK;
        const int64_t n_pad = qmm_cuda_int8_pad(nc);
        const int64_t total = n_pad * (k_pad / 16), tb = 256;
        const int64_t blocks = (total + tb - 1) / tb < 65535 * 8 ? (total + tb - 1) / tb : 65535 * 8;
        h16_x_kernel<<<(unsigned)blocks, (unsigned)tb, 0, stream>>>(x + t0 * ldx, nc, n_pad, k, ldx, k_pad, x16);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
        h16_args a;
        a.wq = (const uint8_t *)wq;
        a.wd = wd;
        a.wm = wm;
        a.x16 = x16;
        a.y = y + t0 * ldy;
        a.ldy = ldy;
        a.m = m;
        a.m_pad = m_pad;
        a.nc = nc;
        a.k_pad = k_pad;
        a.nblk = (int)(k / 32);
        const int cfg = g_h16_cfg >= 0 ? g_h16_cfg : h16_choose(m, nc);
        if (!qmm_cuda_dispatch_type<h16_launch>(type, cfg, &a, stream, &e)) return cudaErrorInvalidValue;
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
