/*
 * x86_kernels.h — the x86 SIMD kernels of the CPU backend (AVX2, AVX-512, AMX) and the
 * packed-weight layouts they read. Declarations only: the definitions live in files ending
 * _avx2.c / _avx512.c / _amx.c (the only ones built with -m flags) and in portable packing
 * code. Callers must check the ISA level (cpu/cpu_features.h) before calling a kernel.
 * The layouts and error bounds are written out in docs/KERNELS.md.
 */
#ifndef QMM_CPU_X86_KERNELS_H
#define QMM_CPU_X86_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

/* ---------------------------------------------------------------------------------------
 * bf16 tile-packed weights (any weight type): the operand of the AMX-BF16 GEMM.
 *
 * W (m x k) is dequantized exactly (the type table's to_float) and rounded to bf16 (round
 * to nearest even). m is padded to m_pad (multiple of 16) and k to k_pad (multiple of 32)
 * with zeros. The matrix is cut into 16 x 32 tiles; tile (g, c) holds W rows 16g..16g+15,
 * elements 32c..32c+31 in the AMX "VNNI" B-operand form: tile row r (0..15), column j
 * (0..15) holds the pair W[16g+j][32c+2r], W[16g+j][32c+2r+1] (4 bytes), so a tile is 16
 * rows of 64 bytes. Tiles of one row group g are consecutive in c:
 *     tile (g, c) at data + (g * (k_pad / 32) + c) * 512   (uint16 elements).
 * Memory: parts * m_pad * k_pad * 2 bytes (e.g. 4.0x the q4_0 bytes, 1.9x q8_0; f32 with 3
 * parts: 1.5x the f32 bytes).
 * ------------------------------------------------------------------------------------- */

#define QMM_X86_TILE_M 16  /* W rows (output columns) per tile */
#define QMM_X86_TILE_K 32  /* bf16 elements of k per tile row pair set */

typedef struct qmm_x86_bf16_tiles {
    uint16_t *data;   /* 64-byte aligned, m_pad * k_pad bf16 */
    /* Per W row (m_pad floats): a power of two the packed row was divided by (1 for rows
     * whose max |w| is in [2^-40, 2^40] or 0; else 2^ilogb(max |w|)), so that AMX's
     * flush of bf16 subnormal inputs and products cannot drop tiny rows. The GEMM multiplies
     * the outputs back (exact). */
    float *row_scale;
    /* 1, or 3 for f32 weights: parts p = 0, 1, 2 at data + p * m_pad * k_pad hold
     * bf16(w), bf16(w - part 0), bf16(w - part 0 - part 1) (the residuals are exact in f32),
     * so part 0 + part 1 + part 2 = w to about 2^-24 relative. */
    int parts;
    /* Some W element is Inf or NaN. With 3 parts such a W cannot be split (an Inf part times
     * a zero part of X is NaN where w * x is +-Inf): the f32 GEMM then runs elsewhere. */
    bool nonfinite;
    int64_t m, k;     /* logical shape */
    int64_t m_pad, k_pad;
} qmm_x86_bf16_tiles;

/*
 * Pack m rows of `type` (row i at rows + i*row_stride, GGUF block layout) into `out`
 * (allocates out->data) on up to n_threads OpenMP threads. Portable C, run once at weights
 * creation.
 * Errors: QMM_ERR_OUT_OF_MEMORY, QMM_ERR_INTERNAL for a type without to_float.
 */
qmm_status qmm_x86_bf16_tiles_pack(qmm_type type, int64_t m, int64_t k, const void *rows,
                                   size_t row_stride, int n_threads,
                                   qmm_x86_bf16_tiles *out);

/* The row scale rule of the bf16 paths for k floats v: 1 if max |v| is 0, not finite or in
 * [2^-40, 2^40], else 2^ilogb(max |v|) (the row divided by it has max |v| in [1, 2)). */
float qmm_x86_bf16_row_scale(const float *v, int64_t k);

/* Free out->data (NULL-safe) and clear the struct. */
void qmm_x86_bf16_tiles_free(qmm_x86_bf16_tiles *t);

