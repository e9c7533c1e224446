/*
 * quants_fp4.c — reference quantizers of the two FP4 (E2M1) types of codec_fp4.h, named here
 * by their scale: the E8M0-scaled type (32-element blocks: one E8M0 byte, 16 bytes of
 * nibbles) and the UE4M3-scaled type (64-element blocks: four UE4M3 bytes, one per
 * sub-block of 16, then 32 bytes of nibbles).
 *
 * Source: ggml's ggml-quants.c (quantize_row_<type>_ref, best_index_<type>) and ggml-impl.h
 * (the UE4M3 encoder); gguf.quants quantizes the E8M0 type the same way. Float operations
 * happen in ggml's order and precision, one rounding each (this file is ISO C11: GCC keeps
 * -ffp-contract=off), so the bytes equal ggml's:
 *   - the block's (sub-block's) amax = largest |x| (`if (amax < |x|)`: NaNs never win);
 *   - E8M0: e = (uint8_t)(floorf(log2f(amax)) - 2 + 127) for amax > 0, else 0, the float to
 *     byte conversion as ggml's x86-64 build evaluates it (truncate to int32, keep the low
 *     byte: 2^-126 > amax gives a wrapped byte, as in ggml); the scale is half of 2^(e-127);
 *   - UE4M3: the byte nearest amax / 6 (ggml_fp32_to_ue4m3: round half up on the first
 *     dropped mantissa bit, 448 and above saturate to 0x7E, below 2^-10 to 0); the scale is
 *     ggml's half-value decode of that byte;
 *   - each element takes the first index of the 16-entry table minimizing |kvalue * d - x|.
 * log2f is the C library's, as in ggml's build.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "formats/codec_fp4.h"
#include "formats/quants.h"

/* `(uint8_t)v` as ggml's x86-64 build evaluates it: cvttss2si to int32 (0x80000000 for NaN
 * and values outside int32), then the low byte. */
static uint8_t trunc_low_byte(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
    return (uint8_t)((uint32_t)(int32_t)v & 0xFFu);
}

/* The first index i minimizing |kvalues[i] * e - x| (strictly smaller errors replace). */
static int best_index_fp4(float x, float e) {
    int best_index = 0;
    float best_err = fabsf(qmm_kvalues_e2m1[0] * e - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf(qmm_kvalues_e2m1[i] * e - x);
        if (err < best_err) {
            best_index = i;
            best_err = err;
        }
    }
    return best_index;
}

static float abs_max(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]);
    return amax;
}

/* n elements x, n/2 bytes qs: element j in the low nibble of qs[j], j + n/2 in the high. */
static void pack_nibbles(const float *x, int n, float d, uint8_t *qs) {
    for (int j = 0; j < n / 2; j++)
        qs[j] = (uint8_t)(best_index_fp4(x[j], d) | (best_index_fp4(x[n / 2 + j], d) << 4));
}

void qmm_quantize_row_e8m0_fp4_ref(const float *src, void *dst, int64_t k) {
    enum { QK = 32, BYTES = 1 + QK / 2 };
    uint8_t *y = dst;
    for (int64_t i = 0; i < k / QK; i++, src += QK, y += BYTES) {
        const float amax = abs_max(src, QK);
        const uint8_t e = amax > 0.0f ? trunc_low_byte(floorf(log2f(amax)) - 2 + 127) : 0;
        y[0] = e;
        pack_nibbles(src, QK, qmm_e8m0_to_fp32_half(e), y + 1);
    }
}

/* ggml_fp32_to_ue4m3: the UE4M3 byte for x (see the top of the file). */
static uint8_t fp32_to_ue4m3(float x) {
    if (!(x > 0.0f)) return 0;
    if (x > 448.0f) x = 448.0f;
    uint32_t bits;
    memcpy(&bits, &x, 4);
    const int fp32_exp = (int)((bits >> 23) & 0xFF) - 127;
    const int fp32_man = (int)((bits >> 20) & 0x7);
    int exp = fp32_exp + 7;
    if (exp <= 0) { /* subnormal: man = round(x * 2^9), x < 2^-6 here */
        int man = (int)(x * 512.0f + 0.5f);
        if (man > 7) man = 7;
        if (man < 1) return 0;
        return (uint8_t)man;
    }
    if (exp >= 15) return 0x7E;
    int man = fp32_man + (int)((bits >> 19) & 1);
    if (man > 7) {
        man = 0;
        exp++;
        if (exp >= 15) return 0x7E;
    }
    return (uint8_t)((exp << 3) | man);
}

void qmm_quantize_row_ue4m3_fp4_ref(const float *src, void *dst, int64_t k) {
    enum { QK = 64, SUB = 16, NSUB = QK / SUB, BYTES = NSUB + QK / 2 };
    uint8_t *y = dst;
    for (int64_t i = 0; i < k / QK; i++, y += BYTES) {
        for (int s = 0; s < NSUB; s++, src += SUB) {
            const uint8_t ue = fp32_to_ue4m3(abs_max(src, SUB) / 6.0f);
            y[s] = ue;
            pack_nibbles(src, SUB, qmm_ue4m3_to_fp32(ue), y + NSUB + s * (SUB / 2));
        }
    }
}
