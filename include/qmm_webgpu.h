/*
 * qmm_webgpu.h — what only the WebGPU backend (QMM_BACKEND_WEBGPU) has: the adapter's
 * description, the fused kernel's geometry, and sharing buffers with an engine that owns
 * its own WebGPU device. docs/WEBGPU.md is the contract (memory, errors, limits, kernels).
 *
 * WebGPU handles are passed as void * (WGPUDevice, WGPUQueue, WGPUBuffer of webgpu.h), so
 * this header does not need webgpu.h. Every function returns QMM_ERR_INVALID_ARGUMENT for a
 * context of another backend and QMM_ERR_UNSUPPORTED when libqmm was built without WebGPU.
 *
 * Sharing a device: set qmm_context_params.webgpu_device and .webgpu_queue (qmm.h) to the
 * engine's WGPUDevice and its queue; qmm adds a reference to both and orders all its work
 * on that queue. qmm wraps every device call it makes in error scopes, so its errors come
 * back as qmm_status and never reach the device's uncaptured-error callback — but a device
 * made by the caller must have one (wgpu-native aborts on an error that no scope or callback
 * takes). X and Y may then be the engine's buffers: import them.
 */
#ifndef QMM_WEBGPU_H
#define QMM_WEBGPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The adapter and device a WebGPU context runs on. */
typedef struct qmm_webgpu_info {
    char adapter[256];       /**< adapter name, e.g. "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)" */
    char backend_api[16];    /**< "Vulkan", "Metal", "D3D12", "OpenGL", ...; "unknown" for a caller's device */
    char adapter_type[16];   /**< "DiscreteGPU", "IntegratedGPU", "CPU", "unknown" */
    char driver[256];        /**< the driver's description, e.g. "Mesa 22.3.6 (LLVM 15.0.6)" */
    char vendor[128];
    uint32_t vendor_id, device_id;
    uint32_t wgpu_version;   /**< wgpuGetVersion() of the loaded wgpu-native */
    bool caller_device;      /**< the context runs on a device given in qmm_context_params */
    bool shader_f16;         /**< the device has the shader-f16 feature enabled */
    bool timestamp_query;    /**< ... timestamp-query (qmm_timer_begin/end need it) */
    bool shader_checks;      /**< qmm's shaders are compiled with wgpu's runtime checks
                                  (qmm_context_params.webgpu_shader_checks) */
    /* the limits qmm's kernels and buffers depend on */
    uint64_t max_storage_buffer_binding_size;
    uint64_t max_buffer_size;
    uint32_t max_compute_workgroup_storage_size;
    uint32_t max_compute_invocations_per_workgroup;
    uint32_t max_compute_workgroups_per_dimension;
    uint32_t min_storage_buffer_offset_alignment;
    double timestamp_period_ns; /**< nanoseconds per timestamp tick */
    /* what the adapter offers that qmm does not enable (false, 0 for a caller's device) */
    bool adapter_subgroups;          /**< the subgroups feature */
    bool adapter_cooperative_matrix; /**< wgpu's native cooperative matrices: experimental in
                                          wgpu, and wgpu-native 29.0.1.1 cannot opt in to them,
                                          so no qmm kernel uses them (docs/WEBGPU.md) */
    uint32_t subgroup_min_size, subgroup_max_size; /**< the adapter's subgroup sizes (0: unknown) */
} qmm_webgpu_info;

/** Describe the adapter, device and limits of a WebGPU context. */
QMM_API qmm_status qmm_webgpu_get_info(qmm_context *ctx, qmm_webgpu_info *out);

/**
 * The geometry of the fused (register-tile) kernel on this context: wg_m x wg_n threads per
 * workgroup, each computing a 4 x 4 tile (TILE_M = TILE_N = 4, fixed: the kernel holds it in
 * four named vec4 accumulators), so a workgroup computes (4 wg_m) x (4 wg_n) outputs; tile_k
 * elements of k per step through workgroup memory. Allowed: wg_m, wg_n in {2, 4, 8, 16, 32},
 * tile_k in {8, 16, 32, 64}, wg_m * wg_n <= maxComputeInvocationsPerWorkgroup and
 * 4 * tile_k * 4 (wg_m + wg_n) bytes <= maxComputeWorkgroupStorageSize. Default 16, 16, 32.
 * Errors: QMM_ERR_INVALID_ARGUMENT naming the value and the rule it breaks; nothing changes.
 * A geometry set here is used as it is for every call. Left to the library (the default, or
 * set again with 0, 0, 0), a fused call with enough workgroups may run with a smaller TILE_K
 * (rules measured per geometry, src/webgpu/auto_table.c: none at present;
 * qmm_webgpu_fused_tile_k says which);
 * the geometry never changes a result, bit for bit.
 */
QMM_API qmm_status qmm_webgpu_set_fused_geometry(qmm_context *ctx, int wg_m, int wg_n, int tile_k);
QMM_API qmm_status qmm_webgpu_get_fused_geometry(const qmm_context *ctx, int *wg_m, int *wg_n,
                                                 int *tile_k);
/**
 * The TILE_K a fused call with m W rows and n tokens runs with on this context, and (if not
 * NULL) *auto_min_workgroups: the number of workgroups from which the library's rule takes a
 * smaller TILE_K (0: no rule, e.g. a geometry set by the caller).
 */
QMM_API qmm_status qmm_webgpu_fused_tile_k(const qmm_context *ctx, int64_t m, int64_t n, int *tile_k,
                                           int64_t *auto_min_workgroups);

/**
 * Make a caller's WGPUBuffer usable as X or Y: *out is a qmm pointer to its first byte (add
 * offsets to it as to device memory). The buffer needs Storage, CopySrc and CopyDst usage
 * and at least `bytes` bytes; qmm holds a reference until qmm_buffer_free(ctx, *out), which
 * never destroys it.
 */
QMM_API qmm_status qmm_webgpu_buffer_import(qmm_context *ctx, void *wgpu_buffer, size_t bytes,
                                            void **out);

/** The WGPUBuffer and byte offset behind a qmm pointer of a WebGPU context. */
QMM_API qmm_status qmm_webgpu_buffer_handle(qmm_context *ctx, const void *p, void **wgpu_buffer,
                                            uint64_t *offset);

#ifdef __cplusplus
}
#endif

#endif /* QMM_WEBGPU_H */
