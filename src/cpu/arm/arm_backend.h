/*
 * arm_backend.h — how the CPU backend (backend.c) reaches the aarch64 kernels: the
 * per-weights record and the strategy implementations registered in backend.c's table.
 * Portable declarations; every function is registered at the ISA level its kernels need.
 */
#ifndef QMM_CPU_ARM_BACKEND_H
#define QMM_CPU_ARM_BACKEND_H

#include <stdbool.h>

#include "cpu/arm/arm_kernels.h"
#include "cpu/cpu_internal.h"

/* The aarch64 forms of one CPU weights object (qmm_cpu_weights.arm), made on first use. */
typedef struct qmm_arm_weights {
    /* Whether some dequantized W element is Inf or NaN (checked on the first int8 call): -1
     * not checked yet, 0 no, 1 yes; such weights run the exact gemv (a property of W alone,
     * so the choice never depends on X or n). */
    int nonfinite;
    /* The repacked form of W for SMMLA (arm_kernels.h), made at the first int8 call at level
     * i8mm with n > QMM_CPU_ARM_I8MM_PACK_MIN_N; NULL until then. */
    unsigned char *i8mm;
    size_t i8mm_bytes;
} qmm_arm_weights;

/* The SMMLA kernel reads the repacked copy above this many X rows (more than one pass of
 * QMM_ARM_I8MM_XPAIRS pairs: there the on-the-fly decode of a W pair would be repeated per
 * pass), the GGUF blocks at or below it (one pass decodes each block once either way, and
 * reads 1.5-5x fewer bytes), and only for the types whose repacked kernel executes fewer
 * instructions per block than the on-the-fly one (qmm_cpu_arm_i8mm_packed_type). From
 * instruction counts, NOT MEASURED (docs/ARM64.md). */
#define QMM_CPU_ARM_I8MM_PACK_MIN_N (2 * QMM_ARM_I8MM_XPAIRS)
bool qmm_cpu_arm_i8mm_packed_type(qmm_type type);

/* Called by weights_init after the packed GGUF rows are in place: leaves cw->arm NULL. */
qmm_status qmm_cpu_arm_weights_init(const qmm_context *ctx, qmm_weights *w);
/* Free what the aarch64 paths made (NULL-safe). */
void qmm_cpu_arm_weights_release(qmm_weights *w);
/* Adds the repacked copy, once made, to out->int8_bytes. */
void qmm_cpu_arm_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out);

/* int8: every type of qmm_arm_int8_has_type; X quantized per call (the int8 rule). The
 * neon entry adds products with SMULL/SADALP, the dotprod one with SDOT; same bits. */
qmm_status qmm_cpu_arm_matmul_int8_neon(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);
qmm_status qmm_cpu_arm_matmul_int8_dotprod(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                           const float *x, int64_t ldx, float *y, int64_t ldy);

/* i8mm: the dotprod gemv at n = 1, the SMMLA kernel for n >= 2 on the GGUF blocks, and above
 * QMM_CPU_ARM_I8MM_PACK_MIN_N on the repacked copy (the same bits at every n); the kernel it
 * takes for n: "int8_dotprod_gemv", "int8_smmla" or "int8_smmla_packed". */
qmm_status qmm_cpu_arm_matmul_int8_i8mm(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);
const char *qmm_cpu_arm_int8_i8mm_kernel(const qmm_context *ctx, qmm_type type, int64_t n);

/* gemv and fused (one kernel, the same bits) for every weight type with NEON FMA
 * (qmm_arm_gemv_neon_has_type): the order of x86's gemv_avx512. */
qmm_status qmm_cpu_arm_matmul_gemv_neon(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);

#endif /* QMM_CPU_ARM_BACKEND_H */
