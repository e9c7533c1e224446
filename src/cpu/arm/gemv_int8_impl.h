/*
 * gemv_int8_impl.h — the int8 gemv on native GGUF blocks for aarch64 (the class and order of
 * arm_kernels.h), shared by gemv_int8_neon.c and gemv_int8_dotprod.c, which differ only in
 * QMM_ARM_DOT (how 16 int8 products are added into 4 int32 lanes) and QMM_ARM_GEMV_INT8 (the
 * entry point's name). The lanes QMM_ARM_DOT fills are only ever summed (ADDV), so any exact
 * way of adding the products gives the same integer, and the two files the same bits.
 *
 * Per W row and pass of nr (1..QMM_ARM_INT8_NR, a compile-time constant in each instance)
 * X rows: for each group of blocks (a super-block, or two blocks) the scales once, then per
 * block the decode (int8_blocks.h) once and per X row two dots (or one per 16-element half),
 * ADDV, T in double (wblk_t) and one FMA with the block's dx into the row's accumulator of
 * the block's parity; the accumulators live in registers.
 */
#ifndef QMM_CPU_ARM_GEMV_INT8_IMPL_H
#define QMM_CPU_ARM_GEMV_INT8_IMPL_H

#include "cpu/arm/int8_blocks.h"

#if !defined(QMM_ARM_DOT) || !defined(QMM_ARM_GEMV_INT8)
#error "define QMM_ARM_DOT(acc, a, b) and QMM_ARM_GEMV_INT8 before including gemv_int8_impl.h"
#endif

#define NR QMM_ARM_INT8_NR

/* Block c of group gr (block index b, parity par) against the nr X rows. */
QMM_ARM_INL void gemv_block(qmm_type t, const wgroup *gr, int c, int64_t b, int par, int nr,
                            const qmm_arm_int8_x *xs, double acc[NR][2]) {
    int8x16_t w0, w1;
    wscale ws;
    wblk_decode(t, gr, c, &w0, &w1, &ws);
    const int32x4_t z = vdupq_n_s32(0);
#pragma GCC unroll 4
    for (int j = 0; j < nr; j++) {
        const int8_t *xq = xs[j].q + 32 * b;
        int32_t ia, ib = 0;
        if (qmm_i8_sub16(t)) {
            ia = vaddvq_s32(QMM_ARM_DOT(z, w0, vld1q_s8(xq)));
            ib = vaddvq_s32(QMM_ARM_DOT(z, w1, vld1q_s8(xq + 16)));
        } else {
            ia = vaddvq_s32(QMM_ARM_DOT(QMM_ARM_DOT(z, w0, vld1q_s8(xq)), w1, vld1q_s8(xq + 16)));
        }
        const double tb = wblk_t(t, &ws, ia, ib, xs[j].s16[2 * b], xs[j].s16[2 * b + 1], xs[j].s32[b]);
        acc[j][par] = fma(tb, xs[j].dx[b], acc[j][par]);
    }
}

/* One W row (GGUF blocks at row, k elements) against nr X rows: y[j * ldy]. */
QMM_ARM_INL void gemv_row(qmm_type t, const unsigned char *row, int64_t k, int nr,
                          const qmm_arm_int8_x *xs, float *y, int64_t ldy) {
    double acc[NR][2];
    for (int j = 0; j < nr; j++) acc[j][0] = acc[j][1] = 0.0;
    const int G = wblk_group(t);
    const int64_t nb = k / 32, ng = nb / G;
    for (int64_t g = 0; g < ng; g++) {
        wgroup gr;
        wgroup_load(t, row, g, &gr);
#pragma GCC unroll 8
        for (int c = 0; c < G; c++) gemv_block(t, &gr, c, g * G + c, c & 1, nr, xs, acc);
    }
    if (ng * G < nb) { /* an odd last block of a 32-element type */
        wgroup gr;
        wgroup_load(t, row, ng, &gr);
        gemv_block(t, &gr, 0, ng * G, 0, nr, xs, acc);
    }
    for (int j = 0; j < nr; j++) y[j * ldy] = (float)(acc[j][0] + acc[j][1]);
}

/* Rows [i0, i1) of W against X rows in passes of NR. */
typedef void (*gemv_rows_fn)(const unsigned char *w, size_t row_stride, int64_t i0, int64_t i1,
                             int64_t k, int64_t n, const qmm_arm_int8_x *xs, float *y, int64_t ldy);

/* One instance per type (the list of cpu/int8_types.h). */
#define GEMV_ROWS(p, E, nm)                                                                      \
    static void p##_##nm(const unsigned char *w, size_t row_stride, int64_t i0, int64_t i1,      \
                         int64_t k, int64_t n, const qmm_arm_int8_x *xs, float *y,               \
                         int64_t ldy) {                                                          \
        for (int64_t i = i0; i < i1; i++) {                                                      \
            const unsigned char *row = w + (size_t)i * row_stride;                               \
            int64_t g = 0;                                                                       \
            for (; g + NR <= n; g += NR)                                                         \
                gemv_row(QMM_TYPE_##E, row, k, NR, xs + g, y + g * ldy + i, ldy);                \
            switch (n - g) {                                                                     \
            case 1: gemv_row(QMM_TYPE_##E, row, k, 1, xs + g, y + g * ldy + i, ldy); break;      \
            case 2: gemv_row(QMM_TYPE_##E, row, k, 2, xs + g, y + g * ldy + i, ldy); break;      \
            case 3: gemv_row(QMM_TYPE_##E, row, k, 3, xs + g, y + g * ldy + i, ldy); break;      \
            default: break;                                                                      \
            }                                                                                    \
        }                                                                                        \
    }
_Static_assert(QMM_ARM_INT8_NR == 4, "GEMV_ROWS handles tails of 1..3 X rows");
QMM_I8_TYPES(GEMV_ROWS, rows)
#undef GEMV_ROWS

static gemv_rows_fn rows_for(qmm_type type) {
    switch (type) {
    QMM_I8_TYPES(QMM_I8_CASE_RETURN, rows)
    default: return NULL;
    }
}

void QMM_ARM_GEMV_INT8(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                       size_t row_stride, int64_t n, const qmm_arm_int8_x *xs, float *y,
                       int64_t ldy, int n_threads) {
    const gemv_rows_fn fn = rows_for(type);
    if (fn == NULL || m <= 0 || n <= 0) return;
    const int64_t tasks = (m + QMM_ARM_INT8_TASK_ROWS - 1) / QMM_ARM_INT8_TASK_ROWS;
    int threads = n_threads < 1 ? 1 : n_threads;
    if (threads > tasks) threads = (int)tasks;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t i0 = t * QMM_ARM_INT8_TASK_ROWS;
        fn(w, row_stride, i0, i0 + QMM_ARM_INT8_TASK_ROWS < m ? i0 + QMM_ARM_INT8_TASK_ROWS : m, k, n,
           xs, y, ldy);
    }
}

#undef NR

#endif /* QMM_CPU_ARM_GEMV_INT8_IMPL_H */
