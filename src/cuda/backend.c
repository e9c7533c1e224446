/*
 * backend.c — the CUDA backend: context (device, stream, cuBLAS handle, workspace), weights
 * (upload, value check, the copies of W made on first use under the cache policy), strategy
 * resolution (auto: src/cuda/auto_table.c), the matmul strategies that call cuBLAS, graph
 * capture and replay.
 *
 * Rules kept here (docs/CUDA.md): all work is ordered on the context's stream; once the copy
 * and the workspace a strategy needs for given weights exist (made by its first call: "Lazy
 * copies" below), qmm_matmul allocates nothing, never synchronizes the host and copies nothing
 * between host and device, so it can be captured in a CUDA graph; every CUDA/cuBLAS status is
 * checked and returned as QMM_ERR_BACKEND with the library's error text.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.h"

/* ---------------------------------------------------------------------------------------
 * Error helpers
 * ------------------------------------------------------------------------------------- */

static qmm_status cuda_fail(cudaError_t e, const char *what) {
    /* Reset the thread's last error: a non-sticky one (an allocation that failed, a bad launch
     * configuration) would otherwise be read again by the next call's launch check and
     * reported as that call's failure; a sticky one (a fault in a kernel) stays. */
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CUDA: %s: out of device memory (%s)", what,
                         cudaGetErrorString(e));
    return qmm_error(QMM_ERR_BACKEND, "CUDA: %s failed: %s (%s)", what, cudaGetErrorName(e),
                     cudaGetErrorString(e));
}

static qmm_status cublas_fail(cublasStatus_t s, const char *what) {
    return qmm_error(QMM_ERR_BACKEND, "cuBLAS: %s failed: %s", what, cublasGetStatusString(s));
}

#define CU(call, what)                                                                     \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) return cuda_fail(e_, what);                                 \
    } while (0)
#define CB(call, what)                                                                     \
    do {                                                                                   \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) return cublas_fail(s_, what);                     \
    } while (0)

static qmm_cuda_context *cctx(const qmm_context *ctx) { return (qmm_cuda_context *)ctx->backend; }

/* ---------------------------------------------------------------------------------------
 * Context
 * ------------------------------------------------------------------------------------- */

static void fp8_plans_release(qmm_cuda_context *c);

static void release_state(qmm_cuda_context *c) {
    if (c == NULL) return;
    cudaSetDevice(c->device);
    if (c->stream) cudaStreamSynchronize(c->stream);
    if (c->cublas) cublasDestroy(c->cublas);
    fp8_plans_release(c);
    if (c->lt) cublasLtDestroy(c->lt);
    cudaFree(c->cublas_workspace);
    cudaFree(c->workspace);
    for (int i = 0; i < c->n_retired; i++) cudaFree(c->retired[i]);
    free(c->retired);
    cudaFree(c->flag);
    if (c->timer_start) cudaEventDestroy(c->timer_start);
    if (c->timer_stop) cudaEventDestroy(c->timer_stop);
    if (c->graph_capturing) {
        cudaGraph_t g = NULL;
        cudaStreamEndCapture(c->stream, &g);
        if (g) cudaGraphDestroy(g);
        (void)cudaGetLastError();
    }
    if (c->graph_exec) cudaGraphExecDestroy(c->graph_exec);
    if (c->graph) cudaGraphDestroy(c->graph);
    if (c->graph_start) cudaEventDestroy(c->graph_start);
    if (c->graph_stop) cudaEventDestroy(c->graph_stop);
    if (c->own_stream && c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

static qmm_status init_state(qmm_context *ctx, qmm_cuda_context *c) {
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    if (ctx->params.cuda_stream != NULL) {
        c->stream = (cudaStream_t)ctx->params.cuda_stream;
    } else {
        CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        c->own_stream = true;
    }
    CB(cublasCreate(&c->cublas), "cublasCreate");
    CB(cublasSetStream(c->cublas, c->stream), "cublasSetStream");
    /* A user-owned workspace: cuBLAS then allocates nothing while a graph is captured. */
    CU(cudaMalloc(&c->cublas_workspace, QMM_CUDA_CUBLAS_WORKSPACE), "cudaMalloc(cuBLAS workspace)");
    CB(cublasSetWorkspace(c->cublas, c->cublas_workspace, QMM_CUDA_CUBLAS_WORKSPACE), "cublasSetWorkspace");
    CB(cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    CB(cublasLtCreate(&c->lt), "cublasLtCreate");
    int major = 0, minor = 0;
    CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c->device), "cudaDeviceGetAttribute");
    CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, c->device), "cudaDeviceGetAttribute");
    c->cc = 10 * major + minor;
    CU(cudaMalloc((void **)&c->flag, sizeof(int)), "cudaMalloc(flag)");
    qmm_cuda_half_probe(); /* whether fused's wgmma kernels can run on this device */
    CU(cudaEventCreate(&c->timer_start), "cudaEventCreate");
    CU(cudaEventCreate(&c->timer_stop), "cudaEventCreate");
    return QMM_OK;
}

static qmm_status cuda_context_init(qmm_context *ctx) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return qmm_error(QMM_ERR_UNSUPPORTED, "CUDA backend: no usable CUDA device (%s)",
                         e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    if (ctx->params.cuda_device < 0 || ctx->params.cuda_device >= count)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "cuda_device (%d) must be in 0..%d",
                         ctx->params.cuda_device, count - 1);
    qmm_cuda_context *c = calloc(1, sizeof *c);
    if (c == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CUDA backend: out of host memory");
    c->device = ctx->params.cuda_device;
    qmm_status st = init_state(ctx, c);
    if (st != QMM_OK) {
        release_state(c);
        return st;
    }
    if (ctx->params.n_threads == 0) ctx->params.n_threads = 1; /* no host worker threads */
    ctx->backend = c;
    return QMM_OK;
}

static void cuda_context_release(qmm_context *ctx) {
    release_state(cctx(ctx));
    ctx->backend = NULL;
}

/* Whether the context's stream is being captured into a CUDA graph (by qmm_graph_begin or by
 * the caller): then nothing may be allocated or waited for. */
static bool stream_capturing(const qmm_cuda_context *c) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(c->stream, &cs) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return cs != cudaStreamCaptureStatusNone;
}

/* Grow the context workspace to at least `bytes` (`why`: for the error text). Waits for the
 * stream (queued work may still use the old workspace); the old one is freed, or kept until
 * the context is freed when a matmul of this context was ever recorded into a CUDA graph
 * (that graph may still read it). Never called during capture. Out of device memory:
 * QMM_ERR_OUT_OF_MEMORY, the old workspace kept. */
static qmm_status grow_workspace(qmm_cuda_context *c, size_t bytes, const char *why) {
    if (bytes <= c->workspace_bytes) return QMM_OK;
    CU(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    if (c->captured && c->workspace != NULL && c->n_retired == c->cap_retired) {
        const int cap = c->cap_retired ? 2 * c->cap_retired : 4;
        void **r = realloc(c->retired, (size_t)cap * sizeof *r);
        if (r == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CUDA backend: out of host memory");
        c->retired = r;
        c->cap_retired = cap;
    }
    void *p = NULL;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CUDA: out of device memory growing the context "
                             "workspace from %zu to %zu bytes (%s)", c->workspace_bytes, bytes, why);
        }
        return cuda_fail(e, "cudaMalloc(workspace)");
    }
    if (c->workspace != NULL) {
        if (c->captured) c->retired[c->n_retired++] = c->workspace;
        else cudaFree(c->workspace);
    }
    c->workspace = p;
    c->workspace_bytes = bytes;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * Weights: the GGUF rows and the value check at creation
 * ------------------------------------------------------------------------------------- */

static void free_weights(qmm_cuda_weights *cw) {
    if (cw == NULL) return;
    cudaFree(cw->q);
    cudaFree(cw->w16);
    cudaFree(cw->w8);
    cudaFree(cw->w8_scale);
    cudaFree(cw->i8_q);
    cudaFree(cw->i8_d);
    cudaFree(cw->i8_mn);
    free(cw);
}

/* Workspace bytes to stage rows of `per_row` bytes each: all m rows if they take at most
 * QMM_CUDA_STAGING_BYTES, else as many whole rows as fit in it (at least one). */
static size_t staging_bytes(const qmm_weights *w, size_t per_row) {
    size_t all;
    if (qmm_mul_size(per_row, (size_t)w->m, &all) && all <= QMM_CUDA_STAGING_BYTES) return all;
    return per_row > QMM_CUDA_STAGING_BYTES ? per_row : QMM_CUDA_STAGING_BYTES / per_row * per_row;
}

