/*
 * int8.cu — the CUDA int8 strategy: X quantized per call to int8 per 32-element block (the
 * CPU's int8_amx rule, bit for bit), W repacked once at weights creation into the register-
 * fragment order of mma.m16n8k32 (4-bit types as nibbles, the others as int8 quants) with a
 * float scale (and min) per sub-block, and integer tensor-core kernels (mma.sync s8/u8 x s8 ->
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
 * Values (per type, formulas of src/formats/ and dequant.cuh): per row and sub-block of G
 * elements (G = 32; 16 for q2_K, q3_K, q6_K) int8 quants q, a float scale d_w and (q4_1, q5_1,
 * q2_K, q4_K, q5_K) a float min mn_w such that d_w * q (one f32 product) plus mn_w (one f32
 * sum) is bit-identical to the type's dequantization:
 *   q4_0 (q-8, d)   q4_1 (q, d, m)   q5_0 (q-16, d)   q5_1 (q, d, m)   q8_0 (q, d)
 *   q2_K (q, d*(sc&15), -(dmin*(sc>>4)))   q3_K (q-4 or q, d*(sc-32))
 *   q4_K/q5_K (q, d*sc, -(dmin*mn))        q6_K (q-32, d*sc)
 *
 * Repacked layout (device; docs/CUDA.md "int8"): m_pad = m rounded up to 128, k_pad = k
 * rounded up to 128 (qmm_cuda_int8_pad); padding quants and scales are zero (nibbles: the
 * nibble of value 0).
 * - Quants in tiles of 16 rows x 64 columns, tile (mt, kt) (rows 16mt.., columns 64kt..) at
 *   byte (kt * m_pad/16 + mt) * TB: the tiles of one k64 step of consecutive rows are
 *   contiguous. Lane L = 4g + t of a warp holds, for the 32-column half h of a tile, the A
 *   fragment of mma.m16n8k32 (.row): a0 = W[g][32h+4t..+3], a1 = W[g+8][32h+4t..],
 *   a2 = W[g][32h+16+4t..], a3 = W[g+8][32h+16+4t..] (rows and columns within the tile).
 *   int8 types (TB = 1024): bytes h*512 + 16L + 4j hold a_j of half h (one 16-byte load per
 *   lane and half). Nibble types q4_0, q4_1, q4_K (TB = 512): the 16 bytes at 16L hold both
 *   halves: byte b of word j is (nibble of a_j byte b, half 0) | (nibble of half 1) << 4, the
 *   nibble being the raw 4-bit quant (q4_0: q + 8). In registers ((P << 4) & 0xF0F0F0F0 for
 *   half 0, P & 0xF0F0F0F0 for half 1, one more XOR 0x80808080 for q4_0) each byte becomes 16
 *   times the value: u8 16q for q4_1/q4_K (mma .u8.s8), s8 16(q - 8) for q4_0.
 * - Scales and mins: [k_pad/G][m_pad] floats, the rows of each 64-row group permuted: row
 *   r = 16mi + 8e + g of a group is stored at position 8g + 2mi + e, so the four rows a lane
 *   needs from one warp's 32 rows (g, g+8 of both m16 tiles) are one 16-byte load.
 *
 * The sum (the "int8 order", the same for every kernel, n, tile and split): per output y[j][i]
 * the 32-blocks c = 0 .. k/32-1 in chunks of I8_KS = 16 blocks (512 elements); per chunk
 * p = 0, then for each block c of the chunk in increasing order (G = 16: low half, then high
 * half, each with its own d_w, mn_w, s16)
 *     p = fmaf((float)isum, dx * d_w, p);   min types: p = fmaf(s, mn_w, p)
 * where isum is the exact integer dot of the block's (sub-block's) int8 quants; then
 * y = p_0, y = y + p_1, y = y + p_2, ... (f32 additions in chunk order). isum leaves the MMA
 * exact: its accumulator input is the integer bits of 1.5 * 2^23 (1.5 * 2^19 for nibble
 * types, whose products are 16 times larger), so the int32 result read as a float is
 * 1.5 * 2^23 + isum exactly (|isum| < 2^22), and one subtraction gives (float)isum with no
 * integer-to-float conversion. An output therefore depends only on its W row, its X row and
 * k: batch-invariant and deterministic (no atomics; the split-k partials are summed in chunk
 * order by one thread).
 *
 * Kernels: n <= 8: i8_skinny_kernel (a warp per 16 W rows and chunk, W fragments loaded from
 * global memory straight into registers, the 8 X rows and the CTA's scales staged in shared
 * memory); n > 8: i8_gemm_kernel (CTA tiles of 64 or 128 W rows x 64 or 128 X rows, warps of
 * 32 x 32 outputs, 4-stage cp.async pipeline, X fragments by ldmatrix). Either runs one CTA
 * per chunk (split-k: chunk partials in the workspace, then i8_reduce_kernel) or all chunks in
 * one CTA (y kept between chunks: in registers, or the GEMM's shared memory). Sources for the
 * PTX fragment layouts: PTX ISA,
 * "Matrix Fragments for mma.m16n8k32" and "mma.m16n8k16" with .s8/.u8 operands, "ldmatrix".
 */
#include <stdint.h>

#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"
#include "cuda/int8_layout.cuh"

/* ---------------------------------------------------------------------------------------
 * Geometry
 * ------------------------------------------------------------------------------------- */

#define I8_KS 16      /* 32-blocks per chunk of the int8 order */
#define I8_BK 64      /* k bytes per GEMM pipeline stage (two 32-blocks) */
#define I8_STAGES 4
#define I8_XROW (I8_BK + 16) /* shared X row stride in bytes: ldmatrix rows hit distinct banks */
#define I8_SKINNY_ROWS QMM_CUDA_INT8_GEMV_N /* X rows of the skinny kernel (n <= 8) */
#define I8_SKINNY_WARPS 8    /* warps (m16 tiles) per skinny CTA */
/* Workspace bytes for split-k chunk partials (beyond them: no split, same results). */
#define I8_PARTIAL_BYTES ((size_t)16 << 20)


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

extern "C" int64_t qmm_cuda_int8_pad(int64_t v) { return (v + I8_PAD - 1) / I8_PAD * I8_PAD; }

template <int T> struct i8_fmt_of {
    static void run(int *fmt) { *fmt = qmm_cuda_type<T>::int8 ? i8_fmt<T>::v : -1; }
};
static int i8_format(int type) {
    int f = -1;
    return qmm_cuda_dispatch_type<i8_fmt_of>(type, &f) ? f : -1;
}

