/*
 * device.c — the WebGPU context: instance, adapter, device and queue (or the caller's device
 * and queue), limits and features, the device callbacks, error scopes and waiting.
 *
 * Rules (docs/WEBGPU.md "Errors"): every device call that can fail runs inside error scopes
 * (validation, out-of-memory) that are popped and checked; a command buffer is
 * submitted only when its encoder finished without error; the own device has an
 * uncaptured-error callback (without one, wgpu-native aborts on any error outside a scope)
 * and a device-lost callback, whose reports turn every later call into QMM_ERR_BACKEND.
 * The instance enables only the platform's native API (Vulkan on Linux): wgpu-native would
 * otherwise fall back to OpenGL silently when no Vulkan driver is installed.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

#if defined(__APPLE__)
#define QMM_WGPU_BACKENDS WGPUInstanceBackend_Metal
#define QMM_WGPU_BACKENDS_NAME "Metal"
#elif defined(_WIN32)
#define QMM_WGPU_BACKENDS (WGPUInstanceBackend_DX12 | WGPUInstanceBackend_Vulkan)
#define QMM_WGPU_BACKENDS_NAME "D3D12 or Vulkan"
#else
#define QMM_WGPU_BACKENDS WGPUInstanceBackend_Vulkan
#define QMM_WGPU_BACKENDS_NAME "Vulkan"
#endif

static void copy_view(char *dst, size_t len, WGPUStringView v) {
    size_t n = v.data == NULL ? 0 : v.length == WGPU_STRLEN ? strlen(v.data) : v.length;
    if (n >= len) n = len - 1;
    if (n > 0) memcpy(dst, v.data, n);
    dst[n] = '\0';
}

const char *qmm_wgpu_backend_type_name(WGPUBackendType t) {
    switch (t) {
    case WGPUBackendType_Null: return "Null";
    case WGPUBackendType_WebGPU: return "WebGPU";
    case WGPUBackendType_D3D11: return "D3D11";
    case WGPUBackendType_D3D12: return "D3D12";
    case WGPUBackendType_Metal: return "Metal";
    case WGPUBackendType_Vulkan: return "Vulkan";
    case WGPUBackendType_OpenGL: return "OpenGL";
    case WGPUBackendType_OpenGLES: return "OpenGLES";
    default: return "unknown";
    }
}

const char *qmm_wgpu_adapter_type_name(WGPUAdapterType t) {
    switch (t) {
    case WGPUAdapterType_DiscreteGPU: return "DiscreteGPU";
    case WGPUAdapterType_IntegratedGPU: return "IntegratedGPU";
    case WGPUAdapterType_CPU: return "CPU";
    default: return "unknown";
    }
}

/* ---------------------------------------------------------------------------------------
 * Callbacks
 * ------------------------------------------------------------------------------------- */

static void on_uncaptured(WGPUDevice const *device, WGPUErrorType type, WGPUStringView message,
                          void *u1, void *u2) {
    (void)device;
    (void)type;
    (void)u2;
    qmm_wgpu_context *c = u1;
    if (c == NULL || c->uncaptured) return; /* the first one is reported */
    copy_view(c->uncaptured_msg, sizeof c->uncaptured_msg, message);
    c->uncaptured = true;
}

static void on_lost(WGPUDevice const *device, WGPUDeviceLostReason reason, WGPUStringView message,
                    void *u1, void *u2) {
    (void)device;
    (void)u2;
    qmm_wgpu_context *c = u1;
    /* Destroyed: our own release (or the process ending); not a failure of a call. */
    if (c == NULL || reason == WGPUDeviceLostReason_Destroyed ||
        reason == WGPUDeviceLostReason_CallbackCancelled)
        return;
    copy_view(c->lost_msg, sizeof c->lost_msg, message);
    c->lost = true;
}

typedef struct req_result {
    volatile int done;
    int status;
    void *handle;
    char msg[512];
} req_result;

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *u1, void *u2) {
    (void)u2;
    req_result *r = u1;
    r->status = (int)status;
    r->handle = adapter;
    copy_view(r->msg, sizeof r->msg, message);
    r->done = 1;
}

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,
                      void *u1, void *u2) {
    (void)u2;
    req_result *r = u1;
    r->status = (int)status;
    r->handle = device;
    copy_view(r->msg, sizeof r->msg, message);
    r->done = 1;
}