/* Rows of `per_row` bytes that fit in the workspace now (1..m; the caller made room for one). */
static int64_t staging_rows(const qmm_cuda_context *c, const qmm_weights *w, size_t per_row) {
    const size_t rows = c->workspace_bytes / per_row;
    return rows < 1 ? 1 : rows > (size_t)w->m ? w->m : (int64_t)rows;
}

/* The value check (at creation; waits for the stream). Pass 1: every dequantized element
 * through f32_to_f16's range check (flag: non-finite, or rounds beyond the f16 range) gives
 * f16_fits. Pass 2, only when that flag was raised: fp8_rows over the same rows into scratch
 * (flag: some value Inf or NaN) gives nonfinite. W is dequantized by chunks of rows into the
 * workspace: [rows x k floats | rows x k_pad E4M3 bytes | rows scales]. */
static qmm_status check_values(qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw) {
    const size_t per_row = (size_t)w->k * sizeof(float) + (size_t)cw->k_pad + sizeof(float);
    qmm_status st = grow_workspace(c, staging_bytes(w, per_row), "staging the value check of new weights");
    if (st != QMM_OK) return st;
    const int64_t rows = staging_rows(c, w, per_row);
    float *f = (float *)c->workspace;
    for (int pass = 0; pass < 2; pass++) {
        CU(cudaMemsetAsync(c->flag, 0, sizeof(int), c->stream), "cudaMemsetAsync");
        for (int64_t r0 = 0; r0 < w->m; r0 += rows) {
            const int64_t rc = w->m - r0 < rows ? w->m - r0 : rows;
            CU(qmm_cuda_dequantize(w->type, cw->q + (size_t)r0 * w->row_bytes, w->row_bytes, rc, w->k, f,
                                   c->stream), "dequantize kernel");
            if (pass == 0) {
                CU(qmm_cuda_f32_to_f16(f, rc * w->k, NULL, c->flag, c->stream), "f16 range check kernel");
            } else {
                uint8_t *e8 = (uint8_t *)(f + (size_t)rc * (size_t)w->k);
                float *scale = (float *)(e8 + (size_t)rc * (size_t)cw->k_pad);
                CU(qmm_cuda_fp8_rows(f, rc, rc, w->k, w->k, cw->k_pad, e8, scale, c->flag, c->stream),
                   "finite check kernel");
            }
        }
        int flag = 0;
        CU(cudaMemcpyAsync(&flag, c->flag, sizeof(int), cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync");
        CU(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
        if (pass == 0) cw->f16_fits = flag == 0;
        else cw->nonfinite = flag != 0;
        if (cw->f16_fits) break; /* every value finite */
    }
    return QMM_OK;
}

#define QMM_CUDA_ALIGN256(x) (((x) + 255u) & ~(size_t)255u)

/* fp8 workspace of one weights: [product f32, m_pad x X_CHUNK | X in E4M3, X_CHUNK x k_pad |
 * X scales, X_CHUNK floats]. */
static size_t fp8_workspace_bytes(const qmm_cuda_weights *cw) {
    return QMM_CUDA_ALIGN256((size_t)cw->m_pad * QMM_CUDA_X_CHUNK * sizeof(float)) +
           QMM_CUDA_ALIGN256((size_t)QMM_CUDA_X_CHUNK * (size_t)cw->k_pad) + QMM_CUDA_X_CHUNK * sizeof(float);
}

/* The bytes of each copy once made (0: none for this type or device); false on overflow. */
static bool copy_sizes(const qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw) {
    size_t f16, fp8, q8 = 0, s8 = 0;
    if (!qmm_mul_size((size_t)w->m * sizeof(uint16_t), (size_t)w->k, &f16) ||
        !qmm_mul_size((size_t)cw->m_pad, (size_t)cw->k_pad, &fp8) ||
        !qmm_add_size(fp8, (size_t)cw->m_pad * sizeof(float), &fp8))
        return false;
    if (qmm_cuda_int8_has_type(w->type)) {
        const int64_t m8 = qmm_cuda_int8_pad(w->m), k8 = qmm_cuda_int8_pad(w->k);
        const size_t groups = (size_t)(k8 / qmm_cuda_int8_sub_block(w->type));
        if (!qmm_mul_size((size_t)m8, (size_t)k8, &q8) ||
            !qmm_mul_size((size_t)m8 * sizeof(float), groups, &s8))
            return false;
        q8 = qmm_cuda_int8_quant_bytes(w->type, m8, k8); /* <= m8 * k8: nibble types half */
        if (!qmm_add_size(q8, s8 * (qmm_cuda_int8_has_min(w->type) ? 2u : 1u), &q8)) return false;
    }
    cw->copy_bytes[QMM_CUDA_COPY_F16] = f16;
    cw->copy_bytes[QMM_CUDA_COPY_FP8] = c->cc >= 89 ? fp8 : 0;
    cw->copy_bytes[QMM_CUDA_COPY_INT8] = q8;
    return true;
}

static qmm_status weights_setup(qmm_cuda_context *c, qmm_weights *w, qmm_cuda_weights *cw,
                                const void *data, size_t row_stride) {
    size_t total, wf32, xf16;
    if (!qmm_mul_size((size_t)w->m, w->row_bytes, &total) ||
        !qmm_mul_size((size_t)w->m * sizeof(float), (size_t)w->k, &wf32) ||
        !qmm_mul_size((size_t)QMM_CUDA_X_CHUNK * sizeof(uint16_t), (size_t)w->k, &xf16))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "weights of m=%lld, k=%lld overflow size_t",
                         (long long)w->m, (long long)w->k);
    cw->m_pad = (w->m + 15) / 16 * 16;
    cw->k_pad = (w->k + 15) / 16 * 16;
    if (!copy_sizes(c, w, cw))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "the copies of weights of m=%lld, k=%lld overflow "
                         "size_t", (long long)w->m, (long long)w->k);
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    CU(cudaMalloc((void **)&cw->q, total), "cudaMalloc(weights)");
    cw->q_bytes = total;
    CU(cudaMemcpy2DAsync(cw->q, w->row_bytes, data, row_stride, w->row_bytes, (size_t)w->m,
                         cudaMemcpyHostToDevice, c->stream), "cudaMemcpy2DAsync(weights)");
    return check_values(c, w, cw); /* ends with a stream sync: `data` is no longer read */
}

static qmm_status cuda_weights_init(qmm_context *ctx, qmm_weights *w, const void *data, size_t row_stride) {
    /* Every kernel reads the type's device descriptor (dequant.cuh): it must exist and agree
     * with the type table (a unit-codec type's block size is also QMM_QK_<name>, blocks.h). */
    if (!qmm_cuda_type_check(w->type, qmm_type_block_size(w->type), qmm_type_block_bytes(w->type)))
        return qmm_error(QMM_ERR_INTERNAL, "CUDA backend: no device descriptor for type %s, or its "
                         "block size / bytes differ from the type table's (%lld elements, %zu bytes)",
                         qmm_type_name(w->type), (long long)qmm_type_block_size(w->type),
                         qmm_type_block_bytes(w->type));
    if (stream_capturing(cctx(ctx)))
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_weights_create: the context's stream is being "
                         "captured into a CUDA graph (creating weights uploads and waits for the stream)");
    qmm_cuda_weights *cw = calloc(1, sizeof *cw);
    if (cw == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CUDA backend: out of host memory");
    qmm_status st = weights_setup(cctx(ctx), w, cw, data, row_stride);
    if (st != QMM_OK) {
        cudaStreamSynchronize(cctx(ctx)->stream);
        free_weights(cw);
        return st;
    }
    w->backend = cw;
    return QMM_OK;
}

static void cuda_weights_release(qmm_weights *w) {
    qmm_cuda_context *c = cctx(w->ctx);
    cudaSetDevice(c->device);
    cudaStreamSynchronize(c->stream); /* work queued with these weights may still run */
    free_weights((qmm_cuda_weights *)w->backend);
    w->backend = NULL;
}

static void cuda_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out) {
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    out->gguf_bytes = cw->q_bytes;
    if (cw->w16 != NULL) out->f16_bytes = cw->copy_bytes[QMM_CUDA_COPY_F16];
    if (cw->w8 != NULL) out->fp8_bytes = cw->copy_bytes[QMM_CUDA_COPY_FP8];
    if (cw->i8_q != NULL) out->int8_bytes = cw->copy_bytes[QMM_CUDA_COPY_INT8];
}

