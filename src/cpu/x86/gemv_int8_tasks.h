/*
 * gemv_int8_tasks.h — how the int8 gemv driver (gemv_int8_driver.c, for every ISA's int8 gemv
 * kernels) cuts the W rows into tasks for the threads, and how the row walk groups rows
 * (gemv_int8_common.h); one policy for all.
 */
#ifndef QMM_CPU_X86_GEMV_INT8_TASKS_H
#define QMM_CPU_X86_GEMV_INT8_TASKS_H

#include <stdint.h>

#define QMM_I8_TASK_ROWS 64       /* W rows per task when compute-bound (n > QMM_I8_GROUP_NMAX) */
#define QMM_I8_TASK_ROWS_MAX 1024 /* W rows per task at most when memory-bound */
#define QMM_I8_GROUP 4            /* W rows walked side by side when n <= QMM_I8_GROUP_NMAX */
#define QMM_I8_GROUP_NMAX 2       /* X rows per pass up to which W rows are grouped */

/* W rows per task for m rows, n X rows and `threads` threads: when memory-bound (n <=
 * QMM_I8_GROUP_NMAX) about four tasks per thread, in whole groups, within
 * [QMM_I8_TASK_ROWS, QMM_I8_TASK_ROWS_MAX]. */
static inline int64_t qmm_x86_int8_task_rows(int64_t m, int64_t n, int threads) {
    int64_t task_rows = QMM_I8_TASK_ROWS;
    if (n <= QMM_I8_GROUP_NMAX) {
        task_rows = m / (4 * (int64_t)threads) / QMM_I8_GROUP * QMM_I8_GROUP;
        if (task_rows < QMM_I8_TASK_ROWS) task_rows = QMM_I8_TASK_ROWS;
        if (task_rows > QMM_I8_TASK_ROWS_MAX) task_rows = QMM_I8_TASK_ROWS_MAX;
    }
    return task_rows;
}

#endif /* QMM_CPU_X86_GEMV_INT8_TASKS_H */
