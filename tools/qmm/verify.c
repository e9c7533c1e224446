/* verify.c — limits per strategy, the parallel reference, input checksums (see verify.h). */
#include "verify.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

qmm_status verify_reference(qmm_type type, int64_t m, int64_t k, const void *w,
                            size_t row_bytes, int64_t n, const float *x, float *y, int threads,
                            char *err, size_t err_len) {
    /* Blocks of W rows: enough blocks to balance threads, each >= 16 rows. */
    int64_t rows = (m + 4 * (int64_t)threads - 1) / (4 * (int64_t)threads);
    if (rows < 16) rows = 16;
    const int64_t nblocks = (m + rows - 1) / rows;
    qmm_status first = QMM_OK;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t b = 0; b < nblocks; b++) {
        const int64_t r0 = b * rows, mb = m - r0 < rows ? m - r0 : rows;
        qmm_status st = qmm_matmul_ref(type, mb, k, (const uint8_t *)w + (size_t)r0 * row_bytes,
                                       row_bytes, n, x, k, y + r0, m);
        if (st != QMM_OK) {
#pragma omp critical(verify_reference_error)
            if (first == QMM_OK) {
                first = st;
                if (err_len > 0) snprintf(err, err_len, "%s", qmm_last_error());
            }
        }
    }
    return first;
}

qmm_status verify_weight_sum(qmm_type type, int64_t m, int64_t k, const void *w,
                             size_t row_bytes, double *sum, bool *any_nonzero) {
    const int64_t chunk = 64;
    float *tmp = malloc((size_t)chunk * (size_t)k * sizeof *tmp);
    if (tmp == NULL) return QMM_ERR_OUT_OF_MEMORY;
    double s = 0.0;
    bool nz = false;
    qmm_status st = QMM_OK;
    for (int64_t r0 = 0; r0 < m && st == QMM_OK; r0 += chunk) {
        const int64_t rows = m - r0 < chunk ? m - r0 : chunk;
        /* rows are contiguous (row_bytes apart = packed size), so one call per chunk */
        st = qmm_dequantize_rows(type, (const uint8_t *)w + (size_t)r0 * row_bytes, tmp, rows, k);
        bool z;
        if (st == QMM_OK) s += verify_float_sum(tmp, (size_t)rows * (size_t)k, &z), nz |= z;
    }
    free(tmp);
    if (st == QMM_OK) {
        *sum = s;
        *any_nonzero = nz;
    }
    return st;
}

double verify_float_sum(const float *x, size_t count, bool *any_nonzero) {
    double s = 0.0;
    bool nz = false;
    for (size_t i = 0; i < count; i++) {
        s += x[i];
        nz |= x[i] != 0.0f;
    }
    *any_nonzero = nz;
    return s;
}