/* ---------------------------------------------------------------------------------------
 * Lazy copies
 *
 * A copy (qmm_cuda_copy) is made by the first matmul of its strategy on the weights, after
 * resolve() accepted it under the cache policy, and kept until the weights are freed. The
 * work is queued on the context's stream before the call's own kernels: ordered after the
 * caller's earlier work, and before the matmul that reads it. cudaMalloc may block the host;
 * a workspace that must grow first waits for the stream (grow_workspace). Never during graph
 * capture: resolve() refuses a forced strategy then and auto picks another. The caller holds
 * the context (and so the weights) alone: qmm.h's one-thread-at-a-time rule is what makes
 * filling in the weights' record from a call taking const weights safe.
 * ------------------------------------------------------------------------------------- */

static const char *const k_copy_name[QMM_CUDA_COPIES] = {"f16", "fp8", "int8"};

/* The copy a call of s on w for n tokens reads (QMM_CUDA_COPIES: none). int8 at n <= 8 reads
 * the GGUF rows where its kernel for them takes the shape (qmm_cuda_int8_gemv_ok). */
static qmm_cuda_copy copy_of(const qmm_weights *w, const qmm_cuda_weights *cw, qmm_strategy s, int64_t n) {
    switch (s) {
    case QMM_STRATEGY_CACHED_F16: return QMM_CUDA_COPY_F16;
    case QMM_STRATEGY_FP8: return QMM_CUDA_COPY_FP8;
    case QMM_STRATEGY_INT8:
        return n <= QMM_CUDA_INT8_GEMV_N && qmm_cuda_int8_gemv_ok(w->type, cw->q, w->row_bytes, w->k)
                   ? QMM_CUDA_COPIES
                   : QMM_CUDA_COPY_INT8;
    default: return QMM_CUDA_COPIES;
    }
}

static bool copy_made(const qmm_cuda_weights *cw, qmm_cuda_copy k) {
    switch (k) {
    case QMM_CUDA_COPY_F16: return cw->w16 != NULL;
    case QMM_CUDA_COPY_FP8: return cw->w8 != NULL;
    case QMM_CUDA_COPY_INT8: return cw->i8_q != NULL;
    default: return true;
    }
}

/* Bytes of the copies made so far, other than `except`. */
static size_t copies_held(const qmm_cuda_weights *cw, qmm_cuda_copy except) {
    size_t sum = 0;
    for (int k = 0; k < QMM_CUDA_COPIES; k++)
        if (k != (int)except && copy_made(cw, (qmm_cuda_copy)k)) sum += cw->copy_bytes[k];
    return sum;
}

/* QMM_CACHE_DEFAULT: auto may make the int8 repack while all copies stay within this many
 * times the GGUF bytes (the residency bound of the default mode, docs/CUDA.md "Memory"). */
#define QMM_CUDA_DEFAULT_COPY_RATIO 2.0

/* Whether the cache policy lets `w` hold copy k (made or not) for auto (for_auto) or for a
 * forced strategy: the bytes of all its copies with k, against the policy's cap. */
static bool policy_allows(const qmm_context *ctx, const qmm_cuda_weights *cw, qmm_cuda_copy k,
                          bool for_auto) {
    const double with_k = (double)copies_held(cw, k) + (double)cw->copy_bytes[k];
    const double gguf = (double)cw->q_bytes;
    switch (ctx->params.cache) {
    case QMM_CACHE_NONE: return false;
    case QMM_CACHE_LIMIT: return with_k <= ctx->params.cache_limit * gguf;
    case QMM_CACHE_UNLIMITED: return true;
    case QMM_CACHE_DEFAULT:
    default:
        return !for_auto || (k == QMM_CUDA_COPY_INT8 && with_k <= QMM_CUDA_DEFAULT_COPY_RATIO * gguf);
    }
}

/* dequant_hgemm's workspace: [X chunk in f16, 256-aligned | W rows r0..r0+rows in f16]; the W
 * part is all of W where it takes at most QMM_CUDA_STAGING_BYTES, else that many bytes of
 * whole rows (at least one), so the context workspace stays bounded for any m. */
static size_t hgemm_row_bytes(const qmm_weights *w) { return (size_t)w->k * sizeof(uint16_t); }
static size_t hgemm_x_bytes(const qmm_weights *w) {
    return QMM_CUDA_ALIGN256((size_t)QMM_CUDA_X_CHUNK * sizeof(uint16_t) * (size_t)w->k);
}
static int64_t hgemm_rows(const qmm_weights *w) {
    return (int64_t)(staging_bytes(w, hgemm_row_bytes(w)) / hgemm_row_bytes(w));
}

/* Context workspace bytes strategy s needs for these weights. */
static size_t strategy_workspace(const qmm_cuda_context *c, const qmm_weights *w,
                                 const qmm_cuda_weights *cw, qmm_strategy s) {
    switch (s) {
    case QMM_STRATEGY_DEQUANT_SGEMM: return (size_t)w->m * sizeof(float) * (size_t)w->k;
    case QMM_STRATEGY_CACHED_F16: return (size_t)QMM_CUDA_X_CHUNK * sizeof(uint16_t) * (size_t)w->k;
    case QMM_STRATEGY_DEQUANT_HGEMM: return hgemm_x_bytes(w) + (size_t)hgemm_rows(w) * hgemm_row_bytes(w);
    case QMM_STRATEGY_FP8: return c->cc >= 89 ? fp8_workspace_bytes(cw) : 0;
    case QMM_STRATEGY_INT8: return qmm_cuda_int8_has_type(w->type) ? qmm_cuda_int8_workspace_bytes(w->k) : 0;
    default: return 0;
    }
}

/* The workspace a first call of s must have, staging included (f16 and fp8 copies are made
 * from W dequantized into it, at least one row at a time). */
static size_t prepare_workspace(const qmm_cuda_context *c, const qmm_weights *w,
                                const qmm_cuda_weights *cw, qmm_strategy s, int64_t n) {
    size_t need = strategy_workspace(c, w, cw, s);
    const qmm_cuda_copy k = copy_of(w, cw, s, n);
    if ((k == QMM_CUDA_COPY_F16 || k == QMM_CUDA_COPY_FP8) && !copy_made(cw, k)) {
        const size_t stage = staging_bytes(w, (size_t)w->k * sizeof(float));
        if (stage > need) need = stage;
    }
    return need;
}

/* True if the next call of s on w has lazy work to do (a copy, a larger workspace). */
static bool needs_preparing(const qmm_cuda_context *c, const qmm_weights *w, const qmm_cuda_weights *cw,
                            qmm_strategy s, int64_t n) {
    return !copy_made(cw, copy_of(w, cw, s, n)) || prepare_workspace(c, w, cw, s, n) > c->workspace_bytes;
}

/* cudaMalloc one array of copy k; out of memory: QMM_ERR_OUT_OF_MEMORY naming the copy. */
static qmm_status alloc_copy(void **p, size_t bytes, const qmm_weights *w, qmm_cuda_copy k) {
    const cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) return QMM_OK;
    *p = NULL;
    if (e != cudaErrorMemoryAllocation) return cuda_fail(e, "cudaMalloc(copy of the weights)");
    (void)cudaGetLastError();
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CUDA: out of device memory making the %s copy of these "
                     "%s weights (m=%lld, k=%lld: %zu bytes, %.2fx their %zu GGUF bytes) on their "
                     "first %s call", k_copy_name[k], qmm_type_name(w->type), (long long)w->m,
                     (long long)w->k, cw->copy_bytes[k], (double)cw->copy_bytes[k] / (double)cw->q_bytes,
                     cw->q_bytes, k == QMM_CUDA_COPY_F16 ? "cached_f16" : k == QMM_CUDA_COPY_FP8 ? "fp8" : "int8");
}

/* Queue the kernels that fill copy k (allocated). f16 and fp8: W dequantized by chunks of rows
 * into the workspace (prepare_workspace made room for at least one), then rounded per row:
 * the same values as one pass over all rows (every kernel's result depends on its row only). */
