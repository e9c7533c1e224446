/*
 * gemv.c — strategy `gemv` (small n, decode): every task takes QMM_CPU_GEMV_MR rows of W and
 * ALL n rows of X, so each W row is read and dequantized exactly once per call (panel by
 * panel into a small thread-local buffer) and dotted with every X row while it is in cache.
 * Threads split over m only. It runs the same panel kernel as fused, so the two strategies
 * give bit-identical outputs (the panel order of cpu_internal.h).
 */
#include "cpu/cpu_internal.h"

/* W rows per task: the panel kernel's register tile (one X row against four W rows). */
#define QMM_CPU_GEMV_MR 4

qmm_status qmm_cpu_matmul_gemv(qmm_context *ctx, const qmm_weights *w, int64_t n,
                               const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_tiling tl = {.mr = QMM_CPU_GEMV_MR, .nb = n};
    return qmm_cpu_run_tiled(ctx, w, tl, n, x, ldx, y, ldy);
}
