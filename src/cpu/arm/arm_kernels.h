/*
 * arm_kernels.h — the aarch64 SIMD kernels of the CPU backend (NEON, dot product, int8
 * matrix multiply) and the data they share. Declarations only: the definitions live in files
 * ending _neon.c (base Armv8-A, no flag), _dotprod.c (-march=armv8.2-a+dotprod) and _i8mm.c
 * (+i8mm), the only ones built with -march flags, and in portable glue (arm_backend.c).
 * Callers check the context's ISA level (cpu/cpu_features.h) before calling a kernel.
 * Layouts, orders and error bounds: docs/ARM64.md.
 */
#ifndef QMM_CPU_ARM_KERNELS_H
#define QMM_CPU_ARM_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

/* ---------------------------------------------------------------------------------------
 * The int8 class on aarch64: X quantized per call with the int8 rule
 * (qmm_cpu_int8_quantize_row), W's integer quants exact in int8, exact int32 dots per
 * 32-element block, and per output one double accumulation whose order depends only on k:
 *
 *   for each 32-element block b of k (increasing):
 *       T_b = the block's dot in W's scale units, formed in double from exact integer parts:
 *             sum over its sub-blocks s of (double)(I_s) * D_s  [+ (double)(M) * Dm]
 *             I_s: the exact int32 dot of the sub-block's W integers (times an integer
 *                  sub-scale where the type has one) and X's q;
 *             D_s: the float the dequantizer multiplies by (d, or the super-block's d);
 *             M, Dm: for types with a minimum, the integer sum(q_x) (times the integer min
 *                  scale) and the float minimum (m, or -dmin);
 *       acc[b % 2] = fma(T_b, (double)dx_b, acc[b % 2])
 *   y = (float)(acc[0] + acc[1])
 *
 * Every product inside T_b is exact in double (integers below 2^28 times 24-bit floats), so
 * T_b has one rounding at most, and the kernels of every level (NEON, dot product, i8mm)
 * compute the same integers and the same double operations: their outputs are bit-identical
 * to each other for every n (the gemv for each X row alone, the GEMM on the same blocks).
 * ------------------------------------------------------------------------------------- */

/* One prepared X row (qmm_arm_int8_x_prepare): the int8 quants of the rule, the block scales
 * in double (NaN for a block with NaN/Inf), the exact sums of each 16 consecutive q, and of
 * each block's 32 as a double. */
typedef struct qmm_arm_int8_x {
    const int8_t *q;     /* k bytes */
    const double *dx;    /* k / 32 */
    const int32_t *s16;  /* k / 16 */
    const double *s32;   /* k / 32 */
} qmm_arm_int8_x;

/* Scratch bytes for n prepared X rows of k elements (records included). */
size_t qmm_arm_int8_x_scratch(int64_t n, int64_t k);

/* Quantize the n X rows (row j at x + j*ldx, k a multiple of 32) into `scratch` (>=
 * qmm_arm_int8_x_scratch(n, k) bytes, 16-byte aligned) on up to n_threads OpenMP threads:
 * (*out)[j] describes row j. Portable C. */
void qmm_arm_int8_x_prepare(const float *x, int64_t ldx, int64_t n, int64_t k, void *scratch,
                            int n_threads, qmm_arm_int8_x **out);

/* The weight types of the int8 kernels: QMM_I8_TYPES (cpu/int8_types.h). */
bool qmm_arm_int8_has_type(qmm_type type);

/*
 * Y[n][m] = X W^T on W's GGUF blocks (row i at w + i*row_stride; k a multiple of the block
 * size) for the prepared X rows xs[0..n): the int8 class above, per W row in passes of up to
 * QMM_ARM_INT8_NR X rows, tasks of QMM_ARM_INT8_TASK_ROWS W rows on up to n_threads OpenMP
 * threads (dynamic order; each output belongs to one task). Writes exactly y[j*ldy + i],
 * j < n, i < m; nothing for a type it does not handle.
 *   _neon:    the int32 dots with SMULL/SMULL2 + ADDP + SADALP (base Armv8-A);
 *   _dotprod: with SDOT (requires QMM_CPU_ISA_DOTPROD).
 */
#define QMM_ARM_INT8_NR 4
#define QMM_ARM_INT8_TASK_ROWS 64
void qmm_arm_gemv_int8_neon(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                            size_t row_stride, int64_t n, const qmm_arm_int8_x *xs, float *y,
                            int64_t ldy, int n_threads);
void qmm_arm_gemv_int8_dotprod(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                               size_t row_stride, int64_t n, const qmm_arm_int8_x *xs,
                               float *y, int64_t ldy, int n_threads);

/*
 * The same for several X rows with SMMLA (gemm_int8_i8mm.c; requires QMM_CPU_ISA_I8MM): W
 * rows in pairs decoded from the GGUF blocks once per pass of up to QMM_ARM_I8MM_XPAIRS pairs
 * of X rows, X's pairs of rows interleaved for SMMLA in `scratch` (>=
 * qmm_arm_gemm_int8_i8mm_scratch(n, k) bytes, 16-byte aligned), tasks of
 * QMM_ARM_INT8_TASK_ROWS W rows. Bit-identical to qmm_arm_gemv_int8_dotprod for every n.
 */
