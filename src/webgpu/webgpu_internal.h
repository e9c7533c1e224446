/*
 * webgpu_internal.h — the WebGPU backend's state (docs/WEBGPU.md is the contract).
 *
 * Files (one job each):
 *   wgpu_load.c    open wgpu-native at run time, the table of entry points (wgpu_api.h)
 *   device.c       context: instance, adapter, device and queue (or the caller's), limits,
 *                  features, the lost/uncaptured callbacks, error scopes, waiting
 *   buffers.c      X/Y buffers: the address table, alloc/free/upload/download/import
 *   shaders.c      WGSL assembly (kernel + shared snippets + type decoder) and the
 *                  pipeline cache, the shared bind group layout
 *   weights.c      weights: raw GGUF rows uploaded once as storage buffers (split by rows)
 *   grids.c        the grid i-quants' codebooks as one storage buffer per context
 *   matmul.c       resolve/describe, bind group cache, parameters, dispatch, split, submit
 *   timer.c        qmm_timer_begin/end through timestamp queries
 *   backend.c      the ops table and the public qmm_webgpu_* functions
 *   wgsl/          the kernels and snippets, embedded at build time (wgsl_sources.c)
 *
 * Memory model: a qmm pointer into a WebGPU buffer is an address inside a PROT_NONE
 * reservation of the buffer's size (so pointer arithmetic, offsets and the core's overlap
 * checks work as for device memory, and a host access faults at once); buffers.c maps it to
 * (WGPUBuffer, byte offset).
 */
#ifndef QMM_WEBGPU_INTERNAL_H
#define QMM_WEBGPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "webgpu/wgpu_api.h"

/* Kernels (one WGSL file each). */
typedef enum qmm_wgpu_kernel {
    QMM_WGPU_KERNEL_FUSED = 0, /* wgsl/fused.wgsl: register-tile GEMM */
    QMM_WGPU_KERNEL_GEMV = 1,  /* wgsl/gemv.wgsl: rows per workgroup, reduction in workgroup memory */
    QMM_WGPU_KERNEL_XSCALE = 2, /* wgsl/xscale.wgsl: the X row shifts, before fused */
    QMM_WGPU_KERNEL_COUNT = 3
} qmm_wgpu_kernel;

/* Thread tile of the fused kernel (hand-unrolled into four named vec4 accumulators). */
#define QMM_WGPU_TILE_M 4
#define QMM_WGPU_TILE_N 4
/* Default geometry of the fused kernel: 16 x 16 threads, 64 x 64 outputs, k-steps of 32. */
#define QMM_WGPU_DEFAULT_WG_M 16
#define QMM_WGPU_DEFAULT_WG_N 16
#define QMM_WGPU_DEFAULT_TILE_K 32
/* gemv: rows per workgroup, threads per row, tokens per workgroup (one vec4 accumulator). */
#define QMM_WGPU_GEMV_ROWS 4
#define QMM_WGPU_GEMV_LANES 64
#define QMM_WGPU_GEMV_TOKENS 4
/* auto: gemv up to this many tokens, fused above. */
#define QMM_WGPU_AUTO_GEMV_MAX_N 8

/* Parameter slots (uniform buffer, dynamic offsets) per submit; a call with more dispatches
 * submits in batches. */
#define QMM_WGPU_PARAM_SLOTS 64
#define QMM_WGPU_PARAM_STRIDE 256
/* Bind groups cached per context (least recently used replaced). */
#define QMM_WGPU_BIND_CACHE 256
/* Pipelines cached per context. */
#define QMM_WGPU_PIPELINES 128
/* Compute passes one timed region may hold (two timestamps each). */
#define QMM_WGPU_TIMED_PASSES 512
/* Host staging for downloads, reused; larger downloads go through it in pieces. */
#define QMM_WGPU_STAGING_MAX ((uint64_t)64 << 20)
/* Bytes of zero padding after every weights buffer: the second word of a read at a block's
 * last bytes, and the 8-element reads of a float type whose last row ends inside them. */
#define QMM_WGPU_W_PAD 32

/* Bindings of the one layout: W, X, Y, P, G, S (X row shifts), R (W row shifts). */
#define QMM_WGPU_BINDINGS 7
/* X row shifts: the buffer's initial capacity in tokens (it grows to the largest dispatch). */
#define QMM_WGPU_XSHIFT_MIN_TOKENS 1024