static qmm_status fill_copy(qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw, qmm_cuda_copy k) {
    if (k == QMM_CUDA_COPY_INT8) {
        CU(qmm_cuda_int8_pack(w->type, cw->q, w->row_bytes, w->m, w->k, qmm_cuda_int8_pad(w->m),
                              qmm_cuda_int8_pad(w->k), cw->i8_q, cw->i8_d, cw->i8_mn, c->stream),
           "int8 repack kernel");
        return QMM_OK;
    }
    const int64_t rows = staging_rows(c, w, (size_t)w->k * sizeof(float));
    float *f = (float *)c->workspace;
    for (int64_t r0 = 0; r0 < w->m; r0 += rows) {
        const int64_t rc = w->m - r0 < rows ? w->m - r0 : rows;
        CU(qmm_cuda_dequantize(w->type, cw->q + (size_t)r0 * w->row_bytes, w->row_bytes, rc, w->k, f,
                               c->stream), "dequantize kernel");
        if (k == QMM_CUDA_COPY_F16) {
            /* the values fit f16 (f16_fits, checked at creation): the flag stays 0 */
            CU(qmm_cuda_f32_to_f16(f, rc * w->k, cw->w16 + (size_t)r0 * (size_t)w->k, c->flag, c->stream),
               "f32 to f16 kernel");
        } else {
            /* the last chunk also writes the padding rows m..m_pad-1 (zeros, scale 0) */
            const int64_t rows_pad = r0 + rc == w->m ? cw->m_pad - r0 : rc;
            CU(qmm_cuda_fp8_rows(f, rc, rows_pad, w->k, w->k, cw->k_pad, cw->w8 + (size_t)r0 * (size_t)cw->k_pad,
                                 cw->w8_scale + r0, NULL, c->stream), "fp8 weights kernel");
        }
    }
    return QMM_OK;
}

/* Allocate and fill copy k; on failure nothing of it is kept. */
static qmm_status make_copy(qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw, qmm_cuda_copy k) {
    qmm_status st = QMM_OK;
    if (k == QMM_CUDA_COPY_F16) {
        st = alloc_copy((void **)&cw->w16, cw->copy_bytes[k], w, k);
    } else if (k == QMM_CUDA_COPY_FP8) {
        const size_t scales = (size_t)cw->m_pad * sizeof(float);
        st = alloc_copy((void **)&cw->w8, cw->copy_bytes[k] - scales, w, k);
        if (st == QMM_OK) st = alloc_copy((void **)&cw->w8_scale, scales, w, k);
    } else {
        const int64_t m8 = qmm_cuda_int8_pad(w->m), k8 = qmm_cuda_int8_pad(w->k);
        const size_t sb = (size_t)m8 * sizeof(float) * (size_t)(k8 / qmm_cuda_int8_sub_block(w->type));
        st = alloc_copy((void **)&cw->i8_q, qmm_cuda_int8_quant_bytes(w->type, m8, k8), w, k);
        if (st == QMM_OK) st = alloc_copy((void **)&cw->i8_d, sb, w, k);
        if (st == QMM_OK && qmm_cuda_int8_has_min(w->type)) st = alloc_copy((void **)&cw->i8_mn, sb, w, k);
    }
    if (st == QMM_OK) st = fill_copy(c, w, cw, k);
    if (st == QMM_OK) {
        qmm_log(1, "cuda: made the %s copy of %s weights %lldx%lld (%zu bytes)", k_copy_name[k],
                qmm_type_name(w->type), (long long)w->m, (long long)w->k, cw->copy_bytes[k]);
        return QMM_OK;
    }
    cudaStreamSynchronize(c->stream); /* a fill kernel may have been queued */
    void **arrays[3] = {NULL, NULL, NULL};
    if (k == QMM_CUDA_COPY_F16) arrays[0] = (void **)&cw->w16;
    if (k == QMM_CUDA_COPY_FP8) arrays[0] = (void **)&cw->w8, arrays[1] = (void **)&cw->w8_scale;
    if (k == QMM_CUDA_COPY_INT8)
        arrays[0] = (void **)&cw->i8_q, arrays[1] = (void **)&cw->i8_d, arrays[2] = (void **)&cw->i8_mn;
    for (int i = 0; i < 3; i++)
        if (arrays[i] != NULL) {
            cudaFree(*arrays[i]);
            *arrays[i] = NULL;
        }
    return st;
}

/* The lazy part of a call of s on w: a larger workspace, then the copy s reads. */
static qmm_status prepare(qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw, qmm_strategy s,
                          int64_t n) {
    if (!needs_preparing(c, w, cw, s, n)) return QMM_OK;
    if (stream_capturing(c)) /* resolve() refuses this first; kept so no path can allocate */
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s: its first call on these weights cannot "
                         "run during CUDA graph capture", qmm_strategy_name(s));
    qmm_status st = grow_workspace(c, prepare_workspace(c, w, cw, s, n), qmm_strategy_name(s));
    const qmm_cuda_copy k = copy_of(w, cw, s, n);
    if (st == QMM_OK && !copy_made(cw, k)) st = make_copy(c, w, cw, k);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * Strategy resolution
 * ------------------------------------------------------------------------------------- */

static int ctx_cc(const qmm_context *ctx) { return cctx(ctx)->cc; }

static const char *policy_name(qmm_cache_policy p) {
    switch (p) {
    case QMM_CACHE_NONE: return "QMM_CACHE_NONE";
    case QMM_CACHE_LIMIT: return "QMM_CACHE_LIMIT";
    case QMM_CACHE_UNLIMITED: return "QMM_CACHE_UNLIMITED";
    case QMM_CACHE_DEFAULT:
    default: return "QMM_CACHE_DEFAULT";
    }
}

/* A forced strategy that reads a copy: refused when the cache policy does not let W hold it,
 * or when its first call would have to run during graph capture. */
static qmm_status check_forced(const qmm_context *ctx, const qmm_weights *w, qmm_strategy s, int64_t n) {
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    const qmm_cuda_copy k = copy_of(w, cw, s, n);
    const char *sname = qmm_strategy_name(s), *tname = qmm_type_name(w->type);
    if (k != QMM_CUDA_COPIES && !policy_allows(ctx, cw, k, false)) {
        if (ctx->params.cache == QMM_CACHE_NONE)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s reads an %s copy of the weights (%zu "
                             "bytes for these %s weights), and the context's cache policy "
                             "QMM_CACHE_NONE allows no copies: use gemv or fused, or another policy",
                             sname, k_copy_name[k], cw->copy_bytes[k], tname);
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s reads an %s copy of the weights: with it "
                         "these %s weights would hold %zu bytes of copies, beyond the context's "
                         "cache_limit of %g x their %zu GGUF bytes", sname, k_copy_name[k], tname,
                         copies_held(cw, k) + cw->copy_bytes[k], ctx->params.cache_limit, cw->q_bytes);
    }
    if (needs_preparing(cctx(ctx), w, cw, s, n) && stream_capturing(cctx(ctx)))
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s: its first call on these %s weights %s, "
                         "which cannot happen while the stream is captured into a CUDA graph: run it "
                         "once on these weights before capturing", sname, tname,
                         k != QMM_CUDA_COPIES && !copy_made(cw, k)
                             ? (k == QMM_CUDA_COPY_F16 ? "makes their f16 copy"
                                : k == QMM_CUDA_COPY_FP8 ? "makes their fp8 copy" : "makes their int8 copy")
                             : "grows the context workspace");
    return QMM_OK;
}

/* Whether auto may take s for w now: not given up after running out of memory, the copy
 * allowed by the policy, and no lazy work during capture. */
static bool auto_may(const qmm_context *ctx, const qmm_weights *w, qmm_strategy s, int64_t n) {
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    const qmm_cuda_copy k = copy_of(w, cw, s, n);
    if (cw->auto_skip[s]) return false;
    if (k != QMM_CUDA_COPIES && !policy_allows(ctx, cw, k, true)) return false;
    return !(needs_preparing(cctx(ctx), w, cw, s, n) && stream_capturing(cctx(ctx)));
}

/* Whether fused can read the int8 repack of w now (half.cu): a type with a repacker on sm_80+,
 * and the repack held with room for its workspace, or both can be made now: the cache policy
 * lets auto make the int8 copy, the stream is not being captured, and making them did not run
 * out of memory before. Else fused runs the shared-memory kernel of fused.cu (same values of
 * W and X, same bound; the MMAs may round differently). */
static bool fused_repack_possible(const qmm_context *ctx, const qmm_weights *w, const qmm_cuda_weights *cw) {
    /* auto_skip[INT8]: making the int8 copy ran out of memory for auto before */
    return qmm_cuda_int8_has_type(w->type) && ctx_cc(ctx) >= 80 && !cw->fused_no_repack &&
           (copy_made(cw, QMM_CUDA_COPY_INT8) || !cw->auto_skip[QMM_STRATEGY_INT8]);
}

static bool fused_repack_ready(const qmm_context *ctx, const qmm_weights *w, const qmm_cuda_weights *cw) {
    return fused_repack_possible(ctx, w, cw) && copy_made(cw, QMM_CUDA_COPY_INT8) &&
           qmm_cuda_half_workspace_bytes(w->k) <= cctx(ctx)->workspace_bytes;
}

