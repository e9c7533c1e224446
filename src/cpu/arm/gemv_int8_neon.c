/*
 * gemv_int8_neon.c — the int8 gemv of gemv_int8_impl.h at level neon (base Armv8-A: no dot
 * product instruction). 16 int8 products are added into 4 int32 lanes by SMULL / SMULL2
 * (8 int16 products each), ADDP (pairs, int16: |p| <= 128 * 127, so a pair stays below
 * 32767; X's q is never -128) and SADALP (pairs widened and accumulated into int32) — the
 * lanes SDOT would fill, exactly.
 */
#include <arm_neon.h>

static inline int32x4_t qmm_arm_dot_neon(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t hi = vmull_high_s8(a, b);
    return vpadalq_s16(acc, vpaddq_s16(lo, hi));
}

#define QMM_ARM_DOT(acc, a, b) qmm_arm_dot_neon((acc), (a), (b))
#define QMM_ARM_GEMV_INT8 qmm_arm_gemv_int8_neon
#include "cpu/arm/gemv_int8_impl.h"
