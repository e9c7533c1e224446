/*
 * gpu_regions.h — device time of back-to-back calls on WebGPU (qmm bench, and --candidate
 * FILE.wgsl), read from GPU timestamp queries.
 *
 * A call timed alone (begin, one call, end: the host waits for it) leaves the GPU idle between
 * calls and between rows; the NVIDIA driver then lowers the clocks, and the same kernel ran
 * 3-5x slower a few seconds into a run (bench/results/h200-webgpu-clocks.md). So the main
 * figure is taken under steady load, as a model's prefill runs:
 *
 *   1. one call timed alone gives its time t1; a region holds B = ceil(GPU_REGION_MS / t1)
 *      calls (1 .. GPU_REGION_MAX_CALLS), B raised when a warm-up region's per-call time
 *      asks for more (it only grows);
 *   2. warm-up: regions of B back-to-back calls, timed and discarded, until at least `warmup`
 *      calls have run and, when warmup > 0, GPU_WARM_MS of wall time have passed and the last
 *      GPU_WARM_STABLE regions (of the same B) agree within GPU_WARM_SPREAD, or GPU_WARM_MAX_MS
 *      have passed (then `settled` is false and the caller says so)
 *      (on the H200 the SM clock sat at 345-510 MHz while the host computed a reference and
 *      was back at 1980 MHz within one 0.4 s sample of load; 200 ms plus the agreement rule
 *      still timed two rows at the low clock, hence a second: bench/results/h200-webgpu-clocks.md);
 *   3. `iters` regions of B back-to-back calls, each between qmm_timer_begin/end (the sum of
 *      the calls' compute passes, GPU timestamps; the host's gaps between passes excluded);
 *      ms[i] = region time / B.
 *
 * Call j runs on copy j % copies (W, X, Y rotated as the caller prepared them).
 */
#ifndef QMM_TOOL_GPU_REGIONS_H
#define QMM_TOOL_GPU_REGIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

#define GPU_REGION_MS 1.0
#define GPU_REGION_MAX_CALLS 32
#define GPU_WARM_MS 1000.0
#define GPU_WARM_MAX_MS 3000.0
#define GPU_WARM_STABLE 8
#define GPU_WARM_SPREAD 0.03

/* One call on copy `copy` (encoded, not waited for). */
typedef qmm_status (*gpu_region_call)(void *arg, int copy);

typedef struct gpu_regions_info {
    int calls;       /* B: calls per timed region */
    int last;        /* the copy of the last call */
    bool settled;    /* the warm-up ended by agreement (false: it hit GPU_WARM_MAX_MS) */
    double warm_ms;  /* wall time of the warm-up */
} gpu_regions_info;

/* Fills ms[0 .. iters-1] (per-call ms of each timed region) and *info. Returns the first
 * failing status (qmm_last_error() says why). */
qmm_status gpu_regions_time(qmm_context *ctx, gpu_region_call call, void *arg, int copies,
                            int64_t warmup, int64_t iters, double *ms, gpu_regions_info *info);

/* The sentence for a warm-up that hit its cap (info->settled false), into buf. */
void gpu_regions_unsettled(char *buf, size_t len, const gpu_regions_info *info);

#endif
