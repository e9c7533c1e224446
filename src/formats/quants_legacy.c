/*
 * quants_legacy.c — the 32-element block formats q4_0, q4_1, q5_0, q5_1, q8_0, and the
 * activation format q8_K (256 elements, float32 scale, block sums): dequantization and the
 * reference quantizers.
 *
 * Source: ggml's ggml-common.h (layouts) and ggml-quants.c (dequantize_row_*,
 * quantize_row_*_ref, nearest_int); gguf-py's gguf/quants.py (Q4_0 .. Q8_0). Every float
 * operation happens in the same order and precision as there — the scale d, then id = 1/d,
 * then x*id (never x/d), products and sums rounded separately (no FMA: this file is built as
 * ISO C11, which keeps GCC at -ffp-contract=off) — so dequantized floats are bit-identical
 * and quantized bytes equal ggml's. Rounding rules: docs/FORMATS.md.
 *
 * Blocks are copied to and from a local struct with memcpy, so rows may sit at any address.
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "formats/fp16.h"
#include "formats/quants.h"

/*
 * The conversion `(int8_t)v` / `(uint8_t)v` of ggml's C code, as its x86-64 builds evaluate
 * it, without undefined behaviour: truncate toward zero to int32 and keep the low 8 bits;
 * a NaN or a value outside int32 gives cvttss2si's 0x80000000, whose low byte is 0. For the
 * finite inputs of the quantizers below the argument is always within 0 .. 32, where this is
 * plain truncation.
 */
static inline int ggml_trunc_low_byte(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
    return (int)((uint32_t)(int32_t)v & 0xFFu);
}

/* As ggml_trunc_low_byte, read as a signed byte ((int8_t)v in ggml). */
static inline int ggml_trunc_i8(float v) {
    const int b = ggml_trunc_low_byte(v);
    return b >= 128 ? b - 256 : b;
}

/* The element of largest magnitude (the first one on ties), with its sign; 0 if all are
 * zero. NaNs never win (ggml's `if (amax < fabsf(v))`). */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

/* Smallest and largest element (ggml starts from FLT_MAX / -FLT_MAX). */
static void min_and_max(const float *x, int n, float *min, float *max) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    *min = lo;
    *max = hi;
}

/* Bit 4 of the 5-bit quants: bit j of the little-endian uint32 qh is element j's. */
static uint32_t load_qh(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

static void store_qh(uint8_t qh[4], uint32_t v) {
    for (int b = 0; b < 4; b++) qh[b] = (uint8_t)(v >> (8 * b));
}

/* ------------------------------------------------------------------------------------ */
/* q4_0: x = (q - 8) * d, q in 0..15; d = (signed absmax) / -8.                            */

void qmm_dequantize_row_q4_0(const void *src, float *dst, int64_t k) {
    const int64_t nb = k / QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        block_q4_0 b;
        memcpy(&b, (const uint8_t *)src + i * sizeof(b), sizeof(b));
        const float d = qmm_fp16_to_fp32(b.d);
        float *y = dst + i * QK4_0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[j] = (float)((b.qs[j] & 0x0F) - 8) * d;
            y[j + QK4_0 / 2] = (float)((b.qs[j] >> 4) - 8) * d;
        }
    }
}

void qmm_quantize_row_q4_0_ref(const float *src, void *dst, int64_t k) {
    const int64_t nb = k / QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK4_0;
        const float d = signed_absmax(x, QK4_0) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        block_q4_0 b;
        b.d = qmm_fp32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            int q0 = ggml_trunc_i8(x[j] * id + 8.5f);
            int q1 = ggml_trunc_i8(x[j + QK4_0 / 2] * id + 8.5f);
            const uint8_t xi0 = (uint8_t)(q0 < 15 ? q0 : 15);
            const uint8_t xi1 = (uint8_t)(q1 < 15 ? q1 : 15);
            b.qs[j] = (uint8_t)(xi0 | (xi1 << 4));
        }
        memcpy((uint8_t *)dst + i * sizeof(b), &b, sizeof(b));
    }
}

/* ------------------------------------------------------------------------------------ */
/* q4_1: x = q * d + m, q in 0..15; d = (max - min) / 15, m = min.                          */