/* Whether the next fused call on w reads the repack (held, or made by that call). */
static bool fused_repack_planned(const qmm_context *ctx, const qmm_weights *w, const qmm_cuda_weights *cw) {
    return fused_repack_ready(ctx, w, cw) ||
           (fused_repack_possible(ctx, w, cw) && !stream_capturing(cctx(ctx)) &&
            policy_allows(ctx, cw, QMM_CUDA_COPY_INT8, true));
}

/* fused's lazy part: makes the workspace and the repack where fused_repack_planned says they
 * may be made; *repack tells which kernel runs. Out of memory is not an error here: this call
 * runs the shared-memory kernel; when the copy itself did not fit, every later one on these
 * weights too (and auto no longer tries int8 for them, which needs the same copy). */
static qmm_status fused_prepare_repack(const qmm_context *ctx, const qmm_weights *w, qmm_cuda_weights *cw,
                                       bool *repack) {
    qmm_cuda_context *c = cctx(ctx);
    *repack = fused_repack_ready(ctx, w, cw);
    if (*repack || !fused_repack_planned(ctx, w, cw)) return QMM_OK;
    qmm_status st = grow_workspace(c, qmm_cuda_half_workspace_bytes(w->k), "fused on the int8 repack");
    if (st == QMM_ERR_OUT_OF_MEMORY) {
        qmm_log(1, "cuda fused: %s; the shared-memory kernel runs this call", qmm_last_error());
        return QMM_OK;
    }
    if (st == QMM_OK && !copy_made(cw, QMM_CUDA_COPY_INT8)) {
        st = make_copy(c, w, cw, QMM_CUDA_COPY_INT8);
        if (st == QMM_ERR_OUT_OF_MEMORY) {
            qmm_log(1, "cuda fused: %s; keeping to the shared-memory kernel for these weights", qmm_last_error());
            cw->fused_no_repack = true;
            cw->auto_skip[QMM_STRATEGY_INT8] = true;
            return QMM_OK;
        }
    }
    *repack = st == QMM_OK;
    return st;
}

/* auto (the order: qmm_cuda_auto_row in cuda_internal.h; the thresholds: auto_table.c). */
static qmm_strategy resolve_auto(const qmm_context *ctx, const qmm_weights *w, int64_t n) {
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    if (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) return QMM_STRATEGY_GEMV; /* one path for every n */
    const qmm_cuda_auto_row a = qmm_cuda_auto_lookup(ctx_cc(ctx), (int)w->type);
    const bool blas_dims = w->m <= INT_MAX && w->k <= INT_MAX;
    if (n >= a.f16_min_n && blas_dims && cw->f16_fits && auto_may(ctx, w, QMM_STRATEGY_CACHED_F16, n))
        return QMM_STRATEGY_CACHED_F16;
    if (n >= a.fp8_min_n && ctx_cc(ctx) >= 89 && !cw->nonfinite && cw->m_pad <= INT_MAX &&
        cw->k_pad <= INT_MAX && auto_may(ctx, w, QMM_STRATEGY_FP8, n))
        return QMM_STRATEGY_FP8;
    /* gemv's bound: against int8 on the GGUF rows where that kernel would run, else against
     * fused and int8 on the repack */
    const bool rows_int8 = n <= QMM_CUDA_INT8_GEMV_N && ctx_cc(ctx) >= 80 &&
                           copy_of(w, cw, QMM_STRATEGY_INT8, n) == QMM_CUDA_COPIES &&
                           auto_may(ctx, w, QMM_STRATEGY_INT8, n);
    const int64_t gemv_work = rows_int8 ? a.gemv_rows_max_work : a.gemv_max_work;
    if (n <= a.gemv_max_n && (double)n * (double)w->m * (double)w->k <= (double)gemv_work)
        return QMM_STRATEGY_GEMV;
    if (n >= a.hgemm_min_n && cw->f16_fits && blas_dims && auto_may(ctx, w, QMM_STRATEGY_DEQUANT_HGEMM, n))
        return QMM_STRATEGY_DEQUANT_HGEMM;
    if (n >= a.fused_min_n && cw->f16_fits && fused_repack_planned(ctx, w, cw)) return QMM_STRATEGY_FUSED;
    if (n >= a.int8_min_n && qmm_cuda_int8_has_type(w->type) && ctx_cc(ctx) >= 80 &&
        auto_may(ctx, w, QMM_STRATEGY_INT8, n))
        return QMM_STRATEGY_INT8;
    if (n <= a.gemv_max_n) return QMM_STRATEGY_GEMV;
    if (cw->f16_fits) return QMM_STRATEGY_FUSED;
    if (ctx->params.cache == QMM_CACHE_UNLIMITED && blas_dims && auto_may(ctx, w, QMM_STRATEGY_DEQUANT_SGEMM, n))
        return QMM_STRATEGY_DEQUANT_SGEMM;
    return QMM_STRATEGY_GEMV;
}

/* *out = s if check_forced accepts it (out untouched otherwise). */
static qmm_status forced(const qmm_context *ctx, const qmm_weights *w, qmm_strategy s, int64_t n,
                         qmm_strategy *out) {
    const qmm_status st = check_forced(ctx, w, s, n);
    if (st == QMM_OK) *out = s;
    return st;
}

static qmm_status cuda_resolve(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                               qmm_strategy requested, qmm_strategy *out) {
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    const bool invariant = (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) != 0;
    const char *tname = qmm_type_name(w->type);
    switch (requested) {
    case QMM_STRATEGY_AUTO:
        *out = resolve_auto(ctx, w, n);
        return QMM_OK;
    case QMM_STRATEGY_GEMV:
        *out = requested;
        return QMM_OK;
    case QMM_STRATEGY_FUSED:
        if (!cw->f16_fits)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fused: these %s weights hold values "
                             "beyond the f16 range (|w| > 65504) or non-finite values", tname);
        *out = requested;
        return QMM_OK;
    case QMM_STRATEGY_DEQUANT_SGEMM:
    case QMM_STRATEGY_CACHED_F16:
    case QMM_STRATEGY_DEQUANT_HGEMM:
        if (invariant)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s is not batch-invariant on CUDA "
                             "(cuBLAS picks its kernel by n); use gemv or fused",
                             qmm_strategy_name(requested));
        if (w->m > INT_MAX || w->k > INT_MAX)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s: m (%lld) or k (%lld) exceeds "
                             "cuBLAS's int range", qmm_strategy_name(requested), (long long)w->m,
                             (long long)w->k);
        if (requested != QMM_STRATEGY_DEQUANT_SGEMM && !cw->f16_fits)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s: these %s weights hold values beyond "
                             "the f16 range (|w| > 65504) or non-finite values",
                             qmm_strategy_name(requested), tname);
        return forced(ctx, w, requested, n, out);
    case QMM_STRATEGY_REF:
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy ref runs on the CPU backend only");
    case QMM_STRATEGY_FP8:
        if (ctx_cc(ctx) < 89)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fp8 needs an sm_89 or newer GPU (E4M3 "
                             "matmul); this device is sm_%d", ctx_cc(ctx));
        if (invariant)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fp8 is not batch-invariant (X scales "
                             "per token, cuBLASLt picks its kernel by n); use gemv or fused");
        if (cw->nonfinite)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fp8: these %s weights hold non-finite "
                             "values", tname);
        if (cw->m_pad > INT_MAX || cw->k_pad > INT_MAX)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fp8: m (%lld) or k (%lld) exceeds "
                             "cuBLASLt's int range", (long long)w->m, (long long)w->k);
        return forced(ctx, w, requested, n, out);
    case QMM_STRATEGY_INT8: /* batch-invariant: allowed with the flag */
        if (!qmm_cuda_int8_has_type(w->type))
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy int8: the CUDA int8 strategy has no "
                             "repacker for %s weights (it repacks the legacy and K-quant types, whose "
                             "values are integer quants times a sub-block scale: q4_0, q4_1, q5_0, "
                             "q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K); use gemv, fused or cached_f16",
                             tname);
        if (ctx_cc(ctx) < 80)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy int8 needs an sm_80 or newer GPU "
                             "(integer mma.sync); this device is sm_%d", ctx_cc(ctx));
        return forced(ctx, w, requested, n, out);
    default:
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown strategy %d", (int)requested);
    }
}

/* ---------------------------------------------------------------------------------------
 * Matmul
 * ------------------------------------------------------------------------------------- */

