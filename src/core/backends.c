/* backends.c — which backends this build has. The CUDA and WebGPU backends define their
 * own accessors; without WebGPU, the functions of qmm_webgpu.h say so. */
#include "core/internal.h"
#include "qmm_webgpu.h"

#ifndef QMM_WITH_CUDA
const qmm_backend_ops *qmm_cuda_backend_ops(void) { return NULL; }
#endif

#ifndef QMM_WITH_WEBGPU
const qmm_backend_ops *qmm_webgpu_backend_ops(void) { return NULL; }

static qmm_status no_webgpu(const char *fn) {
    return qmm_error(QMM_ERR_UNSUPPORTED, "%s: this libqmm was built without the WebGPU backend "
                     "(configure with -DQMM_WEBGPU=ON after scripts/deps.sh)", fn);
}
qmm_status qmm_webgpu_get_info(qmm_context *ctx, qmm_webgpu_info *out) {
    (void)ctx;
    (void)out;
    return no_webgpu("qmm_webgpu_get_info");
}
qmm_status qmm_webgpu_set_fused_geometry(qmm_context *ctx, int wg_m, int wg_n, int tile_k) {
    (void)ctx;
    (void)wg_m;
    (void)wg_n;
    (void)tile_k;
    return no_webgpu("qmm_webgpu_set_fused_geometry");
}
qmm_status qmm_webgpu_get_fused_geometry(const qmm_context *ctx, int *wg_m, int *wg_n, int *tile_k) {
    (void)ctx;
    (void)wg_m;
    (void)wg_n;
    (void)tile_k;
    return no_webgpu("qmm_webgpu_get_fused_geometry");
}
qmm_status qmm_webgpu_fused_tile_k(const qmm_context *ctx, int64_t m, int64_t n, int *tile_k,
                                   int64_t *auto_min_workgroups) {
    (void)ctx;
    (void)m;
    (void)n;
    (void)tile_k;
    (void)auto_min_workgroups;
    return no_webgpu("qmm_webgpu_fused_tile_k");
}
qmm_status qmm_webgpu_buffer_import(qmm_context *ctx, void *wgpu_buffer, size_t bytes, void **out) {
    (void)ctx;
    (void)wgpu_buffer;
    (void)bytes;
    (void)out;
    return no_webgpu("qmm_webgpu_buffer_import");
}
qmm_status qmm_webgpu_buffer_handle(qmm_context *ctx, const void *p, void **wgpu_buffer, uint64_t *offset) {
    (void)ctx;
    (void)p;
    (void)wgpu_buffer;
    (void)offset;
    return no_webgpu("qmm_webgpu_buffer_handle");
}
#endif
