/*
 * gemv_driver.c — the threading of the gemv strategy's SIMD kernels, shared by every ISA
 * (gemv_avx512.c, gemv_avx2.c pass their row kernel; built without ISA flags).
 *
 * Threads take chunks of 64 consecutive W rows in dynamic order; each chunk is streamed once
 * and reused from L2 for each further group of 8 X rows. An output's value depends only on
 * its W row, its X row and k: not on n, on the group of X rows it was computed with, on the
 * thread or the thread count.
 */
#include <omp.h>
#include <stdint.h>

#include "cpu/x86/gemv_common.h"

/* W rows per task: tasks go to the threads dynamically (a busy core does not hold up the
 * call); a chunk stays in L2 while the groups of 8 X rows of n > 8 pass over it. */
#define GEMV_ROWS_PER_CHUNK QMM_GEMV_MAX_ROWS

/* Below this many multiply-adds a call runs on one thread (a team costs more). */
#define GEMV_MIN_MACS_PER_THREAD ((int64_t)1 << 18)

void qmm_gemv_drive(qmm_gemv_row_fn row_fn, int64_t m, int64_t k, const unsigned char *w,
                    size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                    int64_t ldy, int n_threads) {
    int64_t threads = n_threads < 1 ? 1 : n_threads;
    const double macs = (double)m * (double)k * (double)n; /* no int64 overflow */
    const int64_t by_work = macs >= 1e18 ? INT64_MAX : (int64_t)(macs / GEMV_MIN_MACS_PER_THREAD);
    if (threads > by_work) threads = by_work < 1 ? 1 : by_work;
    if (threads > m) threads = m;
    const int64_t chunks = (m + GEMV_ROWS_PER_CHUNK - 1) / GEMV_ROWS_PER_CHUNK;
#pragma omp parallel for num_threads((int)threads) schedule(dynamic, 1)
    for (int64_t c = 0; c < chunks; c++) {
        const int64_t i0 = c * GEMV_ROWS_PER_CHUNK;
        const int64_t rows = m - i0 < GEMV_ROWS_PER_CHUNK ? m - i0 : GEMV_ROWS_PER_CHUNK;
        for (int64_t j0 = 0; j0 < n; j0 += QMM_GEMV_MAX_NR) {
            const int nr = (int)(n - j0 < QMM_GEMV_MAX_NR ? n - j0 : QMM_GEMV_MAX_NR);
            row_fn(w + (size_t)i0 * row_stride, row_stride, rows, k, x + j0 * ldx, ldx, nr,
                   y + j0 * ldy + i0, ldy);
        }
    }
}