extern "C" size_t qmm_cuda_int8_quant_bytes(int type, int64_t m_pad, int64_t k_pad) {
    const size_t b = (size_t)m_pad * (size_t)k_pad;
    return i8_format(type) == I8_FMT_S8 ? b : b / 2;
}

/* X workspace of one chunk: quants QMM_CUDA_X_CHUNK x k_pad, then dx and s [k_pad/32][chunk],
 * then s16 [k_pad/16][chunk] (each part 256-byte aligned), then the split-k partials. */
static size_t al256(size_t v) { return (v + 255) / 256 * 256; }

static size_t i8_x_bytes(int64_t k) {
    const size_t kp = (size_t)qmm_cuda_int8_pad(k), ch = QMM_CUDA_X_CHUNK;
    return al256(ch * kp) + 2 * al256(kp / 32 * ch * sizeof(float)) + al256(kp / 16 * ch * sizeof(float));
}

extern "C" size_t qmm_cuda_int8_workspace_bytes(int64_t k) { return i8_x_bytes(k) + I8_PARTIAL_BYTES; }

/* ---------------------------------------------------------------------------------------
 * X quantization: one warp per (row, 32-block), lane = element; row j = blockIdx.y (striding
 * by gridDim.y), block c = warp index along blockIdx.x (no 64-bit division per element).
 * ------------------------------------------------------------------------------------- */

/* Where block c of X row j goes: the int8 layout (q[j * k_pad + 32c + e], dx and s32 at
 * [c][n_pad], s16 at [2c + h][n_pad]), or with ilv = C > 0 the GGUF-row kernel's
 * (int8_gemv.cu: block b of chunk ch = c / 16 at slot u = ((c % 16) * C + ch) * n_pad + j,
 * n_pad its tokens per launch: q[32u + e], dx and s32 [u], s16 [2u + h]). */
struct i8_xpos {
    int64_t q, d, s16; /* q: first byte; d: dx and s32 index; s16: index of half 0 (half 1: + s16_h) */
    int64_t s16_h;
};
__device__ __forceinline__ i8_xpos i8_x_at(int64_t j, int64_t c, int64_t n_pad, int64_t k_pad, int64_t ilv) {
    i8_xpos p;
    if (ilv > 0) {
        const int64_t u = ((c % 16) * ilv + c / 16) * n_pad + j;
        p.q = 32 * u, p.d = u, p.s16 = 2 * u, p.s16_h = 1;
    } else {
        p.q = j * k_pad + 32 * c, p.d = c * n_pad + j, p.s16 = 2 * c * n_pad + j, p.s16_h = n_pad;
    }
    return p;
}

__device__ __forceinline__ void int8_quantize_x_block(const float *__restrict__ x, int64_t n, int64_t n_pad,
                                                      int64_t k, int64_t ldx, int64_t k_pad, int8_t *__restrict__ q,
                                                      float *__restrict__ dx, float *__restrict__ s32,
                                                      float *__restrict__ s16, int64_t j, int64_t c, int lane,
                                                      int64_t ilv) {
    const i8_xpos at = i8_x_at(j, c, n_pad, k_pad, ilv);
    const bool valid = j < n && c < k / 32; /* k is a multiple of 32 for every quantized type */
    const float v = valid ? x[j * ldx + 32 * c + lane] : 0.0f;
    float amax = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    /* A block holding NaN or +-Inf: q = 0, dx = s = NaN (bits 0x7FC00000, as the CPU rule),
     * so every output that reads it is NaN, never silently finite. */
    if (__any_sync(0xFFFFFFFFu, !isfinite(v))) {
        q[at.q + lane] = 0;
        const float nan = __int_as_float(0x7FC00000);
        if (lane == 0) dx[at.d] = s32[at.d] = s16[at.s16] = nan;
        else if (lane == 16) s16[at.s16 + at.s16_h] = nan;
        return;
    }
    const float d = __fdiv_rn(amax, 127.0f);
    const float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
    const float inv = amax > 0.0f ? __fdiv_rn(127.0f, __fmul_rn(amax, pre)) : 0.0f;
    int qi = __float2int_rn(__fmul_rn(__fmul_rn(v, pre), inv));
    qi = qi < -128 ? -128 : qi > 127 ? 127 : qi;
    q[at.q + lane] = (int8_t)qi;
    int sum = qi;
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o); /* per half */
    const int other = __shfl_xor_sync(0xFFFFFFFFu, sum, 16);
    if (lane == 0) {
        dx[at.d] = d;
        s32[at.d] = __fmul_rn(d, (float)(sum + other));
        s16[at.s16] = __fmul_rn(d, (float)sum);
    } else if (lane == 16) {
        s16[at.s16 + at.s16_h] = __fmul_rn(d, (float)sum);
    }
}

__global__ void int8_quantize_x_kernel(const float *__restrict__ x, int64_t n, int64_t n_pad, int64_t k,
                                       int64_t ldx, int64_t k_pad, int8_t *__restrict__ q,
                                       float *__restrict__ dx, float *__restrict__ s32,
                                       float *__restrict__ s16, int64_t ilv) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* a kernel launched after this one with programmatic serialization (int8_gemv.cu) may
     * start now: it waits for this grid's results (griddepcontrol.wait) before reading X */
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const int64_t c = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (c >= (ilv > 0 ? 16 * ilv : k_pad / 32)) return; /* whole warps: the shuffles inside stay full-warp */
    for (int64_t j = blockIdx.y; j < n_pad; j += gridDim.y)
        int8_quantize_x_block(x, n, n_pad, k, ldx, k_pad, q, dx, s32, s16, j, c, threadIdx.x & 31, ilv);
}

/* ilv: 0 for the int8 layout, C (chunks of the GGUF-row kernel) for its interleaved one
 * (i8_x_at: 16 C block slots per row, those past k/32 zero). */
