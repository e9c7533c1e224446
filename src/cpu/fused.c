/*
 * fused.c — strategy `fused`: dequantize tiles of W (QMM_CPU_FUSED_MR rows x one k-panel)
 * into a thread-local f32 buffer inside the GEMM and run the f32 panel kernel over a chunk of
 * X rows (the seed's mul_mat_reg_tile). Threads split over m-tiles and n-chunks; when there
 * are too few tasks to keep every thread busy (small m or n), tiles and chunks shrink.
 * Same panel order as gemv, so both give identical bits (cpu_internal.h).
 */
#include "cpu/cpu_internal.h"

/* W rows per tile: a 32 x 256 f32 panel is 32 KiB, about an L1/L2 boundary. */
#define QMM_CPU_FUSED_MR 32
/* Smallest tile the load balancing may shrink to (a multiple of the kernel's 4 rows). */
#define QMM_CPU_FUSED_MR_MIN 8
/* X rows per task: 128 rows x one panel = 128 KiB of X, reused by every W row of the tile;
 * the W panel is dequantized once per 128 X rows. */
#define QMM_CPU_FUSED_NB 128

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

qmm_status qmm_cpu_matmul_fused(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                const float *x, int64_t ldx, float *y, int64_t ldy) {
    const qmm_cpu_state *st = ctx->backend;
    const int64_t want = 2 * (int64_t)st->n_threads; /* tasks wanted for balance */
    qmm_cpu_tiling tl = {.mr = QMM_CPU_FUSED_MR, .nb = QMM_CPU_FUSED_NB};
    while (tl.mr > QMM_CPU_FUSED_MR_MIN && ceil_div(w->m, tl.mr) * ceil_div(n, tl.nb) < want)
        tl.mr /= 2;
    int64_t tiles_m = ceil_div(w->m, tl.mr);
    if (tiles_m * ceil_div(n, tl.nb) < want) {
        int64_t chunks = ceil_div(want, tiles_m);
        tl.nb = ceil_div(n, chunks);
    }
    return qmm_cpu_run_tiled(ctx, w, tl, n, x, ldx, y, ldy);
}
