/*
 * quants_float.c — the unquantized row types f32, f16 and bf16 (block of one element).
 *
 * Source: ggml's ggml.c (ggml_fp16_to_fp32_row, ggml_fp32_to_fp16_row,
 * ggml_bf16_to_fp32_row, ggml_fp32_to_bf16_row_ref) and gguf.quants (F32/F16 by numpy cast,
 * BF16 quantize_blocks/dequantize_blocks). The element conversions and their rounding rules
 * are in fp16.h; f32 rows are copied bit for bit (NaN payloads included).
 */
#include <string.h>

#include "formats/fp16.h"
#include "formats/quants.h"

void qmm_dequantize_row_f32(const void *src, float *dst, int64_t k) {
    memmove(dst, src, (size_t)k * sizeof(float));
}

void qmm_quantize_row_f32_ref(const float *src, void *dst, int64_t k) {
    memmove(dst, src, (size_t)k * sizeof(float));
}

void qmm_dequantize_row_f16(const void *src, float *dst, int64_t k) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < k; i++) {
        qmm_half h;
        memcpy(&h, p + 2 * i, sizeof(h));
        dst[i] = qmm_fp16_to_fp32(h);
    }
}

void qmm_quantize_row_f16_ref(const float *src, void *dst, int64_t k) {
    uint8_t *p = dst;
    for (int64_t i = 0; i < k; i++) {
        const qmm_half h = qmm_fp32_to_fp16(src[i]);
        memcpy(p + 2 * i, &h, sizeof(h));
    }
}

void qmm_dequantize_row_bf16(const void *src, float *dst, int64_t k) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < k; i++) {
        qmm_bf16 h;
        memcpy(&h, p + 2 * i, sizeof(h));
        dst[i] = qmm_bf16_to_fp32(h);
    }
}

void qmm_quantize_row_bf16_ref(const float *src, void *dst, int64_t k) {
    uint8_t *p = dst;
    for (int64_t i = 0; i < k; i++) {
        const qmm_bf16 h = qmm_fp32_to_bf16(src[i]);
        memcpy(p + 2 * i, &h, sizeof(h));
    }
}