/* Scratch bytes qmm_x86_gemm_bf16_amx needs for n rows of X on n_threads threads (the bf16
 * copy of X and one f32 accumulator area per thread). */
size_t qmm_x86_gemm_bf16_amx_scratch(const qmm_x86_bf16_tiles *w, int64_t n, int n_threads);

/*
 * Y[n][m] = X[n][k] * W^T with AMX TDPBF16PS: X rounded to bf16 (nearest even) per call into
 * `scratch` (>= qmm_x86_gemm_bf16_amx_scratch bytes, 64-byte aligned), products of bf16
 * pairs accumulated in f32 tiles over k in increasing 32-element steps. Runs on up to
 * `n_threads` OpenMP threads. Each output depends only on its X row and W row (never on n
 * or the split), so the result is batch-invariant. Writes exactly y[j*ldy + i], j < n, i < m.
 * Requires QMM_CPU_ISA_AMX (tile data permission granted).
 */
void qmm_x86_gemm_bf16_amx(const qmm_x86_bf16_tiles *w, int64_t n, const float *x,
                           int64_t ldx, float *y, int64_t ldy, void *scratch, int n_threads);

/*
 * The X conversion of qmm_x86_gemm_bf16_amx for X rows [j0, j1) (rows >= n are zero):
 * row j rounded to bf16 (nearest even) after division by its power-of-two row scale (the
 * qmm_x86_bf16_row_scale rule applied to X), k_pad elements (zeros after k) at
 * xb + (j - j0) * ldxb; the scale at xscale[j - j0]. Shared with the on-the-fly kernel so
 * both see the same X bits. Requires QMM_CPU_ISA_AVX512 (BF16).
 */
void qmm_x86_bf16_convert_x_rows(const float *x, int64_t ldx, int64_t n, int64_t k,
                                 int64_t k_pad, uint16_t *xb, int64_t ldxb, float *xscale,
                                 int64_t j0, int64_t j1);

/* ---------------------------------------------------------------------------------------
 * AMX-BF16 GEMM on the native GGUF blocks ("on the fly", gemm_bf16_otf_amx.c): W rows are
 * decoded to bf16 tiles just before use and not kept. Output bit-identical to
 * qmm_x86_gemm_bf16_amx on the packed copy of the same weights (the argument is in the
 * file's comment and docs/KERNELS.md); memory: m_pad floats of row scales.
 * ------------------------------------------------------------------------------------- */

/* What the on-the-fly kernel reads: the GGUF rows and the per-row power-of-two scales (the
 * packer's rule, qmm_x86_bf16_row_scale), m_pad = m rounded up to 16, k_pad to 32. */
typedef struct qmm_x86_bf16_otf {
    qmm_type type;
    const unsigned char *rows; /* row i at rows + i * row_stride, GGUF blocks */
    size_t row_stride;
    const float *row_scale;    /* m_pad floats, 1 for padding rows */
    int64_t m, k, m_pad, k_pad;
} qmm_x86_bf16_otf;

/* True if qmm_x86_gemm_bf16_otf_amx handles `type`: every weight type with a to_float and
 * a block of at most 256 elements, except f32 (which the packed kernel splits into three
 * bf16 parts). */
bool qmm_x86_gemm_bf16_otf_amx_has_type(qmm_type type);

/*
 * The row scales of m rows of `type` (row i at rows + i*row_stride) by the packer's rule:
 * *out gets m_pad floats (64-byte aligned, free() it; padding rows 1). Decodes every row once
 * with to_float on up to n_threads OpenMP threads. Portable C.
 * Errors: QMM_ERR_OUT_OF_MEMORY; QMM_ERR_INTERNAL for a type without to_float.
 */
qmm_status qmm_x86_bf16_otf_row_scales(qmm_type type, int64_t m, int64_t k, const void *rows,
                                       size_t row_stride, int n_threads, float **out);

