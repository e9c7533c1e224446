/* context.c — contexts, weights and matmul: argument checks, then the backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/types.h"
#include "formats/quants.h"

static const char *const strategy_names[QMM_STRATEGY_COUNT] = {
    [QMM_STRATEGY_AUTO] = "auto",
    [QMM_STRATEGY_REF] = "ref",
    [QMM_STRATEGY_GEMV] = "gemv",
    [QMM_STRATEGY_FUSED] = "fused",
    [QMM_STRATEGY_INT8] = "int8",
    [QMM_STRATEGY_DEQUANT_SGEMM] = "dequant_sgemm",
    [QMM_STRATEGY_CACHED_F16] = "cached_f16",
    [QMM_STRATEGY_FP8] = "fp8",
    [QMM_STRATEGY_DEQUANT_HGEMM] = "dequant_hgemm",
};

const char *qmm_strategy_name(qmm_strategy s) {
    if ((int)s < 0 || s >= QMM_STRATEGY_COUNT) return NULL;
    return strategy_names[s];
}

qmm_status qmm_strategy_from_name(const char *name, qmm_strategy *out) {
    if (name == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_strategy_from_name: NULL argument");
    for (int i = 0; i < QMM_STRATEGY_COUNT; i++) {
        if (strcmp(strategy_names[i], name) == 0) {
            *out = (qmm_strategy)i;
            return QMM_OK;
        }
    }
    return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                     "unknown strategy '%s' (expected auto, ref, gemv, fused, int8, "
                     "dequant_sgemm, cached_f16, fp8 or dequant_hgemm)", name);
}

const char *qmm_backend_name(qmm_backend b) {
    switch (b) {
    case QMM_BACKEND_CPU: return "cpu";
    case QMM_BACKEND_CUDA: return "cuda";
    case QMM_BACKEND_WEBGPU: return "webgpu";
    }
    return NULL;
}

static const qmm_backend_ops *backend_ops(qmm_backend b) {
    switch (b) {
    case QMM_BACKEND_CPU: return &qmm_cpu_backend_ops;
    case QMM_BACKEND_CUDA: return qmm_cuda_backend_ops();
    case QMM_BACKEND_WEBGPU: return qmm_webgpu_backend_ops();
    }
    return NULL;
}

qmm_status qmm_backend_check(qmm_backend b) {
    if (b == QMM_BACKEND_CPU) return QMM_OK;
    if (b != QMM_BACKEND_CUDA && b != QMM_BACKEND_WEBGPU)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown backend %d", (int)b);
    /* A probe context tells whether a device is usable (QMM_STRATEGY must not matter). */
    qmm_context_params p = qmm_context_default_params();
    p.backend = b;
    p.strategy = QMM_STRATEGY_GEMV;
    qmm_context *ctx = NULL;
    qmm_status st = qmm_context_create(&p, &ctx);
    qmm_context_free(ctx);
    return st;
}

bool qmm_backend_available(qmm_backend b) {
    if (b == QMM_BACKEND_CPU) return true;
    if ((b != QMM_BACKEND_CUDA && b != QMM_BACKEND_WEBGPU) || backend_ops(b) == NULL) return false;
    char saved[1024];
    strncpy(saved, qmm_last_error(), sizeof saved - 1);
    saved[sizeof saved - 1] = 0;
    qmm_status st = qmm_backend_check(b);
    if (st != QMM_OK) qmm_error(QMM_OK, "%s", saved); /* a probe leaves no error behind */
    return st == QMM_OK;
}

qmm_context_params qmm_context_default_params(void) {
    qmm_context_params p;
    memset(&p, 0, sizeof p);
    p.backend = QMM_BACKEND_CPU;
    p.n_threads = 0;
    p.strategy = QMM_STRATEGY_AUTO;
    p.tune_file = NULL;
    p.flags = 0;
    p.cuda_device = 0;
    p.cuda_stream = NULL;
    p.cache = QMM_CACHE_DEFAULT;
    p.cache_limit = 0.0;
    p.webgpu_device = NULL;
    p.webgpu_queue = NULL;
    p.webgpu_shader_checks = false;
    return p;
}

