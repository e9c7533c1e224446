/*
 * int8.cu — the CUDA int8 strategy: X quantized per call to int8 per 32-element block (the
 * CPU's int8_amx rule, bit for bit), W repacked once at weights creation to int8 quants with a
 * float scale (and min) per sub-block, and an integer tensor-core GEMM (mma.sync s8 x s8 ->
 * s32) whose per-block int32 sums are scaled and accumulated in f32 in a fixed order.
 *
 * X rule (qmm_x86_int8_quantize_row, docs/KERNELS.md "int8_amx"): per 32-element block,
 * amax = max |x|, dx = amax / 127, pre = 2^64 if amax < 2^-100 else 1,
 * inv = 127 / (amax * pre) (0 for an all-zero block), q = round-to-nearest-even((x * pre) *
 * inv) saturated to -128..127 (it stays in -127..127 for finite x), s = dx * (float)sum(q).
 * Every float operation is a single IEEE operation (__fdiv_rn/__fmul_rn: nvcc may not
 * contract or approximate them), so the bytes and scales equal the CPU's. A block holding NaN
 * or +-Inf gets q = 0 and dx = s = NaN (0x7FC00000) on both sides, so the outputs that read
 * it are NaN, never silently finite.
 *
 * Types: those whose descriptor (qmm_cuda_type<T>, dequant.cuh) sets int8 — the legacy and
 * K-quant types, each with a repacker i8_unpack<T> below; the float and unit-codec types have
 * none (their values are not integer quants times one sub-block scale in this form) and the
 * strategy refuses them (backend.c says why).
 * W repack (per type, formulas of src/formats/ and dequant.cuh): per row and sub-block of G
 * elements (G = 32; 16 for q2_K, q3_K, q6_K) int8 quants q, a float scale d_w and (q4_1, q5_1,
 * q2_K, q4_K, q5_K) a float min mn_w such that d_w * q (one f32 product) plus mn_w (one f32
 * sum) is bit-identical to the type's dequantization:
 *   q4_0 (q-8, d)   q4_1 (q, d, m)   q5_0 (q-16, d)   q5_1 (q, d, m)   q8_0 (q, d)
 *   q2_K (q, d*(sc&15), -(dmin*(sc>>4)))   q3_K (q-4 or q, d*(sc-32))
 *   q4_K/q5_K (q, d*sc, -(dmin*mn))        q6_K (q-32, d*sc)
 * Layout (device): quants m_pad x k_pad bytes row-major; d_w and mn_w [k_pad/G][m_pad]
 * (sub-block major: the scales of 64 consecutive rows are 256 contiguous bytes). m_pad is m
 * rounded up to 64, k_pad is k rounded up to 64; padding quants and scales are zero.
 *
 * GEMM: CTA tile 64 W rows x 64 X rows, 4 warps of 32 x 32, k in stages of 64 bytes (two
 * 32-blocks) through a 3-stage cp.async pipeline (16-byte copies) into shared memory. Per
 * 32-block c (in increasing order) and per warp fragment, one mma m16n8k32 (or two m16n8k16
 * for 16-element sub-blocks) from zeroed int32 accumulators gives the exact block sums, then
 *     acc = fmaf((float)isum, dx * d_w, acc);   min types: acc = fmaf(s, mn_w, acc)
 * (for G = 16: low half then high half, s per half). An output therefore depends only on its
 * W row, its X row and k: batch-invariant and deterministic (no atomics, no split-k).
 * Sources for the PTX fragment layouts: PTX ISA, "Matrix Fragments for mma.m16n8k32" and
 * "mma.m16n8k16" with .s8 operands.
 */
#include <stdint.h>

#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

/* ---------------------------------------------------------------------------------------
 * Geometry
 * ------------------------------------------------------------------------------------- */

#define I8_TILE 64   /* W rows and X rows per CTA tile; m_pad, n_pad, k_pad granule */
#define I8_BK 64     /* k bytes per pipeline stage (two 32-blocks) */
#define I8_STAGES 3
#define I8_THREADS 128
#define I8_SROW (I8_BK + 16) /* shared row stride in bytes: 20 words, conflict-free fragment loads */

/* Which types, sub-blocks and min terms: the descriptor's int8 facts (qmm_cuda_type<T>,
 * dequant.cuh), set for the legacy and K-quant types, which have a repacker below. */