/* Scratch bytes qmm_x86_gemm_bf16_otf_amx needs for n X rows on n_threads threads: the X
 * tiles (n_pad * k_pad bf16) and per thread 16 bf16 X rows, two 32-row W chunk buffers (2 x
 * 16 KiB) and 4 KiB of accumulators per 32 X rows. */
size_t qmm_x86_gemm_bf16_otf_amx_scratch(const qmm_x86_bf16_otf *w, int64_t n, int n_threads);

/*
 * Y[n][m] = X[n][k] * W^T with AMX TDPBF16PS, W decoded per call from its GGUF blocks into
 * per-thread bf16 tiles (threads split the W rows in groups of 32; each W byte is read once
 * per call when k_pad <= 8192). Same X rounding, same bf16 W values, same k order as
 * qmm_x86_gemm_bf16_amx, hence the same bits (batch-invariant, independent of the split).
 * `scratch`: >= qmm_x86_gemm_bf16_otf_amx_scratch bytes, 64-byte aligned. Writes exactly
 * y[j*ldy + i], j < n, i < m. Requires QMM_CPU_ISA_AMX and
 * qmm_x86_gemm_bf16_otf_amx_has_type(w->type).
 */
void qmm_x86_gemm_bf16_otf_amx(const qmm_x86_bf16_otf *w, int64_t n, const float *x,
                               int64_t ldx, float *y, int64_t ldy, void *scratch, int n_threads);

/* Test hook: transpose the 16 x 16 matrix of 32-bit words m (row-major) in place with the
 * kernel's AVX-512 transpose. Requires QMM_CPU_ISA_AVX512. */
void qmm_x86_otf_transpose16_for_test(uint32_t m[256]);

/* ---------------------------------------------------------------------------------------
 * int8 tile-packed weights (q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K and the 4-bit codebook
 * types of pack_int8_codebook.c: the types whose scales and mins are per 32-element block):
 * the operand of the AMX-INT8 GEMM.
 *
 * W (m x k, k a multiple of 32) keeps its integer quants exactly as int8 (q4_0: q - 8 in
 * -8..7, q5_0: q - 16 in -16..15, q8_0: -128..127, q4_1/q4_K: 0..15, q5_1/q5_K: 0..31;
 * the codebook types: the codebook value, at most -127..127); m is padded to m_pad
 * (multiple of 16) with zero rows.
 * Tile (g, c) holds W rows 16g..16g+15, elements 32c..32c+31 in the AMX B-operand form for
 * TDPBSSD with K = 32: tile row r (0..7), column j (0..15) holds the 4 bytes
 * W[16g+j][32c+4r .. 32c+4r+3], so a tile is 8 rows of 64 bytes, at
 *     q + (g * (k / 32) + c) * 512.
 * d[(g * (k/32) + c) * 16 + j] is the float scale of that row and block (d; the K-quants:
 * d * sc); mn (types with a min, else NULL) in the same layout holds the float the
 * dequantizer adds (q4_1/q5_1: m; q4_K/q5_K: -(dmin * mn)): w = d * q + mn, the to_float
 * operands. Memory: m_pad * k * (1 + 4/32 (+ 4/32 with a min)) bytes.
 * ------------------------------------------------------------------------------------- */

typedef struct qmm_x86_int8_tiles {
    int8_t *q;        /* 64-byte aligned, m_pad * k bytes */
    float *d;         /* m_pad * k / 32 scales */
    float *mn;        /* m_pad * k / 32 mins (q4_K) or NULL */
    int64_t m, k, m_pad;
} qmm_x86_int8_tiles;

/* True if qmm_x86_int8_tiles_pack handles `type` (q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K and
 * the codebook types below). */
bool qmm_x86_int8_tiles_has_type(qmm_type type);

/*
 * Pack m rows of `type` (row i at rows + i*row_stride, GGUF blocks) into `out` (allocates
 * it) on up to n_threads OpenMP threads. Portable C, run once at weights creation.
 * Errors: QMM_ERR_OUT_OF_MEMORY; QMM_ERR_INTERNAL for a type not handled or k % 32 != 0.
 */