static cudaError_t i8_quantize_x(const float *x, int64_t n, int64_t n_pad, int64_t k, int64_t ldx, int64_t k_pad,
                                 int8_t *q, float *dx, float *s32, float *s16, int64_t ilv, cudaStream_t stream) {
    const int64_t kb = ilv > 0 ? 16 * ilv : k_pad / 32;
    if (n_pad * kb == 0) return cudaSuccess;
    const int per_block = kb < 8 ? (int)kb : 8; /* warps per block, along the row */
    const int64_t bx = (kb + per_block - 1) / per_block;
    if (bx > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    const dim3 grid((unsigned)bx, (unsigned)(n_pad < 65535 ? n_pad : 65535));
    int8_quantize_x_kernel<<<grid, 32 * per_block, 0, stream>>>(x, n, n_pad, k, ldx, k_pad, q, dx, s32, s16, ilv);
    return cudaGetLastError();
}

/* Whether the X quantizer's code on this device holds its griddepcontrol.launch_dependents
 * (i8_sm90_code). */
extern "C" bool qmm_cuda_int8_quantizer_triggers(void) {
    static std::atomic<signed char> cached[64];
    return i8_sm90_code(int8_quantize_x_kernel, cached);
}

extern "C" cudaError_t qmm_cuda_int8_quantize_x(const float *x, int64_t n, int64_t n_pad, int64_t k,
                                                int64_t ldx, int64_t k_pad, int8_t *q, float *dx,
                                                float *s32, float *s16, cudaStream_t stream) {
    return i8_quantize_x(x, n, n_pad, k, ldx, k_pad, q, dx, s32, s16, 0, stream);
}

/* ---------------------------------------------------------------------------------------
 * W repack: the values of one 32-element block per call of i8_unpack<T>, then the layout.
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

/* Position of W row i in the permuted scale layout (see the top of this file). */
__host__ __device__ __forceinline__ int64_t i8_scale_pos(int64_t i) {
    const int r = (int)(i & 63);
    return (i & ~(int64_t)63) | ((r & 7) << 3) | ((r >> 4) << 1) | ((r >> 3) & 1);
}

/* The fragment-order repack: one thread per (row i < m_pad, k64 tile kt): the two 32-blocks
 * of the tile decoded by i8_unpack<T>, their quants scattered to the lane words that hold
 * them, their scales (and mins) to the permuted positions. Rows past m and blocks past k/32
 * are written as zeros. */
template <int T, int G, bool MIN, int FMT>
__global__ void i8_pack_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k,
                               int64_t m_pad, int64_t k_pad, uint8_t *__restrict__ q, float *__restrict__ d,
                               float *__restrict__ mn) {
    constexpr int TB = i8_tile_bytes<FMT>::v;
    const int64_t nkt = k_pad / 64;
    const int64_t tix = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (tix >= m_pad * nkt) return;
    const int64_t kt = tix / m_pad, i = tix % m_pad; /* consecutive threads: consecutive rows */
    int8_t v[2][32];
    float sd[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}}, sm[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t c = 2 * kt + h;
        if (i < m && c < k / 32) {
            i8_unpack<T>::run(w + (size_t)i * row_bytes, c, v[h], sd[h], sm[h]);
        } else {
#pragma unroll
            for (int l = 0; l < 32; l++) v[h][l] = 0;
        }
    }
    const int g = (int)(i & 7), e8 = (int)((i >> 3) & 1);
    uint8_t *tile = q + (kt * (m_pad / 16) + i / 16) * TB;
#pragma unroll
    for (int t = 0; t < 4; t++)
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int col = 16 * hh + 4 * t, at = (4 * g + t) * 16 + (2 * hh + e8) * 4;
            if (FMT == I8_FMT_S8) {
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    uint32_t word = 0;
#pragma unroll
                    for (int b = 0; b < 4; b++) word |= (uint32_t)(uint8_t)v[h][col + b] << (8 * b);
                    *(uint32_t *)(tile + h * 512 + at) = word;
                }
            } else {
                const int off = FMT == I8_FMT_NIB_S ? 8 : 0; /* raw nibble = value + off */
                uint32_t word = 0;
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    const uint32_t lo = (uint32_t)(v[0][col + b] + off) & 15u, hi = (uint32_t)(v[1][col + b] + off) & 15u;
                    word |= (lo | hi << 4) << (8 * b);
                }
                *(uint32_t *)(tile + at) = word;
            }
        }
    const int64_t p = i8_scale_pos(i);
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t c = 2 * kt + h;
        if (G == 32) {
            d[c * m_pad + p] = sd[h][0];
            if (MIN) mn[c * m_pad + p] = sm[h][0];
        } else {
            d[(2 * c) * m_pad + p] = sd[h][0];
            d[(2 * c + 1) * m_pad + p] = sd[h][1];
            if (MIN) {
                mn[(2 * c) * m_pad + p] = sm[h][0];
                mn[(2 * c + 1) * m_pad + p] = sm[h][1];
            }
        }
    }
}

/* Test aid: the same values row-major (quants m_pad x k_pad, scales [k_pad/G][m_pad] in row
 * order), one thread per (row, 32-block). */
template <int T, int G, bool MIN>
__global__ void i8_pack_rows_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k,
                                    int64_t m_pad, int64_t k_pad, int8_t *__restrict__ q, float *__restrict__ d,
                                    float *__restrict__ mn) {
    const int64_t kb = k_pad / 32;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m_pad * kb) return;
    const int64_t c = t / m_pad, i = t % m_pad;
    int8_t v[32];
    float sd[2] = {0.0f, 0.0f}, sm[2] = {0.0f, 0.0f};
    if (i < m && c < k / 32) {
        i8_unpack<T>::run(w + (size_t)i * row_bytes, c, v, sd, sm);
    } else {
        for (int l = 0; l < 32; l++) v[l] = 0;
    }
    for (int l = 0; l < 32; l++) q[i * k_pad + 32 * c + l] = v[l];
    for (int hh = 0; hh < 32 / G; hh++) {
        d[(c * (32 / G) + hh) * m_pad + i] = sd[hh];
        if (MIN) mn[(c * (32 / G) + hh) * m_pad + i] = sm[hh];
    }
}

/* The repack of type T (rows: the test aid's layout), for a type whose descriptor says int8;
 * *refused = true for every other type (nothing launched). */
template <int T> struct i8_pack_launch {
    static void run(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k, int64_t m_pad, int64_t k_pad,
                    void *q, float *d, float *mn, bool rows, cudaStream_t stream, bool *refused) {
        typedef qmm_cuda_type<T> D;
        if constexpr (!D::int8) {
            *refused = true;
        } else {
            *refused = false;
            constexpr int G = D::int8_sub_block;
            constexpr bool MIN = D::int8_min;
            static_assert(G == 16 || G == 32, "int8 sub-blocks of 16 or 32");
            const int tb = 128;
            const int64_t threads = rows ? m_pad * (k_pad / 32) : m_pad * (k_pad / 64);
            const int64_t blocks = (threads + tb - 1) / tb;
            if (blocks == 0) return;
            if (rows)
                i8_pack_rows_kernel<T, G, MIN><<<(unsigned)blocks, tb, 0, stream>>>(w, row_bytes, m, k, m_pad, k_pad,
                                                                                   (int8_t *)q, d, mn);
            else
                i8_pack_kernel<T, G, MIN, i8_fmt<T>::v><<<(unsigned)blocks, tb, 0, stream>>>(
                    w, row_bytes, m, k, m_pad, k_pad, (uint8_t *)q, d, mn);
        }
    }
};