qmm_status qmm_context_create(const qmm_context_params *params, qmm_context **out) {
    if (out == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_context_create: out is NULL");
    qmm_context_params p = params ? *params : qmm_context_default_params();
    const qmm_backend_ops *ops = backend_ops(p.backend);
    if (p.backend != QMM_BACKEND_CPU && p.backend != QMM_BACKEND_CUDA && p.backend != QMM_BACKEND_WEBGPU)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown backend %d", (int)p.backend);
    if (p.backend != QMM_BACKEND_WEBGPU && (p.webgpu_device != NULL || p.webgpu_queue != NULL))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "webgpu_device/webgpu_queue are given for a %s "
                         "context (they belong to QMM_BACKEND_WEBGPU)", qmm_backend_name(p.backend));
    if (p.backend != QMM_BACKEND_WEBGPU && p.webgpu_shader_checks)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "webgpu_shader_checks is set for a %s context "
                         "(it belongs to QMM_BACKEND_WEBGPU)", qmm_backend_name(p.backend));
    if (ops == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "backend '%s' was not built into this libqmm",
                         qmm_backend_name(p.backend));
    if (p.n_threads < 0 || p.n_threads > 4096)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "n_threads (%d) must be 0..4096", p.n_threads);
    if ((int)p.strategy < 0 || p.strategy >= QMM_STRATEGY_COUNT)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown strategy %d", (int)p.strategy);
    if (p.flags & ~(unsigned)(QMM_FLAG_BATCH_INVARIANT | QMM_FLAG_VALIDATE))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown flags 0x%x", p.flags);
    if ((int)p.cache < QMM_CACHE_DEFAULT || p.cache > QMM_CACHE_UNLIMITED)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown cache policy %d (expected "
                         "QMM_CACHE_DEFAULT, _NONE, _LIMIT or _UNLIMITED)", (int)p.cache);
    if (!(p.cache_limit >= 0.0 && p.cache_limit <= 1e12)) /* also false for NaN */
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "cache_limit (%g) must be a finite number >= 0",
                         p.cache_limit);
    if (p.cache != QMM_CACHE_LIMIT && p.cache_limit != 0.0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "cache_limit (%g) is only meaningful with "
                         "QMM_CACHE_LIMIT; it must be 0 with another policy", p.cache_limit);
    if (p.strategy == QMM_STRATEGY_AUTO) {
        const char *env = getenv("QMM_STRATEGY");
        if (env != NULL) {
            qmm_strategy s;
            if (qmm_strategy_from_name(env, &s) != QMM_OK)
                return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                                 "environment QMM_STRATEGY='%s' is not a strategy name", env);
            p.strategy = s;
        }
    }
    /* Tuning files are read by the CPU backend only (docs/TUNING.md). */
    if (p.tune_file != NULL && p.tune_file[0] != '\0' && p.backend != QMM_BACKEND_CPU)
        return qmm_error(QMM_ERR_UNSUPPORTED, "tune_file '%s': the %s backend reads no tuning "
                         "file (not yet implemented; only cpu does)", p.tune_file,
                         qmm_backend_name(p.backend));
    qmm_context *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "qmm_context_create: out of memory");
    if (p.tune_file != NULL) {
        ctx->tune_file = strdup(p.tune_file);
        if (ctx->tune_file == NULL) {
            free(ctx);
            return qmm_error(QMM_ERR_OUT_OF_MEMORY, "qmm_context_create: out of memory");
        }
        p.tune_file = ctx->tune_file;
    }
    ctx->params = p;
    ctx->ops = ops;
    ctx->tuning.state = QMM_TUNING_NONE;
    snprintf(ctx->tuning.reason, sizeof ctx->tuning.reason, "no tuning file (the %s backend "
             "reads none yet: its compiled-in thresholds)", ops->name);
    qmm_status st = ops->context_init(ctx); /* resolves n_threads; the CPU reads its tuning */
    if (st != QMM_OK) {
        free(ctx->tune_file);
        free(ctx);
        return st;
    }
    *out = ctx;
    return QMM_OK;
}