/* x and y must be device-accessible memory of the context's device. */
static qmm_status check_pointer(const qmm_cuda_context *c, const void *p, const char *name) {
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the error this query leaves behind */
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: %s (%p) is not CUDA memory (%s)",
                         name, p, cudaGetErrorString(e));
    }
    if (a.type == cudaMemoryTypeUnregistered || a.devicePointer == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: %s (%p) is host memory; the CUDA "
                         "backend takes device pointers", name, p);
    if (a.type == cudaMemoryTypeDevice && a.device != c->device)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: %s (%p) is on device %d, the "
                         "context on device %d", name, p, a.device, c->device);
    return QMM_OK;
}

static qmm_status matmul_sgemm(qmm_cuda_context *c, const qmm_weights *w, const qmm_cuda_weights *cw,
                               int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy) {
    const float one = 1.0f, zero = 0.0f;
    float *wf = (float *)c->workspace;
    CU(qmm_cuda_dequantize(w->type, cw->q, w->row_bytes, w->m, w->k, wf, c->stream), "dequantize kernel");
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int nc = (int)(n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK);
        /* Column-major view: Y^T (m x nc, ld ldy) = W' ^T (m x k) * X^T (k x nc, ld ldx). */
        CB(cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)w->m, nc, (int)w->k, &one,
                        wf, CUDA_R_32F, (int)w->k, x + t0 * ldx, CUDA_R_32F, (int)ldx, &zero,
                        y + t0 * ldy, CUDA_R_32F, (int)ldy, CUBLAS_COMPUTE_32F_PEDANTIC,
                        CUBLAS_GEMM_DEFAULT),
           "cublasGemmEx(f32, pedantic)");
    }
    return QMM_OK;
}

static qmm_status matmul_cached_f16(qmm_cuda_context *c, const qmm_weights *w, const qmm_cuda_weights *cw,
                                    int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy) {
    const float one = 1.0f, zero = 0.0f;
    uint16_t *x16 = (uint16_t *)c->workspace; /* QMM_CUDA_X_CHUNK x k halves */
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int nc = (int)(n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK);
        CU(qmm_cuda_x_to_f16(x + t0 * ldx, nc, w->k, ldx, x16, c->stream), "x to f16 kernel");
        CB(cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)w->m, nc, (int)w->k, &one,
                        cw->w16, CUDA_R_16F, (int)w->k, x16, CUDA_R_16F, (int)w->k, &zero,
                        y + t0 * ldy, CUDA_R_32F, (int)ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
           "cublasGemmEx(f16 in, f32 compute)");
    }
    return QMM_OK;
}

/* Per call: X chunk to f16, W (or a chunk of its rows, hgemm_rows) dequantized to f16 into the
 * workspace, cublasGemmEx as cached_f16 on those rows. The halves of W are those of the f16
 * copy (qmm_cuda_dequantize_f16), so the operands equal cached_f16's; the copy is never kept:
 * the weights hold their GGUF bytes only. One chunk (W within QMM_CUDA_STAGING_BYTES):
 * dequantized once per call, whatever n. */
static qmm_status matmul_dequant_hgemm(qmm_cuda_context *c, const qmm_weights *w, const qmm_cuda_weights *cw,
                                       int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy) {
    const float one = 1.0f, zero = 0.0f;
    uint16_t *x16 = (uint16_t *)c->workspace;
    uint16_t *w16 = (uint16_t *)((char *)c->workspace + hgemm_x_bytes(w));
    const int64_t rows = hgemm_rows(w);
    const bool one_chunk = rows >= w->m;
    if (one_chunk)
        CU(qmm_cuda_dequantize_f16(w->type, cw->q, w->row_bytes, w->m, w->k, w16, c->stream),
           "dequantize to f16 kernel");
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int nc = (int)(n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK);
        CU(qmm_cuda_x_to_f16(x + t0 * ldx, nc, w->k, ldx, x16, c->stream), "x to f16 kernel");
        for (int64_t r0 = 0; r0 < w->m; r0 += rows) {
            const int rc = (int)(w->m - r0 < rows ? w->m - r0 : rows);
            if (!one_chunk)
                CU(qmm_cuda_dequantize_f16(w->type, cw->q + (size_t)r0 * w->row_bytes, w->row_bytes, rc, w->k,
                                           w16, c->stream), "dequantize to f16 kernel");
            /* Column-major view: Y^T rows r0.. (rc x nc, ld ldy) = W16^T (rc x k) * X16^T */
            CB(cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, rc, nc, (int)w->k, &one, w16, CUDA_R_16F,
                            (int)w->k, x16, CUDA_R_16F, (int)w->k, &zero, y + t0 * ldy + r0, CUDA_R_32F,
                            (int)ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx(f16 in, f32 compute)");
        }
    }
    return QMM_OK;
}

static void fp8_plan_clear(qmm_cuda_fp8_plan *p) {
    if (p->ld) cublasLtMatrixLayoutDestroy(p->ld);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    memset(p, 0, sizeof *p);
}

/* Release every cached fp8 plan and the descriptor of context c. */
static void fp8_plans_release(qmm_cuda_context *c) {
    for (int i = 0; i < QMM_CUDA_FP8_PLANS; i++) fp8_plan_clear(&c->fp8_plans[i]);
    if (c->fp8_desc) cublasLtMatmulDescDestroy(c->fp8_desc);
    c->fp8_desc = NULL;
}

/* The descriptor, layouts and algorithm of the fp8 matmul for (m_pad, k_pad, n_pad), from the
 * context's cache or made now (host-side cuBLASLt calls only: no device work, capture-safe).
 * Column-major view: D (m_pad x n_pad, ld m_pad) = A^T (A: k_pad x m_pad = W8) * B (k_pad x
 * n_pad = X8), E4M3 inputs, f32 compute and output. */
static qmm_status fp8_plan(qmm_cuda_context *c, int64_t m_pad, int64_t k_pad, int64_t n_pad,
                           const qmm_cuda_fp8_plan **out) {
    for (int i = 0; i < QMM_CUDA_FP8_PLANS; i++) {
        const qmm_cuda_fp8_plan *p = &c->fp8_plans[i];
        if (p->m_pad == m_pad && p->k_pad == k_pad && p->n_pad == n_pad) {
            *out = p;
            return QMM_OK;
        }
    }
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    if (c->fp8_desc == NULL) {
        s = cublasLtMatmulDescCreate(&c->fp8_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasLtMatmulDescSetAttribute(c->fp8_desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t);
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasLtMatmulDescSetAttribute(c->fp8_desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n);
        if (s != CUBLAS_STATUS_SUCCESS) {
            if (c->fp8_desc) cublasLtMatmulDescDestroy(c->fp8_desc);
            c->fp8_desc = NULL;
            return cublas_fail(s, "cublasLtMatmulDescCreate(E4M3 x E4M3, f32 out)");
        }
    }
    qmm_cuda_fp8_plan *p = &c->fp8_plans[c->fp8_next];
    c->fp8_next = (c->fp8_next + 1) % QMM_CUDA_FP8_PLANS;
    fp8_plan_clear(p);
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    const uint64_t ws = QMM_CUDA_CUBLAS_WORKSPACE;
    s = cublasLtMatrixLayoutCreate(&p->la, CUDA_R_8F_E4M3, (uint64_t)k_pad, (uint64_t)m_pad, k_pad);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_8F_E4M3, (uint64_t)k_pad, (uint64_t)n_pad, k_pad);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&p->ld, CUDA_R_32F, (uint64_t)m_pad, (uint64_t)n_pad, m_pad);
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS) {
        /* Prefer algorithms without in-place (output-buffer) split-k reduction. */
        const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask);
    }
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(c->lt, c->fp8_desc, p->la, p->lb, p->ld, p->ld, pref, 1, &heur, &found);
    if (s == CUBLAS_STATUS_SUCCESS && found == 0) { /* none without it: allow every scheme */
        const uint32_t all = CUBLASLT_REDUCTION_SCHEME_MASK;
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &all, sizeof all);
        if (s == CUBLAS_STATUS_SUCCESS)
            s = cublasLtMatmulAlgoGetHeuristic(c->lt, c->fp8_desc, p->la, p->lb, p->ld, p->ld, pref, 1, &heur, &found);
    }
    if (s == CUBLAS_STATUS_SUCCESS && found == 0) s = CUBLAS_STATUS_NOT_SUPPORTED;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) {
        fp8_plan_clear(p);
        return cublas_fail(s, "cublasLtMatmulAlgoGetHeuristic(E4M3 x E4M3, f32 out)");
    }
    p->algo = heur.algo;
    p->m_pad = m_pad;
    p->k_pad = k_pad;
    p->n_pad = n_pad;
    *out = p;
    return QMM_OK;
}

