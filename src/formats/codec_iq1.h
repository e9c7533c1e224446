/*
 * codec_iq1.h — unit codecs of the 1-bit grid types iq1_s and iq1_m (ggml-quants.c
 * dequantize_row_iq1_s / _iq1_m; gguf.quants IQ1_S / IQ1_M). Contract: codec.h; codebook:
 * iq_grids.h.
 *
 * 256-element super-blocks of 8 sub-blocks of 32 (ib), each 4 groups of 8 (l); a unit is one
 * group (u = 4*ib + l): an 11-bit index into iq1s_grid (2048 entries of 8 int8 in {-1, 0, 1})
 * and a delta of +-0.125 (IQ1S_DELTA); with the 3-bit scale s, dl = d * (2s + 1) and element j
 * is dl * (grid[j] + delta), in ggml's order.
 *   iq1_s  f16 d, qs[32] (qs[u]: index bits 0..7), uint16 qh[8]: for qh[ib], bits 3l..3l+2 are
 *          index bits 8..10 of group l, bits 12..14 s, bit 15 the delta's sign (one per 32)
 *   iq1_m  qs[32] (as iq1_s), qh[16]: byte qh[2ib + l/2] holds groups l = 2*(l/2) (low nibble)
 *          and 2*(l/2)+1 (high nibble), each nibble 3 index bits (8..10) and the delta's sign
 *          (bit 3); uint16 scales[4]: scales[ib/2] bits 6(ib%2) + 3(l/2) .. +2 are s (one per
 *          16); the top nibbles of scales[0..3] are bits 0..3, 4..7, 8..11, 12..15 of the f16 d
 */
#ifndef QMM_FORMATS_CODEC_IQ1_H
#define QMM_FORMATS_CODEC_IQ1_H

#include <stddef.h>

#include "formats/codec.h"
#include "formats/iq_grids.h"

#define QMM_IQ1S_DELTA 0.125f

/* Group of 8: dl * ((int8 byte j of grid) + delta). */
QMM_HD void qmm_iq1_group(uint64_t grid, float delta, float dl, float out[QMM_UNIT]) {
    for (int j = 0; j < QMM_UNIT; j++)
        out[j] = qmm_mul(dl, qmm_add((float)(int8_t)(uint8_t)(grid >> (8 * j)), delta));
}

QMM_HD void qmm_unit_iq1_s(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const int ib = u >> 2, l = u & 3;
    const uint32_t qh = qmm_ld16(b + offsetof(block_iq1_s, qh) + 2 * ib);
    const uint32_t idx = b[offsetof(block_iq1_s, qs) + u] | (((qh >> (3 * l)) & 7) << 8);
    const float dl = qmm_mul(qmm_h2f(qmm_ld16(b)), (float)(int)(2 * ((qh >> 12) & 7) + 1));
    qmm_iq1_group(QMM_T(iq1s_grid)[idx], qh & 0x8000 ? -QMM_IQ1S_DELTA : QMM_IQ1S_DELTA, dl, out);
}

static const qmm_type_layout qmm_layout_iq1_s = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq1_s),
    .scales = {{offsetof(block_iq1_s, d), QMM_SCALE_F16, 1}},
    .sub_block = 32, .has_min = false, .max_q = 1.125f * 15};

QMM_HD void qmm_unit_iq1_m(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const int ib = u >> 2, l = u & 3;
    const uint64_t sc = qmm_ld64(b + offsetof(block_iq1_m, scales));
    const uint32_t h = (uint32_t)((sc >> 12) & 0x000F) | (uint32_t)((sc >> 24) & 0x00F0) |
                       (uint32_t)((sc >> 36) & 0x0F00) | (uint32_t)((sc >> 48) & 0xF000);
    const uint32_t s = (uint32_t)(sc >> (16 * (ib / 2) + 6 * (ib % 2) + 3 * (l / 2))) & 7;
    const float dl = qmm_mul(qmm_h2f(h), (float)(int)(2 * s + 1));
    const uint32_t qh = (uint32_t)b[offsetof(block_iq1_m, qh) + 2 * ib + l / 2] >> (4 * (l & 1));
    const uint32_t idx = b[offsetof(block_iq1_m, qs) + u] | ((qh & 7) << 8);
    qmm_iq1_group(QMM_T(iq1s_grid)[idx], qh & 8 ? -QMM_IQ1S_DELTA : QMM_IQ1S_DELTA, dl, out);
}

static const qmm_type_layout qmm_layout_iq1_m = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq1_m),
    .scales = {{offsetof(block_iq1_m, scales), QMM_SCALE_F16_IQ1M, 1}},
    .sub_block = 16, .has_min = false, .max_q = 1.125f * 15};

/* Reference quantizers: none (ggml's iq1_s needs an importance matrix, its iq1_m searches the
 * grid; docs/FORMATS.md). */
#define QMM_QUANTIZER_iq1_s NULL
#define QMM_QUANTIZER_iq1_m NULL

#endif /* QMM_FORMATS_CODEC_IQ1_H */
