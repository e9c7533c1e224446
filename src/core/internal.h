/*
 * internal.h — what the library's parts share and users never see: error raising,
 * logging, the context and weights structs, and the backend interface.
 */
#ifndef QMM_CORE_INTERNAL_H
#define QMM_CORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

#if defined(__GNUC__)
#  define QMM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#  define QMM_PRINTF(a, b)
#endif

/* Record `status` and a printf-style sentence as the calling thread's last error; returns
 * `status` so callers write `return qmm_error(QMM_ERR_..., "...", ...)`. */
qmm_status qmm_error(qmm_status status, const char *fmt, ...) QMM_PRINTF(2, 3);

/* Log levels: 0 off (default), 1 info, 2 debug; from QMM_LOG=info|debug, read once. */
int qmm_log_level(void);
/* Print to stderr when QMM_LOG is at least `level`. The only place the library prints. */
void qmm_log(int level, const char *fmt, ...) QMM_PRINTF(2, 3);

/* Checked size arithmetic: false on overflow (result untouched). */
static inline bool qmm_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}
static inline bool qmm_add_size(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}

typedef struct qmm_backend_ops qmm_backend_ops;

struct qmm_context {
    qmm_context_params params;  /* resolved: n_threads >= 1, strategy after QMM_STRATEGY */
    const qmm_backend_ops *ops; /* the backend's functions */
    void *backend;              /* backend-owned state (streams, handles, workspaces) */
    char *tune_file;            /* the context's copy of params.tune_file (params points here) */
    qmm_tuning_info tuning;     /* the tuning file in use, set by the backend's context_init
                                 * through qmm_tuning_load (core/tuning.h) */
};

struct qmm_weights {
    qmm_context *ctx;
    qmm_type type;
    int64_t m, k;
    size_t row_bytes;           /* packed bytes of one row */
    void *backend;              /* backend-owned copy of the weights (host or device) */
};

/*
 * The backend interface. The core validates every argument (NULLs, shapes, strides, type,
 * strategy availability through resolve) before calling in; backends may assume valid input.
 */
struct qmm_backend_ops {
    const char *name;
    qmm_status (*context_init)(qmm_context *ctx);
    void (*context_release)(qmm_context *ctx);
    /* Copy m rows (row i at data + i*row_stride, host memory) into w->backend. */
    qmm_status (*weights_init)(qmm_context *ctx, qmm_weights *w, const void *data,
                               size_t row_stride);
    void (*weights_release)(qmm_weights *w);
    /* The strategy that would run (AUTO resolved); QMM_ERR_UNSUPPORTED if `requested` cannot. */
    qmm_status (*resolve)(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                          qmm_strategy requested, qmm_strategy *out);
    /* Name and precision class of the kernel a resolved strategy runs for these weights. */
    qmm_status (*describe)(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                           qmm_strategy resolved, const char **kernel, qmm_precision *precision);
    /* Optional (NULL: "compiled-in thresholds of the <name> backend"): which table an AUTO
     * choice for these weights and n comes from, a string valid while the context lives. */
    const char *(*auto_table)(const qmm_context *ctx, const qmm_weights *w, int64_t n);
    qmm_status (*matmul)(qmm_context *ctx, const qmm_weights *w, qmm_strategy strategy,
                         int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy);
    /* Memory in the backend's space and ordering/timing on its stream. */
    qmm_status (*buffer_alloc)(qmm_context *ctx, size_t bytes, void **out);
    void (*buffer_free)(qmm_context *ctx, void *buf);
    qmm_status (*upload)(qmm_context *ctx, void *dst, const void *src_host, size_t bytes);
    qmm_status (*download)(qmm_context *ctx, void *dst_host, const void *src, size_t bytes);
    qmm_status (*synchronize)(qmm_context *ctx);
    qmm_status (*timer_begin)(qmm_context *ctx);
    qmm_status (*timer_end)(qmm_context *ctx, double *ms);
    /* Optional (NULL: QMM_ERR_UNSUPPORTED): the accelerator's description (qmm.h). */
    qmm_status (*device_info)(qmm_context *ctx, qmm_device_info *out);
    /* What the weights hold (qmm_weights_memory): *out zeroed by the core, backend set. */
    void (*weights_memory)(const qmm_weights *w, qmm_weights_memory_info *out);
    /* Optional (NULL: QMM_ERR_UNSUPPORTED): graph capture and replay (qmm_graph_*); times >= 1. */
    qmm_status (*graph_begin)(qmm_context *ctx);
    qmm_status (*graph_end)(qmm_context *ctx);
    qmm_status (*graph_replay)(qmm_context *ctx, int64_t times, double *ms);
};

extern const qmm_backend_ops qmm_cpu_backend_ops;
/* NULL when built without CUDA. */
const qmm_backend_ops *qmm_cuda_backend_ops(void);
/* NULL when built without WebGPU. */
const qmm_backend_ops *qmm_webgpu_backend_ops(void);

#endif /* QMM_CORE_INTERNAL_H */
