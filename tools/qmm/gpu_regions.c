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
    /* warm-up: until `warmup` calls, and (warmup > 0) GPU_WARM_MS have passed and the last
     * GPU_WARM_STABLE regions agree within GPU_WARM_SPREAD, or GPU_WARM_MAX_MS have passed */
    const double t0 = sysinfo_now();
    double recent[GPU_WARM_STABLE];
    int seen = 0;
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
                if (hi <= lo * (1.0 + GPU_WARM_SPREAD)) break;
            }
        }
        double t;
        st = region(ctx, call, arg, copies, b, &j, last, &t);
        if (st != QMM_OK) return st;
        recent[seen++ % GPU_WARM_STABLE] = t;
    }
    for (int64_t i = 0; i < iters && st == QMM_OK; i++) {
        st = region(ctx, call, arg, copies, b, &j, last, &ms[i]);
        ms[i] /= b;
    }
    return st;
}
