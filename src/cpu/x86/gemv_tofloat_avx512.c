/* gemv_tofloat_avx512.c — the to_float gemv row kernels (gemv_tofloat_impl.h) with AVX-512
 * accumulators. */
#include "cpu/x86/gemv_avx512_impl.h"

#define QMM_TF_LOAD16(p) _mm512_load_ps(p)
#include "cpu/x86/gemv_tofloat_impl.h"

qmm_gemv_row_fn qmm_gemv_tofloat_row_fn(int type) { return qmm_tf_row_fn(type); }