static cudaError_t i8_pack(int type, const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t m_pad,
                           int64_t k_pad, void *q, float *d, float *mn, bool rows, cudaStream_t stream) {
    bool refused = true;
    if (m_pad % I8_PAD != 0 || k_pad % I8_PAD != 0 || m_pad < m || k_pad < k) return cudaErrorInvalidValue;
    if (!qmm_cuda_dispatch_type<i8_pack_launch>(type, (const uint8_t *)w, row_bytes, m, k, m_pad, k_pad, q, d, mn,
                                                rows, stream, &refused) ||
        refused)
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

extern "C" cudaError_t qmm_cuda_int8_pack(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                          int64_t m_pad, int64_t k_pad, void *q, float *d, float *mn,
                                          cudaStream_t stream) {
    return i8_pack(type, w, row_bytes, m, k, m_pad, k_pad, q, d, mn, false, stream);
}

extern "C" cudaError_t qmm_cuda_int8_pack_rows(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                               int64_t m_pad, int64_t k_pad, int8_t *q, float *d, float *mn,
                                               cudaStream_t stream) {
    return i8_pack(type, w, row_bytes, m, k, m_pad, k_pad, q, d, mn, true, stream);
}

/* ---------------------------------------------------------------------------------------
 * Kernels
 * ------------------------------------------------------------------------------------- */

/* D = A (16 x 32, row) * B (32 x 8, col) + c (every element): s8 or u8 A, s8 B, s32. */
template <bool U8>
__device__ __forceinline__ void i8_mma_k32(const uint32_t (&a)[4], uint32_t b0, uint32_t b1, int c, int (&r)[4]) {
    if constexpr (U8)
        asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%10,%10,%10};\n"
            : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c));
    else
        asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%10,%10,%10};\n"
            : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c));
}
/* D = A (16 x 16, row) * B (16 x 8, col) + c, s8 inputs, s32. */
__device__ __forceinline__ void i8_mma_k16(uint32_t a0, uint32_t a1, uint32_t b0, int c, int (&r)[4]) {
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(a0), "r"(a1), "r"(b0), "r"(c));
}

/* The MMA accumulator input and its float value: the int32 result read as a float is
 * I8Magic<FMT>::f + isum (int8 quants) or f + isum16 / 16 (nibbles: products 16x). */
template <int FMT> struct i8_magic {
    static constexpr int bits = FMT == I8_FMT_S8 ? 0x4B400000 : 0x49400000; /* 1.5 * 2^23, 1.5 * 2^19 */
    static constexpr float f = FMT == I8_FMT_S8 ? 12582912.0f : 786432.0f;
};

/* The A fragment of 32-column half h (0, 1) from the packed nibble words of a lane. */
template <int FMT>
__device__ __forceinline__ void i8_expand(const uint32_t (&p)[4], int h, uint32_t (&a)[4]) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        uint32_t v = (h == 0 ? p[j] << 4 : p[j]) & 0xF0F0F0F0u;
        if (FMT == I8_FMT_NIB_S) v ^= 0x80808080u;
        a[j] = v;
    }
}

/* One term of the int8 order: p = fmaf((float)isum, dx * d_w, p) (+ fmaf(s, mn_w, p)). */
template <int FMT, bool MIN>
__device__ __forceinline__ float i8_term(int r, float dx, float dw, float s, float mw, float p) {
    const float isum = __fsub_rn(__int_as_float(r), i8_magic<FMT>::f); /* exact */
    float v = __fmaf_rn(isum, __fmul_rn(dx, dw), p);
    if (MIN) v = __fmaf_rn(s, mw, v);
    return v;
}

/* Arguments of the GEMM and skinny kernels. out + z * zs + j * ldo + i receives output (i, j)
 * (of chunk z when split, else the whole sum). */
struct i8_args {
    const uint8_t *wq;
    const float *wd, *wm;
    const int8_t *xq;
    const float *xd, *xs;
    float *out;
    int64_t ldo, zs;
    int64_t m, m_pad, nc, n_pad, k_pad;
    int nblk;
};

/* GEMM tile geometry: WM x WN warps of 32 W rows x 32 X rows; one pipeline stage holds the W
 * tiles, X rows (padded to I8_XROW bytes), W scales and mins of its NS sub-blocks, dx of its
 * two 32-blocks and the X sums s of its sub-blocks. */
template <int G, bool MIN, int FMT, int WM, int WN> struct i8_geom {
    static constexpr int BM = 32 * WM, BN = 32 * WN, THREADS = 32 * WM * WN, NS = I8_BK / G;
    static constexpr int TB = i8_tile_bytes<FMT>::v;
    static constexpr int W_BYTES = BM / 16 * TB, X_BYTES = BN * I8_XROW;
    static constexpr int OFF_X = W_BYTES, OFF_DW = OFF_X + X_BYTES, OFF_MW = OFF_DW + NS * BM * 4;
    static constexpr int OFF_DX = OFF_MW + (MIN ? NS * BM * 4 : 0), OFF_SX = OFF_DX + 2 * BN * 4;
    static constexpr int STAGE = OFF_SX + (MIN ? NS * BN * 4 : 0);
    static constexpr int SMEM = STAGE * I8_STAGES;
    static constexpr int TOTS = 32 * THREADS * 4; /* MULTI: bytes of y kept between chunks */
    static_assert(STAGE % 16 == 0 && BM >= 64, "16-byte aligned stages; 64-row scale groups");
};

/* n > 8. grid (W tiles, X tiles, chunks or 1). MULTI: the CTA runs every chunk (y = p_0,
 * y += p_1, ... in registers); else chunk blockIdx.z only. */
