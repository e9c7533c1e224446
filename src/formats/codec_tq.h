/*
 * codec_tq.h — unit codecs of the ternary types, tq1_0 and tq2_0 (ggml-quants.c
 * dequantize_row_tq1_0 / _tq2_0; gguf.quants TQ1_0 / TQ2_0). Contract: codec.h.
 *
 * Both hold 256-element super-blocks of trits t in {0, 1, 2} and one f16 d at the end;
 * value = (float)(t - 1) * d.
 *   tq1_0  5 trits per byte of qs[48], 4 per byte of qh[4]. A byte b holds its trits as a
 *          base-3 fraction scaled to 0..255: trit n (0 = most significant) is
 *          ((uint8_t)(b * 3^n) * 3) >> 8. Element order: qs[0..31] give elements
 *          32n + m (n = 0..4, m = byte), qs[32..47] elements 160 + 16n + m, qh[0..3]
 *          elements 240 + 4n + m (n = 0..3).
 *   tq2_0  2 bits per trit in qs[64]: element 128c + 32l + m is bits 2l..2l+1 of qs[32c + m]
 *          (c = 0, 1; l = 0..3); the bit pair 3 gives t = 3, value 2d, as ggml decodes it.
 */
#ifndef QMM_FORMATS_CODEC_TQ_H
#define QMM_FORMATS_CODEC_TQ_H

#include <stddef.h>

#include "formats/codec.h"

QMM_TABLE(uint8_t, qmm_tq_pow3, 5, {1, 3, 9, 27, 81});

/* Trit n (0 = most significant) of byte x, through (t - 1) * d. */
QMM_HD float qmm_tq1_trit(uint32_t x, int n, float d) {
    const uint32_t q = (uint8_t)(x * QMM_T(qmm_tq_pow3)[n]);
    return qmm_mul((float)((int)((q * 3) >> 8) - 1), d);
}

QMM_HD void qmm_unit_tq1_0(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const float d = qmm_h2f(qmm_ld16(b + offsetof(block_tq1_0, d)));
    const uint8_t *qs = b + offsetof(block_tq1_0, qs), *qh = b + offsetof(block_tq1_0, qh);
    for (int j = 0; j < QMM_UNIT; j++) {
        if (u < 20) /* elements 0..159: trit u/4 of qs[8(u%4) + j] */
            out[j] = qmm_tq1_trit(qs[8 * (u & 3) + j], u >> 2, d);
        else if (u < 30) /* elements 160..239: trit (u-20)/2 of qs[32 + 8((u-20)%2) + j] */
            out[j] = qmm_tq1_trit(qs[32 + 8 * ((u - 20) & 1) + j], (u - 20) >> 1, d);
        else /* elements 240..255: trit 2(u-30) + j/4 of qh[j%4] */
            out[j] = qmm_tq1_trit(qh[j & 3], 2 * (u - 30) + (j >> 2), d);
    }
}

static const qmm_type_layout qmm_layout_tq1_0 = {
    .block_size = QK_K, .block_bytes = sizeof(block_tq1_0),
    .scales = {{offsetof(block_tq1_0, d), QMM_SCALE_F16, 1}},
    .sub_block = QK_K, .has_min = false, .max_q = 1};

QMM_HD void qmm_unit_tq2_0(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const float d = qmm_h2f(qmm_ld16(b + offsetof(block_tq2_0, d)));
    /* unit u: c = u/16, l = (u/4)%4, bytes qs[32c + 8(u%4) ..] */
    const uint8_t *p = b + offsetof(block_tq2_0, qs) + 32 * (u >> 4) + 8 * (u & 3);
    const int shift = 2 * ((u >> 2) & 3);
    for (int j = 0; j < QMM_UNIT; j++) out[j] = qmm_mul((float)((int)((p[j] >> shift) & 3) - 1), d);
}

static const qmm_type_layout qmm_layout_tq2_0 = {
    .block_size = QK_K, .block_bytes = sizeof(block_tq2_0),
    .scales = {{offsetof(block_tq2_0, d), QMM_SCALE_F16, 1}},
    .sub_block = QK_K, .has_min = false, .max_q = 2};

/* Reference quantizers (quants_tq.c, named there by packing): bytes equal to ggml's
 * quantize_row_tq1_0_ref / _tq2_0_ref and to gguf.quants' TQ1_0 / TQ2_0. */
#if !defined(__CUDACC__)
void qmm_quantize_row_ternary_base3_ref(const float *src, void *dst, int64_t k);
void qmm_quantize_row_ternary_2bit_ref(const float *src, void *dst, int64_t k);
#endif
#define QMM_QUANTIZER_tq1_0 qmm_quantize_row_ternary_base3_ref
#define QMM_QUANTIZER_tq2_0 qmm_quantize_row_ternary_2bit_ref

#endif /* QMM_FORMATS_CODEC_TQ_H */
