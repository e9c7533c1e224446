/*
 * backend.c — the CUDA backend: context (device, stream, cuBLAS handle, workspaces), weights
 * (upload, f16 cache), strategy resolution and the matmul strategies that call cuBLAS.
 *
 * Rules kept here (docs/CUDA.md): all work is ordered on the context's stream; qmm_matmul
 * allocates nothing, never synchronizes the host and copies nothing between host and device,
 * so it can be captured in a CUDA graph; every CUDA/cuBLAS status is checked and returned as
 * QMM_ERR_BACKEND with the library's error text.
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
    cudaFree(c->flag);
    if (c->timer_start) cudaEventDestroy(c->timer_start);
    if (c->timer_stop) cudaEventDestroy(c->timer_stop);
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

/* Grow the context workspace to `bytes` (weights creation only: synchronizes the stream). */
static qmm_status grow_workspace(qmm_cuda_context *c, size_t bytes) {
    if (bytes <= c->workspace_bytes) return QMM_OK;
    CU(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    cudaFree(c->workspace);
    c->workspace = NULL;
    c->workspace_bytes = 0;
    CU(cudaMalloc(&c->workspace, bytes), "cudaMalloc(workspace)");
    c->workspace_bytes = bytes;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * Weights
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

/* cudaMalloc for an optional copy of W: out of device memory leaves *p NULL and sets *oom
 * (the error is cleared, weights creation goes on without the copy); other errors fail. */
static qmm_status alloc_optional(void **p, size_t bytes, bool *oom, const char *what) {
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        *p = NULL;
        *oom = true;
        return QMM_OK;
    }
    if (e != cudaSuccess) return cuda_fail(e, what);
    return QMM_OK;
}

/* Dequantize W once (into the workspace, where build_fp8 reads it), check that every value
 * fits f16 and keep the f16 copy when it does and the device has the memory (else w16 = NULL). */
static qmm_status build_f16_cache(qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw) {
    size_t elems = (size_t)w->m * (size_t)w->k;
    qmm_status st = alloc_optional((void **)&cw->w16, elems * sizeof(uint16_t), &cw->w16_oom,
                                   "cudaMalloc(f16 weights)");
    if (st != QMM_OK) return st;
    CU(cudaMemsetAsync(c->flag, 0, sizeof(int), c->stream), "cudaMemsetAsync");
    CU(qmm_cuda_dequantize(w->type, cw->q, w->row_bytes, w->m, w->k, (float *)c->workspace, c->stream),
       "dequantize kernel");
    CU(qmm_cuda_f32_to_f16((const float *)c->workspace, (int64_t)elems, cw->w16, c->flag, c->stream),
       "f32 to f16 kernel");
    int flag = 0;
    CU(cudaMemcpyAsync(&flag, c->flag, sizeof(int), cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync");
    CU(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    cw->f16_fits = (flag == 0);
    if (!cw->f16_fits) {
        cudaFree(cw->w16);
        cw->w16 = NULL;
    }
    return QMM_OK;
}

/* fp8 (sm_89+): the f32 W in the workspace (left there by build_f16_cache) quantized per row to
 * E4M3, m_pad x k_pad with zero padding. Non-finite W: no fp8 copy (w8 = NULL). */
static qmm_status build_fp8(qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw) {
    if (c->cc < 89) return QMM_OK;
    qmm_status st = alloc_optional((void **)&cw->w8, (size_t)cw->m_pad * (size_t)cw->k_pad,
                                   &cw->w8_oom, "cudaMalloc(fp8 weights)");
    if (st == QMM_OK && cw->w8 != NULL)
        st = alloc_optional((void **)&cw->w8_scale, (size_t)cw->m_pad * sizeof(float), &cw->w8_oom,
                            "cudaMalloc(fp8 scales)");
    if (st != QMM_OK || cw->w8_oom) {
        cudaFree(cw->w8);
        cw->w8 = NULL;
        return st;
    }
    CU(cudaMemsetAsync(c->flag, 0, sizeof(int), c->stream), "cudaMemsetAsync");
    CU(qmm_cuda_fp8_rows((const float *)c->workspace, w->m, cw->m_pad, w->k, w->k, cw->k_pad, cw->w8,
                         cw->w8_scale, c->flag, c->stream), "fp8 weights kernel");
    int flag = 0;
    CU(cudaMemcpyAsync(&flag, c->flag, sizeof(int), cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync");
    CU(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    if (flag != 0) {
        cudaFree(cw->w8);
        cudaFree(cw->w8_scale);
        cw->w8 = NULL;
        cw->w8_scale = NULL;
    }
    return QMM_OK;
}

/* int8 (int8.cu): W repacked to int8 quants with per-sub-block scales (and mins), from the
 * device copy q; nothing for f32/f16/bf16. Out of device memory: no copy, i8_oom set. */
static qmm_status build_int8(qmm_cuda_context *c, const qmm_weights *w, qmm_cuda_weights *cw) {
    if (!qmm_cuda_int8_has_type(w->type)) return QMM_OK;
    const int64_t m8 = qmm_cuda_int8_pad(w->m), k8 = qmm_cuda_int8_pad(w->k);
    size_t qb, sb;
    if (!qmm_mul_size((size_t)m8, (size_t)k8, &qb) ||
        !qmm_mul_size((size_t)m8 * sizeof(float), (size_t)(k8 / qmm_cuda_int8_sub_block(w->type)), &sb))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "int8 copy of weights m=%lld, k=%lld overflows size_t",
                         (long long)w->m, (long long)w->k);
    qb = qmm_cuda_int8_quant_bytes(w->type, m8, k8); /* <= m8 * k8: nibble types half */
    qmm_status st = alloc_optional((void **)&cw->i8_q, qb, &cw->i8_oom, "cudaMalloc(int8 weights)");
    if (st == QMM_OK && !cw->i8_oom)
        st = alloc_optional((void **)&cw->i8_d, sb, &cw->i8_oom, "cudaMalloc(int8 scales)");
    if (st == QMM_OK && !cw->i8_oom && qmm_cuda_int8_has_min(w->type))
        st = alloc_optional((void **)&cw->i8_mn, sb, &cw->i8_oom, "cudaMalloc(int8 mins)");
    if (st != QMM_OK || cw->i8_oom) {
        cudaFree(cw->i8_q);
        cudaFree(cw->i8_d);
        cw->i8_q = NULL;
        cw->i8_d = NULL;
        return st;
    }
    CU(qmm_cuda_int8_pack(w->type, cw->q, w->row_bytes, w->m, w->k, m8, k8, cw->i8_q, cw->i8_d,
                          cw->i8_mn, c->stream), "int8 repack kernel");
    return QMM_OK;
}

#define QMM_CUDA_ALIGN256(x) (((x) + 255u) & ~(size_t)255u)

/* fp8 workspace of one weights: [product f32, m_pad x X_CHUNK | X in E4M3, X_CHUNK x k_pad |
 * X scales, X_CHUNK floats]. */
static size_t fp8_workspace_bytes(const qmm_cuda_weights *cw) {
    return QMM_CUDA_ALIGN256((size_t)cw->m_pad * QMM_CUDA_X_CHUNK * sizeof(float)) +
           QMM_CUDA_ALIGN256((size_t)QMM_CUDA_X_CHUNK * (size_t)cw->k_pad) + QMM_CUDA_X_CHUNK * sizeof(float);
}

static qmm_status weights_setup(qmm_cuda_context *c, qmm_weights *w, qmm_cuda_weights *cw,
                                const void *data, size_t row_stride) {
    size_t total, wf32, xf16;
    if (!qmm_mul_size((size_t)w->m, w->row_bytes, &total) ||
        !qmm_mul_size((size_t)w->m * sizeof(float), (size_t)w->k, &wf32) ||
        !qmm_mul_size((size_t)QMM_CUDA_X_CHUNK * sizeof(uint16_t), (size_t)w->k, &xf16))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "weights of m=%lld, k=%lld overflow size_t",
                         (long long)w->m, (long long)w->k);
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    CU(cudaMalloc((void **)&cw->q, total), "cudaMalloc(weights)");
    CU(cudaMemcpy2DAsync(cw->q, w->row_bytes, data, row_stride, w->row_bytes, (size_t)w->m,
                         cudaMemcpyHostToDevice, c->stream), "cudaMemcpy2DAsync(weights)");
    cw->m_pad = (w->m + 15) / 16 * 16;
    cw->k_pad = (w->k + 15) / 16 * 16;
    size_t need = wf32 > xf16 ? wf32 : xf16;
    if (c->cc >= 89 && fp8_workspace_bytes(cw) > need) need = fp8_workspace_bytes(cw);
    if (qmm_cuda_int8_has_type(w->type) && qmm_cuda_int8_workspace_bytes(w->k) > need)
        need = qmm_cuda_int8_workspace_bytes(w->k);
    qmm_status st = grow_workspace(c, need);
    if (st != QMM_OK) return st;
    st = build_f16_cache(c, w, cw); /* ends with a stream sync: `data` is no longer read */
    if (st != QMM_OK) return st;
    st = build_fp8(c, w, cw);
    if (st != QMM_OK) return st;
    return build_int8(c, w, cw);
}

static qmm_status cuda_weights_init(qmm_context *ctx, qmm_weights *w, const void *data, size_t row_stride) {
    /* Every kernel reads the type's device descriptor (dequant.cuh): it must exist and agree
     * with the type table (a unit-codec type's block size is also QMM_QK_<name>, blocks.h). */
    if (!qmm_cuda_type_check(w->type, qmm_type_block_size(w->type), qmm_type_block_bytes(w->type)))
        return qmm_error(QMM_ERR_INTERNAL, "CUDA backend: no device descriptor for type %s, or its "
                         "block size / bytes differ from the type table's (%lld elements, %zu bytes)",
                         qmm_type_name(w->type), (long long)qmm_type_block_size(w->type),
                         qmm_type_block_bytes(w->type));
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

/* ---------------------------------------------------------------------------------------
 * Strategy resolution
 * ------------------------------------------------------------------------------------- */

static int ctx_cc(const qmm_context *ctx) { return cctx(ctx)->cc; }

static qmm_status cuda_resolve(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                               qmm_strategy requested, qmm_strategy *out) {
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    const bool invariant = (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) != 0;
    const char *tname = qmm_type_name(w->type);
    switch (requested) {
    case QMM_STRATEGY_AUTO:
        /* From the H200 run of commit 7b7cf42 (docs/CUDA.md, bench/cuda_bench.c, every line
         * verified): gemv wins at n = 1 (plain calls), cached_f16 from n = 2 on every shape
         * (q4_0 4608x1024 n = 8: 4.9 vs 44.8 us). Without an f16 copy, gemv up to 8 tokens,
         * then dequant_sgemm. */
        if (invariant || n == 1) *out = QMM_STRATEGY_GEMV;
        else if (cw->w16 != NULL && w->m <= INT_MAX && w->k <= INT_MAX) *out = QMM_STRATEGY_CACHED_F16;
        else if (n <= QMM_CUDA_GEMV_TOKENS) *out = QMM_STRATEGY_GEMV;
        else if (w->m <= INT_MAX && w->k <= INT_MAX) *out = QMM_STRATEGY_DEQUANT_SGEMM;
        else *out = QMM_STRATEGY_GEMV;
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
        if (invariant)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s is not batch-invariant on CUDA "
                             "(cuBLAS picks its kernel by n); use gemv or fused",
                             qmm_strategy_name(requested));
        if (w->m > INT_MAX || w->k > INT_MAX)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s: m (%lld) or k (%lld) exceeds "
                             "cuBLAS's int range", qmm_strategy_name(requested), (long long)w->m,
                             (long long)w->k);
        if (requested == QMM_STRATEGY_CACHED_F16 && !cw->f16_fits)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy cached_f16: these %s weights hold "
                             "values beyond the f16 range (|w| > 65504) or non-finite values", tname);
        if (requested == QMM_STRATEGY_CACHED_F16 && cw->w16 == NULL)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy cached_f16: the f16 copy of these %s "
                             "weights (m=%lld, k=%lld) was skipped: out of device memory when "
                             "they were created", tname, (long long)w->m, (long long)w->k);
        *out = requested;
        return QMM_OK;
    case QMM_STRATEGY_REF:
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy ref runs on the CPU backend only");
    case QMM_STRATEGY_FP8:
        if (ctx_cc(ctx) < 89)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fp8 needs an sm_89 or newer GPU (E4M3 "
                             "matmul); this device is sm_%d", ctx_cc(ctx));
        if (invariant)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fp8 is not batch-invariant (X scales "
                             "per token, cuBLASLt picks its kernel by n); use gemv or fused");
        if (cw->w8 == NULL)
            return qmm_error(QMM_ERR_UNSUPPORTED, cw->w8_oom
                             ? "strategy fp8: the fp8 copy of these %s weights was skipped: out of "
                               "device memory when they were created"
                             : "strategy fp8: these %s weights hold non-finite values", tname);
        if (cw->m_pad > INT_MAX || cw->k_pad > INT_MAX)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy fp8: m (%lld) or k (%lld) exceeds "
                             "cuBLASLt's int range", (long long)w->m, (long long)w->k);
        *out = requested;
        return QMM_OK;
    case QMM_STRATEGY_INT8: /* batch-invariant: allowed with the flag */
        if (!qmm_cuda_int8_has_type(w->type))
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy int8: the CUDA int8 strategy has no "
                             "repacker for %s weights (it repacks the legacy and K-quant types, whose "
                             "values are integer quants times a sub-block scale: q4_0, q4_1, q5_0, "
                             "q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K); use gemv, fused or cached_f16",
                             tname);
        if (cw->i8_q == NULL)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy int8: the int8 copy of these %s weights "
                             "(m=%lld, k=%lld) was skipped: out of device memory when they were "
                             "created", tname, (long long)w->m, (long long)w->k);
        if (ctx_cc(ctx) < 80)
            return qmm_error(QMM_ERR_UNSUPPORTED, "strategy int8 needs an sm_80 or newer GPU "
                             "(integer mma.sync); this device is sm_%d", ctx_cc(ctx));
        *out = requested;
        return QMM_OK;
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

static qmm_status cuda_matmul(qmm_context *ctx, const qmm_weights *w, qmm_strategy s, int64_t n,
                              const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cuda_context *c = cctx(ctx);
    const qmm_cuda_weights *cw = (const qmm_cuda_weights *)w->backend;
    CU(cudaSetDevice(c->device), "cudaSetDevice");
    qmm_status st = check_pointer(c, x, "x");
    if (st == QMM_OK) st = check_pointer(c, y, "y");
    if (st != QMM_OK) return st;
    if ((s == QMM_STRATEGY_DEQUANT_SGEMM || s == QMM_STRATEGY_CACHED_F16) && (ldx > INT_MAX || ldy > INT_MAX))
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s: ldx (%lld) or ldy (%lld) exceeds "
                         "cuBLAS's int range", qmm_strategy_name(s), (long long)ldx, (long long)ldy);
    switch (s) {
    case QMM_STRATEGY_GEMV:
        CU(qmm_cuda_gemv(w->type, cw->q, w->row_bytes, w->m, w->k, n, x, ldx, y, ldy, c->stream),
           "gemv kernel");
        return QMM_OK;
    case QMM_STRATEGY_FUSED:
        CU(qmm_cuda_fused(w->type, cw->q, w->row_bytes, w->m, w->k, n, x, ldx, y, ldy, c->stream),
           "fused kernel");
        return QMM_OK;
    case QMM_STRATEGY_DEQUANT_SGEMM:
        return matmul_sgemm(c, w, cw, n, x, ldx, y, ldy);
    case QMM_STRATEGY_CACHED_F16:
        return matmul_cached_f16(c, w, cw, n, x, ldx, y, ldy);
    case QMM_STRATEGY_FP8:
        return matmul_fp8(c, w, cw, n, x, ldx, y, ldy);
    case QMM_STRATEGY_INT8:
        CU(qmm_cuda_int8_matmul(w->type, cw->i8_q, cw->i8_d, cw->i8_mn, w->m, w->k, n, x, ldx, y, ldy,
                                c->workspace, c->stream), "int8 kernels");
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

/* Kernel names and precision classes of the CUDA strategies (docs/CUDA.md). */
static qmm_status cuda_describe(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                                qmm_strategy resolved, const char **kernel,
                                qmm_precision *precision) {
    (void)ctx, (void)w, (void)n;
    switch (resolved) {
    case QMM_STRATEGY_GEMV: *kernel = "gemv_cuda"; *precision = QMM_PRECISION_F32; break;
    case QMM_STRATEGY_DEQUANT_SGEMM: *kernel = "dequant_cublas_sgemm"; *precision = QMM_PRECISION_F32; break;
    case QMM_STRATEGY_CACHED_F16: *kernel = "cached_f16_cublas"; *precision = QMM_PRECISION_HALF; break;
    case QMM_STRATEGY_FUSED: *kernel = "fused_mma_f16"; *precision = QMM_PRECISION_HALF; break;
    case QMM_STRATEGY_FP8: *kernel = "fp8_cublaslt"; *precision = QMM_PRECISION_FP8; break;
    case QMM_STRATEGY_INT8: *kernel = "int8_cuda"; *precision = QMM_PRECISION_INT8; break;
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
};

const qmm_backend_ops *qmm_cuda_backend_ops(void) { return &cuda_ops; }