void qmm_dequantize_row_q4_1(const void *src, float *dst, int64_t k) {
    const int64_t nb = k / QK4_1;
    for (int64_t i = 0; i < nb; i++) {
        block_q4_1 b;
        memcpy(&b, (const uint8_t *)src + i * sizeof(b), sizeof(b));
        const float d = qmm_fp16_to_fp32(b.d);
        const float m = qmm_fp16_to_fp32(b.m);
        float *y = dst + i * QK4_1;
        for (int j = 0; j < QK4_1 / 2; j++) {
            y[j] = (float)(b.qs[j] & 0x0F) * d + m;
            y[j + QK4_1 / 2] = (float)(b.qs[j] >> 4) * d + m;
        }
    }
}

void qmm_quantize_row_q4_1_ref(const float *src, void *dst, int64_t k) {
    const int64_t nb = k / QK4_1;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK4_1;
        float min, max;
        min_and_max(x, QK4_1, &min, &max);
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        block_q4_1 b;
        b.d = qmm_fp32_to_fp16(d);
        b.m = qmm_fp32_to_fp16(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            int q0 = ggml_trunc_i8((x[j] - min) * id + 0.5f);
            int q1 = ggml_trunc_i8((x[j + QK4_1 / 2] - min) * id + 0.5f);
            const uint8_t xi0 = (uint8_t)(q0 < 15 ? q0 : 15);
            const uint8_t xi1 = (uint8_t)(q1 < 15 ? q1 : 15);
            b.qs[j] = (uint8_t)(xi0 | (xi1 << 4));
        }
        memcpy((uint8_t *)dst + i * sizeof(b), &b, sizeof(b));
    }
}

/* ------------------------------------------------------------------------------------ */
/* q5_0: x = (q - 16) * d, q in 0..31; d = (signed absmax) / -16.                          */

void qmm_dequantize_row_q5_0(const void *src, float *dst, int64_t k) {
    const int64_t nb = k / QK5_0;
    for (int64_t i = 0; i < nb; i++) {
        block_q5_0 b;
        memcpy(&b, (const uint8_t *)src + i * sizeof(b), sizeof(b));
        const float d = qmm_fp16_to_fp32(b.d);
        const uint32_t qh = load_qh(b.qh);
        float *y = dst + i * QK5_0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int h0 = (int)((qh >> j) & 1u) << 4;
            const int h1 = (int)((qh >> (j + QK5_0 / 2)) & 1u) << 4;
            y[j] = (float)(((b.qs[j] & 0x0F) | h0) - 16) * d;
            y[j + QK5_0 / 2] = (float)(((b.qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

void qmm_quantize_row_q5_0_ref(const float *src, void *dst, int64_t k) {
    const int64_t nb = k / QK5_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK5_0;
        const float d = signed_absmax(x, QK5_0) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        block_q5_0 b;
        b.d = qmm_fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            int q0 = ggml_trunc_i8(x[j] * id + 16.5f);
            int q1 = ggml_trunc_i8(x[j + QK5_0 / 2] * id + 16.5f);
            const uint8_t xi0 = (uint8_t)(q0 < 31 ? q0 : 31);
            const uint8_t xi1 = (uint8_t)(q1 < 31 ? q1 : 31);
            b.qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= (uint32_t)((xi0 & 0x10u) >> 4) << j;
            qh |= (uint32_t)((xi1 & 0x10u) >> 4) << (j + QK5_0 / 2);
        }
        store_qh(b.qh, qh);
        memcpy((uint8_t *)dst + i * sizeof(b), &b, sizeof(b));
    }
}

/* ------------------------------------------------------------------------------------ */
/* q5_1: x = q * d + m, q in 0..31; d = (max - min) / 31, m = min.                          */

void qmm_dequantize_row_q5_1(const void *src, float *dst, int64_t k) {
    const int64_t nb = k / QK5_1;
    for (int64_t i = 0; i < nb; i++) {
        block_q5_1 b;
        memcpy(&b, (const uint8_t *)src + i * sizeof(b), sizeof(b));
        const float d = qmm_fp16_to_fp32(b.d);
        const float m = qmm_fp16_to_fp32(b.m);
        const uint32_t qh = load_qh(b.qh);
        float *y = dst + i * QK5_1;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int h0 = (int)((qh >> j) & 1u) << 4;
            const int h1 = (int)((qh >> (j + QK5_1 / 2)) & 1u) << 4;
            y[j] = (float)((b.qs[j] & 0x0F) | h0) * d + m;
            y[j + QK5_1 / 2] = (float)((b.qs[j] >> 4) | h1) * d + m;
        }
    }
}

void qmm_quantize_row_q5_1_ref(const float *src, void *dst, int64_t k) {
    const int64_t nb = k / QK5_1;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK5_1;
        float min, max;
        min_and_max(x, QK5_1, &min, &max);
        const float d = (max - min) / 31;
        const float id = d ? 1.0f / d : 0.0f;
        block_q5_1 b;
        b.d = qmm_fp32_to_fp16(d);
        b.m = qmm_fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            /* ggml: (uint8_t)(x0 + 0.5f), no clamp: the value never exceeds 31.5 for finite x */
            const uint8_t xi0 = (uint8_t)ggml_trunc_low_byte((x[j] - min) * id + 0.5f);
            const uint8_t xi1 = (uint8_t)ggml_trunc_low_byte((x[j + QK5_1 / 2] - min) * id + 0.5f);
            b.qs[j] = (uint8_t)((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
            qh |= (uint32_t)((xi0 & 0x10u) >> 4) << j;
            qh |= (uint32_t)((xi1 & 0x10u) >> 4) << (j + QK5_1 / 2);
        }
        store_qh(b.qh, qh);
        memcpy((uint8_t *)dst + i * sizeof(b), &b, sizeof(b));
    }
}

/* ------------------------------------------------------------------------------------ */
/* q8_0: x = q * d, q in -127..127; d = absmax / 127, q = roundf(x * id) (ties away).      */

void qmm_dequantize_row_q8_0(const void *src, float *dst, int64_t k) {
    const int64_t nb = k / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        block_q8_0 b;
        memcpy(&b, (const uint8_t *)src + i * sizeof(b), sizeof(b));
        const float d = qmm_fp16_to_fp32(b.d);
        float *y = dst + i * QK8_0;
        for (int j = 0; j < QK8_0; j++) y[j] = (float)b.qs[j] * d;
    }
}

void qmm_quantize_row_q8_0_ref(const float *src, void *dst, int64_t k) {
    const int64_t nb = k / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        block_q8_0 b;
        b.d = qmm_fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) b.qs[j] = (int8_t)ggml_trunc_i8(roundf(x[j] * id));
        memcpy((uint8_t *)dst + i * sizeof(b), &b, sizeof(b));
    }
}