/* fp8: X rows -> E4M3 with per-token scales (padding rows zeroed), cuBLASLt E4M3 x E4M3 with
 * f32 accumulation and f32 output into the workspace, then the epilogue applies both scales. */
static qmm_status matmul_fp8(qmm_cuda_context *c, const qmm_weights *w, const qmm_cuda_weights *cw,
                             int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy) {
    uint8_t *base = (uint8_t *)c->workspace;
    float *prod = (float *)base;
    uint8_t *x8 = base + QMM_CUDA_ALIGN256((size_t)cw->m_pad * QMM_CUDA_X_CHUNK * sizeof(float));
    float *sx = (float *)(x8 + QMM_CUDA_ALIGN256((size_t)QMM_CUDA_X_CHUNK * (size_t)cw->k_pad));
    const float one = 1.0f, zero = 0.0f;
    for (int64_t t0 = 0; t0 < n; t0 += QMM_CUDA_X_CHUNK) {
        const int64_t nc = n - t0 < QMM_CUDA_X_CHUNK ? n - t0 : QMM_CUDA_X_CHUNK;
        const int64_t n_pad = (nc + 15) / 16 * 16;
        const qmm_cuda_fp8_plan *p = NULL;
        qmm_status st = fp8_plan(c, cw->m_pad, cw->k_pad, n_pad, &p);
        if (st != QMM_OK) return st;
        CU(qmm_cuda_fp8_rows(x + t0 * ldx, nc, n_pad, w->k, ldx, cw->k_pad, x8, sx, NULL, c->stream),
           "fp8 activations kernel");
        CB(cublasLtMatmul(c->lt, c->fp8_desc, &one, cw->w8, p->la, x8, p->lb, &zero, prod, p->ld, prod,
                          p->ld, &p->algo, c->cublas_workspace, QMM_CUDA_CUBLAS_WORKSPACE, c->stream),
           "cublasLtMatmul(E4M3 x E4M3, f32 out)");
        CU(qmm_cuda_fp8_epilogue(prod, cw->m_pad, cw->w8_scale, sx, w->m, nc, y + t0 * ldy, ldy, c->stream),
           "fp8 epilogue kernel");
    }
    return QMM_OK;
}

/* The cuBLAS strategies take int leading dimensions. */
static bool blas_ld_too_large(qmm_strategy s, int64_t ldx, int64_t ldy) {
    return (s == QMM_STRATEGY_DEQUANT_SGEMM || s == QMM_STRATEGY_CACHED_F16 || s == QMM_STRATEGY_DEQUANT_HGEMM) &&
           (ldx > INT_MAX || ldy > INT_MAX);
}

static qmm_status blas_ld_error(qmm_strategy s, int64_t ldx, int64_t ldy) {
    return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s: ldx (%lld) or ldy (%lld) exceeds cuBLAS's "
                     "int range", qmm_strategy_name(s), (long long)ldx, (long long)ldy);
}

static qmm_status cuda_matmul(qmm_context *ctx, const qmm_weights *w, qmm_strategy s, int64_t n,
                              const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cuda_context *c = cctx(ctx);
    /* The weights' record gets the copies made on first use (see "Lazy copies"). */
    qmm_cuda_weights *cw = (qmm_cuda_weights *)w->backend;
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    qmm_status st = check_pointer(c, x, "x");
    if (st == QMM_OK) st = check_pointer(c, y, "y");
    if (st != QMM_OK) return st;
    if (blas_ld_too_large(s, ldx, ldy)) return blas_ld_error(s, ldx, ldy);
    if (stream_capturing(c)) c->captured = true; /* its workspace may be read by a graph */
    st = prepare(c, w, cw, s, n);
    /* auto, out of device memory preparing its choice: the next choice, and this one never
     * again for these weights (each round marks one more strategy) */
    for (int round = 0; st == QMM_ERR_OUT_OF_MEMORY && ctx->params.strategy == QMM_STRATEGY_AUTO &&
                        round < QMM_STRATEGY_COUNT; round++) {
        qmm_log(1, "cuda auto: %s for %s %lldx%lld: %s; taking the next choice", qmm_strategy_name(s),
                qmm_type_name(w->type), (long long)w->m, (long long)w->k, qmm_last_error());
        cw->auto_skip[s] = true;
        st = cuda_resolve(ctx, w, n, QMM_STRATEGY_AUTO, &s);
        if (st == QMM_OK) st = prepare(c, w, cw, s, n);
    }
    if (st != QMM_OK) return st;
    if (blas_ld_too_large(s, ldx, ldy)) return blas_ld_error(s, ldx, ldy); /* auto's next choice */
    switch (s) {
    case QMM_STRATEGY_GEMV:
        CU(qmm_cuda_gemv(w->type, cw->q, w->row_bytes, w->m, w->k, n, x, ldx, y, ldy, c->stream),
           "gemv kernel");
        return QMM_OK;
    case QMM_STRATEGY_FUSED: {
        bool repack = false;
        st = fused_prepare_repack(ctx, w, cw, &repack);
        if (st != QMM_OK) return st;
        if (repack)
            CU(qmm_cuda_half_matmul(w->type, cw->i8_q, cw->i8_d, cw->i8_mn, w->m, w->k, n, x, ldx, y, ldy,
                                    (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) != 0, c->workspace,
                                    c->stream), "fused kernel (int8 repack)");
        else
            CU(qmm_cuda_fused(w->type, cw->q, w->row_bytes, w->m, w->k, n, x, ldx, y, ldy, c->stream),
               "fused kernel");
        return QMM_OK;
    }
    case QMM_STRATEGY_DEQUANT_SGEMM:
        return matmul_sgemm(c, w, cw, n, x, ldx, y, ldy);
    case QMM_STRATEGY_CACHED_F16:
        return matmul_cached_f16(c, w, cw, n, x, ldx, y, ldy);
    case QMM_STRATEGY_DEQUANT_HGEMM:
        return matmul_dequant_hgemm(c, w, cw, n, x, ldx, y, ldy);
    case QMM_STRATEGY_FP8:
        return matmul_fp8(c, w, cw, n, x, ldx, y, ldy);
    case QMM_STRATEGY_INT8:
        CU(qmm_cuda_int8_matmul(w->type, cw->q, w->row_bytes, cw->i8_q, cw->i8_d, cw->i8_mn, w->m, w->k, n, x,
                                ldx, y, ldy, c->workspace, c->stream), "int8 kernels");
        return QMM_OK;
    default:
        return qmm_error(QMM_ERR_INTERNAL, "CUDA matmul: strategy %s reached the backend unresolved",
                         qmm_strategy_name(s));
    }
}

/* ---------------------------------------------------------------------------------------
 * Buffers, ordering, timing
 * ------------------------------------------------------------------------------------- */

static qmm_status cuda_buffer_alloc(qmm_context *ctx, size_t bytes, void **out) {
    CU(cudaSetDevice(cctx(ctx)->device), "cudaSetDevice");
    void *p = NULL;
    CU(cudaMalloc(&p, bytes), "cudaMalloc(buffer)");
    *out = p;
    return QMM_OK;
}

static void cuda_buffer_free(qmm_context *ctx, void *buf) {
    cudaSetDevice(cctx(ctx)->device);
    cudaStreamSynchronize(cctx(ctx)->stream);
    cudaFree(buf);
}

static qmm_status cuda_upload(qmm_context *ctx, void *dst, const void *src_host, size_t bytes) {
    qmm_cuda_context *c = cctx(ctx);
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    CU(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, c->stream), "cudaMemcpyAsync(upload)");
    CU(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    return QMM_OK;
}

