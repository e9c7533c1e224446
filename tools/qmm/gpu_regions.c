/* gpu_regions.c — device time of back-to-back calls on WebGPU (gpu_regions.h). */
#include "gpu_regions.h"

#include <math.h>

#include "sysinfo.h"

/* Region of `b` calls from call index *j on; *ms: its GPU time. */
static qmm_status region(qmm_context *ctx, gpu_region_call call, void *arg, int copies, int b,
                         int64_t *j, int *last, double *ms) {
    qmm_status st = qmm_timer_begin(ctx);
    for (int i = 0; i < b && st == QMM_OK; i++, (*j)++) {
        *last = (int)(*j % copies);
        st = call(arg, *last);
    }
    double t = 0.0;
    const qmm_status st2 = qmm_timer_end(ctx, &t); /* ends the region even after a failure */
    *ms = t;
    return st != QMM_OK ? st : st2;
}

qmm_status gpu_regions_time(qmm_context *ctx, gpu_region_call call, void *arg, int copies,
                            int64_t warmup, int64_t iters, double *ms, int *calls, int *last) {
    int64_t j = 0;
    double t1 = 0.0;
    qmm_status st = region(ctx, call, arg, copies, 1, &j, last, &t1);
    if (st != QMM_OK) return st;
    int b = GPU_REGION_MAX_CALLS;
    if (t1 > 0 && GPU_REGION_MS / t1 < (double)GPU_REGION_MAX_CALLS) b = (int)ceil(GPU_REGION_MS / t1);
    if (b < 1) b = 1;
    *calls = b;
    const double t0 = sysinfo_now();
    while (st == QMM_OK && (j < warmup || (warmup > 0 && (sysinfo_now() - t0) * 1e3 < GPU_WARM_MS))) {
        double t;
        st = region(ctx, call, arg, copies, b, &j, last, &t);
    }
    for (int64_t i = 0; i < iters && st == QMM_OK; i++) {
        st = region(ctx, call, arg, copies, b, &j, last, &ms[i]);
        ms[i] /= b;
    }
    return st;
}