/* ------------------------------------------------------------------------------------ */
/* q8_K: x = q * d with a float32 d; q = nearest_int(x * -127/max) (ties to even).         */

/* ggml's nearest_int: add 1.5 * 2^23 and read the low mantissa bits; round to nearest
 * even for |fval| <= 4194303, defined (meaningless) bits outside. */
static inline int ggml_nearest_int(float fval) {
    const float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, sizeof(i));
    return (i & 0x007fffff) - 0x00400000;
}

void qmm_dequantize_row_q8_K(const void *src, float *dst, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        block_q8_K b;
        memcpy(&b, (const uint8_t *)src + i * sizeof(b), sizeof(b));
        float *y = dst + i * QK_K;
        for (int j = 0; j < QK_K; j++) y[j] = b.d * (float)b.qs[j];
    }
}

void qmm_quantize_row_q8_K_ref(const float *src, void *dst, int64_t k) {
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK_K;
        block_q8_K b;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        if (!amax) {
            /* ggml leaves bsums unwritten here; qmm writes their true value, 0 */
            memset(&b, 0, sizeof(b));
        } else {
            const float iscale = -127.f / max;
            for (int j = 0; j < QK_K; j++) {
                const int v = ggml_nearest_int(iscale * x[j]);
                const int c = v < 127 ? v : 127;
                b.qs[j] = (int8_t)((c & 0xFF) >= 128 ? (c & 0xFF) - 256 : (c & 0xFF));
            }
            for (int g = 0; g < QK_K / 16; g++) {
                int sum = 0;
                for (int j = 0; j < 16; j++) sum += b.qs[16 * g + j];
                b.bsums[g] = (int16_t)sum;
            }
            b.d = 1 / iscale;
        }
        memcpy((uint8_t *)dst + i * sizeof(b), &b, sizeof(b));
    }
}