extern "C" bool qmm_cuda_int8_has_type(int type) {
    qmm_cuda_type_facts f;
    return qmm_cuda_type_facts_get(type, &f) && f.int8;
}

extern "C" int qmm_cuda_int8_sub_block(int type) {
    qmm_cuda_type_facts f;
    return qmm_cuda_type_facts_get(type, &f) && f.int8 ? f.int8_sub_block : 32;
}

extern "C" bool qmm_cuda_int8_has_min(int type) {
    qmm_cuda_type_facts f;
    return qmm_cuda_type_facts_get(type, &f) && f.int8 && f.int8_min;
}

extern "C" int64_t qmm_cuda_int8_pad(int64_t v) { return (v + I8_TILE - 1) / I8_TILE * I8_TILE; }

/* X workspace of one chunk: quants QMM_CUDA_X_CHUNK x k_pad, then dx and s [k_pad/32][chunk],
 * then s16 [k_pad/16][chunk] (each part 256-byte aligned). */
static size_t al256(size_t v) { return (v + 255) / 256 * 256; }

extern "C" size_t qmm_cuda_int8_workspace_bytes(int64_t k) {
    const size_t kp = (size_t)qmm_cuda_int8_pad(k), ch = QMM_CUDA_X_CHUNK;
    return al256(ch * kp) + 2 * al256(kp / 32 * ch * sizeof(float)) + al256(kp / 16 * ch * sizeof(float));
}

/* ---------------------------------------------------------------------------------------
 * X quantization: one warp per (row, 32-block), lane = element; row j = blockIdx.y (striding
 * by gridDim.y), block c = warp index along blockIdx.x (no 64-bit division per element).
 * ------------------------------------------------------------------------------------- */

__device__ __forceinline__ void int8_quantize_x_block(const float *__restrict__ x, int64_t n, int64_t n_pad,
                                                      int64_t k, int64_t ldx, int64_t k_pad, int8_t *__restrict__ q,
                                                      float *__restrict__ dx, float *__restrict__ s32,
                                                      float *__restrict__ s16, int64_t j, int64_t c, int lane) {
    const bool valid = j < n && c < k / 32; /* k is a multiple of 32 for every quantized type */
    const float v = valid ? x[j * ldx + 32 * c + lane] : 0.0f;
    float amax = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    /* A block holding NaN or +-Inf: q = 0, dx = s = NaN (bits 0x7FC00000, as the CPU rule),
     * so every output that reads it is NaN, never silently finite. */
    if (__any_sync(0xFFFFFFFFu, !isfinite(v))) {
        q[j * k_pad + 32 * c + lane] = 0;
        const float nan = __int_as_float(0x7FC00000);
        if (lane == 0) dx[c * n_pad + j] = s32[c * n_pad + j] = s16[(2 * c) * n_pad + j] = nan;
        else if (lane == 16) s16[(2 * c + 1) * n_pad + j] = nan;
        return;
    }
    const float d = __fdiv_rn(amax, 127.0f);
    const float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
    const float inv = amax > 0.0f ? __fdiv_rn(127.0f, __fmul_rn(amax, pre)) : 0.0f;
    int qi = __float2int_rn(__fmul_rn(__fmul_rn(v, pre), inv));
    qi = qi < -128 ? -128 : qi > 127 ? 127 : qi;
    q[j * k_pad + 32 * c + lane] = (int8_t)qi;
    int sum = qi;
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o); /* per half */
    const int other = __shfl_xor_sync(0xFFFFFFFFu, sum, 16);
    if (lane == 0) {
        dx[c * n_pad + j] = d;
        s32[c * n_pad + j] = __fmul_rn(d, (float)(sum + other));
        s16[(2 * c) * n_pad + j] = __fmul_rn(d, (float)sum);
    } else if (lane == 16) {
        s16[(2 * c + 1) * n_pad + j] = __fmul_rn(d, (float)sum);
    }
}

__global__ void int8_quantize_x_kernel(const float *__restrict__ x, int64_t n, int64_t n_pad, int64_t k,
                                       int64_t ldx, int64_t k_pad, int8_t *__restrict__ q,
                                       float *__restrict__ dx, float *__restrict__ s32,
                                       float *__restrict__ s16) {
    const int64_t c = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (c >= k_pad / 32) return; /* whole warps: the shuffles inside stay full-warp */
    for (int64_t j = blockIdx.y; j < n_pad; j += gridDim.y)
        int8_quantize_x_block(x, n, n_pad, k, ldx, k_pad, q, dx, s32, s16, j, c, threadIdx.x & 31);
}