template <int G, bool MIN, int FMT, int WM, int WN, bool MULTI>
__global__ void __launch_bounds__(32 * WM * WN) i8_gemm_kernel(const i8_args a) {
    typedef i8_geom<G, MIN, FMT, WM, WN> Q;
    extern __shared__ __align__(16) uint8_t i8_smem[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm = warp % WM, wn = warp / WM;
    const int64_t i0 = (int64_t)blockIdx.x * Q::BM, j0 = (int64_t)blockIdx.y * Q::BN;
    const int nblk = a.nblk, nchunk = (nblk + I8_KS - 1) / I8_KS;
    const int ch0 = MULTI ? 0 : (int)blockIdx.z, ch1 = MULTI ? nchunk : ch0 + 1;
    const int st0 = ch0 * (I8_KS / 2), st1 = min(ch1 * (I8_KS / 2), (nblk + 1) / 2);
    const int64_t mt16 = a.m_pad / 16;

    /* The 16-byte copies of one stage, numbered c = 0 .. NC-1: W tiles, X rows, W scales, W
     * mins, dx, s. Thread tid makes copies tid + it * THREADS; its source addresses are formed
     * once here for stage st0 and advance by a per-copy stride per stage. */
    constexpr int NWC = Q::W_BYTES / 16, NXC = Q::BN * 4, NDW = Q::NS * Q::BM / 4, NMW = MIN ? NDW : 0;
    constexpr int NDX = 2 * Q::BN / 4, NSX = MIN ? Q::NS * Q::BN / 4 : 0;
    constexpr int NC = NWC + NXC + NDW + NMW + NDX + NSX, SLOTS = (NC + Q::THREADS - 1) / Q::THREADS;
    const uint8_t *src[SLOTS];
    int dst[SLOTS], step[SLOTS];
#pragma unroll
    for (int it = 0; it < SLOTS; it++) {
        int c = tid + it * Q::THREADS;
        if (c >= NC) c = NC - 1; /* no copy (the guard below); any valid address */
        if (c < NWC) { /* tile i0/16 + c / (TB/16) of k64 step st */
            src[it] = a.wq + ((int64_t)st0 * mt16 + i0 / 16) * Q::TB + 16 * c;
            dst[it] = 16 * c;
            step[it] = (int)(mt16 * Q::TB);
        } else if ((c -= NWC) < NXC) {
            const int r = c >> 2, col = c & 3;
            src[it] = (const uint8_t *)(a.xq + (j0 + r) * a.k_pad + (int64_t)I8_BK * st0 + 16 * col);
            dst[it] = Q::OFF_X + r * I8_XROW + 16 * col;
            step[it] = I8_BK;
        } else if ((c -= NXC) < NDW + NMW) {
            const bool mins = c >= NDW;
            if (mins) c -= NDW;
            const int sub = c / (Q::BM / 4), col = 4 * (c % (Q::BM / 4));
            src[it] = (const uint8_t *)((mins ? a.wm : a.wd) + ((int64_t)st0 * Q::NS + sub) * a.m_pad + i0 + col);
            dst[it] = (mins ? Q::OFF_MW : Q::OFF_DW) + 4 * (sub * Q::BM + col);
            step[it] = (int)(4 * Q::NS * a.m_pad);
        } else if ((c -= NDW + NMW) < NDX) {
            const int sub = c / (Q::BN / 4), col = 4 * (c % (Q::BN / 4));
            src[it] = (const uint8_t *)(a.xd + ((int64_t)st0 * 2 + sub) * a.n_pad + j0 + col);
            dst[it] = Q::OFF_DX + 4 * (sub * Q::BN + col);
            step[it] = (int)(4 * 2 * a.n_pad);
        } else {
            c -= NDX;
            const int sub = c / (Q::BN / 4), col = 4 * (c % (Q::BN / 4));
            src[it] = (const uint8_t *)(a.xs + ((int64_t)st0 * Q::NS + sub) * a.n_pad + j0 + col);
            dst[it] = Q::OFF_SX + 4 * (sub * Q::BN + col);
            step[it] = (int)(4 * Q::NS * a.n_pad);
        }
    }
    /* stages are loaded in order st0, st0 + 1, ...: each load copies and advances */
    auto load = [&](int slot) {
        uint8_t *s = i8_smem + slot * Q::STAGE;
#pragma unroll
        for (int it = 0; it < SLOTS; it++) {
            if (NC % Q::THREADS == 0 || tid + it * Q::THREADS < NC) i8_cp16(s + dst[it], src[it]);
            src[it] += step[it];
        }
    };

    /* MULTI: y between chunks in shared memory after the stages, output q of thread tid at
     * tots[q * THREADS + tid] (consecutive threads, consecutive words) */
    float *tots = (float *)(i8_smem + Q::SMEM);
    float acc[2][4][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;
    bool first = true;

#pragma unroll
    for (int i = 0; i < I8_STAGES - 1; i++) {
        if (st0 + i < st1) load(i);
        i8_commit();
    }
    for (int st = st0; st < st1; st++) {
        i8_wait<I8_STAGES - 2>();
        __syncthreads(); /* stage st landed; every warp is done with the slot refilled next */
        if (st + I8_STAGES - 1 < st1) load((st - st0 + I8_STAGES - 1) % I8_STAGES);
        i8_commit();
        const uint8_t *s = i8_smem + ((st - st0) % I8_STAGES) * Q::STAGE;
        uint32_t pk[2][4];
        if constexpr (FMT != I8_FMT_S8) {
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const uint4 v = *(const uint4 *)(s + (2 * wm + mi) * Q::TB + 16 * lane);
                pk[mi][0] = v.x, pk[mi][1] = v.y, pk[mi][2] = v.z, pk[mi][3] = v.w;
            }
        }
#pragma unroll
        for (int cb = 0; cb < 2; cb++) {
            const int blk = 2 * st + cb;
            if (blk >= nblk) break; /* padding blocks: never added */
            uint32_t A[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                if constexpr (FMT == I8_FMT_S8) {
                    const uint4 v = *(const uint4 *)(s + (2 * wm + mi) * Q::TB + 512 * cb + 16 * lane);
                    A[mi][0] = v.x, A[mi][1] = v.y, A[mi][2] = v.z, A[mi][3] = v.w;
                } else {
                    i8_expand<FMT>(pk[mi], cb, A[mi]);
                }
            }
            uint32_t B[4][2];
#pragma unroll
            for (int p = 0; p < 2; p++)
                i8_ldsm_x4(B[2 * p][0], B[2 * p][1], B[2 * p + 1][0], B[2 * p + 1][1],
                           s + Q::OFF_X + (wn * 32 + 16 * p + ((lane >> 4) & 1) * 8 + (lane & 7)) * I8_XROW +
                               32 * cb + ((lane >> 3) & 1) * 16);
            const float *sdx = (const float *)(s + Q::OFF_DX) + cb * Q::BN + wn * 32 + 2 * t;
            float2 dxv[4];
#pragma unroll
            for (int ni = 0; ni < 4; ni++) dxv[ni] = *(const float2 *)(sdx + 8 * ni);
#pragma unroll
            for (int h = 0; h < 32 / G; h++) {
                const int sub = cb * (32 / G) + h;
                /* rows g, g+8 of both m16 tiles: positions 8g + 2mi + e of the 64-row group */
                const int wpos = sub * Q::BM + (wm >> 1) * 64 + 8 * g + 4 * (wm & 1);
                const float4 dw4 = *(const float4 *)((const float *)(s + Q::OFF_DW) + wpos);
                float4 mw4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                float2 sxv[4];
#pragma unroll
                for (int ni = 0; ni < 4; ni++) sxv[ni] = make_float2(0.0f, 0.0f);
                if (MIN) {
                    mw4 = *(const float4 *)((const float *)(s + Q::OFF_MW) + wpos);
                    const float *ssx = (const float *)(s + Q::OFF_SX) + sub * Q::BN + wn * 32 + 2 * t;
#pragma unroll
                    for (int ni = 0; ni < 4; ni++) sxv[ni] = *(const float2 *)(ssx + 8 * ni);
                }
                const float dwv[2][2] = {{dw4.x, dw4.y}, {dw4.z, dw4.w}};
                const float mwv[2][2] = {{mw4.x, mw4.y}, {mw4.z, mw4.w}};
#pragma unroll
                for (int mi = 0; mi < 2; mi++)
#pragma unroll
                    for (int ni = 0; ni < 4; ni++) {
                        int r[4];
                        if constexpr (G == 32) i8_mma_k32<FMT == I8_FMT_NIB_U>(A[mi], B[ni][0], B[ni][1], i8_magic<FMT>::bits, r);
                        else i8_mma_k16(A[mi][2 * h], A[mi][2 * h + 1], B[ni][h], i8_magic<FMT>::bits, r);
#pragma unroll
                        for (int e = 0; e < 4; e++) /* r[e]: W row g + 8(e >> 1), X row 2t + (e & 1) */
                            acc[mi][ni][e] = i8_term<FMT, MIN>(r[e], (e & 1) ? dxv[ni].y : dxv[ni].x, dwv[mi][e >> 1],
                                                                (e & 1) ? sxv[ni].y : sxv[ni].x, mwv[mi][e >> 1],
                                                                acc[mi][ni][e]);
                    }
            }
        }
        if (MULTI && ((st + 1) % (I8_KS / 2) == 0 || st + 1 == st1)) { /* chunk done: y = p_0, y += p_c */
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        float &tv = tots[((mi * 4 + ni) * 4 + e) * Q::THREADS + tid];
                        if (first) tv = acc[mi][ni][e];
                        else tv = __fadd_rn(tv, acc[mi][ni][e]);
                        acc[mi][ni][e] = 0.0f;
                    }
            first = false;
        }
    }
    i8_wait<0>();

    float *out = a.out + (MULTI ? 0 : (int64_t)blockIdx.z * a.zs);
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int64_t i = i0 + wm * 32 + 16 * mi + 8 * (e >> 1) + g;
                const int64_t j = j0 + wn * 32 + 8 * ni + 2 * t + (e & 1);
                if (i < a.m && j < a.nc)
                    out[j * a.ldo + i] = MULTI ? tots[((mi * 4 + ni) * 4 + e) * Q::THREADS + tid] : acc[mi][ni][e];
            }
}