/* ---------------------------------------------------------------------------------------
 * Waiting, error scopes, submission
 * ------------------------------------------------------------------------------------- */

qmm_status qmm_wgpu_check_device(qmm_wgpu_context *c, const char *what) {
    if (c->lost)
        return qmm_error(QMM_ERR_BACKEND, "WebGPU: %s: the device was lost: %s", what, c->lost_msg);
    if (c->uncaptured)
        return qmm_error(QMM_ERR_BACKEND, "WebGPU: %s: the device reported an error outside "
                         "qmm's error scopes earlier: %s", what, c->uncaptured_msg);
    return QMM_OK;
}

/* Spins on the device (and the instance's events) until *flag is set. A lost device fires
 * every pending callback, so the loop ends. */
qmm_status qmm_wgpu_wait(qmm_wgpu_context *c, volatile int *flag, const char *what) {
    for (long spins = 0; !*flag; spins++) {
        if (c->instance) W.wgpuInstanceProcessEvents(c->instance);
        if (*flag) break;
        W.wgpuDevicePoll(c->device, spins > 0, NULL);
        if (c->lost && spins > 1000)
            return qmm_error(QMM_ERR_BACKEND, "WebGPU: %s: the device was lost: %s", what, c->lost_msg);
        if (spins > 16) sched_yield();
    }
    return QMM_OK;
}

qmm_status qmm_wgpu_sync(qmm_wgpu_context *c) {
    W.wgpuDevicePoll(c->device, 1, NULL);
    return qmm_wgpu_check_device(c, "waiting for the queue");
}

typedef struct scope_result {
    volatile int done;
    WGPUErrorType type;
    char *msg; /* malloc'ed when there is one */
} scope_result;

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message,
                   void *u1, void *u2) {
    (void)u2;
    scope_result *r = u1;
    r->type = status == WGPUPopErrorScopeStatus_Success ? type : WGPUErrorType_Unknown;
    if (r->type != WGPUErrorType_NoError) {
        const size_t n = message.data == NULL ? 0
                         : message.length == WGPU_STRLEN ? strlen(message.data) : message.length;
        r->msg = malloc(n + 1);
        if (r->msg != NULL) {
            if (n) memcpy(r->msg, message.data, n);
            r->msg[n] = '\0';
        }
    }
    r->done = 1;
}

/* Two scopes: wgpu-native 29 aborts ("invalid error filter") on WGPUErrorFilter_Internal;
 * internal errors reach the uncaptured-error callback (own device) instead. */
void qmm_wgpu_scope_push(qmm_wgpu_context *c) {
    W.wgpuDevicePushErrorScope(c->device, WGPUErrorFilter_OutOfMemory);
    W.wgpuDevicePushErrorScope(c->device, WGPUErrorFilter_Validation);
}

static const char *error_type_name(WGPUErrorType t) {
    switch (t) {
    case WGPUErrorType_Validation: return "validation error";
    case WGPUErrorType_OutOfMemory: return "out of memory";
    case WGPUErrorType_Internal: return "internal error";
    default: return "error";
    }
}

/* The message with its newlines and runs of spaces folded into single spaces (one line for
 * qmm_last_error); the full text goes to *full. */
static void fold(char *dst, size_t len, const char *src) {
    size_t o = 0;
    bool space = false;
    for (const char *p = src; *p && o + 1 < len; p++) {
        const bool ws = *p == '\n' || *p == ' ' || *p == '\t' || *p == '\r';
        if (ws) {
            space = o > 0;
            continue;
        }
        if (space && o + 2 < len) dst[o++] = ' ';
        space = false;
        dst[o++] = *p;
    }
    dst[o] = '\0';
}