#define QMM_ARM_I8MM_XPAIRS 4
size_t qmm_arm_gemm_int8_i8mm_scratch(int64_t n, int64_t k);
void qmm_arm_gemm_int8_i8mm(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                            size_t row_stride, int64_t n, const qmm_arm_int8_x *xs, void *scratch,
                            float *y, int64_t ldy, int n_threads);

/*
 * The repacked form of W for the SMMLA kernel (made once, qmm_arm_i8mm_pack; requires
 * QMM_CPU_ISA_I8MM like the kernel): W rows in pairs (2p, 2p + 1; a last odd row paired with
 * itself), pair p's k/32 records consecutive, record (p, b) at
 *     packed + (p * (k / 32) + b) * QMM_ARM_I8MM_REC,
 * each holding what the on-the-fly kernel forms for elements 32b .. 32b + 31 of the two rows:
 *   [0, 64)    the SMMLA operands: 4 x 16 bytes, vector v = (row A 8v' .. 8v' + 7, row B the
 *              same) for the 64-bit lanes of elements 0..15 (v = 0, 1) and 16..31 (v = 2, 3),
 *              the int8 quants with offsets applied (int8_blocks.h);
 *   [64, 96)   4 doubles: d of A, d of B, dm of A, dm of B (wscale: the block's float scale
 *              and float minimum, exact products of the format's fields);
 *   [96, 104)  8 int8: sa, sb, ma, mb of A, then of B (the integer scales and mins of the
 *              16-element halves: q2_K, q3_K, q6_K; 0 for the other types).
 * 52 bytes per row per 32 elements (GGUF: 17-34; docs/ARM64.md has the ratio per type).
 * qmm_arm_gemm_int8_i8mm_packed gives qmm_arm_gemm_int8_i8mm's bits for every n.
 */
#define QMM_ARM_I8MM_REC 104
size_t qmm_arm_i8mm_pack_bytes(int64_t m, int64_t k);
/* Fill dst (qmm_arm_i8mm_pack_bytes(m, k) bytes) from W's GGUF rows, on up to n_threads
 * OpenMP threads. Nothing for a type without an int8 kernel. */
void qmm_arm_i8mm_pack(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                       size_t row_stride, void *dst, int n_threads);
void qmm_arm_gemm_int8_i8mm_packed(qmm_type type, int64_t m, int64_t k, const void *packed,
                                   int64_t n, const qmm_arm_int8_x *xs, void *scratch, float *y,
                                   int64_t ldy, int n_threads);

/* ---------------------------------------------------------------------------------------
 * f32-class gemv / fused for every weight type with NEON FMA (gemv_float_neon.c). The order
 * of one output depends only on k and is the one of x86's gemv_avx512 (src/cpu/x86/
 * gemv_common.h): panels of 1024 elements; in a panel element p goes into lane p % 16 of f32
 * accumulator (p / 16) % 2 by one FMA, in increasing p; at a panel's end the two accumulators
 * are added, the 16 lanes widened and added to 16 double lanes; at the end the double lanes
 * are summed by the fixed tree (i + 8, then + 4, + 2, + 1) and rounded once to float. W's
 * elements enter as the type table's to_float values, bit for bit.
 * ------------------------------------------------------------------------------------- */

/* f32, f16, bf16: decoded in registers (no scratch). */
bool qmm_arm_gemv_float_has_type(qmm_type type);
/* Every weight type with a to_float (the float types included). */
bool qmm_arm_gemv_neon_has_type(qmm_type type);

/* Scratch bytes per thread of qmm_arm_gemv_neon for (type, k): a tile of converted W rows
 * (0 for f32, f16, bf16; a multiple of 64). */
size_t qmm_arm_gemv_neon_scratch(qmm_type type, int64_t k);

/* Y[n][m] = X W^T (row i at w + i*row_stride; k >= 1, a multiple of the block size): tasks of
 * up to 64 W rows on up to n_threads OpenMP threads (dynamic order; each output belongs to one
 * task), X rows in passes of up to 2 per W row. For the quantized types a task first converts
 * its W rows with to_float into thread t's tile at scratch + t * qmm_arm_gemv_neon_scratch
 * (scratch: n_threads such tiles, 16-byte aligned; NULL allowed for f32/f16/bf16). Writes
 * exactly y[j*ldy + i]; reads nothing past a W row or an X row. Requires QMM_CPU_ISA_NEON. */
void qmm_arm_gemv_neon(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                       size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                       int64_t ldy, void *scratch, int n_threads);
/* The same for f32, f16, bf16 only (no scratch). */
void qmm_arm_gemv_float_neon(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                             size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                             int64_t ldy, int n_threads);

#endif /* QMM_CPU_ARM_KERNELS_H */
