/*
 * gemv_avx512.c — strategy `gemv` (meant for n = 1..8) with AVX-512 on the native GGUF blocks
 * of q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, the 4-bit codebook types
 * (gemv_codebook_avx512.c) and on f32, f16 and bf16 rows (any k): the driver. The row kernels
 * (gemv_legacy_avx512.c, gemv_kquants_avx512.c, gemv_codebook_avx512.c, gemv_float_avx512.c)
 * decode W in registers and never store a dequantized row; the grid i-quants and tq types
 * (gemv_tofloat_avx512.c) decode a panel at a time by to_float into L1. Their summation order
 * is in gemv_avx512_impl.h.
 *
 * The threading (gemv_driver.c, shared with gemv_avx2.c): chunks of 64 consecutive W rows in
 * dynamic order. An output's value depends only on its W row, its X row and k.
 */
#include <stdint.h>

#include "cpu/x86/gemv_avx512_impl.h"
#include "cpu/x86/x86_kernels.h"

static qmm_gemv_row_fn row_fn_for(qmm_type type) {
    qmm_gemv_row_fn f = qmm_gemv_legacy_row_fn((int)type);
    if (f == NULL) f = qmm_gemv_kquant_row_fn((int)type);
    if (f == NULL) f = qmm_gemv_codebook_row_fn((int)type);
    if (f == NULL) f = qmm_gemv_float_row_fn((int)type);
    return f != NULL ? f : qmm_gemv_tofloat_row_fn((int)type);
}

bool qmm_x86_gemv_avx512_has_type(qmm_type type) { return row_fn_for(type) != NULL; }

qmm_status qmm_x86_gemv_avx512(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                               size_t row_stride, int64_t n, const float *x, int64_t ldx,
                               float *y, int64_t ldy, int n_threads) {
    const qmm_gemv_row_fn row_fn = row_fn_for(type);
    if (row_fn == NULL) return QMM_ERR_UNSUPPORTED;
    qmm_gemv_drive(row_fn, m, k, w, row_stride, n, x, ldx, y, ldy, n_threads);
    return QMM_OK;
}