qmm_status qmm_wgpu_scope_pop(qmm_wgpu_context *c, const char *what, char **full) {
    scope_result r[2];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 2; i++) {
        WGPUPopErrorScopeCallbackInfo info;
        memset(&info, 0, sizeof info);
        info.mode = WGPUCallbackMode_AllowSpontaneous;
        info.callback = on_pop;
        info.userdata1 = &r[i];
        W.wgpuDevicePopErrorScope(c->device, info);
    }
    qmm_status st = QMM_OK;
    for (int i = 0; i < 2; i++) {
        qmm_status ws = qmm_wgpu_wait(c, &r[i].done, what);
        if (ws != QMM_OK && st == QMM_OK) st = ws;
    }
    for (int i = 0; i < 2 && st == QMM_OK; i++) {
        if (r[i].type == WGPUErrorType_NoError) continue;
        char one[900];
        fold(one, sizeof one, r[i].msg ? r[i].msg : "(no message)");
        st = qmm_error(r[i].type == WGPUErrorType_OutOfMemory ? QMM_ERR_OUT_OF_MEMORY : QMM_ERR_BACKEND,
                       "WebGPU: %s: %s: %s", what, error_type_name(r[i].type), one);
        if (full != NULL) {
            *full = r[i].msg;
            r[i].msg = NULL;
        }
    }
    for (int i = 0; i < 2; i++) free(r[i].msg);
    if (st == QMM_OK) st = qmm_wgpu_check_device(c, what);
    return st;
}

qmm_status qmm_wgpu_submit(qmm_wgpu_context *c, WGPUCommandEncoder enc, const char *what) {
    qmm_wgpu_scope_push(c);
    WGPUCommandBuffer cb = W.wgpuCommandEncoderFinish(enc, NULL);
    W.wgpuCommandEncoderRelease(enc);
    qmm_status st = qmm_wgpu_scope_pop(c, what, NULL);
    if (st == QMM_OK) {
        qmm_wgpu_scope_push(c);
        W.wgpuQueueSubmit(c->queue, 1, &cb);
        st = qmm_wgpu_scope_pop(c, what, NULL);
    }
    if (cb) W.wgpuCommandBufferRelease(cb);
    return st;
}

qmm_status qmm_wgpu_buffer_create(qmm_wgpu_context *c, uint64_t bytes, WGPUBufferUsage usage,
                                  const char *what, WGPUBuffer *out) {
    if (bytes > c->limits.maxBufferSize)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU: %s: %llu bytes exceed the device's "
                         "maxBufferSize (%llu)", what, (unsigned long long)bytes,
                         (unsigned long long)c->limits.maxBufferSize);
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.size = bytes;
    d.usage = usage;
    qmm_wgpu_scope_push(c);
    WGPUBuffer b = W.wgpuDeviceCreateBuffer(c->device, &d);
    qmm_status st = qmm_wgpu_scope_pop(c, what, NULL);
    if (st != QMM_OK) {
        if (b) W.wgpuBufferRelease(b);
        return st;
    }
    if (b == NULL) return qmm_error(QMM_ERR_BACKEND, "WebGPU: %s: wgpuDeviceCreateBuffer returned NULL", what);
    *out = b;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------------------- */