void qmm_context_free(qmm_context *ctx) {
    if (ctx == NULL) return;
    ctx->ops->context_release(ctx);
    free(ctx->tune_file);
    free(ctx);
}

qmm_status qmm_context_tuning(const qmm_context *ctx, qmm_tuning_info *out) {
    if (ctx == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_context_tuning: %s is NULL",
                         ctx == NULL ? "ctx" : "out");
    *out = ctx->tuning;
    return QMM_OK;
}

qmm_context_params qmm_context_get_params(const qmm_context *ctx) {
    return ctx ? ctx->params : qmm_context_default_params();
}

qmm_status qmm_context_device_info(qmm_context *ctx, qmm_device_info *out) {
    if (ctx == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_context_device_info: ctx or out is NULL");
    if (ctx->ops->device_info == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_context_device_info: the %s backend has no "
                         "accelerator to describe", ctx->ops->name);
    qmm_device_info info;
    memset(&info, 0, sizeof info);
    qmm_status st = ctx->ops->device_info(ctx, &info);
    if (st == QMM_OK) *out = info;
    return st;
}

qmm_status qmm_context_set_strategy(qmm_context *ctx, qmm_strategy strategy) {
    if (ctx == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_context_set_strategy: ctx is NULL");
    if ((int)strategy < 0 || strategy >= QMM_STRATEGY_COUNT)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown strategy %d", (int)strategy);
    ctx->params.strategy = strategy;
    return QMM_OK;
}

qmm_status qmm_weights_create(qmm_context *ctx, qmm_type type, int64_t m, int64_t k,
                              const void *data, size_t row_stride, qmm_weights **out) {
    if (ctx == NULL || data == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_weights_create: NULL %s",
                         ctx == NULL ? "ctx" : data == NULL ? "data" : "out");
    const qmm_type_traits *t = qmm_type_traits_get(type);
    if (t == NULL) return qmm_error(QMM_ERR_UNSUPPORTED, "unsupported type id %d", (int)type);
    if (!t->is_weight)
        return qmm_error(QMM_ERR_UNSUPPORTED, "type %s cannot be used as weights", t->name);
    if (m <= 0) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "m (%lld) must be positive", (long long)m);
    size_t row_bytes;
    qmm_status st = qmm_row_bytes(type, k, &row_bytes);
    if (st != QMM_OK) return st;
    if (row_stride < row_bytes)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "row_stride (%zu bytes) < packed row size (%zu bytes) of k=%lld %s",
                         row_stride, row_bytes, (long long)k, t->name);
    size_t total;
    if (!qmm_mul_size((size_t)m, row_stride, &total))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "m (%lld) * row_stride (%zu) overflows",
                         (long long)m, row_stride);
    if (ctx->params.flags & QMM_FLAG_VALIDATE) {
        st = qmm_validate_rows(type, data, m, k, row_stride);
        if (st != QMM_OK) return st;
    }
    qmm_weights *w = calloc(1, sizeof *w);
    if (w == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "qmm_weights_create: out of memory");
    w->ctx = ctx;
    w->type = type;
    w->m = m;
    w->k = k;
    w->row_bytes = row_bytes;
    st = ctx->ops->weights_init(ctx, w, data, row_stride);
    if (st != QMM_OK) {
        free(w);
        return st;
    }
    *out = w;
    return QMM_OK;
}

void qmm_weights_free(qmm_weights *w) {
    if (w == NULL) return;
    w->ctx->ops->weights_release(w);
    free(w);
}

void qmm_weights_shape(const qmm_weights *w, qmm_type *type, int64_t *m, int64_t *k) {
    if (w == NULL) return;
    if (type) *type = w->type;
    if (m) *m = w->m;
    if (k) *k = w->k;
}

