/* gemv_tofloat_avx2.c — the to_float gemv row kernels (gemv_tofloat_impl.h) with AVX2
 * accumulators. */
#include "cpu/x86/gemv_avx2_impl.h"

QMM_GEMV_INLINE qmm_v16 tf_load16(const float *p) {
    const qmm_v16 v = {_mm256_load_ps(p), _mm256_load_ps(p + 8)};
    return v;
}
#define QMM_TF_LOAD16(p) tf_load16(p)
#include "cpu/x86/gemv_tofloat_impl.h"

qmm_gemv_row_fn qmm_gemv_avx2_tofloat_row_fn(int type) { return qmm_tf_row_fn(type); }