/* The parameter block of every kernel (wgsl/common.wgsl struct Params), 4-byte fields. */
typedef struct qmm_wgpu_params {
    uint32_t rows;      /* W rows of this dispatch */
    uint32_t k;
    uint32_t n;         /* tokens of this dispatch */
    uint32_t row_words; /* u32 words between W rows */
    uint32_t ldx, ldy;  /* elements */
    uint32_t x_off;     /* element of the X binding where token 0 of this dispatch starts */
    uint32_t y_off;     /* element of the Y binding where token 0, column 0 of this dispatch is */
    uint32_t w_row0;    /* first row of this dispatch within the W binding */
    uint32_t r_off;     /* index in the weights' row shifts (binding 6) of row 0 of this dispatch */
    uint32_t pad[2];
} qmm_wgpu_params;

/* One X/Y buffer of the address table. */
typedef struct qmm_wgpu_buffer {
    uintptr_t base;     /* the reservation's address: what qmm_buffer_alloc returned */
    size_t bytes;       /* the caller's size */
    size_t reserved;    /* length of the reservation */
    WGPUBuffer buf;
    uint64_t buf_bytes; /* the WebGPU buffer's size */
    bool imported;      /* the caller's buffer (qmm_webgpu_buffer_import): never destroyed */
} qmm_wgpu_buffer;

typedef struct qmm_wgpu_pipeline {
    int kernel, type, wg_m, wg_n, tile_k;
    bool candidate;     /* made from a caller's source (never found by the cache lookup) */
    WGPUComputePipeline pipeline;
} qmm_wgpu_pipeline;

typedef struct qmm_wgpu_bind {
    WGPUBuffer w, x, y;
    uint64_t xo, xs, yo, ys; /* binding windows (offset, size) of X and Y */
    WGPUBindGroup group;     /* NULL: free slot */
    uint64_t used;
} qmm_wgpu_bind;

/* Dispatches of one submit being gathered (matmul.c). */
typedef struct qmm_wgpu_pending {
    qmm_wgpu_params p[QMM_WGPU_PARAM_SLOTS];
    WGPUComputePipeline pl[QMM_WGPU_PARAM_SLOTS];
    WGPUBindGroup g[QMM_WGPU_PARAM_SLOTS];
    uint32_t gx[QMM_WGPU_PARAM_SLOTS], gy[QMM_WGPU_PARAM_SLOTS];
    int count;
    uint8_t slots[QMM_WGPU_PARAM_SLOTS * QMM_WGPU_PARAM_STRIDE]; /* the uniform buffer's image */
} qmm_wgpu_pending;

typedef struct qmm_wgpu_context {
    WGPUInstance instance; /* NULL with a caller's device */
    WGPUAdapter adapter;   /* NULL with a caller's device */
    WGPUDevice device;
    WGPUQueue queue;
    bool own_device;
    WGPULimits limits;
    bool has_f16, has_timestamp;
    bool shader_checks;    /* qmm_context_params.webgpu_shader_checks (shaders.c) */
    /* what the adapter offers beyond that (not enabled on the device; a caller's device: false, 0) */
    bool adapter_subgroups, adapter_coop;
    uint32_t subgroup_min, subgroup_max;
    /* the adapter as wgpuAdapterGetInfo reports it (a caller's device: unknown) */
    char adapter_name[256], driver[256], vendor[128], architecture[128];
    WGPUBackendType backend_type;
    WGPUAdapterType adapter_type;
    uint32_t vendor_id, device_id;
    /* set by the device callbacks (own device) */
    bool lost;
    char lost_msg[512];
    bool uncaptured;
    char uncaptured_msg[768];

    WGPUBindGroupLayout bgl;
    WGPUPipelineLayout layout;
    WGPUBuffer params;     /* QMM_WGPU_PARAM_SLOTS x QMM_WGPU_PARAM_STRIDE, uniform */
    WGPUBuffer grids;      /* the grid i-quants' tables (grids.c), storage binding 4 */
    WGPUBuffer xshift;     /* the X row shifts of a dispatch (xscale.wgsl), storage binding 5 */
    uint64_t xshift_tokens; /* its capacity in tokens */
    WGPUComputePipeline xscale; /* the xscale.wgsl pipeline (made at first use) */

    qmm_wgpu_buffer *bufs;
    size_t nbufs, cap_bufs;

    qmm_wgpu_pipeline pipes[QMM_WGPU_PIPELINES];
    int npipes;
    qmm_wgpu_bind binds[QMM_WGPU_BIND_CACHE];
    uint64_t clock;
    qmm_wgpu_pending pend;

    WGPUBuffer staging;    /* MapRead | CopyDst */
    uint64_t staging_bytes;

    /* timer (timer.c) */
    WGPUQuerySet queries;
    WGPUBuffer query_resolve;
    bool timing;
    uint32_t timed_passes;
    bool timed_overflow;

    int wg_m, wg_n, tile_k; /* fused geometry */
    bool geometry_auto;     /* not set by the caller: auto_table.c's rule may change TILE_K per call */
} qmm_wgpu_context;