extern "C" cudaError_t qmm_cuda_int8_quantize_x(const float *x, int64_t n, int64_t n_pad, int64_t k,
                                                int64_t ldx, int64_t k_pad, int8_t *q, float *dx,
                                                float *s32, float *s16, cudaStream_t stream) {
    const int64_t kb = k_pad / 32;
    if (n_pad * kb == 0) return cudaSuccess;
    const int per_block = kb < 8 ? (int)kb : 8; /* warps per block, along the row */
    const int64_t bx = (kb + per_block - 1) / per_block;
    if (bx > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)bx, (unsigned)(n_pad < 65535 ? n_pad : 65535));
    int8_quantize_x_kernel<<<grid, 32 * per_block, 0, stream>>>(x, n, n_pad, k, ldx, k_pad, q, dx, s32, s16);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------------------------------
 * W repack: one thread per (row, 32-element block): 32 quants, and per sub-block d_w, mn_w.
 * ------------------------------------------------------------------------------------- */

/* Decodes 32-block c of a row (block index within the row) into q[32], d[2], mn[2] (for
 * G = 32 only index 0 is used). */
template <int T> struct i8_unpack;

/* Legacy types: OFF subtracted from the quant; QS, QH offsets; MIN: f16 min after d. */
template <int BYTES, int QS, int QH, bool MIN, int OFF> struct i8_unpack_legacy {
    static __device__ void run(const uint8_t *row, int64_t c, int8_t *q, float *d, float *mn) {
        const uint8_t *b = row + c * BYTES;
        uint32_t qh = 0;
        if (QH >= 0) qh = qmm_cuda_ld32_a2(b + QH);
        for (int j = 0; j < 32; j++) {
            const uint8_t byte = b[QS + (j & 15)];
            int v = j < 16 ? (byte & 0xF) : (byte >> 4);
            if (QH >= 0) v |= (int)((qh >> j) & 1u) << 4;
            q[j] = (int8_t)(v - OFF);
        }
        d[0] = qmm_cuda_h2f(qmm_cuda_ld16(b));
        mn[0] = MIN ? qmm_cuda_h2f(qmm_cuda_ld16(b + 2)) : 0.0f;
    }
};
template <> struct i8_unpack<QMM_TYPE_Q4_0> : i8_unpack_legacy<18, 2, -1, false, 8> {};
template <> struct i8_unpack<QMM_TYPE_Q4_1> : i8_unpack_legacy<20, 4, -1, true, 0> {};
template <> struct i8_unpack<QMM_TYPE_Q5_0> : i8_unpack_legacy<22, 6, 2, false, 16> {};
template <> struct i8_unpack<QMM_TYPE_Q5_1> : i8_unpack_legacy<24, 8, 4, true, 0> {};

template <> struct i8_unpack<QMM_TYPE_Q8_0> {
    static __device__ void run(const uint8_t *row, int64_t c, int8_t *q, float *d, float *mn) {
        const uint8_t *b = row + c * 34;
        for (int j = 0; j < 32; j++) q[j] = (int8_t)b[2 + j];
        d[0] = qmm_cuda_h2f(qmm_cuda_ld16(b));
        mn[0] = 0.0f;
    }
};

/* K-quants: 32-block c of the row = super-block c / 8, elements i0 = 32 * (c % 8) .. +31,
 * i0 = 128h + 32p. */
