/*
 * verify.h — checking a benchmark output against the reference, and input checksums.
 *
 * The limits come from the library (qmm_matmul_path): each kernel's precision class.
 */
#ifndef QMM_TOOL_VERIFY_H
#define QMM_TOOL_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "qmm.h"

/* Largest normalized MSE and max relative error an output may have (from qmm_matmul_path). */
typedef struct verify_limits {
    double max_nmse;
    double max_rel;
} verify_limits;

/*
 * The reference Y[n][m] (ldy = m) for host weights w (m rows, row_bytes apart) and host x
 * (ldx = k): qmm_matmul_ref called on blocks of W rows in parallel with `threads` OpenMP
 * threads. Each output element is computed exactly as one qmm_matmul_ref call computes it.
 * Returns the first failing call's status and copies its qmm_last_error() sentence to err.
 */
qmm_status verify_reference(qmm_type type, int64_t m, int64_t k, const void *w,
                            size_t row_bytes, int64_t n, const float *x, float *y, int threads,
                            char *err, size_t err_len);

/*
 * Sum of the dequantized weights (all m packed rows, row_bytes = qmm_row_bytes apart) and whether any is non-zero. Dequantizes in
 * chunks of rows; returns the library's status on failure.
 */
qmm_status verify_weight_sum(qmm_type type, int64_t m, int64_t k, const void *w,
                             size_t row_bytes, double *sum, bool *any_nonzero);

/* Sum of count floats and whether any is non-zero. */
double verify_float_sum(const float *x, size_t count, bool *any_nonzero);

#endif /* QMM_TOOL_VERIFY_H */