/* One storage buffer of a weights object: rows [row0, row0 + rows). */
typedef struct qmm_wgpu_chunk {
    WGPUBuffer buf;
    int64_t row0, rows;
    uint64_t bytes;
} qmm_wgpu_chunk;

typedef struct qmm_wgpu_weights {
    uint32_t row_words;      /* row stride in u32 words: ceil(row_bytes / 4) */
    WGPUBuffer rshift;       /* per row the power-of-two shift it was uploaded with (i32;
                                storage binding 6; weights.c) */
    uint64_t rshift_bytes;
    int64_t scaled_rows;     /* rows whose shift is not 0 */
    int nchunks;
    qmm_wgpu_chunk *chunks;
} qmm_wgpu_weights;

/* weights.c: qmm_weights_memory's backend part */
void qmm_wgpu_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out);

static inline qmm_wgpu_context *qmm_wgpu_ctx(const qmm_context *ctx) {
    return (qmm_wgpu_context *)ctx->backend;
}

/* device.c */
qmm_status qmm_wgpu_context_init(qmm_context *ctx);
void qmm_wgpu_context_release(qmm_context *ctx);
/* QMM_ERR_BACKEND if the device was lost or an uncaptured error was reported. */
qmm_status qmm_wgpu_check_device(qmm_wgpu_context *c, const char *what);
/* Error scopes (validation, out-of-memory) around device calls: push, then pop
 * and turn the first error into a status naming `what` (OOM: QMM_ERR_OUT_OF_MEMORY, else
 * QMM_ERR_BACKEND). With `full` non-NULL the whole message is also returned there
 * (malloc'ed; the caller frees it). */
void qmm_wgpu_scope_push(qmm_wgpu_context *c);
qmm_status qmm_wgpu_scope_pop(qmm_wgpu_context *c, const char *what, char **full);
/* Wait until *flag is set by a callback (polling the device; processing instance events). */
qmm_status qmm_wgpu_wait(qmm_wgpu_context *c, volatile int *flag, const char *what);
/* Wait until the queue is idle. */
qmm_status qmm_wgpu_sync(qmm_wgpu_context *c);
/* Finish `enc` and submit it; the command buffer is submitted only if finish succeeded
 * (a failed one would abort in wgpuQueueSubmit). Releases the encoder. */
qmm_status qmm_wgpu_submit(qmm_wgpu_context *c, WGPUCommandEncoder enc, const char *what);
/* A buffer of `bytes` with `usage`, inside error scopes. */
qmm_status qmm_wgpu_buffer_create(qmm_wgpu_context *c, uint64_t bytes, WGPUBufferUsage usage,
                                  const char *what, WGPUBuffer *out);
const char *qmm_wgpu_backend_type_name(WGPUBackendType t);
const char *qmm_wgpu_adapter_type_name(WGPUAdapterType t);

/* buffers.c */
qmm_status qmm_wgpu_buffer_alloc(qmm_context *ctx, size_t bytes, void **out);
void qmm_wgpu_buffer_free(qmm_context *ctx, void *p);
qmm_status qmm_wgpu_upload(qmm_context *ctx, void *dst, const void *src, size_t bytes);
qmm_status qmm_wgpu_download(qmm_context *ctx, void *dst, const void *src, size_t bytes);
/* The buffer holding [p, p + bytes) and p's byte offset in it; INVALID_ARGUMENT naming
 * `name` when p is not inside one buffer of this context. */
qmm_status qmm_wgpu_lookup(qmm_wgpu_context *c, const void *p, size_t bytes, const char *name,
                           const qmm_wgpu_buffer **buf, uint64_t *offset);
/* Write `bytes` from host memory at byte `offset` of a WebGPU buffer (any alignment). */
qmm_status qmm_wgpu_write(qmm_wgpu_context *c, WGPUBuffer b, uint64_t offset, const void *src,
                          uint64_t bytes);
/* Read `bytes` at byte `offset` of a WebGPU buffer (CopySrc) into host memory. */
qmm_status qmm_wgpu_read(qmm_wgpu_context *c, WGPUBuffer b, uint64_t offset, void *dst,
                         uint64_t bytes);
void qmm_wgpu_buffers_release(qmm_wgpu_context *c);