template <> struct i8_unpack<QMM_TYPE_Q2_K> {
    static __device__ void run(const uint8_t *row, int64_t c, int8_t *q, float *d, float *mn) {
        const uint8_t *b = row + (c / 8) * sizeof(block_q2_K);
        const int h = (int)(c % 8) / 4, p = (int)(c % 4);
        for (int l = 0; l < 32; l++) q[l] = (int8_t)((b[16 + 32 * h + l] >> (2 * p)) & 3);
        const float dd = qmm_cuda_h2f(qmm_cuda_ld16(b + 80)), dmin = qmm_cuda_h2f(qmm_cuda_ld16(b + 82));
        for (int hh = 0; hh < 2; hh++) {
            const uint8_t sc = b[8 * h + 2 * p + hh];
            d[hh] = __fmul_rn(dd, (float)(sc & 0xF));
            mn[hh] = -__fmul_rn(dmin, (float)(sc >> 4));
        }
    }
};
template <> struct i8_unpack<QMM_TYPE_Q3_K> {
    static __device__ void run(const uint8_t *row, int64_t c, int8_t *q, float *d, float *mn) {
        const uint8_t *b = row + (c / 8) * sizeof(block_q3_K);
        const int h = (int)(c % 8) / 4, p = (int)(c % 4);
        for (int l = 0; l < 32; l++)
            q[l] = (int8_t)(((b[32 + 32 * h + l] >> (2 * p)) & 3) - (((b[l] >> (4 * h + p)) & 1) ? 0 : 4));
        const uint8_t *scales = b + 96;
        const float dd = qmm_cuda_h2f(qmm_cuda_ld16(b + 108));
        for (int hh = 0; hh < 2; hh++) {
            const int js = 8 * h + 2 * p + hh;
            const int lo = js < 8 ? (scales[js] & 0xF) : (scales[js - 8] >> 4);
            const int hi = (scales[8 + (js & 3)] >> (2 * (js >> 2))) & 3;
            d[hh] = __fmul_rn(dd, (float)((lo | (hi << 4)) - 32));
            mn[hh] = 0.0f;
        }
    }
};
template <int BYTES, int QS, bool HIGH> struct i8_unpack_k45 {
    static __device__ void run(const uint8_t *row, int64_t c, int8_t *q, float *d, float *mn) {
        const uint8_t *b = row + (c / 8) * BYTES;
        const int sb = (int)(c % 8), cc = sb >> 1, s = sb & 1;
        for (int l = 0; l < 32; l++) {
            int v = (b[QS + 32 * cc + l] >> (4 * s)) & 0xF;
            if (HIGH) v += ((b[16 + l] >> (2 * cc + s)) & 1) ? 16 : 0;
            q[l] = (int8_t)v;
        }
        int sc, m;
        qmm_cuda_scale_min_k4(sb, b + 4, &sc, &m);
        d[0] = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b)), (float)sc);
        mn[0] = -__fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 2)), (float)m);
    }
};
template <> struct i8_unpack<QMM_TYPE_Q4_K> : i8_unpack_k45<144, 16, false> {};
template <> struct i8_unpack<QMM_TYPE_Q5_K> : i8_unpack_k45<176, 48, true> {};
template <> struct i8_unpack<QMM_TYPE_Q6_K> {
    static __device__ void run(const uint8_t *row, int64_t c, int8_t *q, float *d, float *mn) {
        const uint8_t *b = row + (c / 8) * sizeof(block_q6_K);
        const int h = (int)(c % 8) / 4, p = (int)(c % 4);
        for (int l = 0; l < 32; l++) {
            const int lo = (b[64 * h + l + 32 * (p & 1)] >> (4 * (p >> 1))) & 0xF;
            const int hi = (b[128 + 32 * h + l] >> (2 * p)) & 3;
            q[l] = (int8_t)((lo | (hi << 4)) - 32);
        }
        const float dd = qmm_cuda_h2f(qmm_cuda_ld16(b + 208));
        for (int hh = 0; hh < 2; hh++) {
            d[hh] = __fmul_rn(dd, (float)(int8_t)b[192 + 8 * h + 2 * p + hh]);
            mn[hh] = 0.0f;
        }
    }
};

