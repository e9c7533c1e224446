/*
 * quants_unit.c — the host dequantizers of the unit-codec types (formats/type_list.h): every
 * row is its blocks' units decoded in order by the type's codec (codec.h).
 */
#include "formats/quants.h"

#define QMM_UNIT_DEQUANTIZER(E, nm)                                                       \
    void qmm_dequantize_row_##nm(const void *src, float *dst, int64_t k) {                \
        const uint8_t *b = src;                                                            \
        const int64_t bs = qmm_layout_##nm.block_size;                                     \
        for (int64_t i = 0; i < k; i += bs, b += sizeof(block_##nm))                       \
            for (int u = 0; u < bs / QMM_UNIT; u++) qmm_unit_##nm(b, u, dst + i + QMM_UNIT * u);   \
    }
QMM_UNIT_TYPES(QMM_UNIT_DEQUANTIZER)
