/*
 * quants.h — per-type scalar reference code: dequantize (bit-exact with GGML's
 * dequantize_row_*) and reference quantize (bytes equal to GGML's quantize_row_*_ref and
 * gguf.quants). `k` is the number of elements and a multiple of the type's block size.
 * Row-level: src/dst point at the first block / element of one row.
 */
#ifndef QMM_FORMATS_QUANTS_H
#define QMM_FORMATS_QUANTS_H

#include <stdint.h>

#include "formats/blocks.h"
#include "formats/type_list.h"

#define QMM_FORMAT_PAIR(t)                                                          \
    void qmm_dequantize_row_##t(const void *src, float *dst, int64_t k);           \
    void qmm_quantize_row_##t##_ref(const float *src, void *dst, int64_t k);

QMM_FORMAT_PAIR(f32)
QMM_FORMAT_PAIR(f16)
QMM_FORMAT_PAIR(bf16)
QMM_FORMAT_PAIR(q4_0)
QMM_FORMAT_PAIR(q4_1)
QMM_FORMAT_PAIR(q5_0)
QMM_FORMAT_PAIR(q5_1)
QMM_FORMAT_PAIR(q8_0)
QMM_FORMAT_PAIR(q2_K)
QMM_FORMAT_PAIR(q3_K)
QMM_FORMAT_PAIR(q4_K)
QMM_FORMAT_PAIR(q5_K)
QMM_FORMAT_PAIR(q6_K)
QMM_FORMAT_PAIR(q8_K)

#undef QMM_FORMAT_PAIR

/* The unit-codec types (type_list.h): dequantizers from quants_unit.c; reference quantizers,
 * where a type has one, are declared by its codec header as QMM_QUANTIZER_<name>. */
#define QMM_UNIT_DEQUANTIZER_DECL(E, nm) void qmm_dequantize_row_##nm(const void *src, float *dst, int64_t k);
QMM_UNIT_TYPES(QMM_UNIT_DEQUANTIZER_DECL)
#undef QMM_UNIT_DEQUANTIZER_DECL

/*
 * Index of the first block in one row (nblocks blocks) whose scale fields (d, dmin, m) are
 * not finite, or -1 if all are finite. For f32/f16/bf16 the "block" is one element.
 */
int64_t qmm_first_nonfinite_block(int type, const void *row, int64_t nblocks);

#endif /* QMM_FORMATS_QUANTS_H */