qmm_status qmm_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out) {
    if (w == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_weights_memory: %s is NULL",
                         w == NULL ? "w" : "out");
    qmm_weights_memory_info info;
    memset(&info, 0, sizeof info);
    info.backend = w->ctx->params.backend;
    if (w->ctx->ops->weights_memory != NULL) w->ctx->ops->weights_memory(w, &info);
    else if (!qmm_mul_size((size_t)w->m, w->row_bytes, &info.gguf_bytes))
        info.gguf_bytes = SIZE_MAX; /* cannot happen: creation checked m x row_bytes */
    info.total_bytes = info.gguf_bytes + info.repacked_bytes + info.f16_bytes + info.fp8_bytes +
                       info.int8_bytes + info.bf16_bytes;
    *out = info;
    return QMM_OK;
}

qmm_status qmm_matmul_strategy(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                               qmm_strategy *out) {
    if (ctx == NULL || w == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul_strategy: NULL argument");
    if (w->ctx != ctx)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "weights belong to another context");
    if (n <= 0) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "n (%lld) must be positive", (long long)n);
    return ctx->ops->resolve(ctx, w, n, ctx->params.strategy, out);
}

qmm_status qmm_matmul(qmm_context *ctx, const qmm_weights *w, int64_t n, const float *x,
                      int64_t ldx, float *y, int64_t ldy) {
    if (ctx == NULL || w == NULL || x == NULL || y == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: NULL %s",
                         ctx == NULL ? "ctx" : w == NULL ? "w" : x == NULL ? "x" : "y");
    if (w->ctx != ctx)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: weights belong to another context");
    if (n <= 0) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: n (%lld) must be positive", (long long)n);
    if (ldx < w->k)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: ldx (%lld) < k (%lld)",
                         (long long)ldx, (long long)w->k);
    if (ldy < w->m)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: ldy (%lld) < m (%lld)",
                         (long long)ldy, (long long)w->m);
    /* The extents of x and y must be representable before any pointer arithmetic. */
    size_t xext, yext;
    if (!qmm_mul_size((size_t)(n - 1), (size_t)ldx, &xext) ||
        !qmm_add_size(xext, (size_t)w->k, &xext) || xext > PTRDIFF_MAX / sizeof(float) ||
        !qmm_mul_size((size_t)(n - 1), (size_t)ldy, &yext) ||
        !qmm_add_size(yext, (size_t)w->m, &yext) || yext > PTRDIFF_MAX / sizeof(float))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "qmm_matmul: n=%lld with ldx=%lld / ldy=%lld spans more memory than "
                         "can be addressed", (long long)n, (long long)ldx, (long long)ldy);
    /* x and y must not overlap (byte ranges of the last element touched). */
    const char *xb = (const char *)x, *xe = (const char *)(x + (n - 1) * ldx + w->k);
    const char *yb = (const char *)y, *ye = (const char *)(y + (n - 1) * ldy + w->m);
    if (xb < ye && yb < xe)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: x and y overlap");
    qmm_strategy s;
    qmm_status st = ctx->ops->resolve(ctx, w, n, ctx->params.strategy, &s);
    if (st != QMM_OK) return st;
    return ctx->ops->matmul(ctx, w, s, n, x, ldx, y, ldy);
}

qmm_status qmm_buffer_alloc(qmm_context *ctx, size_t bytes, void **out) {
    if (ctx == NULL || out == NULL || bytes == 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_buffer_alloc: %s",
                         bytes == 0 ? "bytes is 0" : "NULL argument");
    return ctx->ops->buffer_alloc(ctx, bytes, out);
}

void qmm_buffer_free(qmm_context *ctx, void *buf) {
    if (ctx != NULL && buf != NULL) ctx->ops->buffer_free(ctx, buf);
}