static qmm_status own_device(qmm_wgpu_context *c) {
    WGPUInstanceExtras ex;
    memset(&ex, 0, sizeof ex);
    ex.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
    ex.backends = QMM_WGPU_BACKENDS;
    WGPUInstanceDescriptor idesc;
    memset(&idesc, 0, sizeof idesc);
    idesc.nextInChain = &ex.chain;
    c->instance = W.wgpuCreateInstance(&idesc);
    if (c->instance == NULL)
        return qmm_error(QMM_ERR_BACKEND, "WebGPU: wgpuCreateInstance failed");

    req_result ar;
    memset(&ar, 0, sizeof ar);
    WGPURequestAdapterOptions ao;
    memset(&ao, 0, sizeof ao);
    ao.powerPreference = WGPUPowerPreference_HighPerformance;
    WGPURequestAdapterCallbackInfo aci;
    memset(&aci, 0, sizeof aci);
    aci.mode = WGPUCallbackMode_AllowSpontaneous;
    aci.callback = on_adapter;
    aci.userdata1 = &ar;
    W.wgpuInstanceRequestAdapter(c->instance, &ao, aci);
    while (!ar.done) W.wgpuInstanceProcessEvents(c->instance);
    if (ar.status != WGPURequestAdapterStatus_Success || ar.handle == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "WebGPU backend: no %s adapter found (%s); on Linux "
                         "install a Vulkan driver (e.g. mesa-vulkan-drivers for lavapipe, or the "
                         "GPU vendor's) and libvulkan1", QMM_WGPU_BACKENDS_NAME,
                         ar.msg[0] ? ar.msg : "no message");
    c->adapter = ar.handle;

    WGPUAdapterInfo info;
    memset(&info, 0, sizeof info);
    if (W.wgpuAdapterGetInfo(c->adapter, &info) == WGPUStatus_Success) {
        copy_view(c->adapter_name, sizeof c->adapter_name, info.device);
        copy_view(c->driver, sizeof c->driver, info.description);
        copy_view(c->vendor, sizeof c->vendor, info.vendor);
        copy_view(c->architecture, sizeof c->architecture, info.architecture);
        c->backend_type = info.backendType;
        c->adapter_type = info.adapterType;
        c->vendor_id = info.vendorID;
        c->device_id = info.deviceID;
        c->subgroup_min = info.subgroupMinSize;
        c->subgroup_max = info.subgroupMaxSize;
        W.wgpuAdapterInfoFreeMembers(info);
    }
    WGPULimits lim;
    memset(&lim, 0, sizeof lim);
    if (W.wgpuAdapterGetLimits(c->adapter, &lim) != WGPUStatus_Success)
        return qmm_error(QMM_ERR_BACKEND, "WebGPU: wgpuAdapterGetLimits failed");

    WGPUFeatureName feats[2];
    size_t nf = 0;
    if (W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_TimestampQuery))
        feats[nf++] = WGPUFeatureName_TimestampQuery;
    if (W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_ShaderF16))
        feats[nf++] = WGPUFeatureName_ShaderF16;
    /* Offered, not requested: wgpu's cooperative matrices are an experimental feature, and
     * wgpu-native 29.0.1.1 has no way to opt in to those (requesting it fails the device:
     * "experimental features are not enabled"; docs/WEBGPU.md) */
    c->adapter_coop = W.wgpuAdapterHasFeature(c->adapter, (WGPUFeatureName)WGPUNativeFeature_CooperativeMatrix);
    c->adapter_subgroups = W.wgpuAdapterHasFeature(c->adapter, WGPUFeatureName_Subgroups);
    WGPUDeviceDescriptor dd;
    memset(&dd, 0, sizeof dd);
    dd.requiredFeatureCount = nf;
    dd.requiredFeatures = feats;
    dd.requiredLimits = &lim; /* everything the adapter offers (storage binding size, ...) */
    dd.uncapturedErrorCallbackInfo.callback = on_uncaptured;
    dd.uncapturedErrorCallbackInfo.userdata1 = c;
    dd.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
    dd.deviceLostCallbackInfo.callback = on_lost;
    dd.deviceLostCallbackInfo.userdata1 = c;
    req_result dr;
    memset(&dr, 0, sizeof dr);
    WGPURequestDeviceCallbackInfo dci;
    memset(&dci, 0, sizeof dci);
    dci.mode = WGPUCallbackMode_AllowSpontaneous;
    dci.callback = on_device;
    dci.userdata1 = &dr;
    W.wgpuAdapterRequestDevice(c->adapter, &dd, dci);
    while (!dr.done) W.wgpuInstanceProcessEvents(c->instance);
    if (dr.status != WGPURequestDeviceStatus_Success || dr.handle == NULL)
        return qmm_error(QMM_ERR_BACKEND, "WebGPU: requesting a device of adapter '%s' failed: %s",
                         c->adapter_name, dr.msg[0] ? dr.msg : "no message");
    c->device = dr.handle;
    c->queue = W.wgpuDeviceGetQueue(c->device);
    c->own_device = true;
    return QMM_OK;
}

static qmm_status caller_device(qmm_context *ctx, qmm_wgpu_context *c) {
    if (ctx->params.webgpu_queue == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_context_create: webgpu_device is given "
                         "but webgpu_queue is NULL (give the device's queue too)");
    c->device = (WGPUDevice)ctx->params.webgpu_device;
    c->queue = (WGPUQueue)ctx->params.webgpu_queue;
    W.wgpuDeviceAddRef(c->device);
    W.wgpuQueueAddRef(c->queue);
    snprintf(c->adapter_name, sizeof c->adapter_name, "the caller's WGPUDevice");
    c->backend_type = WGPUBackendType_Undefined;
    c->adapter_type = WGPUAdapterType_Unknown;
    return QMM_OK;
}

