/*
 * x86_backend.h — how the CPU backend (backend.c) reaches the x86 kernels: the per-weights
 * repack hook and the strategy implementations registered in backend.c's table.
 * Portable declarations; every function checks the context's ISA level itself.
 */
#ifndef QMM_CPU_X86_BACKEND_H
#define QMM_CPU_X86_BACKEND_H

#include <stdbool.h>

#include "cpu/cpu_internal.h"
#include "cpu/x86/gemm_int8_avx2.h"
#include "cpu/x86/x86_kernels.h"

/* The x86 forms of one CPU weights object (qmm_cpu_weights.x86). */
typedef struct qmm_x86_weights {
    qmm_x86_bf16_tiles bf16; /* AMX B-tiles; data == NULL when not packed */
    qmm_x86_int8_tiles int8; /* AMX-INT8 B-tiles (32-block types); q == NULL when not packed */
    float *otf_row_scale;    /* bf16 row scales for the on-the-fly AMX kernel (m_pad) or NULL */
    qmm_x86_int8_x8 x8;      /* the AVX2 int8 GEMM's 8-row interleaved copy; data == NULL when not packed */
    /* Whether some dequantized W element is Inf or NaN (checked on the first int8 call):
     * -1 not checked yet, 0 no, 1 yes. The int8 kernels scale integer dots by d_w * d_x and
     * cannot form such an element (e.g. mxfp4's E8M0 0xFE times 4 overflows to Inf in the
     * dequantizer, not in the int8 dot): such weights run the exact gemv instead. */
    int nonfinite;
} qmm_x86_weights;

/*
 * Called by weights_init after the packed GGUF rows are in place; leaves cw->x86 NULL. The
 * AMX layouts are made by the first matmul that needs them (x86_backend.c): bf16 tiles for
 * fused (m_pad * k_pad * 2 bytes more), int8 tiles with per-block float scales for int8 on
 * q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K (m_pad * k * (1 + 4/32 (+4/32 for the types with
 * a min)) bytes more).
 */
qmm_status qmm_cpu_x86_weights_init(const qmm_context *ctx, qmm_weights *w);
/* Free what qmm_cpu_x86_weights_init made (NULL-safe). */
void qmm_cpu_x86_weights_release(qmm_weights *w);
/* Add the bytes of the x86 forms made so far to *out (bf16_bytes: the bf16 tiles with their
 * row scales and the on-the-fly kernel's row scales; int8_bytes: the int8 tiles, scales, mins),
 * as allocated (each array rounded up to 64 bytes). */
void qmm_cpu_x86_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out);

/* fused on AMX-BF16: any weight type but f32 (kept on the exact f32 paths). */
bool qmm_cpu_x86_fused_amx_has_type(qmm_type type);
/* fused for f32 weights on AMX-BF16 with X and W split into three bf16 parts each (six
 * products per k step; f32-level error, see docs/KERNELS.md); runs qmm_cpu_x86_matmul_fused_amx. */
bool qmm_cpu_x86_fused_amx_f32_has_type(qmm_type type);
qmm_status qmm_cpu_x86_matmul_fused_amx(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);

/* int8: every quantized type; AMX-INT8 for the 32-block types (qmm_x86_int8_tiles_has_type),
 * the VNNI gemv otherwise and at decode sizes (X quantized per call to int8 per 32-block). */
/* The kernel the int8 strategy runs for this type and n: "int8_vnni_gemv" (decode sizes, or
 * types without int8 tiles) or "int8_amx". */
const char *qmm_cpu_x86_int8_kernel(const qmm_context *ctx, qmm_type type, int64_t n);
qmm_status qmm_cpu_x86_matmul_int8_amx(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                       const float *x, int64_t ldx, float *y, int64_t ldy);

/* int8 at levels avx512 (no AMX) and avx2 (registered as int8_avx512 and int8_avx2): the int8
 * gemv on the native blocks for every n (zmm at avx512, ymm with AVX-VNNI or vpmaddubsw at
 * avx2; the same bits), the exact gemv of the level for weights with non-finite elements.
 * The kernel it runs: "int8_vnni_gemv" (avx512), "int8_avxvnni_gemv" or "int8_avx2_gemv". */
const char *qmm_cpu_x86_int8_avx2_kernel(const qmm_context *ctx, qmm_type type, int64_t n);
qmm_status qmm_cpu_x86_matmul_int8_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);

/* gemv on AVX-512: every weight type (qmm_x86_gemv_avx512_has_type). */
qmm_status qmm_cpu_x86_matmul_gemv_avx512(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                          const float *x, int64_t ldx, float *y, int64_t ldy);

/* gemv on AVX2: the types of qmm_x86_gemv_avx2_has_type (every weight type; a type without
 * a row kernel would fall through to gemv_portable). */
qmm_status qmm_cpu_x86_matmul_gemv_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);

/* fused on AVX2 + FMA + F16C for every weight type (fused_avx2.c), precision class f32, in
 * the gemv kernels' summation order (gemv_common.h): every output has the bits gemv_avx2 and
 * gemv_avx512 give it. In batch-invariant mode, for n up to the auto table's gemv_max_n of
 * the (ISA level, type), it runs those gemv kernels instead (same bits, the decode regime's
 * speed) where they have the type; qmm_cpu_x86_fused_avx2_kernel names what runs. */
qmm_status qmm_cpu_x86_matmul_fused_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                         const float *x, int64_t ldx, float *y, int64_t ldy);
bool qmm_cpu_x86_fused_avx2_uses_gemv(const qmm_context *ctx, qmm_type type, int64_t n);
const char *qmm_cpu_x86_fused_avx2_kernel(const qmm_context *ctx, qmm_type type, int64_t n);

/* fused on AVX2 + FMA + F16C outside batch-invariant mode (fused_gemm_avx2.c), every weight
 * type, precision class f32: from n = qmm_cpu_fused_gemm_min_n (data, auto_table.c) a
 * register-blocked GEMM on exact float W panels, in its own order (per panel of 256 one FMA
 * chain; docs/KERNELS.md), which depends on k only but is not gemv's; below it fused_avx2.
 * supports() refuses under QMM_FLAG_BATCH_INVARIANT (fused_avx2 then takes every n, with
 * the gemv kernels of its order at decode sizes);
 * qmm_cpu_x86_fused_gemm_avx2_kernel names what runs. */
bool qmm_cpu_x86_fused_gemm_avx2_supports(const qmm_context *ctx, qmm_type type, const char **why);
qmm_status qmm_cpu_x86_matmul_fused_gemm_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                              const float *x, int64_t ldx, float *y, int64_t ldy);
const char *qmm_cpu_x86_fused_gemm_avx2_kernel(const qmm_context *ctx, qmm_type type, int64_t n);

#endif /* QMM_CPU_X86_BACKEND_H */