/* shaders.c */
qmm_status qmm_wgpu_layout_init(qmm_wgpu_context *c);
/* The production pipeline of (kernel, type, geometry), compiled on first use. */
qmm_status qmm_wgpu_pipeline_get(qmm_wgpu_context *c, qmm_wgpu_kernel kernel, qmm_type type,
                                 int wg_m, int wg_n, int tile_k, WGPUComputePipeline *out);
/* The WGSL source of (kernel source text, type, geometry): malloc'ed. */
char *qmm_wgpu_source(const char *kernel_text, qmm_wgpu_kernel kernel, qmm_type type, int wg_m,
                      int wg_n, int tile_k);
/* Compile a source into a pipeline with the shared layout; on error the whole message in
 * *log (malloc'ed, may be NULL on success). */
qmm_status qmm_wgpu_compile(qmm_wgpu_context *c, const char *source, const char *what,
                            WGPUComputePipeline *out, char **log);
/* The xscale.wgsl pipeline, compiled on first use. */
qmm_status qmm_wgpu_xscale_pipeline(qmm_wgpu_context *c, WGPUComputePipeline *out);
/* True if this backend has a WGSL decoder for `type`. */
bool qmm_wgpu_has_type(qmm_type type);
/* The production kernel file's text. */
const char *qmm_wgpu_kernel_text(qmm_wgpu_kernel kernel);
void qmm_wgpu_pipelines_release(qmm_wgpu_context *c);
/* Geometry checks against the kernel and the device's limits (message naming the values). */
qmm_status qmm_wgpu_check_geometry(const qmm_wgpu_context *c, int wg_m, int wg_n, int tile_k);
/* The TILE_K of a fused call on m x n outputs under the context's geometry when it is left to
 * the library (auto_table.c); *min_workgroups (if not NULL): the rule's threshold, 0 if no rule
 * applies to this geometry. */
int qmm_wgpu_auto_tile_k(const qmm_wgpu_context *c, int64_t m, int64_t n, int64_t *min_workgroups);

/* grids.c */
qmm_status qmm_wgpu_grids_init(qmm_wgpu_context *c);

/* weights.c */
qmm_status qmm_wgpu_weights_init(qmm_context *ctx, qmm_weights *w, const void *data,
                                 size_t row_stride);
void qmm_wgpu_weights_release(qmm_weights *w);

/* matmul.c */
qmm_status qmm_wgpu_resolve(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                            qmm_strategy requested, qmm_strategy *out);
qmm_status qmm_wgpu_describe(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                             qmm_strategy resolved, const char **kernel, qmm_precision *precision);
qmm_status qmm_wgpu_matmul(qmm_context *ctx, const qmm_weights *w, qmm_strategy s, int64_t n,
                           const float *x, int64_t ldx, float *y, int64_t ldy);
/* The X row shift buffer holds at least `tokens` (grown, dropping the cached bind groups). */
qmm_status qmm_wgpu_xshift_reserve(qmm_wgpu_context *c, uint64_t tokens);
/* Run `pipeline` with the dispatch of `kernel` (geometry wg_m, wg_n for fused). */
qmm_status qmm_wgpu_run(qmm_context *ctx, const qmm_weights *w, qmm_wgpu_kernel kernel,
                        WGPUComputePipeline pipeline, int wg_m, int wg_n, int64_t n,
                        const float *x, int64_t ldx, float *y, int64_t ldy);
/* Forget cached bind groups that use buffer b. */
void qmm_wgpu_binds_forget(qmm_wgpu_context *c, WGPUBuffer b);
void qmm_wgpu_binds_release(qmm_wgpu_context *c);

/* timer.c */
qmm_status qmm_wgpu_timer_begin(qmm_context *ctx);
qmm_status qmm_wgpu_timer_end(qmm_context *ctx, double *ms);
/* The timestamp writes for the next compute pass of a timed region, or NULL. */
const WGPUPassTimestampWrites *qmm_wgpu_timer_pass(qmm_wgpu_context *c, WGPUPassTimestampWrites *tw);
void qmm_wgpu_timer_release(qmm_wgpu_context *c);

/* wgsl_sources.c (generated by cmake/embed_wgsl.cmake from src/webgpu/wgsl) */
typedef struct qmm_wgsl_file {
    const char *name; /* path under src/webgpu/wgsl, e.g. "fused.wgsl", "types/q4_0.wgsl" */
    const char *text;
} qmm_wgsl_file;
extern const qmm_wgsl_file qmm_wgsl_files[];
extern const int qmm_wgsl_file_count;
const char *qmm_wgsl_find(const char *name);

#endif /* QMM_WEBGPU_INTERNAL_H */
