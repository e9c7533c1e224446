/*
 * gemv_int8_avx2.c — the int8 gemv on native blocks with AVX2 (vpmaddubsw + vpmaddwd): the
 * kernels of gemv_int8_avx2_impl.h without AVX-VNNI (gemv_int8_avxvnni.c is the same source
 * with vpdpbusd), and the type list and scratch size both share.
 */
#define QMM_I8_AVXVNNI 0
#include "cpu/x86/gemv_int8_avx2_impl.h"

bool qmm_x86_gemv_int8_avx2_has_type(qmm_type type) { return rows_for(type) != NULL; }

size_t qmm_x86_gemv_int8_avx2_scratch(int64_t n, int64_t k) { return qmm_i8_scratch(n, k); }