/* n <= 8: a CTA of I8_SKINNY_WARPS warps, warp w on the 16 W rows of tile blockIdx.x *
 * I8_SKINNY_WARPS + w against the 8 X rows (padding rows are zero; outputs past n are not
 * stored). Per chunk the X quants, dx and s of the chunk and the CTA's W scales and mins are
 * staged in shared memory; the warp's W fragments of the chunk (8 tiles) are loaded from
 * global memory straight into registers, all before the first MMA. MULTI: every chunk (y in
 * registers between chunks); else chunk blockIdx.y only. */
template <int G, bool MIN, int FMT, bool MULTI>
__global__ void __launch_bounds__(32 * I8_SKINNY_WARPS) i8_skinny_kernel(const i8_args a) {
    constexpr int TB = i8_tile_bytes<FMT>::v, SPB = 32 / G, NSC = I8_KS * SPB; /* sub-blocks per chunk */
    constexpr int THREADS = 32 * I8_SKINNY_WARPS, ROWS = 16 * I8_SKINNY_WARPS, NT = I8_KS / 2;
    constexpr int XR = I8_KS * 32 + 16; /* shared X row stride: rows g land on distinct banks */
    __shared__ __align__(16) int8_t xs[I8_SKINNY_ROWS * XR];
    __shared__ __align__(16) float sdx[I8_KS][I8_SKINNY_ROWS];
    __shared__ __align__(16) float ssx[MIN ? NSC : 1][I8_SKINNY_ROWS];
    __shared__ __align__(16) float sdw[NSC][ROWS];
    __shared__ __align__(16) float smw[MIN ? NSC : 1][ROWS];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int64_t i0 = (int64_t)blockIdx.x * ROWS, mt = (int64_t)blockIdx.x * I8_SKINNY_WARPS + warp;
    const bool live = mt * 16 < a.m; /* warp-uniform */
    const int nblk = a.nblk, nchunk = (nblk + I8_KS - 1) / I8_KS;
    const int ch0 = MULTI ? 0 : (int)blockIdx.y, ch1 = MULTI ? nchunk : ch0 + 1;
    const int64_t tstride = (a.m_pad / 16) * TB; /* bytes from one k64 tile to the next */
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, tot[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int ch = ch0; ch < ch1; ch++) {
        const int b0 = ch * I8_KS, nb = min(I8_KS, nblk - b0);
        __syncthreads(); /* every warp is done with the previous chunk */
        for (int c = tid; c < I8_SKINNY_ROWS * 2 * I8_KS; c += THREADS) {
            const int r = c / (2 * I8_KS), col = c % (2 * I8_KS);
            if (col < 2 * nb) i8_cp16(xs + r * XR + 16 * col, a.xq + r * a.k_pad + 32 * (int64_t)b0 + 16 * col);
        }
        for (int c = tid; c < 2 * I8_KS; c += THREADS)
            if ((c >> 1) < nb) i8_cp16(&sdx[c >> 1][4 * (c & 1)], a.xd + (int64_t)(b0 + (c >> 1)) * a.n_pad + 4 * (c & 1));
        for (int c = tid; c < NSC * ROWS / 4; c += THREADS) {
            const int sb = c / (ROWS / 4), col = 4 * (c % (ROWS / 4));
            if (sb < nb * SPB) {
                const int64_t at = ((int64_t)b0 * SPB + sb) * a.m_pad + i0 + col;
                i8_cp16(&sdw[sb][col], a.wd + at);
                if (MIN) i8_cp16(&smw[sb][col], a.wm + at);
            }
        }
        if (MIN)
            for (int c = tid; c < 2 * NSC; c += THREADS)
                if ((c >> 1) < nb * SPB)
                    i8_cp16(&ssx[c >> 1][4 * (c & 1)], a.xs + ((int64_t)b0 * SPB + (c >> 1)) * a.n_pad + 4 * (c & 1));
        i8_commit();
        /* W fragments of the chunk, straight to registers (before waiting for the staging) */
        uint4 wv[FMT == I8_FMT_S8 ? 2 * NT : NT];
        const uint8_t *wt = a.wq + ((int64_t)(b0 / 2) * (a.m_pad / 16) + mt) * TB + 16 * lane;
#pragma unroll
        for (int u = 0; u < NT; u++) {
            const bool in = live && 2 * u < nb;
            if constexpr (FMT == I8_FMT_S8) {
                wv[2 * u] = in ? __ldg((const uint4 *)(wt + u * tstride)) : make_uint4(0, 0, 0, 0);
                wv[2 * u + 1] = in ? __ldg((const uint4 *)(wt + u * tstride + 512)) : make_uint4(0, 0, 0, 0);
            } else {
                wv[u] = in ? __ldg((const uint4 *)(wt + u * tstride)) : make_uint4(0, 0, 0, 0);
            }
        }
        i8_wait<0>();
        __syncthreads(); /* the chunk is staged */
        if (!live) continue;
        const int wpos = (warp >> 2) * 64 + 8 * g + 2 * (warp & 3); /* rows g, g+8 of tile mt */
#pragma unroll
        for (int bl = 0; bl < I8_KS; bl++) {
            if (bl >= nb) break;
            uint32_t A[4];
            if constexpr (FMT == I8_FMT_S8) {
                A[0] = wv[bl].x, A[1] = wv[bl].y, A[2] = wv[bl].z, A[3] = wv[bl].w;
            } else {
                const uint4 v = wv[bl / 2];
                const uint32_t p[4] = {v.x, v.y, v.z, v.w};
                i8_expand<FMT>(p, bl & 1, A);
            }
            const uint32_t b0r = *(const uint32_t *)(xs + g * XR + 32 * bl + 4 * t);
            const uint32_t b1r = *(const uint32_t *)(xs + g * XR + 32 * bl + 16 + 4 * t);
            const float2 dxv = *(const float2 *)&sdx[bl][2 * t];
#pragma unroll
            for (int h = 0; h < SPB; h++) {
                const int sb = bl * SPB + h;
                const float2 dw2 = *(const float2 *)&sdw[sb][wpos];
                const float2 mw2 = MIN ? *(const float2 *)&smw[sb][wpos] : make_float2(0.0f, 0.0f);
                const float2 sxv = MIN ? *(const float2 *)&ssx[sb][2 * t] : make_float2(0.0f, 0.0f);
                int r[4];
                if constexpr (G == 32) i8_mma_k32<FMT == I8_FMT_NIB_U>(A, b0r, b1r, i8_magic<FMT>::bits, r);
                else i8_mma_k16(A[2 * h], A[2 * h + 1], h ? b1r : b0r, i8_magic<FMT>::bits, r);
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[e] = i8_term<FMT, MIN>(r[e], (e & 1) ? dxv.y : dxv.x, (e >> 1) ? dw2.y : dw2.x,
                                               (e & 1) ? sxv.y : sxv.x, (e >> 1) ? mw2.y : mw2.x, acc[e]);
            }
        }
        if (MULTI) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                tot[e] = ch == 0 ? acc[e] : __fadd_rn(tot[e], acc[e]);
                acc[e] = 0.0f;
            }
        }
    }
    if (!live) return;
    float *out = a.out + (MULTI ? 0 : (int64_t)blockIdx.y * a.zs);
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const int64_t i = mt * 16 + g + 8 * (e >> 1), j = 2 * t + (e & 1);
        if (i < a.m && j < a.nc) out[j * a.ldo + i] = MULTI ? tot[e] : acc[e];
    }
}