static qmm_status cuda_download(qmm_context *ctx, void *dst_host, const void *src, size_t bytes) {
    qmm_cuda_context *c = cctx(ctx);
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    CU(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync(download)");
    CU(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    return QMM_OK;
}

static qmm_status cuda_synchronize(qmm_context *ctx) {
    CU(cudaSetDevice(cctx(ctx)->device), "cudaSetDevice");
    CU(cudaStreamSynchronize(cctx(ctx)->stream), "cudaStreamSynchronize");
    return QMM_OK;
}

static qmm_status cuda_timer_begin(qmm_context *ctx) {
    qmm_cuda_context *c = cctx(ctx);
    CU(cudaEventRecord(c->timer_start, c->stream), "cudaEventRecord");
    c->timer_started = true;
    return QMM_OK;
}

static qmm_status cuda_timer_end(qmm_context *ctx, double *ms) {
    qmm_cuda_context *c = cctx(ctx);
    if (!c->timer_started)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_timer_end: no qmm_timer_begin before it");
    c->timer_started = false;
    CU(cudaEventRecord(c->timer_stop, c->stream), "cudaEventRecord");
    CU(cudaEventSynchronize(c->timer_stop), "cudaEventSynchronize");
    float f = 0.0f;
    CU(cudaEventElapsedTime(&f, c->timer_start, c->timer_stop), "cudaEventElapsedTime");
    *ms = (double)f;
    return QMM_OK;
}

/* Dense per-SM, per-clock FLOP rates (an FMA counts 2) by precision class, for sm_90 (Hopper):
 * FP32 cores 256, f16 tensor cores 4096, int8 / fp8 tensor cores 8192 — the H100 SXM
 * datasheet's dense peaks (67 / 989 / 1979 / 1979 TFLOP/s) divided by 132 SMs x 1830 MHz. */
static const double k_sm90_flops_per_clk[4] = {256.0, 4096.0, 8192.0, 8192.0};

static qmm_status cuda_device_info(qmm_context *ctx, qmm_device_info *out) {
    qmm_cuda_context *c = cctx(ctx);
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, c->device), "cudaGetDeviceProperties");
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    int v = 0;
    CU(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, c->device), "cudaDeviceGetAttribute");
    out->sm_count = v;
    out->compute_capability = c->cc;
    CU(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, c->device), "cudaDeviceGetAttribute");
    out->sm_clock_mhz = v / 1000.0;
    CU(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, c->device), "cudaDeviceGetAttribute");
    out->mem_clock_mhz = v / 1000.0;
    CU(cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, c->device), "cudaDeviceGetAttribute");
    out->mem_bus_bits = v;
    CU(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, c->device), "cudaDeviceGetAttribute");
    out->l2_bytes = v;
    out->mem_bytes = (long long)prop.totalGlobalMem;
    for (int i = 0; i < 4; i++)
        out->peak_tflops[i] = c->cc == 90 ? out->sm_count * out->sm_clock_mhz * 1e6 *
                                                k_sm90_flops_per_clk[i] / 1e12
                                          : 0.0;
    /* Copy bandwidth: 1 GiB device to device, 1 warm-up + 5 timed copies between events. */
    const size_t bytes = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaError_t e = cudaMalloc(&a, bytes);
    if (e == cudaSuccess) e = cudaMalloc(&b, bytes);
    if (e == cudaSuccess) e = cudaEventCreate(&e0);
    if (e == cudaSuccess) e = cudaEventCreate(&e1);
    if (e == cudaSuccess) e = cudaMemsetAsync(a, 1, bytes, c->stream);
    if (e == cudaSuccess) e = cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, c->stream);
    if (e == cudaSuccess) e = cudaEventRecord(e0, c->stream);
    for (int i = 0; i < 5 && e == cudaSuccess; i++)
        e = cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, c->stream);
    if (e == cudaSuccess) e = cudaEventRecord(e1, c->stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(e1);
    float ms = 0.0f;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, e0, e1);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    if (e != cudaSuccess) return cuda_fail(e, "copy bandwidth measurement");
    out->copy_gbps = ms > 0.0f ? 5.0 * 2.0 * (double)bytes / (ms * 1e6) : 0.0;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * Graphs (qmm_graph_begin / _end / _replay)
 * ------------------------------------------------------------------------------------- */

static void graph_drop(qmm_cuda_context *c) {
    if (c->graph_exec) cudaGraphExecDestroy(c->graph_exec);
    if (c->graph) cudaGraphDestroy(c->graph);
    c->graph_exec = NULL;
    c->graph = NULL;
}

static qmm_status cuda_graph_begin(qmm_context *ctx) {
    qmm_cuda_context *c = cctx(ctx);
    if (c->graph_capturing)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_graph_begin: a capture begun by qmm_graph_begin "
                         "is still open (end it with qmm_graph_end)");
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    if (c->graph_start == NULL) CU(cudaEventCreate(&c->graph_start), "cudaEventCreate");
    if (c->graph_stop == NULL) CU(cudaEventCreate(&c->graph_stop), "cudaEventCreate");
    graph_drop(c);
    /* thread-local: other threads' CUDA calls (other contexts) do not break this capture */
    CU(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    c->graph_capturing = true;
    return QMM_OK;
}

static qmm_status cuda_graph_end(qmm_context *ctx) {
    qmm_cuda_context *c = cctx(ctx);
    if (!c->graph_capturing)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_graph_end: no capture begun by qmm_graph_begin");
    c->graph_capturing = false;
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &g);
    if (e == cudaSuccess && g == NULL) e = cudaErrorStreamCaptureInvalidated;
    cudaGraphExec_t exec = NULL;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, g, 0);
    if (e != cudaSuccess) {
        if (g) cudaGraphDestroy(g);
        return cuda_fail(e, "ending the graph capture (cudaStreamEndCapture / cudaGraphInstantiate)");
    }
    c->graph = g;
    c->graph_exec = exec;
    return QMM_OK;
}

static qmm_status cuda_graph_replay(qmm_context *ctx, int64_t times, double *ms) {
    qmm_cuda_context *c = cctx(ctx);
    if (c->graph_capturing || c->graph_exec == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_graph_replay: %s", c->graph_capturing
                         ? "the capture is still open (qmm_graph_end first)"
                         : "no graph (qmm_graph_begin, the calls, qmm_graph_end first)");
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    CU(cudaEventRecord(c->graph_start, c->stream), "cudaEventRecord");
    for (int64_t i = 0; i < times; i++) CU(cudaGraphLaunch(c->graph_exec, c->stream), "cudaGraphLaunch");
    CU(cudaEventRecord(c->graph_stop, c->stream), "cudaEventRecord");
    CU(cudaEventSynchronize(c->graph_stop), "cudaEventSynchronize");
    float f = 0.0f;
    CU(cudaEventElapsedTime(&f, c->graph_start, c->graph_stop), "cudaEventElapsedTime");
    *ms = (double)f;
    return QMM_OK;
}

/* Kernel names and precision classes of the CUDA strategies (docs/CUDA.md). */
static qmm_status cuda_describe(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                                qmm_strategy resolved, const char **kernel,
                                qmm_precision *precision) {
    switch (resolved) {
    case QMM_STRATEGY_GEMV: *kernel = "gemv_cuda"; *precision = QMM_PRECISION_F32; break;
    case QMM_STRATEGY_DEQUANT_SGEMM: *kernel = "dequant_cublas_sgemm"; *precision = QMM_PRECISION_F32; break;
    case QMM_STRATEGY_CACHED_F16: *kernel = "cached_f16_cublas"; *precision = QMM_PRECISION_HALF; break;
    case QMM_STRATEGY_DEQUANT_HGEMM: *kernel = "dequant_f16_cublas"; *precision = QMM_PRECISION_HALF; break;
    case QMM_STRATEGY_FUSED:
        *kernel = fused_repack_planned(ctx, w, (const qmm_cuda_weights *)w->backend) ? "fused_repack_mma_f16"
                                                                                     : "fused_mma_f16";
        *precision = QMM_PRECISION_HALF;
        break;
    case QMM_STRATEGY_FP8: *kernel = "fp8_cublaslt"; *precision = QMM_PRECISION_FP8; break;
    case QMM_STRATEGY_INT8:
        *kernel = copy_of(w, (const qmm_cuda_weights *)w->backend, resolved, n) == QMM_CUDA_COPIES
                      ? "int8_gguf_dp4a"
                      : "int8_repack_mma";
        *precision = QMM_PRECISION_INT8;
        break;
    default:
        return qmm_error(QMM_ERR_INTERNAL, "CUDA describe: strategy %d is not resolved", (int)resolved);
    }
    return QMM_OK;
}

static const qmm_backend_ops cuda_ops = {
    .name = "cuda",
    .context_init = cuda_context_init,
    .context_release = cuda_context_release,
    .weights_init = cuda_weights_init,
    .weights_release = cuda_weights_release,
    .resolve = cuda_resolve,
    .describe = cuda_describe,
    .matmul = cuda_matmul,
    .buffer_alloc = cuda_buffer_alloc,
    .buffer_free = cuda_buffer_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .synchronize = cuda_synchronize,
    .timer_begin = cuda_timer_begin,
    .timer_end = cuda_timer_end,
    .device_info = cuda_device_info,
    .weights_memory = cuda_weights_memory,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .graph_replay = cuda_graph_replay,
};

const qmm_backend_ops *qmm_cuda_backend_ops(void) { return &cuda_ops; }
