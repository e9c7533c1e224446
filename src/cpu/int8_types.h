/*
 * int8_types.h — the weight types of the CPU int8 class and their per-type facts, for the x86
 * (x86/gemv_int8_*) and the aarch64 (arm/gemv_int8_impl.h, arm/gemm_int8_i8mm.c) kernels.
 * Portable C, no SIMD.
 *
 * The types, one row each, X(p, ENUM, name): QMM_TYPE_<ENUM> in qmm.h, block_<name> and
 * QMM_QK_<name> in formats/blocks.h; p is passed through unchanged, so a kernel file expands a
 * list with its own prefix, naming its instance of a type p_<name>:
 *   QMM_I8_INTEGER_TYPES(X, p)   the legacy types and the K-quants
 *   QMM_I8_CODEBOOK_TYPES(X, p)  the 4-bit codebook types (a nibble through a 16-entry int8
 *                                table, a float scale per sub-block, no offset, no min)
 *   QMM_I8_TYPES(X, p)           both: every type of the class
 * e.g. `switch (t) { QMM_I8_TYPES(QMM_I8_CASE_RETURN, rows) default: return NULL; }`.
 * A type joins the class by a row here, its decode in each kernel and, where they hold for it,
 * the predicates below. tests/test_int8_types.c checks these facts against the type table.
 */
#ifndef QMM_CPU_INT8_TYPES_H
#define QMM_CPU_INT8_TYPES_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/blocks.h"
#include "qmm.h"

#define QMM_I8_INTEGER_TYPES(X, p)                                                            \
    X(p, Q4_0, q4_0)                                                                          \
    X(p, Q4_1, q4_1)                                                                          \
    X(p, Q5_0, q5_0)                                                                          \
    X(p, Q5_1, q5_1)                                                                          \
    X(p, Q8_0, q8_0)                                                                          \
    X(p, Q2_K, q2_K)                                                                          \
    X(p, Q3_K, q3_K)                                                                          \
    X(p, Q4_K, q4_K)                                                                          \
    X(p, Q5_K, q5_K)                                                                          \
    X(p, Q6_K, q6_K)

#define QMM_I8_CODEBOOK_TYPES(X, p)                                                           \
    X(p, IQ4_NL, iq4_nl)                                                                      \
    X(p, IQ4_XS, iq4_xs)                                                                      \
    X(p, MXFP4, mxfp4)                                                                        \
    X(p, NVFP4, nvfp4)

#define QMM_I8_TYPES(X, p) QMM_I8_INTEGER_TYPES(X, p) QMM_I8_CODEBOOK_TYPES(X, p)

/* Expanders: `case QMM_TYPE_<ENUM>: return p_<name>;`, the case label alone, p_<name>. */
#define QMM_I8_CASE_RETURN(p, E, nm) case QMM_TYPE_##E: return p##_##nm;
#define QMM_I8_CASE(p, E, nm) case QMM_TYPE_##E:
#define QMM_I8_NAME(p, E, nm) p##_##nm,

static inline bool qmm_i8_has_type(qmm_type t) {
    switch (t) {
    QMM_I8_TYPES(QMM_I8_CASE, )
        return true;
    default: return false;
    }
}

static inline bool qmm_i8_codebook(qmm_type t) {
    switch (t) {
    QMM_I8_CODEBOOK_TYPES(QMM_I8_CASE, )
        return true;
    default: return false;
    }
}

/* Bytes of one block (0 for a type outside the class). */
static inline size_t qmm_i8_block_bytes(qmm_type t) {
#define QMM_I8_BYTES_(p, E, nm) case QMM_TYPE_##E: return sizeof(block_##nm);
    switch (t) {
    QMM_I8_TYPES(QMM_I8_BYTES_, )
    default: return 0;
    }
#undef QMM_I8_BYTES_
}

/* Elements per block (32; 64 for nvfp4; QK_K for the K-quants and iq4_xs; 0 outside). */
static inline int qmm_i8_block_elems(qmm_type t) {
#define QMM_I8_ELEMS_(p, E, nm) case QMM_TYPE_##E: return QMM_QK_##nm;
    switch (t) {
    QMM_I8_TYPES(QMM_I8_ELEMS_, )
    default: return 0;
    }
#undef QMM_I8_ELEMS_
}

static inline bool qmm_i8_k_quant(qmm_type t) {
    return t == QMM_TYPE_Q2_K || t == QMM_TYPE_Q3_K || t == QMM_TYPE_Q4_K ||
           t == QMM_TYPE_Q5_K || t == QMM_TYPE_Q6_K;
}

/* Sub-blocks (one scale each) of 16 elements; the other types' are of 32. */
static inline bool qmm_i8_sub16(qmm_type t) {
    return t == QMM_TYPE_Q2_K || t == QMM_TYPE_Q3_K || t == QMM_TYPE_Q6_K ||
           t == QMM_TYPE_NVFP4;
}

/* Types whose dequantizer adds a min per sub-block (w = d q + m). */
static inline bool qmm_i8_has_min(qmm_type t) {
    return t == QMM_TYPE_Q4_1 || t == QMM_TYPE_Q5_1 || t == QMM_TYPE_Q2_K ||
           t == QMM_TYPE_Q4_K || t == QMM_TYPE_Q5_K;
}

/* log2 of the offset subtracted from the unsigned quant (0: none). */
static inline int qmm_i8_offset_shift(qmm_type t) {
    switch (t) {
    case QMM_TYPE_Q4_0: return 3;
    case QMM_TYPE_Q5_0: return 4;
    case QMM_TYPE_Q3_K: return 2;
    case QMM_TYPE_Q6_K: return 5;
    default: return 0;
    }
}

#endif /* QMM_CPU_INT8_TYPES_H */
