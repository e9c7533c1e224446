/*
 * codec_iq4.h — unit codecs of the 4-bit non-linear types, iq4_nl and iq4_xs (ggml-quants.c
 * dequantize_row_iq4_nl / _iq4_xs; gguf.quants IQ4_NL / IQ4_XS). Contract: codec.h.
 *
 * Both map a 4-bit index through one 16-entry int8 codebook, qmm_iq4_values:
 *   iq4_nl  32-element blocks as q4_0 (f16 d, element j low nibble of qs[j], j+16 high);
 *           value = d * values[q]
 *   iq4_xs  256-element super-blocks of 8 sub-blocks of 32; 6-bit sub-block scale ls =
 *           (low nibble of scales_l[ib/2], shifted by 4*(ib%2)) | (bits 2ib..2ib+1 of scales_h) << 4;
 *           value = (d * (ls - 32)) * values[q], q as iq4_nl within the sub-block
 */
#ifndef QMM_FORMATS_CODEC_IQ4_H
#define QMM_FORMATS_CODEC_IQ4_H

#include <stddef.h>

#include "formats/codec.h"

QMM_TABLE(int8_t, qmm_iq4_values, 16,
          {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113});

/* Elements 8u .. 8u+7 of a 32-element group of nibbles qs[16] scaled by d. */
QMM_HD void qmm_iq4_group(const uint8_t *qs, int u, float d, float out[QMM_UNIT]) {
    const int shift = u >= 2 ? 4 : 0, j0 = 8 * (u & 1);
    for (int j = 0; j < QMM_UNIT; j++)
        out[j] = qmm_mul(d, (float)QMM_T(qmm_iq4_values)[(qs[j0 + j] >> shift) & 0xF]);
}

QMM_HD void qmm_unit_iq4_nl(const uint8_t *b, int u, float out[QMM_UNIT]) {
    qmm_iq4_group(b + offsetof(block_iq4_nl, qs), u, qmm_h2f(qmm_ld16(b)), out);
}

static const qmm_type_layout qmm_layout_iq4_nl = {
    .block_size = QK4_NL, .block_bytes = sizeof(block_iq4_nl),
    .scales = {{offsetof(block_iq4_nl, d), QMM_SCALE_F16, 1}},
    .sub_block = QK4_NL, .has_min = false, .max_q = 127};

QMM_HD void qmm_unit_iq4_xs(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const int ib = u >> 2; /* sub-block of 32 */
    const uint32_t lo = (b[offsetof(block_iq4_xs, scales_l) + ib / 2] >> (4 * (ib % 2))) & 0xF;
    const uint32_t hi = (qmm_ld16(b + offsetof(block_iq4_xs, scales_h)) >> (2 * ib)) & 3;
    const float dl = qmm_mul(qmm_h2f(qmm_ld16(b)), (float)((int)(lo | (hi << 4)) - 32));
    qmm_iq4_group(b + offsetof(block_iq4_xs, qs) + 16 * ib, u & 3, dl, out);
}

static const qmm_type_layout qmm_layout_iq4_xs = {
    .block_size = QK_K, .block_bytes = sizeof(block_iq4_xs),
    .scales = {{offsetof(block_iq4_xs, d), QMM_SCALE_F16, 1}},
    .sub_block = 32, .has_min = false, .max_q = 127 * 32};

/* Reference quantizers (quants_iq4.c, named there by block size): bytes equal to ggml's
 * quantize_row_iq4_nl_ref / _iq4_xs_ref, which search the scale without an importance
 * matrix (docs/FORMATS.md). */
#if !defined(__CUDACC__)
void qmm_quantize_row_iq4_blocks_ref(const float *src, void *dst, int64_t k);
void qmm_quantize_row_iq4_super_blocks_ref(const float *src, void *dst, int64_t k);
#endif
#define QMM_QUANTIZER_iq4_nl qmm_quantize_row_iq4_blocks_ref
#define QMM_QUANTIZER_iq4_xs qmm_quantize_row_iq4_super_blocks_ref

#endif /* QMM_FORMATS_CODEC_IQ4_H */