qmm_status qmm_buffer_upload(qmm_context *ctx, void *dst, const void *src_host, size_t bytes) {
    if (ctx == NULL || dst == NULL || src_host == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_buffer_upload: NULL argument");
    return bytes == 0 ? QMM_OK : ctx->ops->upload(ctx, dst, src_host, bytes);
}

qmm_status qmm_buffer_download(qmm_context *ctx, void *dst_host, const void *src, size_t bytes) {
    if (ctx == NULL || dst_host == NULL || src == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_buffer_download: NULL argument");
    return bytes == 0 ? QMM_OK : ctx->ops->download(ctx, dst_host, src, bytes);
}

qmm_status qmm_context_synchronize(qmm_context *ctx) {
    if (ctx == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_context_synchronize: ctx is NULL");
    return ctx->ops->synchronize(ctx);
}

qmm_status qmm_timer_begin(qmm_context *ctx) {
    if (ctx == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_timer_begin: ctx is NULL");
    return ctx->ops->timer_begin(ctx);
}

qmm_status qmm_timer_end(qmm_context *ctx, double *ms) {
    if (ctx == NULL || ms == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_timer_end: NULL argument");
    return ctx->ops->timer_end(ctx, ms);
}

static qmm_status no_graphs(const qmm_context *ctx, const char *fn) {
    return qmm_error(QMM_ERR_UNSUPPORTED, "%s: the %s backend has no graphs (time its calls with "
                     "qmm_timer_begin / qmm_timer_end)", fn, ctx->ops->name);
}

qmm_status qmm_graph_begin(qmm_context *ctx) {
    if (ctx == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_graph_begin: ctx is NULL");
    if (ctx->ops->graph_begin == NULL) return no_graphs(ctx, "qmm_graph_begin");
    return ctx->ops->graph_begin(ctx);
}

qmm_status qmm_graph_end(qmm_context *ctx) {
    if (ctx == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_graph_end: ctx is NULL");
    if (ctx->ops->graph_end == NULL) return no_graphs(ctx, "qmm_graph_end");
    return ctx->ops->graph_end(ctx);
}

qmm_status qmm_graph_replay(qmm_context *ctx, int64_t times, double *ms) {
    if (ctx == NULL || ms == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_graph_replay: NULL argument");
    if (times < 1)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_graph_replay: times (%lld) must be >= 1",
                         (long long)times);
    if (ctx->ops->graph_replay == NULL) return no_graphs(ctx, "qmm_graph_replay");
    return ctx->ops->graph_replay(ctx, times, ms);
}

void qmm_precision_limits(qmm_precision precision, double *max_nmse, double *max_rel_err) {
    double nmse, rel;
    switch (precision) {
    case QMM_PRECISION_HALF: nmse = 1e-5; rel = 1e-2; break;
    case QMM_PRECISION_INT8: nmse = 5e-4; rel = 2e-2; break;
    case QMM_PRECISION_FP8: nmse = 5e-3; rel = 1e-1; break;
    case QMM_PRECISION_F32:
    default: nmse = 1e-10; rel = 1e-5; break;
    }
    if (max_nmse) *max_nmse = nmse;
    if (max_rel_err) *max_rel_err = rel;
}

qmm_status qmm_matmul_path(const qmm_context *ctx, const qmm_weights *w, int64_t n, qmm_path *out) {
    qmm_strategy s;
    qmm_status st = qmm_matmul_strategy(ctx, w, n, &s);
    if (st != QMM_OK) return st;
    if (out == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul_path: out is NULL");
    qmm_path p;
    p.strategy = s;
    p.kernel = qmm_strategy_name(s);
    p.precision = QMM_PRECISION_F32;
    st = ctx->ops->describe(ctx, w, n, s, &p.kernel, &p.precision);
    if (st != QMM_OK) return st;
    p.auto_table = NULL;
    if (ctx->params.strategy == QMM_STRATEGY_AUTO)
        p.auto_table = ctx->ops->auto_table != NULL ? ctx->ops->auto_table(ctx, w, n)
                       : ctx->params.backend == QMM_BACKEND_CUDA
                           ? "compiled-in thresholds of the cuda backend"
                           : "compiled-in thresholds";
    qmm_precision_limits(p.precision, &p.max_nmse, &p.max_rel_err);
    *out = p;
    return QMM_OK;
}
