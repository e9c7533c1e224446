/*
 * codec_iq3.h — unit codecs of the 3-bit grid types iq3_xxs and iq3_s (ggml-quants.c
 * dequantize_row_iq3_xxs / _iq3_s; gguf.quants IQ3_XXS / IQ3_S). Contract: codec.h;
 * codebooks: iq_grids.h.
 *
 * 256-element super-blocks of 8 sub-blocks of 32 (ib), each 4 groups of 8 (l); a unit is one
 * group (u = 4*ib + l): two grid entries of 4 magnitudes (elements 0..3, 4..7) and 8 signs;
 * element j is (db * grid[j]) * (sign j ? -1 : 1), in ggml's order.
 *   iq3_xxs  f16 d, qs[96]: qs[8ib + 2l], qs[8ib + 2l + 1] index iq3xxs_grid (256); the
 *            little-endian uint32 a at qs[64 + 4ib]: bits 7l..7l+6 index ksigns_iq2xs,
 *            ls = a >> 28; db = (d * (0.5f + ls)) * 0.5f
 *   iq3_s    f16 d, qs[64] (low 8 bits of the indices into iq3s_grid (512), as iq3_xxs),
 *            qh[8] (bit 2l of qh[ib] is bit 8 of the first index, bit 2l+1 of the second),
 *            signs[32] (signs[u]: the 8 sign bits), scales[4] (nibble ib%2 of scales[ib/2]
 *            is s); db = d * (1 + 2s)
 */
#ifndef QMM_FORMATS_CODEC_IQ3_H
#define QMM_FORMATS_CODEC_IQ3_H

#include <stddef.h>

#include "formats/codec.h"
#include "formats/iq_grids.h"

/* Group of 8 from two entries: (db * byte j of the entry) * (bit j of signs ? -1 : 1). */
QMM_HD void qmm_iq3_group(uint32_t g1, uint32_t g2, uint32_t signs, float db, float out[QMM_UNIT]) {
    for (int j = 0; j < 4; j++) {
        out[j] = qmm_mul(qmm_mul(db, (float)((g1 >> (8 * j)) & 0xFF)), qmm_iq_sign(signs, j));
        out[j + 4] = qmm_mul(qmm_mul(db, (float)((g2 >> (8 * j)) & 0xFF)), qmm_iq_sign(signs, j + 4));
    }
}

QMM_HD void qmm_unit_iq3_xxs(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const uint8_t *qs = b + offsetof(block_iq3_xxs, qs);
    const int ib = u >> 2, l = u & 3;
    const uint32_t a = qmm_ld32(qs + QK_K / 4 + 4 * ib);
    const float db = qmm_mul(qmm_mul(qmm_h2f(qmm_ld16(b)), qmm_add(0.5f, (float)(a >> 28))), 0.5f);
    qmm_iq3_group(QMM_T(iq3xxs_grid)[qs[2 * u]], QMM_T(iq3xxs_grid)[qs[2 * u + 1]],
                  QMM_T(ksigns_iq2xs)[(a >> (7 * l)) & 127], db, out);
}

static const qmm_type_layout qmm_layout_iq3_xxs = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq3_xxs),
    .scales = {{offsetof(block_iq3_xxs, d), QMM_SCALE_F16, 1}},
    .sub_block = 32, .has_min = false, .max_q = 62 * 7.75f};

QMM_HD void qmm_unit_iq3_s(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const uint8_t *qs = b + offsetof(block_iq3_s, qs) + 2 * u;
    const int ib = u >> 2, l = u & 3;
    const uint32_t qh = b[offsetof(block_iq3_s, qh) + ib];
    const uint32_t s = (b[offsetof(block_iq3_s, scales) + ib / 2] >> (4 * (ib & 1))) & 0xF;
    const float db = qmm_mul(qmm_h2f(qmm_ld16(b)), (float)(int)(1 + 2 * s));
    qmm_iq3_group(QMM_T(iq3s_grid)[qs[0] | ((qh << (8 - 2 * l)) & 256)],
                  QMM_T(iq3s_grid)[qs[1] | ((qh << (7 - 2 * l)) & 256)],
                  b[offsetof(block_iq3_s, signs) + u], db, out);
}

static const qmm_type_layout qmm_layout_iq3_s = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq3_s),
    .scales = {{offsetof(block_iq3_s, d), QMM_SCALE_F16, 1}},
    .sub_block = 32, .has_min = false, .max_q = 15 * 31};

/* Reference quantizers: none (ggml's search the grid; docs/FORMATS.md). */
#define QMM_QUANTIZER_iq3_xxs NULL
#define QMM_QUANTIZER_iq3_s NULL

#endif /* QMM_FORMATS_CODEC_IQ3_H */