/* ---------------------------------------------------------------------------------------
 * Host: kernel choice and launch
 * ------------------------------------------------------------------------------------- */

/* GEMM tile configurations (warps along W rows x along X rows). */
static const int k_i8_cfg[][2] = {{2, 2}, {4, 2}, {2, 4}};
#define I8_NCFG 3

/* Test and bench aid (qmm_cuda_int8_force): -1 = the heuristic's choice. Process-global. */
static int g_i8_cfg = -1, g_i8_split = -1;
extern "C" void qmm_cuda_int8_force(int cfg, int split) {
    g_i8_cfg = cfg >= 0 && cfg < I8_NCFG ? cfg : -1;
    g_i8_split = split == 0 || split == 1 ? split : -1;
}

template <int G, bool MIN, int FMT> struct i8_kernels {
    template <int WM, int WN, bool MULTI> static cudaError_t gemm1(const i8_args &a, int nz, cudaStream_t s) {
        typedef i8_geom<G, MIN, FMT, WM, WN> Q;
        static unsigned long long done = 0;
        const int smem = Q::SMEM + (MULTI ? Q::TOTS : 0);
        cudaError_t e = i8_smem_attr(i8_gemm_kernel<G, MIN, FMT, WM, WN, MULTI>, smem, &done);
        if (e != cudaSuccess) return e;
        const dim3 grid((unsigned)((a.m + Q::BM - 1) / Q::BM), (unsigned)((a.nc + Q::BN - 1) / Q::BN), (unsigned)nz);
        i8_gemm_kernel<G, MIN, FMT, WM, WN, MULTI><<<grid, Q::THREADS, smem, s>>>(a);
        return cudaGetLastError();
    }
    static cudaError_t gemm(int cfg, bool split, const i8_args &a, int nz, cudaStream_t s) {
        switch (cfg * 2 + (split ? 0 : 1)) {
        case 0: return gemm1<2, 2, false>(a, nz, s);
        case 1: return gemm1<2, 2, true>(a, 1, s);
        case 2: return gemm1<4, 2, false>(a, nz, s);
        case 3: return gemm1<4, 2, true>(a, 1, s);
        case 4: return gemm1<2, 4, false>(a, nz, s);
        default: return gemm1<2, 4, true>(a, 1, s);
        }
    }
    static cudaError_t skinny(bool split, const i8_args &a, int nz, cudaStream_t s) {
        const dim3 grid((unsigned)((a.m + 16 * I8_SKINNY_WARPS - 1) / (16 * I8_SKINNY_WARPS)), (unsigned)(split ? nz : 1));
        if (split) i8_skinny_kernel<G, MIN, FMT, false><<<grid, 32 * I8_SKINNY_WARPS, 0, s>>>(a);
        else i8_skinny_kernel<G, MIN, FMT, true><<<grid, 32 * I8_SKINNY_WARPS, 0, s>>>(a);
        return cudaGetLastError();
    }
};

