/*
 * tiles.c — the tiled f32 driver shared by the gemv and fused strategies.
 *
 * Work is cut into tasks of (mr W rows) x (nb X rows). A task walks k in panels of
 * QMM_CPU_KP: it dequantizes its W rows' panel exactly (the type table's to_float) into a
 * thread-local f32 buffer, then the panel kernel adds every (X row, W row) panel dot into a
 * thread-local double accumulator; after the last panel it rounds each accumulator to float
 * and stores it. Tasks are handed to the context's OpenMP threads dynamically; since each
 * output belongs to exactly one task and is accumulated in the fixed panel order, the bits do
 * not depend on which thread ran it, on the thread count, on the tiling or on n.
 */
#include <string.h>

#include <omp.h>

#include "cpu/cpu_internal.h"

/* Work (2*m*n*k flops) below which one more thread costs more than it gives: a fork/join
 * of the OpenMP team is a few microseconds. PROVISIONAL, to be measured with qmm tune. */

/* Bytes of one thread's scratch for a tiling: W panel buffer, then the accumulators. */
static size_t scratch_bytes(qmm_cpu_tiling t) {
    return (size_t)t.mr * QMM_CPU_KP * sizeof(float) + (size_t)t.mr * (size_t)t.nb * sizeof(double);
}

/* One task: W rows [i0, i0+mr), X rows [j0, j0+nb). */
static void run_task(const qmm_weights *w, const qmm_type_traits *t,
                     const qmm_cpu_panel_f32_kernel *panel, int64_t i0, int64_t mr,
                     int64_t j0, int64_t nb, const float *x, int64_t ldx, float *y,
                     int64_t ldy, void *scratch) {
    float *wbuf = scratch; /* mr rows of QMM_CPU_KP floats: 1 KiB rows keep 64-byte alignment */
    double *acc = (double *)(wbuf + (size_t)mr * QMM_CPU_KP); /* nb x mr */
    memset(acc, 0, (size_t)nb * (size_t)mr * sizeof *acc);
    const int64_t k = w->k;
    for (int64_t p0 = 0; p0 < k; p0 += QMM_CPU_KP) {
        const int64_t len = k - p0 < QMM_CPU_KP ? k - p0 : QMM_CPU_KP;
        const size_t off = (size_t)(p0 / t->block_size) * t->block_bytes;
        for (int64_t r = 0; r < mr; r++)
            t->to_float(qmm_cpu_weights_row(w, i0 + r) + off, wbuf + r * QMM_CPU_KP, len);
        panel->run(mr, nb, len, wbuf, QMM_CPU_KP, x + j0 * ldx + p0, ldx, acc, mr);
    }
    for (int64_t j = 0; j < nb; j++)
        for (int64_t r = 0; r < mr; r++)
            y[(j0 + j) * ldy + i0 + r] = (float)acc[j * mr + r];
}

qmm_status qmm_cpu_run_tiled(qmm_context *ctx, const qmm_weights *w, qmm_cpu_tiling tiling,
                             int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    const qmm_type_traits *t = qmm_type_traits_get(w->type);
    if (t == NULL || tiling.mr < 1 || tiling.nb < 1)
        return qmm_error(QMM_ERR_INTERNAL, "qmm_cpu_run_tiled: bad type %d or tiling %lldx%lld",
                         (int)w->type, (long long)tiling.mr, (long long)tiling.nb);
    if (tiling.mr > w->m) tiling.mr = w->m;
    if (tiling.nb > n) tiling.nb = n;
    qmm_status s = qmm_cpu_scratch_reserve(st, scratch_bytes(tiling));
    if (s != QMM_OK) return s;

    const int64_t tiles_m = (w->m + tiling.mr - 1) / tiling.mr;
    const int64_t chunks_n = (n + tiling.nb - 1) / tiling.nb;
    const int64_t n_tasks = tiles_m * chunks_n;
    const int n_threads = qmm_cpu_team_size(st->n_threads, n_tasks, w->m, n, w->k);
    const qmm_cpu_panel_f32_kernel *panel = st->panel;

#pragma omp parallel for num_threads((int)n_threads) schedule(dynamic, 1) if (n_threads > 1)
    for (int64_t task = 0; task < n_tasks; task++) {
        const int64_t tm = task % tiles_m, tn = task / tiles_m;
        const int64_t i0 = tm * tiling.mr, j0 = tn * tiling.nb;
        const int64_t mr = w->m - i0 < tiling.mr ? w->m - i0 : tiling.mr;
        const int64_t nb = n - j0 < tiling.nb ? n - j0 : tiling.nb;
        run_task(w, t, panel, i0, mr, j0, nb, x, ldx, y, ldy,
                 st->per_thread[omp_get_thread_num()].ptr);
    }
    return QMM_OK;
}
