/*
 * codec_iq2.h — unit codecs of the 2-bit grid types iq2_xxs, iq2_xs and iq2_s (ggml-quants.c
 * dequantize_row_iq2_xxs / _iq2_xs / _iq2_s; gguf.quants IQ2_XXS / IQ2_XS / IQ2_S). Contract:
 * codec.h; codebooks: iq_grids.h.
 *
 * 256-element super-blocks of 8 sub-blocks of 32 (ib), each 4 groups of 8 (l); a unit is one
 * group (u = 4*ib + l). A group is one grid entry (8 magnitudes in {8, 25, 43}) and 8 signs;
 * the 4-bit scale ls gives db = (d * (0.5f + ls)) * 0.25f and element j is
 * (db * grid[j]) * (sign j ? -1 : 1), in ggml's order.
 *   iq2_xxs  f16 d, qs: per sub-block two little-endian uint32 a0, a1: byte l of a0 indexes
 *            iq2xxs_grid (256), bits 7l..7l+6 of a1 index ksigns_iq2xs, ls = a1 >> 28
 *   iq2_xs   f16 d, uint16 qs[32]: qs[u] bits 0..8 index iq2xs_grid (512), bits 9..15 index
 *            ksigns_iq2xs; scales[ib]: low nibble for groups 0, 1, high nibble for 2, 3
 *   iq2_s    f16 d, qs[64]: qs[u] = low 8 bits of the index into iq2s_grid (1024), qs[32 + u]
 *            the 8 sign bits; qh[ib] bits 2l..2l+1 = index bits 8..9; scales as iq2_xs
 */
#ifndef QMM_FORMATS_CODEC_IQ2_H
#define QMM_FORMATS_CODEC_IQ2_H

#include <stddef.h>

#include "formats/codec.h"
#include "formats/iq_grids.h"

/* Scale of a sub-block: (d * (0.5f + ls)) * 0.25f, ggml's db. */
QMM_HD float qmm_iq2_db(float d, uint32_t ls) {
    return qmm_mul(qmm_mul(d, qmm_add(0.5f, (float)ls)), 0.25f);
}

/* Group of 8: (db * byte j of grid) * (bit j of signs ? -1 : 1). */
QMM_HD void qmm_iq2_group(uint64_t grid, uint32_t signs, float db, float out[QMM_UNIT]) {
    for (int j = 0; j < QMM_UNIT; j++)
        out[j] = qmm_mul(qmm_mul(db, (float)(uint32_t)((grid >> (8 * j)) & 0xFF)), qmm_iq_sign(signs, j));
}

QMM_HD void qmm_unit_iq2_xxs(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const uint8_t *q = b + offsetof(block_iq2_xxs, qs) + 8 * (u >> 2);
    const int l = u & 3;
    const uint32_t a1 = qmm_ld32(q + 4);
    qmm_iq2_group(QMM_T(iq2xxs_grid)[q[l]], QMM_T(ksigns_iq2xs)[(a1 >> (7 * l)) & 127],
                  qmm_iq2_db(qmm_h2f(qmm_ld16(b)), a1 >> 28), out);
}

static const qmm_type_layout qmm_layout_iq2_xxs = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq2_xxs),
    .scales = {{offsetof(block_iq2_xxs, d), QMM_SCALE_F16, 1}},
    .sub_block = 32, .has_min = false, .max_q = 43 * 3.875f};

QMM_HD void qmm_unit_iq2_xs(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const uint32_t q = qmm_ld16(b + offsetof(block_iq2_xs, qs) + 2 * u);
    const uint32_t sc = b[offsetof(block_iq2_xs, scales) + (u >> 2)];
    qmm_iq2_group(QMM_T(iq2xs_grid)[q & 511], QMM_T(ksigns_iq2xs)[q >> 9],
                  qmm_iq2_db(qmm_h2f(qmm_ld16(b)), (u & 2) ? sc >> 4 : sc & 0xF), out);
}

static const qmm_type_layout qmm_layout_iq2_xs = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq2_xs),
    .scales = {{offsetof(block_iq2_xs, d), QMM_SCALE_F16, 1}},
    .sub_block = 16, .has_min = false, .max_q = 43 * 3.875f};

QMM_HD void qmm_unit_iq2_s(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const uint8_t *qs = b + offsetof(block_iq2_s, qs);
    const int ib = u >> 2, l = u & 3;
    const uint32_t qh = b[offsetof(block_iq2_s, qh) + ib];
    const uint32_t sc = b[offsetof(block_iq2_s, scales) + ib];
    qmm_iq2_group(QMM_T(iq2s_grid)[qs[u] | ((qh << (8 - 2 * l)) & 0x300)], qs[QK_K / 8 + u],
                  qmm_iq2_db(qmm_h2f(qmm_ld16(b)), (u & 2) ? sc >> 4 : sc & 0xF), out);
}

static const qmm_type_layout qmm_layout_iq2_s = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq2_s),
    .scales = {{offsetof(block_iq2_s, d), QMM_SCALE_F16, 1}},
    .sub_block = 16, .has_min = false, .max_q = 43 * 3.875f};

/* Reference quantizers: none (ggml's need an importance matrix for iq2_xxs and iq2_xs, a grid
 * search for iq2_s; docs/FORMATS.md). */
#define QMM_QUANTIZER_iq2_xxs NULL
#define QMM_QUANTIZER_iq2_xs NULL
#define QMM_QUANTIZER_iq2_s NULL

#endif /* QMM_FORMATS_CODEC_IQ2_H */