qmm_status qmm_x86_int8_tiles_pack(qmm_type type, int64_t m, int64_t k, const void *rows,
                                   size_t row_stride, int n_threads, qmm_x86_int8_tiles *out);

/* One row of a type of qmm_x86_int8_tiles_has_type (k a multiple of 32) as the tiles hold it:
 * int8 quants q[k], per 32-element block the scale d[k/32] and the added float mn[k/32] (0
 * for types without a min), so d * q (+ mn) is to_float's value. Portable C (pack_int8.c). */
void qmm_x86_int8_unpack_row(qmm_type type, const unsigned char *row, int64_t k, int8_t *q,
                             float *d, float *mn);

/* The 4-bit codebook types among them (pack_int8_codebook.c): q = the
 * codebook value of each element's 4-bit index, d[k/32] = the block's float scale (no min). */
bool qmm_x86_int8_codebook_tiles_has_type(qmm_type type);
void qmm_x86_int8_codebook_unpack_row(qmm_type type, const unsigned char *row, int64_t k,
                                      int8_t *q, float *d);

/* Free the arrays of `t` (NULL-safe) and clear the struct. */
void qmm_x86_int8_tiles_free(qmm_x86_int8_tiles *t);

/* Scratch bytes qmm_x86_gemm_int8_amx needs for n rows of X (int8 X, scales, block sums). */
size_t qmm_x86_gemm_int8_amx_scratch(const qmm_x86_int8_tiles *w, int64_t n);

/*
 * Y[n][m] = X[n][k] * W^T with AMX TDPBSSD: each X row is quantized per call, per 32-element
 * block, to int8 with a float scale dx = max|x| / 127 (q = round-to-nearest-even(x / dx));
 * per block c the exact int32 dot of the int8 quants is converted to float and added as
 *     acc = fma((float)isum, dx * d_w, acc)   then, for q4_K, acc = fma(dx * sum(q), mn_w, acc)
 * into one f32 accumulator per output, c in increasing order (depends only on k: batch
 * invariant). `scratch`: >= qmm_x86_gemm_int8_amx_scratch bytes, 64-byte aligned. Runs on
 * up to n_threads OpenMP threads. Writes exactly y[j*ldy + i], j < n, i < m. Error bound in
 * docs/KERNELS.md. Requires QMM_CPU_ISA_AMX.
 */
void qmm_x86_gemm_int8_amx(const qmm_x86_int8_tiles *w, int64_t n, const float *x,
                           int64_t ldx, float *y, int64_t ldy, void *scratch, int n_threads);

/*
 * Quantize one X row (k floats, k a multiple of 32) for the int8 kernels: per 32-element block
 * c, dx[c * ld] = max|x| / 127, q[32c + e] = round-to-nearest-even(x * 127 / max|x|) in
 * -127..127 (an all-zero block: dx = 0, q = 0), s[c * ld] = dx * sum of the block's q; a block
 * holding NaN or +-Inf: q = 0, dx = s = NaN (bits 0x7FC00000), so its outputs are NaN.
 * AVX-512F only (defined in gemm_int8_amx.c). Requires QMM_CPU_ISA_AVX512.
 */
void qmm_x86_int8_quantize_row(const float *x, int64_t k, int8_t *q, float *dx, float *s,
                               int64_t ld);

/* The same quantizer with AVX2 (int8_quantize_avx2.c; requires QMM_CPU_ISA_AVX2) and in
 * portable C (int8_quantize.c): the same float operations, so the same bytes and scales as
 * qmm_x86_int8_quantize_row for every input (tests/test_int8_quantize.c). */
void qmm_x86_int8_quantize_row_avx2(const float *x, int64_t k, int8_t *q, float *dx, float *s,
                                    int64_t ld);
void qmm_x86_int8_quantize_row_generic(const float *x, int64_t k, int8_t *q, float *dx,
                                       float *s, int64_t ld);

/* ---------------------------------------------------------------------------------------
 * int8 GEMV on native blocks, every quantized type (gemv_int8_avx512.c, AVX-512-VNNI)
 * ------------------------------------------------------------------------------------- */