template <int T> struct i8_launch {
    static void run(bool skinny, int cfg, bool split, const i8_args *a, int nz, cudaStream_t s, cudaError_t *e) {
        typedef qmm_cuda_type<T> D;
        if constexpr (!D::int8) {
            *e = cudaErrorInvalidValue;
        } else {
            typedef i8_kernels<D::int8_sub_block, D::int8_min, i8_fmt<T>::v> K;
            *e = skinny ? K::skinny(split, *a, nz, s) : K::gemm(cfg, split, *a, nz, s);
        }
    }
};

/* GEMM choice for m x nc with nchunk chunks: the configuration and split that minimise a
 * model time: waves of CTAs (units / SMs, rounded up) times a CTA's element-blocks times a
 * per-tile overhead for loads, plus the split's partial traffic and its reduce launch. Any
 * choice gives the same bits (the int8 order does not depend on it). */
static void i8_choose(int64_t m, int64_t nc, int nblk, int nchunk, bool split_ok, int *cfg, bool *split) {
    const int sms = i8_sms();
    double best = 1e300;
    *cfg = 0;
    *split = false;
    for (int c = 0; c < I8_NCFG; c++) {
        const int64_t bm = 32 * k_i8_cfg[c][0], bn = 32 * k_i8_cfg[c][1];
        const int64_t tiles = ((m + bm - 1) / bm) * ((nc + bn - 1) / bn);
        for (int sp = 0; sp < (split_ok && nchunk > 1 ? 2 : 1); sp++) {
            const int64_t units = tiles * (sp ? nchunk : 1);
            const double blocks = sp ? (double)nblk / nchunk : (double)nblk;
            const double waves = (double)((units + sms - 1) / sms);
            double t = waves * ((double)(bm * bn) * blocks * 0.0164 * (1.0 + 8.0 / bm + 8.0 / bn) + 500.0);
            if (sp) t += (double)(nchunk + 1) * (double)(m * nc) * 4.0 / 3000.0 + 1500.0;
            if (t < best) {
                best = t;
                *cfg = c;
                *split = sp != 0;
            }
        }
    }
}

extern "C" cudaError_t qmm_cuda_int8_matmul(int type, const void *w, size_t row_bytes, const void *wq,
                                            const float *wd, const float *wm, int64_t m, int64_t k, int64_t n,
                                            const float *x, int64_t ldx, float *y, int64_t ldy, void *workspace,
                                            cudaStream_t stream) {
    if (!qmm_cuda_int8_has_type(type)) return cudaErrorInvalidValue;
    const bool direct = qmm_cuda_int8_gemv_ok(type, w, row_bytes, k); /* n <= 8 on the GGUF bytes */
    const int64_t m_pad = qmm_cuda_int8_pad(m), k_pad = qmm_cuda_int8_pad(k);
    const size_t ch = QMM_CUDA_X_CHUNK, kp = (size_t)k_pad;
    uint8_t *base = (uint8_t *)workspace;
    int8_t *xq = (int8_t *)base;
    float *xd = (float *)(base + al256(ch * kp));
    float *s32 = (float *)((uint8_t *)xd + al256(kp / 32 * ch * sizeof(float)));
    float *s16 = (float *)((uint8_t *)s32 + al256(kp / 32 * ch * sizeof(float)));
    float *part = (float *)(base + i8_x_bytes(k));
    const int G = qmm_cuda_int8_sub_block(type);
    const int nblk = (int)(k / 32), nchunk = (nblk + I8_KS - 1) / I8_KS;
    if ((m + 127) / 128 > 0x7FFFFFFF || nchunk > 65535) return cudaErrorInvalidConfiguration;
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int64_t nc = n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK;
        const bool skinny = nc <= I8_SKINNY_ROWS;
        const int64_t n_pad = skinny ? I8_SKINNY_ROWS : qmm_cuda_int8_pad(nc);
        const bool rows = skinny && direct; /* the GGUF-row kernel, with its X layout */
        cudaError_t e = i8_quantize_x(x + t0 * ldx, nc, rows ? qmm_cuda_int8_gemv_nt(nc) : n_pad, k, ldx, k_pad, xq,
                                      xd, s32, s16, rows ? (int64_t)nchunk : 0, stream);
        if (e != cudaSuccess) return e;
        float *yc = y + t0 * ldy;
        if (rows) {
            e = qmm_cuda_int8_gemv(type, w, row_bytes, m, k, (int)nc, xq, xd, G == 32 ? s32 : s16, yc, ldy, stream);
            if (e != cudaSuccess) return e;
            continue;
        }
        if (wq == NULL) return cudaErrorInvalidValue; /* the caller made no repack for these n */
        const bool split_ok = nchunk > 1 && (size_t)nchunk * (size_t)(m * nc) * sizeof(float) <= I8_PARTIAL_BYTES;
        int cfg = 0;
        bool split = false;
        if (skinny) {
            split = split_ok && (m + 127) / 128 < 2 * (int64_t)i8_sms();
            if (g_i8_split >= 0) split = split_ok && g_i8_split == 1;
        } else {
            i8_choose(m, nc, nblk, nchunk, split_ok, &cfg, &split);
            if (g_i8_cfg >= 0) cfg = g_i8_cfg;
            if (g_i8_split >= 0) split = split_ok && g_i8_split == 1;
        }
        i8_args a;
        a.wq = (const uint8_t *)wq;
        a.wd = wd;
        a.wm = wm;
        a.xq = xq;
        a.xd = xd;
        a.xs = G == 32 ? s32 : s16;
        a.out = split ? part : yc;
        a.ldo = split ? m : ldy;
        a.zs = split ? m * nc : 0;
        a.m = m;
        a.m_pad = m_pad;
        a.nc = nc;
        a.n_pad = n_pad;
        a.k_pad = k_pad;
        a.nblk = nblk;
        if (!qmm_cuda_dispatch_type<i8_launch>(type, skinny, cfg, split, &a, nchunk, stream, &e)) return cudaErrorInvalidValue;
        if (e != cudaSuccess) return e;
        if (split) {
            const int64_t total = m * nc, tb = 256;
            i8_reduce_kernel<<<(unsigned)((total + tb - 1) / tb), (unsigned)tb, 0, stream>>>(part, m * nc, nchunk, m, nc,
                                                                                             yc, ldy);
            e = cudaGetLastError();
            if (e != cudaSuccess) return e;
        }
    }
    return cudaSuccess;
}