static void release(qmm_wgpu_context *c) {
    if (c == NULL) return;
    if (c->device) W.wgpuDevicePoll(c->device, 1, NULL);
    qmm_wgpu_timer_release(c);
    qmm_wgpu_binds_release(c);
    qmm_wgpu_pipelines_release(c);
    qmm_wgpu_buffers_release(c);
    if (c->staging) {
        W.wgpuBufferDestroy(c->staging);
        W.wgpuBufferRelease(c->staging);
    }
    if (c->params) {
        W.wgpuBufferDestroy(c->params);
        W.wgpuBufferRelease(c->params);
    }
    if (c->grids) {
        W.wgpuBufferDestroy(c->grids);
        W.wgpuBufferRelease(c->grids);
    }
    if (c->xshift) {
        W.wgpuBufferDestroy(c->xshift);
        W.wgpuBufferRelease(c->xshift);
    }
    if (c->layout) W.wgpuPipelineLayoutRelease(c->layout);
    if (c->bgl) W.wgpuBindGroupLayoutRelease(c->bgl);
    if (c->queue) W.wgpuQueueRelease(c->queue);
    if (c->device) W.wgpuDeviceRelease(c->device);
    if (c->adapter) W.wgpuAdapterRelease(c->adapter);
    if (c->instance) W.wgpuInstanceRelease(c->instance);
    free(c->bufs);
    free(c);
}

qmm_status qmm_wgpu_context_init(qmm_context *ctx) {
    qmm_status st = qmm_wgpu_load();
    if (st != QMM_OK) return st;
    qmm_wgpu_context *c = calloc(1, sizeof *c);
    if (c == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU backend: out of host memory");
    st = ctx->params.webgpu_device != NULL ? caller_device(ctx, c) : own_device(c);
    if (st == QMM_OK) {
        memset(&c->limits, 0, sizeof c->limits);
        if (W.wgpuDeviceGetLimits(c->device, &c->limits) != WGPUStatus_Success)
            st = qmm_error(QMM_ERR_BACKEND, "WebGPU: wgpuDeviceGetLimits failed");
    }
    if (st == QMM_OK) {
        c->has_timestamp = W.wgpuDeviceHasFeature(c->device, WGPUFeatureName_TimestampQuery);
        c->has_f16 = W.wgpuDeviceHasFeature(c->device, WGPUFeatureName_ShaderF16);
        c->shader_checks = ctx->params.webgpu_shader_checks;
        c->wg_m = QMM_WGPU_DEFAULT_WG_M;
        c->wg_n = QMM_WGPU_DEFAULT_WG_N;
        c->tile_k = QMM_WGPU_DEFAULT_TILE_K;
        c->geometry_auto = true;
        st = qmm_wgpu_check_geometry(c, c->wg_m, c->wg_n, c->tile_k);
        if (st != QMM_OK)
            st = qmm_error(QMM_ERR_UNSUPPORTED, "WebGPU backend: the device's limits do not allow "
                           "the default fused geometry: %s", qmm_last_error());
    }
    if (st == QMM_OK) st = qmm_wgpu_layout_init(c);
    if (st == QMM_OK)
        st = qmm_wgpu_buffer_create(c, (uint64_t)QMM_WGPU_PARAM_SLOTS * QMM_WGPU_PARAM_STRIDE,
                                    WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst,
                                    "creating the parameter buffer", &c->params);
    if (st == QMM_OK) st = qmm_wgpu_grids_init(c);
    if (st == QMM_OK) st = qmm_wgpu_xshift_reserve(c, QMM_WGPU_XSHIFT_MIN_TOKENS);
    if (st != QMM_OK) {
        release(c);
        return st;
    }
    if (ctx->params.n_threads == 0) ctx->params.n_threads = 1; /* no host worker threads */
    ctx->backend = c;
    return QMM_OK;
}

void qmm_wgpu_context_release(qmm_context *ctx) {
    release(qmm_wgpu_ctx(ctx));
    ctx->backend = NULL;
}
