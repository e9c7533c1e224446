/*
 * gemm_int8_avx2.h — the int8 prefill GEMM at ISA level avx2: W repacked once into blocks of
 * 8 interleaved rows (pack_int8_x8.c, portable), X quantized per call per 32-element block
 * with the int8 strategy's rule (qmm_x86_int8_quantize_row), and a register-blocked kernel of
 * 4 X rows x 8 W rows on AVX2 (vpmaddubsw + vpmaddwd, gemm_int8_avx2.c) or AVX-VNNI (vpdpbusd
 * / vpdpwssd on ymm, gemm_int8_avxvnni.c). Both kernels compute the same exact int32 sums and
 * then the same float operations, so they give the same bits. Layout, order, error bound and
 * memory: docs/KERNELS.md, "x86: int8_avx2".
 */
#ifndef QMM_CPU_X86_GEMM_INT8_AVX2_H
#define QMM_CPU_X86_GEMM_INT8_AVX2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

#define QMM_X8_ROWS 8   /* W rows interleaved per group (one ymm of int32 / f32 lanes) */
#define QMM_X8_XROWS 4  /* X rows per kernel call (the register block is 4 x 8) */

/* How a type's block record is used by the kernels (pack_int8_x8.c sets it per type). */
typedef enum qmm_x8_kind {
    /* one float scale per 32 elements, unsigned quants u = q + offset of at most 4, 5 or 8
     * bits (the 8-bit ones need the sign trick on vpmaddubsw) */
    QMM_X8_K32_U4 = 0,
    QMM_X8_K32_U5 = 1,
    QMM_X8_K32_U8 = 2,
    /* 16-element sub-blocks with integer scales (q2_K, q3_K, q6_K): u of at most 2, 3 or 6 bits */
    QMM_X8_K16 = 3,
} qmm_x8_kind;

/*
 * The packed weights. W rows are taken in groups of 8 (m padded to m_pad, a multiple of 8,
 * with zero rows); group g's k/32 block records are consecutive, record (g, c) at
 *     data + (g * (k / 32) + c) * rec_bytes.
 * A record holds, for rows 8g..8g+7 and elements 32c..32c+31, first the quants as 8 vectors
 * v = 0..7 of 32 bytes, vector v holding in int32 lane r the 4 quants of row 8g + r, elements
 * 32c + 4v .. 32c + 4v + 3:
 *   bytes (q5_0, q5_1, q5_K, q6_K, q8_0): vector v at 32 v, one byte per quant, u = q + offset;
 *   nibbles (q4_0, q4_1, q4_K, q2_K, q3_K, iq4_nl, iq4_xs, mxfp4): 4 vectors of 32 bytes,
 *       byte vector p (at 32 p) holds vector 2p in its low and vector 2p + 1 in its high
 *       nibbles: u = q + offset, or for the codebook types the 4-bit index i, whose u is
 *       lut[i] = value[i] + offset;
 * then, at qbytes (256 or 128):
 *   +0   8 floats: the scale of each row's block (d; q4_K, q5_K d * sc; iq4_xs d * (ls - 32);
 *        mxfp4 the E8M0 value; q2_K, q3_K, q6_K the super-block's d);
 *   +32  types with a min (q4_1, q5_1, q4_K, q5_K): 8 floats mn, the float the dequantizer adds
 *        (m, or -(dmin * mn)); K16 types: lane r = (sc0, sc1) as int16, the integer scales of
 *        the two 16-element sub-blocks (q3_K sc - 32, q6_K signed);
 *   +64  q2_K: lane r = (m0, m1) int16, the integer mins;  +96  q2_K: 8 floats -dmin.
 * w = scale * (u - offset) + mn (K16: (d * sc) * (u - offset), q2_K minus dmin * m) is the
 * type table's to_float with the same float operands (qmm_x86_gemm_int8_avx2_unpack_row).
 */
typedef struct qmm_x86_int8_x8 {
    unsigned char *data;  /* 64-byte aligned; NULL when not packed */
    size_t rec_bytes;     /* bytes of one (group, block) record */
    size_t qbytes;        /* quant bytes at the start of a record: 256, or 128 (nibbles) */
    size_t bytes;         /* allocated bytes */
    qmm_type type;
    qmm_x8_kind kind;
    int offset;           /* u - q */
    bool has_min;         /* the record carries mn (min types) */
    bool has_lut;         /* nibbles are codebook indices: u = lut[i] */
    uint8_t lut[16];      /* value + offset of each index (has_lut) */
    int64_t m, k, m_pad;
} qmm_x86_int8_x8;

