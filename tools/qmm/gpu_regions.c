/* gpu_regions.c — device time of back-to-back calls on WebGPU (gpu_regions.h). */
#include "gpu_regions.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "sysinfo.h"

/* Region of `b` calls from call index *j on; *ms: its GPU time. A failed begin is returned as
 * is (its message kept); after a failed call the region is still ended, the call's status
 * returned. */
static qmm_status region(qmm_context *ctx, gpu_region_call call, void *arg, int copies, int b,
                         int64_t *j, int *last, double *ms) {
    qmm_status st = qmm_timer_begin(ctx);
    if (st != QMM_OK) return st;
    for (int i = 0; i < b && st == QMM_OK; i++, (*j)++) {
        *last = (int)(*j % copies);
        st = call(arg, *last);
    }
    double t = 0.0;
    const qmm_status st2 = qmm_timer_end(ctx, &t);
    *ms = t;
    return st != QMM_OK ? st : st2;
}

/* Calls per region for a per-call time of `per` ms: about GPU_REGION_MS of work, 1 .. max. */
static int calls_for(double per) {
    if (!(per > 0) || GPU_REGION_MS / per >= (double)GPU_REGION_MAX_CALLS)
        return GPU_REGION_MAX_CALLS;
    const int b = (int)ceil(GPU_REGION_MS / per);
    return b < 1 ? 1 : b;
}

qmm_status gpu_regions_time(qmm_context *ctx, gpu_region_call call, void *arg, int copies,
                            int64_t warmup, int64_t iters, double *ms, gpu_regions_info *info) {
    int64_t j = 0;
    double t1 = 0.0;
    qmm_status st = region(ctx, call, arg, copies, 1, &j, &info->last, &t1);
    if (st != QMM_OK) return st;
    int b = calls_for(t1);
    /* warm-up: until `warmup` calls, and (warmup > 0) GPU_WARM_MS have passed and the last
     * GPU_WARM_STABLE regions of the same size agree within GPU_WARM_SPREAD, or
     * GPU_WARM_MAX_MS have passed. The region size grows with the per-call time measured (the
     * first call may have run at a low clock); a new size starts the agreement over. */
    const double t0 = sysinfo_now();
    double recent[GPU_WARM_STABLE];
    int seen = 0;
    info->settled = warmup == 0;
    for (;;) {
        const double ms_now = (sysinfo_now() - t0) * 1e3;
        if (j >= warmup) {
            if (warmup == 0 || ms_now >= GPU_WARM_MAX_MS) break;
            if (ms_now >= GPU_WARM_MS && seen >= GPU_WARM_STABLE) {
                double lo = recent[0], hi = recent[0];
                for (int i = 1; i < GPU_WARM_STABLE; i++) {
                    lo = recent[i] < lo ? recent[i] : lo;
                    hi = recent[i] > hi ? recent[i] : hi;
                }
                if (hi <= lo * (1.0 + GPU_WARM_SPREAD)) {
                    info->settled = true;
                    break;
                }
            }
        }
        double t;
        st = region(ctx, call, arg, copies, b, &j, &info->last, &t);
        if (st != QMM_OK) return st;
        const int nb = calls_for(t / b);
        if (nb > b) { /* grows only (the per-call time falls as the clocks rise): no flapping */
            b = nb;
            seen = 0;
        } else {
            recent[seen++ % GPU_WARM_STABLE] = t;
        }
    }
    info->warm_ms = (sysinfo_now() - t0) * 1e3;
    info->calls = b;
    for (int64_t i = 0; i < iters && st == QMM_OK; i++) {
        st = region(ctx, call, arg, copies, b, &j, &info->last, &ms[i]);
        ms[i] /= b;
    }
    return st;
}

void gpu_regions_unsettled(char *buf, size_t len, const gpu_regions_info *info) {
    snprintf(buf, len, "the warm-up ran %.0f ms without %d regions in a row agreeing within %.0f%%: "
             "the GPU's clocks may not have settled", info->warm_ms, GPU_WARM_STABLE,
             100.0 * GPU_WARM_SPREAD);
}
