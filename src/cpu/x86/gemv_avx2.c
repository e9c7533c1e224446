/*
 * gemv_avx2.c — strategy `gemv` (meant for n = 1..8) with AVX2 + FMA + F16C on the native
 * GGUF blocks of q4_0, q4_1, q5_0, q5_1, q8_0 (gemv_legacy_avx2.c), q2_K, q3_K, q4_K, q5_K,
 * q6_K (gemv_kquants_avx2.c), iq4_nl, iq4_xs, mxfp4, nvfp4 (gemv_codebook_avx2.c) and on
 * f32, f16 and bf16 rows (gemv_float_avx2.c), and the grid i-quants and tq types decoded by
 * to_float into L1 (gemv_tofloat_avx2.c): every type gemv_avx512 has. The threading is
 * gemv_driver.c's, shared with gemv_avx512.c; the summation order is gemv_common.h's, so
 * every output is bit-identical to qmm_x86_gemv_avx512's.
 */
#include <stdint.h>

#include "cpu/x86/gemv_avx2_impl.h"
#include "cpu/x86/x86_kernels.h"

static qmm_gemv_row_fn row_fn_for(qmm_type type) {
    qmm_gemv_row_fn f = qmm_gemv_avx2_legacy_row_fn((int)type);
    if (f == NULL) f = qmm_gemv_avx2_kquant_row_fn((int)type);
    if (f == NULL) f = qmm_gemv_avx2_codebook_row_fn((int)type);
    if (f == NULL) f = qmm_gemv_avx2_float_row_fn((int)type);
    return f != NULL ? f : qmm_gemv_avx2_tofloat_row_fn((int)type);
}

bool qmm_x86_gemv_avx2_has_type(qmm_type type) { return row_fn_for(type) != NULL; }

qmm_status qmm_x86_gemv_avx2(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                             size_t row_stride, int64_t n, const float *x, int64_t ldx,
                             float *y, int64_t ldy, int n_threads) {
    const qmm_gemv_row_fn row_fn = row_fn_for(type);
    if (row_fn == NULL) return QMM_ERR_UNSUPPORTED;
    qmm_gemv_drive(row_fn, m, k, w, row_stride, n, x, ldx, y, ldy, n_threads);
    return QMM_OK;
}