/* True if the AVX2 int8 GEMM handles `type`: q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K,
 * q5_K, q6_K, iq4_nl, iq4_xs, mxfp4. */
bool qmm_x86_gemm_int8_avx2_has_type(qmm_type type);

/* Bytes qmm_x86_gemm_int8_avx2_pack allocates for m x k weights of `type` (0 for a type it
 * does not handle or a size that overflows). */
size_t qmm_x86_gemm_int8_avx2_packed_bytes(qmm_type type, int64_t m, int64_t k);

/*
 * Pack m rows of `type` (row i at rows + i*row_stride, GGUF blocks; k a multiple of the block
 * size) into `out` (allocates out->data) on up to n_threads OpenMP threads. Portable C, run
 * once per weights object (on its first int8 matmul).
 * Errors: QMM_ERR_OUT_OF_MEMORY; QMM_ERR_INTERNAL for a type not handled.
 */
qmm_status qmm_x86_gemm_int8_avx2_pack(qmm_type type, int64_t m, int64_t k, const void *rows,
                                       size_t row_stride, int n_threads, qmm_x86_int8_x8 *out);

/* Free out->data (NULL-safe) and clear the struct. */
void qmm_x86_gemm_int8_avx2_free(qmm_x86_int8_x8 *w);

/* Test hook: the k elements of packed row i (< m) as w = scale * (u - offset) + mn (the
 * formula of the layout comment) into out. Portable C. */
void qmm_x86_gemm_int8_avx2_unpack_row(const qmm_x86_int8_x8 *w, int64_t i, float *out);

/* Scratch bytes qmm_x86_gemm_int8_avx2 needs for n X rows on n_threads threads. */
size_t qmm_x86_gemm_int8_avx2_scratch(const qmm_x86_int8_x8 *w, int64_t n, int n_threads);

/* The smallest n at which the int8 strategy below AMX (x86_backend.c) runs this GEMM for the
 * types it has (the int8 gemv below it). Measured on AVX2 without AVX-VNNI against the gemv at
 * n = 2..7 (bench/results/spr-avx2-int8-small-n.md): the GEMM wins at n = 4 for q4_0, q4_K,
 * q8_0, loses at n = 2, is mixed at 6, 7, and loses for q6_K; 8 stays. */
#define QMM_INT8_AVX2_GEMM_MIN_N 8

/*
 * Y[n][m] = X[n][k] * W^T on the packed weights: X quantized per call with
 * qmm_x86_int8_quantize_row (per 32-element block dx = max|x| / 127, q = round-to-nearest-
 * even(x / dx), s = dx * sum(q); a non-finite block gives NaN outputs), then for every output,
 * blocks c = 0 .. k/32-1 in order, the exact int32 dot isum of the block (less offset * sum(q_x);
 * K16: sc0 * dot0 + sc1 * dot1 less offset * (sc0 * sum0 + sc1 * sum1)) added as
 *     acc = fma((float)isum, d_w * dx, acc);   min types: acc = fma(s, mn_w, acc);
 *     q2_K: acc = fma((float)(m0 * sum0 + m1 * sum1), -dmin * dx, acc)
 * into one f32 accumulator from 0. The order depends only on k: an output's bits do not
 * depend on n, the thread count or the tiling (batch invariant), and for the types int8_amx
 * has they equal its bits. vnni: use vpdpbusd / vpdpwssd (requires AVX-VNNI), else
 * vpmaddubsw + vpmaddwd; same bits. `scratch`: >= qmm_x86_gemm_int8_avx2_scratch bytes,
 * 64-byte aligned. Writes exactly y[j*ldy + i], j < n, i < m. Requires QMM_CPU_ISA_AVX2 (the
 * X quantizer is qmm_x86_int8_quantize_row_avx2).
 */
void qmm_x86_gemm_int8_avx2(const qmm_x86_int8_x8 *w, int64_t n, const float *x, int64_t ldx,
                            float *y, int64_t ldy, void *scratch, int n_threads, bool vnni);

#endif /* QMM_CPU_X86_GEMM_INT8_AVX2_H */