template <int T, int G, bool MIN>
__global__ void int8_pack_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k,
                                 int64_t m_pad, int64_t k_pad, int8_t *__restrict__ q,
                                 float *__restrict__ d, float *__restrict__ mn) {
    const int64_t kb = k_pad / 32;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m_pad * kb) return;
    const int64_t c = t / m_pad, i = t % m_pad; /* consecutive threads: consecutive rows */
    int8_t v[32];
    float sd[2] = {0.0f, 0.0f}, sm[2] = {0.0f, 0.0f};
    if (i < m && c < k / 32) {
        i8_unpack<T>::run(w + (size_t)i * row_bytes, c, v, sd, sm);
    } else {
        for (int l = 0; l < 32; l++) v[l] = 0;
    }
    uint32_t words[8];
    for (int u = 0; u < 8; u++)
        words[u] = (uint32_t)(uint8_t)v[4 * u] | ((uint32_t)(uint8_t)v[4 * u + 1] << 8) |
                   ((uint32_t)(uint8_t)v[4 * u + 2] << 16) | ((uint32_t)(uint8_t)v[4 * u + 3] << 24);
    uint4 *dst = (uint4 *)(q + i * k_pad + 32 * c);
    dst[0] = make_uint4(words[0], words[1], words[2], words[3]);
    dst[1] = make_uint4(words[4], words[5], words[6], words[7]);
    if (G == 32) {
        d[c * m_pad + i] = sd[0];
        if (MIN) mn[c * m_pad + i] = sm[0];
    } else {
        d[(2 * c) * m_pad + i] = sd[0];
        d[(2 * c + 1) * m_pad + i] = sd[1];
        if (MIN) {
            mn[(2 * c) * m_pad + i] = sm[0];
            mn[(2 * c + 1) * m_pad + i] = sm[1];
        }
    }
}

/* The repack of type T, for a type whose descriptor says int8 (i8_unpack<T> exists);
 * *refused = true for every other type (nothing launched). */
template <int T> struct i8_pack_launch {
    static void run(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k, int64_t m_pad, int64_t k_pad,
                    int8_t *q, float *d, float *mn, cudaStream_t stream, bool *refused) {
        typedef qmm_cuda_type<T> D;
        if constexpr (!D::int8) {
            *refused = true;
        } else {
            *refused = false;
            const int64_t threads = m_pad * (k_pad / 32);
            const int tb = 128;
            const int64_t blocks = (threads + tb - 1) / tb;
            if (blocks == 0) return;
            constexpr int G = D::int8_sub_block;
            constexpr bool MIN = D::int8_min;
            static_assert(G == 16 || G == 32, "int8 sub-blocks of 16 or 32");
            int8_pack_kernel<T, G, MIN><<<(unsigned)blocks, tb, 0, stream>>>(w, row_bytes, m, k, m_pad, k_pad,
                                                                              q, d, mn);
        }
    }
};

extern "C" cudaError_t qmm_cuda_int8_pack(int type, const void *w, size_t row_bytes, int64_t m,
                                          int64_t k, int64_t m_pad, int64_t k_pad, int8_t *q,
                                          float *d, float *mn, cudaStream_t stream) {
    bool refused = true;
    if (!qmm_cuda_dispatch_type<i8_pack_launch>(type, (const uint8_t *)w, row_bytes, m, k, m_pad, k_pad, q, d,
                                                mn, stream, &refused) ||
        refused)
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

/* ---------------------------------------------------------------------------------------
 * GEMM
 * ------------------------------------------------------------------------------------- */

__device__ __forceinline__ void i8_cp16(void *smem, const void *gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void i8_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void i8_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* D = A (16 x 32, row) * B (32 x 8, col), s8 inputs, s32 result from zero. */
__device__ __forceinline__ void i8_mma_k32(const uint32_t a[4], const uint32_t b[2], int r[4]) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%10,%10,%10,%10};\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(0));
}
/* D = A (16 x 16, row) * B (16 x 8, col), s8 inputs, s32 result from zero. */
__device__ __forceinline__ void i8_mma_k16(uint32_t a0, uint32_t a1, uint32_t b0, int r[4]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                 "{%7,%7,%7,%7};\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a0), "r"(a1), "r"(b0), "r"(0));
}

/* Shared memory of one stage. NS = sub-blocks per stage (64 / G). */
template <int G> struct i8_stage {
    static constexpr int NS = I8_BK / G;
    int8_t w[I8_TILE * I8_SROW];
    int8_t x[I8_TILE * I8_SROW];
    float dw[NS][I8_TILE];
    float mw[NS][I8_TILE];
    float dx[I8_BK / 32][I8_TILE];
    float sx[NS][I8_TILE]; /* s per sub-block: s32 (G = 32) or s16 (G = 16) */
};

