/*
 * int8_quantize.c — the int8 strategy's X quantizer in portable C under its x86 name: the
 * rule's one portable implementation is qmm_cpu_int8_quantize_row (src/cpu/int8_quantize.c,
 * shared with the aarch64 kernels), which follows qmm_x86_int8_quantize_row (AVX-512, in
 * gemm_int8_amx.c) operation for operation, so all three (portable, AVX2, AVX-512) give the
 * same bytes and scales (tests/test_int8_quantize.c, tests/test_int8_rule.c).
 */
#include "cpu/cpu_internal.h"
#include "cpu/x86/x86_kernels.h"

void qmm_x86_int8_quantize_row_generic(const float *x, int64_t k, int8_t *q, float *dx,
                                       float *s, int64_t ld) {
    qmm_cpu_int8_quantize_row(x, k, q, dx, s, ld);
}