/* True if qmm_x86_gemv_int8_avx512 handles `type`: QMM_I8_TYPES (cpu/int8_types.h), the
 * integer types here, the codebook types forwarded (below). */
bool qmm_x86_gemv_int8_avx512_has_type(qmm_type type);

/* The largest n for which the int8 strategy runs qmm_x86_gemv_int8_avx512 rather than the
 * AMX kernel for `type`: measured per type for the types with int8 tiles (the measurements:
 * bench/results/cpu-spr-crossovers.md); INT64_MAX for the other quantized types (no AMX
 * kernel: the gemv runs for every n); 0 for types it does not handle. */
int64_t qmm_x86_gemv_int8_avx512_max_n(qmm_type type);

/* Scratch bytes qmm_x86_gemv_int8_avx512 needs for n X rows of k elements (per row: the int8
 * X in kernel order and in natural order, padded to a multiple of 512 elements, and per
 * 512-element chunk 32 lanes of dx, s and int32 sub-block sums; for n > 8 also one small
 * record per row). */
size_t qmm_x86_gemv_int8_avx512_scratch(int64_t n, int64_t k);

/*
 * Y[n][m] = X W^T for W in GGUF blocks of any type of qmm_x86_gemv_int8_avx512_has_type (row
 * i at w + i*row_stride; k a multiple of 32, of 256 for the K-quants) with VPDPBUSD: X
 * quantized per call with qmm_x86_int8_quantize_row (as int8_amx), the integer quants of W
 * expanded to unsigned bytes in registers; per sub-block (32 elements; 16 for q2_K, q3_K,
 * q6_K) the exact int32 dot, less offset * sum(q_x) for offset types, is scaled by d_w * dx,
 * plus s * m_w for types with a min, into f32 lanes, in an order that depends only on k
 * (docs/KERNELS.md). Same error bound as int8_amx, not the same bits. Any n >= 1: X rows in
 * groups of up to 8 per pass over a W row, so row j's result has the same bits for every n
 * (batch invariant). `scratch`: >= qmm_x86_gemv_int8_avx512_scratch bytes, 64-byte aligned.
 * Runs on up to n_threads OpenMP threads, tasks of 64 W rows. Writes exactly y[j*ldy + i],
 * j < n, i < m; does nothing for a type it does not handle. Requires QMM_CPU_ISA_AVX512
 * (VNNI).
 */
void qmm_x86_gemv_int8_avx512(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                              size_t row_stride, int64_t n, const float *x, int64_t ldx,
                              float *y, int64_t ldy, void *scratch, int n_threads);

/* The same for the 4-bit codebook types (gemv_int8_codebook_avx512.c: a 4-bit index into a
 * 16-entry int8 codebook, a float scale per sub-block of 32 or 16 elements);
 * qmm_x86_gemv_int8_avx512 forwards these types here, and its has_type, max_n and
 * scratch include them. */
bool qmm_x86_gemv_int8_codebook_has_type(qmm_type type);
int64_t qmm_x86_gemv_int8_codebook_max_n(qmm_type type);
size_t qmm_x86_gemv_int8_codebook_scratch(int64_t n, int64_t k);
void qmm_x86_gemv_int8_codebook(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                                size_t row_stride, int64_t n, const float *x, int64_t ldx,
                                float *y, int64_t ldy, void *scratch, int n_threads);

/* ---------------------------------------------------------------------------------------
 * int8 GEMV on native blocks with AVX2 (gemv_int8_avx2.c: vpmaddubsw + vpmaddwd) and AVX-VNNI
 * (gemv_int8_avxvnni.c: vpdpbusd on ymm); one source, gemv_int8_avx2_impl.h
 * ------------------------------------------------------------------------------------- */

/* True if qmm_x86_gemv_int8_avx2 (and _avxvnni) handles `type`: QMM_I8_TYPES
 * (cpu/int8_types.h), as qmm_x86_gemv_int8_avx512_has_type. */