template <int G, bool MIN>
__global__ void __launch_bounds__(I8_THREADS)
int8_gemm_kernel(const int8_t *__restrict__ wq, const float *__restrict__ wd, const float *__restrict__ wm,
                 int64_t m, int64_t m_pad, int64_t k, int64_t k_pad,
                 const int8_t *__restrict__ xq, const float *__restrict__ xd, const float *__restrict__ xs,
                 int64_t nc, int64_t n_pad, float *__restrict__ y, int64_t ldy) {
    constexpr int NS = I8_BK / G;
    __shared__ __align__(16) i8_stage<G> sm[I8_STAGES];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm_ = (warp & 1) * 32, wn_ = (warp >> 1) * 32;
    const int64_t i0 = (int64_t)blockIdx.x * I8_TILE; /* W rows */
    const int64_t j0 = (int64_t)blockIdx.y * I8_TILE; /* X rows */
    const int64_t nst = k_pad / I8_BK;
    const int64_t nblk = k / 32;

    auto load = [&](int64_t st) {
        i8_stage<G> &s = sm[st % I8_STAGES];
        const int64_t kb = st * I8_BK;
#pragma unroll
        for (int r = 0; r < 2; r++) { /* 64 rows x 4 chunks of 16 bytes, W and X */
            const int id = tid + I8_THREADS * r, row = id >> 2, col = (id & 3) * 16;
            i8_cp16(&s.w[row * I8_SROW + col], wq + (i0 + row) * k_pad + kb + col);
            i8_cp16(&s.x[row * I8_SROW + col], xq + (j0 + row) * k_pad + kb + col);
        }
        /* Scales: NS (or 2) sub-block rows of 64 floats = 16 chunks each. */
        if (tid < NS * 16) {
            const int sub = tid >> 4, col = (tid & 15) * 4;
            const int64_t gs = st * NS + sub;
            i8_cp16(&s.dw[sub][col], wd + gs * m_pad + i0 + col);
            if (MIN) {
                i8_cp16(&s.mw[sub][col], wm + gs * m_pad + i0 + col);
                i8_cp16(&s.sx[sub][col], xs + gs * n_pad + j0 + col);
            }
        }
        if (tid < 32) {
            const int sub = tid >> 4, col = (tid & 15) * 4;
            i8_cp16(&s.dx[sub][col], xd + (st * 2 + sub) * n_pad + j0 + col);
        }
    };

    float acc[2][4][4];
#pragma unroll
    for (int a = 0; a < 2; a++)
#pragma unroll
        for (int b = 0; b < 4; b++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[a][b][e] = 0.0f;

#pragma unroll
    for (int st = 0; st < I8_STAGES - 1; st++) {
        if (st < nst) load(st);
        i8_commit();
    }
    for (int64_t st = 0; st < nst; st++) {
        i8_wait<I8_STAGES - 2>();
        __syncthreads();
        if (st + I8_STAGES - 1 < nst) load(st + I8_STAGES - 1);
        i8_commit();
        const i8_stage<G> &s = sm[st % I8_STAGES];
#pragma unroll
        for (int cb = 0; cb < I8_BK / 32; cb++) {
            if (st * 2 + cb >= nblk) break; /* padding blocks: never added */
            uint32_t a[2][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const int8_t *p = &s.w[(wm_ + 16 * mi + g) * I8_SROW + 32 * cb + 4 * t];
                a[mi][0] = *(const uint32_t *)p;
                a[mi][1] = *(const uint32_t *)(p + 8 * I8_SROW);
                a[mi][2] = *(const uint32_t *)(p + 16);
                a[mi][3] = *(const uint32_t *)(p + 8 * I8_SROW + 16);
            }
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                const int8_t *p = &s.x[(wn_ + 8 * ni + g) * I8_SROW + 32 * cb + 4 * t];
                b[ni][0] = *(const uint32_t *)p;
                b[ni][1] = *(const uint32_t *)(p + 16);
            }
            float xdv[4][2];
#pragma unroll
            for (int ni = 0; ni < 4; ni++)
#pragma unroll
                for (int e = 0; e < 2; e++) xdv[ni][e] = s.dx[cb][wn_ + 8 * ni + 2 * t + e];
#pragma unroll
            for (int h = 0; h < 32 / G; h++) {
                const int sub = cb * (32 / G) + h;
                float wdv[2][2], wmv[2][2], xsv[4][2];
#pragma unroll
                for (int mi = 0; mi < 2; mi++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        wdv[mi][e] = s.dw[sub][wm_ + 16 * mi + g + 8 * e];
                        wmv[mi][e] = MIN ? s.mw[sub][wm_ + 16 * mi + g + 8 * e] : 0.0f;
                    }
#pragma unroll
                for (int ni = 0; ni < 4; ni++)
#pragma unroll
                    for (int e = 0; e < 2; e++) xsv[ni][e] = MIN ? s.sx[sub][wn_ + 8 * ni + 2 * t + e] : 0.0f;
#pragma unroll
                for (int mi = 0; mi < 2; mi++)
#pragma unroll
                    for (int ni = 0; ni < 4; ni++) {
                        int r[4];
                        if (G == 32) i8_mma_k32(a[mi], b[ni], r);
                        else i8_mma_k16(a[mi][2 * h], a[mi][2 * h + 1], b[ni][h], r);
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            /* r[e]: W row g + 8 (e >> 1), X row 2t + (e & 1) of the fragment. */
                            const float scale = __fmul_rn(xdv[ni][e & 1], wdv[mi][e >> 1]);
                            float v = __fmaf_rn((float)r[e], scale, acc[mi][ni][e]);
                            if (MIN) v = __fmaf_rn(xsv[ni][e & 1], wmv[mi][e >> 1], v);
                            acc[mi][ni][e] = v;
                        }
                    }
            }
        }
    }
    i8_wait<0>();

