/*
 * dequant_sgemm.c — strategy `dequant_sgemm`, the BLAS baseline: dequantize all of W to f32
 * (exact, the type table's to_float; rows split over the context's threads) into a workspace
 * owned by the context (grown when a larger W comes, reused otherwise), then one OpenBLAS
 * SGEMM:  Y[n][m] = X[n][k] * Wf[m][k]^T  (row-major, B transposed, lda = ldx, ldb = k,
 * ldc = ldy, beta = 0 so Y is only written, and only its m columns).
 *
 * OpenBLAS runs with its own thread setting (OPENBLAS_NUM_THREADS / its default), not the
 * context's n_threads: its setter is process-global and would race between contexts.
 * Not batch-invariant (OpenBLAS picks kernels and blockings by n), so resolve() refuses it
 * under QMM_FLAG_BATCH_INVARIANT. Deterministic run to run for the same shapes.
 */
#include <cblas.h>

#include "cpu/cpu_internal.h"

bool qmm_cpu_dequant_sgemm_supports(const qmm_context *ctx, qmm_type type, const char **why) {
    (void)type;
    if (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) {
        *why = "OpenBLAS SGEMM is not batch-invariant (its kernels and blocking depend on n)";
        return false;
    }
    return true;
}

qmm_status qmm_cpu_matmul_dequant_sgemm(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    const qmm_type_traits *t = qmm_type_traits_get(w->type);
    const int64_t m = w->m, k = w->k;
    size_t bytes;
    if (!qmm_mul_size((size_t)m, (size_t)k, &bytes) || !qmm_mul_size(bytes, sizeof(float), &bytes))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "dequant_sgemm: f32 copy of W (m=%lld, k=%lld) overflows size_t",
                         (long long)m, (long long)k);
    if (m > INT32_MAX || k > INT32_MAX || n > INT32_MAX || ldx > INT32_MAX || ldy > INT32_MAX)
        return qmm_error(QMM_ERR_UNSUPPORTED,
                         "dequant_sgemm: BLAS takes 32-bit sizes (m=%lld k=%lld n=%lld ldx=%lld "
                         "ldy=%lld)", (long long)m, (long long)k, (long long)n, (long long)ldx,
                         (long long)ldy);
    qmm_status s = qmm_cpu_scratch_grow(&st->shared, bytes);
    if (s != QMM_OK) return s;
    float *wf = st->shared.ptr;

#pragma omp parallel for num_threads(st->n_threads) schedule(static) if (st->n_threads > 1 && m > 1)
    for (int64_t i = 0; i < m; i++) t->to_float(qmm_cpu_weights_row(w, i), wf + i * k, k);

    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)m, (blasint)k,
                1.0f, x, (blasint)ldx, wf, (blasint)k, 0.0f, y, (blasint)ldy);
    return QMM_OK;
}
