/*
 * ref_matmul.c — the oracle: Y = X W^T with W dequantized exactly (the type table's
 * to_float, bit-exact with GGML's dequantize_row_*), every product and sum in float64 in
 * increasing k, one rounding to float32 per output. Slow and obvious on purpose.
 */
#include <stdlib.h>

#include "core/internal.h"
#include "core/types.h"

/* Validate the reference's arguments; on success *t and *row_bytes are set. */
static qmm_status check_args(qmm_type type, int64_t m, int64_t k, const void *w,
                             size_t row_stride, int64_t n, const float *x, int64_t ldx,
                             const float *y, int64_t ldy, const qmm_type_traits **t,
                             size_t *row_bytes) {
    if (w == NULL || x == NULL || y == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul_ref: NULL %s",
                         w == NULL ? "w" : x == NULL ? "x" : "y");
    *t = qmm_type_traits_get(type);
    if (*t == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_matmul_ref: unsupported type id %d", (int)type);
    if (!(*t)->is_weight)
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_matmul_ref: type %s cannot be used as weights",
                         (*t)->name);
    if (m <= 0 || n <= 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul_ref: %s (%lld) must be positive",
                         m <= 0 ? "m" : "n", (long long)(m <= 0 ? m : n));
    qmm_status st = qmm_row_bytes(type, k, row_bytes);
    if (st != QMM_OK) return st;
    if (row_stride < *row_bytes)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "qmm_matmul_ref: row_stride (%zu bytes) < packed row size (%zu bytes) "
                         "of k=%lld %s", row_stride, *row_bytes, (long long)k, (*t)->name);
    if (ldx < k)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul_ref: ldx (%lld) < k (%lld)",
                         (long long)ldx, (long long)k);
    if (ldy < m)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul_ref: ldy (%lld) < m (%lld)",
                         (long long)ldy, (long long)m);
    size_t s;
    if (!qmm_mul_size((size_t)(m - 1), row_stride, &s) ||
        !qmm_mul_size((size_t)(n - 1), (size_t)ldx, &s) ||
        !qmm_mul_size((size_t)(n - 1), (size_t)ldy, &s) ||
        !qmm_mul_size((size_t)k, sizeof(float), &s))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "qmm_matmul_ref: sizes overflow (m=%lld k=%lld n=%lld ldx=%lld ldy=%lld)",
                         (long long)m, (long long)k, (long long)n, (long long)ldx, (long long)ldy);
    /* Byte ranges from the first to one past the last element touched. */
    const char *xb = (const char *)x, *xe = (const char *)(x + (n - 1) * ldx + k);
    const char *yb = (const char *)y, *ye = (const char *)(y + (n - 1) * ldy + m);
    if (xb < ye && yb < xe)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul_ref: x and y overlap");
    return QMM_OK;
}

qmm_status qmm_matmul_ref(qmm_type type, int64_t m, int64_t k, const void *w,
                          size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                          int64_t ldy) {
    const qmm_type_traits *t = NULL;
    size_t row_bytes = 0;
    qmm_status st = check_args(type, m, k, w, row_stride, n, x, ldx, y, ldy, &t, &row_bytes);
    if (st != QMM_OK) return st;
    float *row = malloc((size_t)k * sizeof *row);
    if (row == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "qmm_matmul_ref: cannot allocate %lld floats",
                         (long long)k);
    for (int64_t i = 0; i < m; i++) {
        t->to_float((const unsigned char *)w + (size_t)i * row_stride, row, k);
        for (int64_t j = 0; j < n; j++) {
            const float *xj = x + j * ldx;
            double sum = 0.0;
            for (int64_t p = 0; p < k; p++) sum += (double)xj[p] * (double)row[p];
            y[j * ldy + i] = (float)sum;
        }
    }
    free(row);
    return QMM_OK;
}