#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t i = i0 + wm_ + 16 * mi + g + 8 * (e >> 1);
                const int64_t j = j0 + wn_ + 8 * ni + 2 * t + (e & 1);
                if (i < m && j < nc) y[j * ldy + i] = acc[mi][ni][e];
            }
}

template <int G, bool MIN>
static cudaError_t i8_gemm_launch(const int8_t *wq, const float *wd, const float *wm, int64_t m, int64_t m_pad,
                                  int64_t k, int64_t k_pad, const int8_t *xq, const float *xd,
                                  const float *xs, int64_t nc, int64_t n_pad, float *y, int64_t ldy,
                                  cudaStream_t stream) {
    const dim3 grid((unsigned)(m_pad / I8_TILE), (unsigned)(n_pad / I8_TILE));
    int8_gemm_kernel<G, MIN><<<grid, I8_THREADS, 0, stream>>>(wq, wd, wm, m, m_pad, k, k_pad, xq, xd, xs,
                                                             nc, n_pad, y, ldy);
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cuda_int8_matmul(int type, const int8_t *wq, const float *wd, const float *wm,
                                            int64_t m, int64_t k, int64_t n, const float *x, int64_t ldx,
                                            float *y, int64_t ldy, void *workspace, cudaStream_t stream) {
    if (!qmm_cuda_int8_has_type(type)) return cudaErrorInvalidValue;
    const int64_t m_pad = qmm_cuda_int8_pad(m), k_pad = qmm_cuda_int8_pad(k);
    const size_t ch = QMM_CUDA_X_CHUNK, kp = (size_t)k_pad;
    uint8_t *base = (uint8_t *)workspace;
    int8_t *xq = (int8_t *)base;
    float *xd = (float *)(base + al256(ch * kp));
    float *s32 = (float *)((uint8_t *)xd + al256(kp / 32 * ch * sizeof(float)));
    float *s16 = (float *)((uint8_t *)s32 + al256(kp / 32 * ch * sizeof(float)));
    const int G = qmm_cuda_int8_sub_block(type);
    const bool mn = qmm_cuda_int8_has_min(type);
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int64_t nc = n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK;
        const int64_t n_pad = qmm_cuda_int8_pad(nc);
        cudaError_t e = qmm_cuda_int8_quantize_x(x + t0 * ldx, nc, n_pad, k, ldx, k_pad, xq, xd, s32, s16, stream);
        if (e != cudaSuccess) return e;
        float *yc = y + t0 * ldy;
        if (G == 32 && mn) e = i8_gemm_launch<32, true>(wq, wd, wm, m, m_pad, k, k_pad, xq, xd, s32, nc, n_pad, yc, ldy, stream);
        else if (G == 32) e = i8_gemm_launch<32, false>(wq, wd, wm, m, m_pad, k, k_pad, xq, xd, s32, nc, n_pad, yc, ldy, stream);
        else if (mn) e = i8_gemm_launch<16, true>(wq, wd, wm, m, m_pad, k, k_pad, xq, xd, s16, nc, n_pad, yc, ldy, stream);
        else e = i8_gemm_launch<16, false>(wq, wd, wm, m, m_pad, k, k_pad, xq, xd, s16, nc, n_pad, yc, ldy, stream);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}