bool qmm_x86_gemv_int8_avx2_has_type(qmm_type type);

/* Scratch bytes qmm_x86_gemv_int8_avx2 / _avxvnni need for n X rows of k elements (the same
 * layout as qmm_x86_gemv_int8_avx512_scratch). */
size_t qmm_x86_gemv_int8_avx2_scratch(int64_t n, int64_t k);

/*
 * qmm_x86_gemv_int8_avx512's contract on ymm registers, for every type of
 * qmm_x86_gemv_int8_avx2_has_type: X quantized per call with qmm_x86_int8_quantize_row_avx2
 * (the same bytes), the exact int32 dot of every sub-block by vpmaddubsw + vpmaddwd (_avx2) or
 * vpdpbusd (_avxvnni), and the float part in the AVX-512 kernel's lanes, order and operations,
 * so both give the bits of qmm_x86_gemv_int8_avx512 for every type, k and n (docs/KERNELS.md,
 * "int8_avx2"). Batch invariant; does nothing for a type it does not handle. `scratch`: >=
 * qmm_x86_gemv_int8_avx2_scratch bytes, 64-byte aligned. Requires QMM_CPU_ISA_AVX2; the
 * _avxvnni one also the CPU's AVX-VNNI (qmm_cpu_features.avx_vnni).
 */
void qmm_x86_gemv_int8_avx2(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                            size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                            int64_t ldy, void *scratch, int n_threads);
void qmm_x86_gemv_int8_avxvnni(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                               size_t row_stride, int64_t n, const float *x, int64_t ldx,
                               float *y, int64_t ldy, void *scratch, int n_threads);

/* ---------------------------------------------------------------------------------------
 * AVX-512 GEMV on native blocks (gemv_avx512.c)
 * ------------------------------------------------------------------------------------- */

/* True if qmm_x86_gemv_avx512 has a row kernel for `type`: every weight type (q4_0, q4_1,
 * q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, the 4-bit codebook types, f32, f16, bf16
 * decoded in registers; the grid i-quants, tq1_0, tq2_0 by to_float into L1). */
bool qmm_x86_gemv_avx512_has_type(qmm_type type);

/*
 * Y[n][m] = X W^T for W in GGUF blocks (row i at w + i*row_stride, k a multiple of the block
 * size), decoded in registers or, for the grid i-quants and tq types, a panel at a time by
 * to_float into L1 (values bit-identical to the type's to_float either way) and multiplied
 * with f32 FMA in the order of gemv_avx512_impl.h, which depends only on k. Any n >= 1
 * (meant for n <= 8; larger n decodes each 64-row task once per group of 8 X rows, the task
 * then in L2). No scratch. Runs on up to n_threads OpenMP threads, tasks of 64 W rows in
 * dynamic order. Writes exactly
 * y[j*ldy + i], j < n, i < m. Requires QMM_CPU_ISA_AVX512. Returns QMM_ERR_UNSUPPORTED
 * (without an error sentence) for a type without a row kernel, before touching y.
 */
qmm_status qmm_x86_gemv_avx512(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                               size_t row_stride, int64_t n, const float *x, int64_t ldx,
                               float *y, int64_t ldy, int n_threads);

/* ---------------------------------------------------------------------------------------
 * AVX2 GEMV on native blocks (gemv_avx2.c)
 * ------------------------------------------------------------------------------------- */

/* True if qmm_x86_gemv_avx2 has a row kernel for `type`: the same types as
 * qmm_x86_gemv_avx512_has_type (every weight type). */
bool qmm_x86_gemv_avx2_has_type(qmm_type type);

/* qmm_x86_gemv_avx512's contract with AVX2 + FMA + F16C (requires QMM_CPU_ISA_AVX2): the same
 * summation order, so the same bits for every type both have, every k and n. */
qmm_status qmm_x86_gemv_avx2(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                             size_t row_stride, int64_t n, const float *x, int64_t ldx,
                             float *y, int64_t ldy, int n_threads);

#endif /* QMM_CPU_X86_KERNELS_H */
