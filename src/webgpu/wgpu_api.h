/*
 * wgpu_api.h — the wgpu-native entry points the WebGPU backend calls, loaded at run time.
 *
 * libqmm is not linked against wgpu-native: the library (libwgpu_native-release.so, which
 * has no SONAME) is opened with dlopen on the first WebGPU context (wgpu_load.c says where
 * it looks) and every function below is looked up by name. Only this list is ever called:
 * it is the known-safe subset of wgpu-native 29.0.1.1. That version exports entry points
 * that link but abort the process with "not implemented" (wgpuInstanceWaitAny,
 * wgpuShaderModuleGetCompilationInfo, wgpuDeviceCreateComputePipelineAsync,
 * wgpuBufferGetMapState, wgpuBufferReadMappedRange, wgpuBufferWriteMappedRange,
 * wgpuDeviceGetAdapterInfo, wgpuDeviceGetLostFuture, wgpuGetProcAddress,
 * wgpuGetInstanceFeatures, wgpuHasInstanceFeature, wgpuInstanceGetWGSLLanguageFeatures,
 * wgpuInstanceHasWGSLLanguageFeature and every *SetLabel): none of them is in the list, and
 * two calls of the list abort with some arguments: wgpuDevicePushErrorScope with
 * WGPUErrorFilter_Internal ("invalid error filter") and wgpuQuerySetRelease after
 * wgpuQuerySetDestroy (a double removal; so wgpuQuerySetDestroy is not in the list), and
 * adding an entry point means checking it against the version in use first (docs/WEBGPU.md
 * "Safe entry points" gives the check). The version is checked at load time
 * (QMM_WGPU_VERSION).
 *
 * Backend code calls W.<name>(...) — e.g. W.wgpuDevicePoll(dev, true, NULL) — through the
 * table qmm_wgpu, filled once by qmm_wgpu_load.
 */
#ifndef QMM_WEBGPU_WGPU_API_H
#define QMM_WEBGPU_WGPU_API_H

#include <webgpu.h>
#include <wgpu.h>

#include "core/internal.h"

/* wgpuGetVersion() of the wgpu-native this backend was written and checked against. */
#define QMM_WGPU_VERSION 0x1d000101u
/* The file name of the library (the wheel's name for it; it has no SONAME). */
#define QMM_WGPU_LIBRARY_NAME "libwgpu_native-release.so"

#define QMM_WGPU_FUNCS(X)                                                                  \
    X(wgpuGetVersion)                                                                      \
    X(wgpuCreateInstance)                                                                  \
    X(wgpuInstanceRelease)                                                                 \
    X(wgpuInstanceRequestAdapter)                                                          \
    X(wgpuInstanceProcessEvents)                                                           \
    X(wgpuAdapterGetInfo)                                                                  \
    X(wgpuAdapterInfoFreeMembers)                                                          \
    X(wgpuAdapterGetLimits)                                                                \
    X(wgpuAdapterHasFeature)                                                               \
    X(wgpuAdapterRequestDevice)                                                            \
    X(wgpuAdapterRelease)                                                                  \
    X(wgpuAdapterAddRef)                                                                   \
    X(wgpuDeviceGetQueue)                                                                  \
    X(wgpuDeviceGetLimits)                                                                 \
    X(wgpuDeviceHasFeature)                                                                \
    X(wgpuDeviceCreateBuffer)                                                              \
    X(wgpuDeviceCreateShaderModule)                                                        \
    X(wgpuDeviceCreateShaderModuleTrusted)                                                 \
    X(wgpuDeviceCreateComputePipeline)                                                     \
    X(wgpuDeviceCreateBindGroupLayout)                                                     \
    X(wgpuDeviceCreatePipelineLayout)                                                      \
    X(wgpuDeviceCreateBindGroup)                                                           \
    X(wgpuDeviceCreateCommandEncoder)                                                      \
    X(wgpuDeviceCreateQuerySet)                                                            \
    X(wgpuDevicePushErrorScope)                                                            \
    X(wgpuDevicePopErrorScope)                                                             \
    X(wgpuDevicePoll)                                                                      \
    X(wgpuDeviceAddRef)                                                                    \
    X(wgpuDeviceRelease)                                                                   \
    X(wgpuQueueSubmit)                                                                     \
    X(wgpuQueueWriteBuffer)                                                                \
    X(wgpuQueueGetTimestampPeriod)                                                         \
    X(wgpuQueueAddRef)                                                                     \
    X(wgpuQueueRelease)                                                                    \
    X(wgpuBufferMapAsync)                                                                  \
    X(wgpuBufferGetConstMappedRange)                                                       \
    X(wgpuBufferUnmap)                                                                     \
    X(wgpuBufferGetSize)                                                                   \
    X(wgpuBufferGetUsage)                                                                  \
    X(wgpuBufferAddRef)                                                                    \
    X(wgpuBufferDestroy)                                                                   \
    X(wgpuBufferRelease)                                                                   \
    X(wgpuCommandEncoderBeginComputePass)                                                  \
    X(wgpuCommandEncoderCopyBufferToBuffer)                                                \
    X(wgpuCommandEncoderResolveQuerySet)                                                   \
    X(wgpuCommandEncoderFinish)                                                            \
    X(wgpuCommandEncoderRelease)                                                           \
    X(wgpuComputePassEncoderSetPipeline)                                                   \
    X(wgpuComputePassEncoderSetBindGroup)                                                  \
    X(wgpuComputePassEncoderDispatchWorkgroups)                                            \
    X(wgpuComputePassEncoderEnd)                                                           \
    X(wgpuComputePassEncoderRelease)                                                       \
    X(wgpuCommandBufferRelease)                                                            \
    X(wgpuShaderModuleRelease)                                                             \
    X(wgpuComputePipelineRelease)                                                          \
    X(wgpuBindGroupRelease)                                                                \
    X(wgpuBindGroupLayoutRelease)                                                          \
    X(wgpuPipelineLayoutRelease)                                                           \
    X(wgpuQuerySetRelease)

typedef struct qmm_wgpu_api {
#define QMM_WGPU_MEMBER(name) __typeof__(&name) name;
    QMM_WGPU_FUNCS(QMM_WGPU_MEMBER)
#undef QMM_WGPU_MEMBER
} qmm_wgpu_api;

/* The table (valid after qmm_wgpu_load returned QMM_OK). */
extern qmm_wgpu_api qmm_wgpu;
#define W qmm_wgpu

/* Open the library and fill the table, once per process (thread-safe). QMM_ERR_UNSUPPORTED
 * naming every place looked in and why each failed when the library cannot be loaded or is
 * another version; the same answer on every later call. */
qmm_status qmm_wgpu_load(void);

/* A WGPUStringView of a NUL-terminated string. */
static inline WGPUStringView qmm_wgpu_str(const char *s) {
    WGPUStringView v = {s, WGPU_STRLEN};
    return v;
}

#endif /* QMM_WEBGPU_WGPU_API_H */
