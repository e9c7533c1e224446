/*
 * ref_matmul.c — the oracle: Y = X W^T with W dequantized exactly (the type table's
 * to_float, bit-exact with GGML's dequantize_row_*), every product and sum in float64 in
 * increasing k, one rounding to float32 per output. Obvious on purpose; the only speed-up is
 * computing a 4 x 4 block of independent sums at once, which changes no bit.
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

/* One output: the dot of X row xj (float) and a dequantized W row (double) in increasing k. */
static double dot_in_order(const float *xj, const double *wr, int64_t k) {
    double sum = 0.0;
    for (int64_t p = 0; p < k; p++) sum += (double)xj[p] * wr[p];
    return sum;
}

/*
 * A 4 x 4 block of outputs: each of the 16 sums is still its own float64 sum in increasing k
 * (bit-identical to dot_in_order); computing 16 at once only hides the add latency.
 */
static void dot_block_4x4(const float *x, int64_t ldx, const double *w, int64_t k,
                          double out[4][4]) {
    double acc[4][4] = {{0.0}};
    const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
    for (int64_t p = 0; p < k; p++) {
        const double xv[4] = {x0[p], x1[p], x2[p], x3[p]};
        for (int r = 0; r < 4; r++) {
            const double wv = w[r * k + p];
            for (int j = 0; j < 4; j++) acc[j][r] += xv[j] * wv;
        }
    }
    for (int j = 0; j < 4; j++)
        for (int r = 0; r < 4; r++) out[j][r] = acc[j][r];
}

qmm_status qmm_matmul_ref(qmm_type type, int64_t m, int64_t k, const void *w,
                          size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                          int64_t ldy) {
    const qmm_type_traits *t = NULL;
    size_t row_bytes = 0;
    qmm_status st = check_args(type, m, k, w, row_stride, n, x, ldx, y, ldy, &t, &row_bytes);
    if (st != QMM_OK) return st;
    enum { RB = 4, XB = 4 }; /* W rows and X rows per block */
    float *tmp = malloc((size_t)k * sizeof *tmp);
    double *rows = malloc((size_t)RB * (size_t)k * sizeof *rows);
    if (tmp == NULL || rows == NULL) {
        free(tmp);
        free(rows);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "qmm_matmul_ref: cannot allocate %lld doubles",
                         (long long)(RB * k));
    }
    for (int64_t i0 = 0; i0 < m; i0 += RB) {
        const int rb = (int)(m - i0 < RB ? m - i0 : RB);
        for (int r = 0; r < rb; r++) {
            t->to_float((const unsigned char *)w + (size_t)(i0 + r) * row_stride, tmp, k);
            for (int64_t p = 0; p < k; p++) rows[r * k + p] = (double)tmp[p];
        }
        for (int64_t j0 = 0; j0 < n; j0 += XB) {
            const int xb = (int)(n - j0 < XB ? n - j0 : XB);
            if (rb == RB && xb == XB) {
                double out[XB][RB];
                dot_block_4x4(x + j0 * ldx, ldx, rows, k, out);
                for (int j = 0; j < XB; j++)
                    for (int r = 0; r < RB; r++) y[(j0 + j) * ldy + i0 + r] = (float)out[j][r];
            } else {
                for (int j = 0; j < xb; j++)
                    for (int r = 0; r < rb; r++)
                        y[(j0 + j) * ldy + i0 + r] =
                            (float)dot_in_order(x + (j0 + j) * ldx, rows + r * k, k);
            }
        }
    }
    free(tmp);
    free(rows);
    return QMM_OK;
}
