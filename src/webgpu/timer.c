/*
 * timer.c — qmm_timer_begin / qmm_timer_end on WebGPU: timestamp queries.
 *
 * Between begin and end, every compute pass a matmul encodes writes a timestamp at its start
 * and at its end (WGPUPassTimestampWrites, pair i of one query set); qmm_timer_end resolves
 * the pairs, reads them back (waiting for the queue) and returns the sum of (end - start)
 * times the queue's timestamp period: the GPU time of the region's kernels, without the
 * host's submission gaps between them. Up to QMM_WGPU_TIMED_PASSES passes per region; more
 * is an error at qmm_timer_end. Needs the device feature timestamp-query.
 */
#include <string.h>

#include "webgpu/webgpu_internal.h"

static qmm_status timer_setup(qmm_wgpu_context *c) {
    if (c->queries) return QMM_OK;
    WGPUQuerySetDescriptor d;
    memset(&d, 0, sizeof d);
    d.type = WGPUQueryType_Timestamp;
    d.count = 2 * QMM_WGPU_TIMED_PASSES;
    qmm_wgpu_scope_push(c);
    WGPUQuerySet qs = W.wgpuDeviceCreateQuerySet(c->device, &d);
    qmm_status st = qmm_wgpu_scope_pop(c, "qmm_timer_begin: creating the timestamp query set", NULL);
    if (st != QMM_OK) {
        if (qs) W.wgpuQuerySetRelease(qs);
        return st;
    }
    c->queries = qs;
    return qmm_wgpu_buffer_create(c, 16u * QMM_WGPU_TIMED_PASSES,
                                  WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc,
                                  "qmm_timer_begin: creating the query resolve buffer", &c->query_resolve);
}

qmm_status qmm_wgpu_timer_begin(qmm_context *ctx) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    qmm_status st = qmm_wgpu_check_device(c, "qmm_timer_begin");
    if (st != QMM_OK) return st;
    if (!c->has_timestamp)
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_timer_begin: the WebGPU device '%s' has no "
                         "timestamp-query feature", c->adapter_name);
    st = timer_setup(c);
    if (st != QMM_OK) return st;
    c->timing = true;
    c->timed_passes = 0;
    c->timed_overflow = false;
    return QMM_OK;
}

const WGPUPassTimestampWrites *qmm_wgpu_timer_pass(qmm_wgpu_context *c, WGPUPassTimestampWrites *tw) {
    if (!c->timing) return NULL;
    if (c->timed_passes == QMM_WGPU_TIMED_PASSES) {
        c->timed_overflow = true;
        return NULL;
    }
    memset(tw, 0, sizeof *tw);
    tw->querySet = c->queries;
    tw->beginningOfPassWriteIndex = 2 * c->timed_passes;
    tw->endOfPassWriteIndex = 2 * c->timed_passes + 1;
    c->timed_passes++;
    return tw;
}

qmm_status qmm_wgpu_timer_end(qmm_context *ctx, double *ms) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    if (!c->timing)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_timer_end: no qmm_timer_begin before it");
    c->timing = false;
    if (c->timed_overflow)
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_timer_end: the timed region held more than %d "
                         "compute passes", QMM_WGPU_TIMED_PASSES);
    const uint32_t passes = c->timed_passes;
    if (passes == 0) {
        *ms = 0.0;
        return qmm_wgpu_check_device(c, "qmm_timer_end");
    }
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(c->device, NULL);
    W.wgpuCommandEncoderResolveQuerySet(enc, c->queries, 0, 2 * passes, c->query_resolve, 0);
    qmm_status st = qmm_wgpu_submit(c, enc, "qmm_timer_end: resolving the timestamps");
    uint64_t t[2 * QMM_WGPU_TIMED_PASSES];
    if (st == QMM_OK) st = qmm_wgpu_read(c, c->query_resolve, 0, t, 16u * passes);
    if (st != QMM_OK) return st;
    const double period = (double)W.wgpuQueueGetTimestampPeriod(c->queue);
    double ticks = 0.0;
    for (uint32_t i = 0; i < passes; i++)
        if (t[2 * i + 1] > t[2 * i]) ticks += (double)(t[2 * i + 1] - t[2 * i]);
    *ms = ticks * period * 1e-6;
    return QMM_OK;
}

void qmm_wgpu_timer_release(qmm_wgpu_context *c) {
    if (c->query_resolve) {
        W.wgpuBufferDestroy(c->query_resolve);
        W.wgpuBufferRelease(c->query_resolve);
        c->query_resolve = NULL;
    }
    if (c->queries) {
        /* release only: wgpuQuerySetDestroy followed by the release panics in wgpu-native 29
         * ("Cannot remove a vacant resource") */
        W.wgpuQuerySetRelease(c->queries);
        c->queries = NULL;
    }
}
