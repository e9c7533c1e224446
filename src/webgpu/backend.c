/*
 * backend.c — the WebGPU backend's ops table and the functions of qmm_webgpu.h.
 */
#include <stdio.h>
#include <string.h>

#include "qmm_webgpu.h"
#include "webgpu/webgpu_internal.h"

static qmm_status wgpu_synchronize(qmm_context *ctx) { return qmm_wgpu_sync(qmm_wgpu_ctx(ctx)); }

static qmm_status wgpu_device_info(qmm_context *ctx, qmm_device_info *out) {
    /* the CUDA-shaped description: the name and the memory the device reports; the SM
     * fields do not apply (0), and no peak or copy bandwidth is known */
    const qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    snprintf(out->name, sizeof out->name, "%s", c->adapter_name);
    return QMM_OK;
}

static const qmm_backend_ops webgpu_ops = {
    .name = "webgpu",
    .context_init = qmm_wgpu_context_init,
    .context_release = qmm_wgpu_context_release,
    .weights_init = qmm_wgpu_weights_init,
    .weights_release = qmm_wgpu_weights_release,
    .weights_memory = qmm_wgpu_weights_memory,
    .resolve = qmm_wgpu_resolve,
    .describe = qmm_wgpu_describe,
    .matmul = qmm_wgpu_matmul,
    .buffer_alloc = qmm_wgpu_buffer_alloc,
    .buffer_free = qmm_wgpu_buffer_free,
    .upload = qmm_wgpu_upload,
    .download = qmm_wgpu_download,
    .synchronize = wgpu_synchronize,
    .timer_begin = qmm_wgpu_timer_begin,
    .timer_end = qmm_wgpu_timer_end,
    .device_info = wgpu_device_info,
};

const qmm_backend_ops *qmm_webgpu_backend_ops(void) { return &webgpu_ops; }

static qmm_status need_webgpu(const qmm_context *ctx, const char *fn) {
    if (ctx == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (ctx->params.backend != QMM_BACKEND_WEBGPU)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "%s: the context's backend is %s, not webgpu", fn,
                         qmm_backend_name(ctx->params.backend));
    return QMM_OK;
}

qmm_status qmm_webgpu_get_info(qmm_context *ctx, qmm_webgpu_info *out) {
    qmm_status st = need_webgpu(ctx, "qmm_webgpu_get_info");
    if (st != QMM_OK) return st;
    if (out == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_webgpu_get_info: out is NULL");
    const qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    qmm_webgpu_info i;
    memset(&i, 0, sizeof i);
    snprintf(i.adapter, sizeof i.adapter, "%s", c->adapter_name);
    snprintf(i.backend_api, sizeof i.backend_api, "%s", qmm_wgpu_backend_type_name(c->backend_type));
    snprintf(i.adapter_type, sizeof i.adapter_type, "%s", qmm_wgpu_adapter_type_name(c->adapter_type));
    snprintf(i.driver, sizeof i.driver, "%s", c->driver);
    snprintf(i.vendor, sizeof i.vendor, "%s", c->vendor);
    i.vendor_id = c->vendor_id;
    i.device_id = c->device_id;
    i.wgpu_version = W.wgpuGetVersion();
    i.caller_device = !c->own_device;
    i.shader_f16 = c->has_f16;
    i.shader_checks = c->shader_checks;
    i.timestamp_query = c->has_timestamp;
    i.adapter_subgroups = c->adapter_subgroups;
    i.adapter_cooperative_matrix = c->adapter_coop;
    i.subgroup_min_size = c->subgroup_min;
    i.subgroup_max_size = c->subgroup_max;
    i.max_storage_buffer_binding_size = c->limits.maxStorageBufferBindingSize;
    i.max_buffer_size = c->limits.maxBufferSize;
    i.max_compute_workgroup_storage_size = c->limits.maxComputeWorkgroupStorageSize;
    i.max_compute_invocations_per_workgroup = c->limits.maxComputeInvocationsPerWorkgroup;
    i.max_compute_workgroups_per_dimension = c->limits.maxComputeWorkgroupsPerDimension;
    i.min_storage_buffer_offset_alignment = c->limits.minStorageBufferOffsetAlignment;
    i.timestamp_period_ns = (double)W.wgpuQueueGetTimestampPeriod(c->queue);
    *out = i;
    return QMM_OK;
}

qmm_status qmm_webgpu_set_fused_geometry(qmm_context *ctx, int wg_m, int wg_n, int tile_k) {
    qmm_status st = need_webgpu(ctx, "qmm_webgpu_set_fused_geometry");
    if (st != QMM_OK) return st;
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    const bool reset = wg_m == 0 && wg_n == 0 && tile_k == 0;
    if (reset) wg_m = QMM_WGPU_DEFAULT_WG_M, wg_n = QMM_WGPU_DEFAULT_WG_N, tile_k = QMM_WGPU_DEFAULT_TILE_K;
    st = qmm_wgpu_check_geometry(c, wg_m, wg_n, tile_k);
    if (st != QMM_OK) return st;
    c->wg_m = wg_m;
    c->wg_n = wg_n;
    c->tile_k = tile_k;
    c->geometry_auto = reset;
    return QMM_OK;
}

qmm_status qmm_webgpu_fused_tile_k(const qmm_context *ctx, int64_t m, int64_t n, int *tile_k,
                                   int64_t *auto_min_workgroups) {
    qmm_status st = need_webgpu(ctx, "qmm_webgpu_fused_tile_k");
    if (st != QMM_OK) return st;
    const qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    int64_t minw = 0;
    const int tk = c->geometry_auto ? qmm_wgpu_auto_tile_k(c, m, n, &minw) : c->tile_k;
    if (tile_k) *tile_k = tk;
    if (auto_min_workgroups) *auto_min_workgroups = minw;
    return QMM_OK;
}

qmm_status qmm_webgpu_get_fused_geometry(const qmm_context *ctx, int *wg_m, int *wg_n, int *tile_k) {
    qmm_status st = need_webgpu(ctx, "qmm_webgpu_get_fused_geometry");
    if (st != QMM_OK) return st;
    const qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    if (wg_m) *wg_m = c->wg_m;
    if (wg_n) *wg_n = c->wg_n;
    if (tile_k) *tile_k = c->tile_k;
    return QMM_OK;
}
