/* convert.c — public row quantize / dequantize / validate over the type table. */
#include "core/internal.h"
#include "core/types.h"
#include "formats/quants.h"

static qmm_status check_rows(const char *fn, qmm_type type, const void *a, const void *b,
                             int64_t nrows, int64_t k, const qmm_type_traits **t, size_t *rb) {
    *t = qmm_type_traits_get(type);
    if (*t == NULL) return qmm_error(QMM_ERR_UNSUPPORTED, "%s: unsupported type id %d", fn, (int)type);
    if (a == NULL || b == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "%s: NULL pointer", fn);
    if (nrows < 0) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "%s: nrows (%lld) < 0", fn, (long long)nrows);
    qmm_status st = qmm_row_bytes(type, k, rb);
    if (st != QMM_OK) return st;
    size_t total;
    if (!qmm_mul_size((size_t)nrows, *rb, &total) || !qmm_mul_size((size_t)nrows, (size_t)k, &total))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "%s: %lld rows of %lld overflow", fn,
                         (long long)nrows, (long long)k);
    return QMM_OK;
}

qmm_status qmm_quantize_rows(qmm_type type, const float *src, void *dst, int64_t nrows, int64_t k) {
    const qmm_type_traits *t;
    size_t rb;
    qmm_status st = check_rows("qmm_quantize_rows", type, src, dst, nrows, k, &t, &rb);
    if (st != QMM_OK) return st;
    if (t->from_float_ref == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_quantize_rows: qmm has no reference quantizer "
                         "for %s (docs/FORMATS.md; qmm_random_rows makes valid %s rows)", t->name, t->name);
    for (int64_t i = 0; i < nrows; i++)
        t->from_float_ref(src + i * k, (char *)dst + (size_t)i * rb, k);
    return QMM_OK;
}

qmm_status qmm_dequantize_rows(qmm_type type, const void *src, float *dst, int64_t nrows, int64_t k) {
    const qmm_type_traits *t;
    size_t rb;
    qmm_status st = check_rows("qmm_dequantize_rows", type, src, dst, nrows, k, &t, &rb);
    if (st != QMM_OK) return st;
    for (int64_t i = 0; i < nrows; i++)
        t->to_float((const char *)src + (size_t)i * rb, dst + i * k, k);
    return QMM_OK;
}

qmm_status qmm_validate_rows(qmm_type type, const void *src, int64_t nrows, int64_t k,
                             size_t row_stride) {
    const qmm_type_traits *t;
    size_t rb;
    qmm_status st = check_rows("qmm_validate_rows", type, src, src, nrows, k, &t, &rb);
    if (st != QMM_OK) return st;
    if (row_stride < rb)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_validate_rows: row_stride (%zu) < row bytes (%zu)",
                         row_stride, rb);
    int64_t nb = k / t->block_size;
    for (int64_t i = 0; i < nrows; i++) {
        int64_t b = qmm_first_nonfinite_block(type, (const char *)src + (size_t)i * row_stride, nb);
        if (b >= 0)
            return qmm_error(QMM_ERR_NUMERIC, "non-finite scale in %s weights: row %lld, block %lld",
                             t->name, (long long)i, (long long)b);
    }
    return QMM_OK;
}

qmm_status qmm_random_rows(qmm_type type, uint64_t seed, double scale, void *dst, int64_t nrows,
                           int64_t k) {
    const qmm_type_traits *t;
    size_t rb;
    qmm_status st = check_rows("qmm_random_rows", type, dst, dst, nrows, k, &t, &rb);
    if (st != QMM_OK) return st;
    if (!(scale > 0 && scale < 1e30))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_random_rows: scale (%g) must be positive "
                         "and below 1e30", scale);
    uint64_t rng = seed ^ 0x6A09E667F3BCC908ull;
    qmm_type_random_blocks(type, &rng, scale, dst, nrows * (k / t->block_size));
    return QMM_OK;
}
