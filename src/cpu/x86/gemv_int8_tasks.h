/*
 * gemv_int8_tasks.h — how the int8 VNNI gemv drivers (gemv_int8_avx512.c, and
 * gemv_int8_codebook_avx512.c for the codebook types) cut the W rows into tasks for the
 * threads; one policy for both.
 */
#ifndef QMM_CPU_X86_GEMV_INT8_TASKS_H
#define QMM_CPU_X86_GEMV_INT8_TASKS_H

#include <stdint.h>

#define TASK_ROWS 64       /* W rows per task when compute-bound (n > GROUP_NMAX) */
#define TASK_ROWS_MAX 1024 /* W rows per task at most when memory-bound */
#define GROUP 4            /* W rows walked side by side when n <= GROUP_NMAX */
#define GROUP_NMAX 2       /* X rows per pass up to which W rows are grouped */

/* W rows per task for m rows, n X rows and `threads` threads: when memory-bound (n <=
 * GROUP_NMAX) about four tasks per thread, in whole groups, within [TASK_ROWS, TASK_ROWS_MAX]. */
static inline int64_t qmm_x86_int8_task_rows(int64_t m, int64_t n, int threads) {
    int64_t task_rows = TASK_ROWS;
    if (n <= GROUP_NMAX) {
        task_rows = m / (4 * (int64_t)threads) / GROUP * GROUP;
        if (task_rows < TASK_ROWS) task_rows = TASK_ROWS;
        if (task_rows > TASK_ROWS_MAX) task_rows = TASK_ROWS_MAX;
    }
    return task_rows;
}

#endif /* QMM_CPU_X86_GEMV_INT8_TASKS_H */
