/*
 * gemv_int8_dotprod.c — the int8 gemv of gemv_int8_impl.h at level dotprod: SDOT adds the
 * products of each 4 consecutive int8 pairs into one int32 lane (Armv8.2 DotProd, built
 * with -march=armv8.2-a+dotprod).
 */
#include <arm_neon.h>

#define QMM_ARM_DOT(acc, a, b) vdotq_s32((acc), (a), (b))
#define QMM_ARM_GEMV_INT8 qmm_arm_gemv_int8_dotprod
#include "cpu/arm/gemv_int8_impl.h"
