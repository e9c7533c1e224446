/*
 * codec_fp4.h — unit codecs of the 4-bit float types, mxfp4 and nvfp4 (ggml-quants.c
 * dequantize_row_mxfp4 / _nvfp4, ggml-impl.h ggml_e8m0_to_fp32_half / ggml_ue4m3_to_fp32;
 * gguf.quants MXFP4 / NVFP4). Contract: codec.h.
 *
 * Both store E2M1 nibbles, read through one 16-entry int8 table holding twice the E2M1
 * values (qmm_kvalues_e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, doubled), and
 * scale decoders that return half the scale to compensate:
 *   mxfp4  32-element blocks: E8M0 byte e, then 16 bytes of nibbles (element j low nibble of
 *          qs[j], j+16 high nibble); value = kvalues[q] * 2^(e-128)
 *          (for e = 0 and 1 the float32 subnormals 2^-128, 2^-127; e = 0xFF gives 2^127)
 *   nvfp4  64-element blocks of 4 sub-blocks of 16: 4 UE4M3 bytes d[s], then 32 bytes of
 *          nibbles, 8 per sub-block (element j of sub-block s low nibble of qs[8s+j], j+8
 *          high nibble); value = kvalues[q] * ue4m3(d[s]) with ue4m3(x) = 0.5 * E4M3(x):
 *          exponent bits (x >> 3) & 15 (bias 7; the top bit of x is ignored), mantissa x & 7,
 *          subnormal man * 2^-9 when the exponent bits are 0; 0x00 and 0x7F decode to 0,
 *          0xFF to 240 (as ggml does; validation reports 0x7F and 0xFF, see validate.c)
 * Every product kvalues[q] * scale is exact or overflows as ggml's does (e = 0xFE, 0xFF).
 */
#ifndef QMM_FORMATS_CODEC_FP4_H
#define QMM_FORMATS_CODEC_FP4_H

#include <stddef.h>

#include "formats/codec.h"

QMM_TABLE(int8_t, qmm_kvalues_e2m1, 16, {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12});

/* Half the E8M0 scale, 2^(e-128), built from its bits (ggml_e8m0_to_fp32_half). */
QMM_HD float qmm_e8m0_to_fp32_half(uint32_t e) {
    return qmm_bits_f32(e < 2 ? 0x00200000u << e : (e - 1) << 23);
}

/* Half the UE4M3 scale (ggml_ue4m3_to_fp32). Normal bytes are (1 + man/8) * 2^(exp-8),
 * exactly the float with biased exponent exp + 119 and mantissa man << 20; subnormal bytes
 * man * 2^-10, an exact product. */
QMM_HD float qmm_ue4m3_to_fp32(uint32_t x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const uint32_t exp = (x >> 3) & 0xF, man = x & 7;
    if (exp == 0) return qmm_mul((float)man, qmm_bits_f32(117u << 23));
    return qmm_bits_f32(((exp + 119u) << 23) | (man << 20));
}

/* The 8 nibbles of qs[0..7], low (h = 0) or high (h = 1), each through the table times d. */
QMM_HD void qmm_fp4_nibbles(const uint8_t *qs, int h, float d, float out[QMM_UNIT]) {
    const int shift = 4 * h;
    for (int j = 0; j < QMM_UNIT; j++)
        out[j] = qmm_mul((float)QMM_T(qmm_kvalues_e2m1)[(qs[j] >> shift) & 0xF], d);
}

QMM_HD void qmm_unit_mxfp4(const uint8_t *b, int u, float out[QMM_UNIT]) {
    /* u = 0, 1: low nibbles of qs[0..7], qs[8..15]; u = 2, 3: their high nibbles */
    qmm_fp4_nibbles(b + offsetof(block_mxfp4, qs) + 8 * (u & 1), u >> 1,
                    qmm_e8m0_to_fp32_half(b[offsetof(block_mxfp4, e)]), out);
}

static const qmm_type_layout qmm_layout_mxfp4 = {
    .block_size = QK_MXFP4, .block_bytes = sizeof(block_mxfp4),
    .scales = {{offsetof(block_mxfp4, e), QMM_SCALE_E8M0, 1}},
    .sub_block = QK_MXFP4, .has_min = false, .max_q = 12};

QMM_HD void qmm_unit_nvfp4(const uint8_t *b, int u, float out[QMM_UNIT]) {
    const int s = u >> 1; /* sub-block of 16: u = 2s low nibbles, 2s+1 high nibbles */
    qmm_fp4_nibbles(b + offsetof(block_nvfp4, qs) + (QK_NVFP4_SUB / 2) * s, u & 1,
                    qmm_ue4m3_to_fp32(b[offsetof(block_nvfp4, d) + s]), out);
}

static const qmm_type_layout qmm_layout_nvfp4 = {
    .block_size = QK_NVFP4, .block_bytes = sizeof(block_nvfp4),
    .scales = {{offsetof(block_nvfp4, d), QMM_SCALE_UE4M3, QK_NVFP4 / QK_NVFP4_SUB}},
    .sub_block = QK_NVFP4_SUB, .has_min = false, .max_q = 12};

/* Reference quantizers (quants_fp4.c, named there by scale kind): bytes equal to ggml's
 * quantize_row_mxfp4_ref / _nvfp4_ref (and to gguf.quants' MXFP4). */
#if !defined(__CUDACC__)
void qmm_quantize_row_e8m0_fp4_ref(const float *src, void *dst, int64_t k);
void qmm_quantize_row_ue4m3_fp4_ref(const float *src, void *dst, int64_t k);
#endif
#define QMM_QUANTIZER_mxfp4 qmm_quantize_row_e8m0_fp4_ref
#define QMM_QUANTIZER_nvfp4 qmm_quantize_row_ue4m3_fp4_ref

#endif /* QMM_FORMATS_CODEC_FP4_H */
