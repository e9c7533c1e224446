/*
 * gemv_tofloat_impl.h — gemv row kernels for the weight types no register decoder covers
 * (the grid i-quants iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s and the ternary
 * tq1_0, tq2_0; all in super-blocks of 256): each panel of a W row (1024 elements, 4
 * super-blocks) is decoded by the type table's to_float into an L1 buffer of exact floats,
 * then multiplied into the X rows by the ISA's qmm_gemv_fma16 in the summation order of
 * gemv_common.h. So the outputs are bit-identical to fused_avx2's (which decodes W with the
 * same to_float) and to every other gemv kernel's order; the decode itself stays scalar (a
 * register decoder per type is issue 11's next step), the multiply-adds are vectors, and a
 * decoded panel serves all nr X rows.
 *
 * Included by gemv_tofloat_avx512.c and gemv_tofloat_avx2.c after their ISA header, with
 * QMM_TF_LOAD16(p) defined: the 16 floats at p in the ISA's fma16 operand.
 */
#ifndef QMM_CPU_X86_GEMV_TOFLOAT_IMPL_H
#define QMM_CPU_X86_GEMV_TOFLOAT_IMPL_H

#include "core/types.h"

/* Elements per super-block of every type here (row_fn refuses any other). */
#define QMM_TF_BLOCK 256

#define QMM_TF_TYPES(X)                                                                   \
    X(iq1_s, QMM_TYPE_IQ1_S) X(iq1_m, QMM_TYPE_IQ1_M) X(iq2_xxs, QMM_TYPE_IQ2_XXS)          \
    X(iq2_xs, QMM_TYPE_IQ2_XS) X(iq2_s, QMM_TYPE_IQ2_S) X(iq3_xxs, QMM_TYPE_IQ3_XXS)        \
    X(iq3_s, QMM_TYPE_IQ3_S) X(tq1_0, QMM_TYPE_TQ1_0) X(tq2_0, QMM_TYPE_TQ2_0)

/* Blocks [ib0, ib1) of R rows (ib0 a multiple of a panel's blocks, or 0). */
QMM_GEMV_INLINE void qmm_tf_body(const unsigned char *w, size_t stride, int R, int64_t k,
                                 const float *x, int64_t ldx, int nr, qmm_gemv_dacc *dacc,
                                 int64_t ib0, int64_t ib1, qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    const int64_t per = QMM_GEMV_PANEL / QMM_TF_BLOCK;
    float buf[4][QMM_GEMV_PANEL] __attribute__((aligned(64)));
    qmm_gemv_acc acc[4];
    (void)k;
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    for (int64_t b0 = ib0; b0 < ib1;) {
        int64_t b1 = (b0 / per + 1) * per; /* the next panel boundary */
        if (b1 > ib1) b1 = ib1;
        const int64_t ne = (b1 - b0) * QMM_TF_BLOCK, p0 = b0 * QMM_TF_BLOCK;
        for (int r = 0; r < R; r++)
            t->to_float(w + (size_t)r * stride + (size_t)b0 * t->block_bytes, buf[r], ne);
        for (int64_t q = 0; q < ne; q += 16)
            for (int r = 0; r < R; r++)
                qmm_gemv_fma16(&acc[r], nr, QMM_TF_LOAD16(buf[r] + q), x, ldx, p0 + q);
        qmm_gemv_panel_end(acc, dacc, R, nr, b1, QMM_TF_BLOCK);
        b0 = b1;
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

#define QMM_TF_BODY(name, TYPE)                                                           \
    QMM_GEMV_INLINE void tf_body_##name(const unsigned char *w, size_t stride, int R,      \
                                        int64_t k, const float *x, int64_t ldx, int nr,    \
                                        qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1) {   \
        qmm_tf_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, TYPE);                    \
    }                                                                                     \
    QMM_GEMV_DEFINE_ROW_FN(tf_row_##name, tf_body_##name, QMM_TF_BLOCK)
QMM_TF_TYPES(QMM_TF_BODY)

/* The row kernel of `type`, or NULL. */
static qmm_gemv_row_fn qmm_tf_row_fn(int type) {
    const qmm_type_traits *t = qmm_type_traits_get((qmm_type)type);
    if (t == NULL || t->block_size != QMM_TF_BLOCK || t->to_float == NULL) return NULL;
    switch (type) {
#define QMM_TF_CASE(name, TYPE) \
    case TYPE: return tf_row_##name;
        QMM_TF_TYPES(QMM_TF_CASE)
#undef QMM_TF_CASE
    default: return NULL;
    }
}

#endif /* QMM_CPU_X86_GEMV_TOFLOAT_IMPL_H */
