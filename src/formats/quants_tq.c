/*
 * quants_tq.c — reference quantizers of the two ternary types of codec_tq.h, named here by
 * their packing: base-3 (five trits per byte, 256-element super-blocks of qs[48], qh[4],
 * f16 d: 54 bytes) and 2-bit (four trits per byte, qs[64], f16 d: 66 bytes).
 *
 * Source: ggml's ggml-quants.c (quantize_row_<type>_ref); gguf.quants quantizes both the same
 * way. Per super-block: d = amax = the largest |x| (ggml's MAX(amax, |x|)), stored as f16;
 * id = d ? 1/d : 0; trit t = lroundf(x * id) + 1 (round half away from zero), with ggml's
 * uint8_t arithmetic for the base-3 bytes: q = sum of trits in base 3, most significant
 * first, then q = ceil(q * 256 / 243) (a qh byte holds four trits and a zero fifth).
 */
#include <math.h>
#include <stdint.h>

#include "formats/codec_tq.h"
#include "formats/fp16.h"
#include "formats/quants.h"

/* Largest |x| over one super-block, as ggml's MAX macro evaluates it. */
static float abs_max(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    return amax;
}

static void put_f16(uint8_t *p, float d) {
    const qmm_half h = qmm_fp32_to_fp16(d);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* The trit of x: 0, 1, 2 for -1, 0, 1 (ggml's `int xi = lroundf(x * id) + 1`). */
static int trit(float x, float id) { return (int)(lroundf(x * id) + 1); }

/* One base-3 byte from `n` trits x[0], x[stride], ..., most significant first, padded with
 * zero trits up to five. */
static uint8_t base3_byte(const float *x, int stride, int n, float id) {
    uint8_t q = 0;
    for (int t = 0; t < n; t++) {
        q = (uint8_t)(q * 3);
        q = (uint8_t)(q + trit(x[t * stride], id));
    }
    for (int t = n; t < 5; t++) q = (uint8_t)(q * 3);
    return (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243); /* ceiling division, 243 = 3^5 */
}

void qmm_quantize_row_ternary_base3_ref(const float *x, void *dst, int64_t k) {
    enum { QK = 256, NQS = 48, NQH = 4, BYTES = NQS + NQH + 2 };
    uint8_t *y = dst;
    for (int64_t i = 0; i < k / QK; i++, y += BYTES) {
        const float d = abs_max(x, QK);
        const float id = d ? 1.0f / d : 0.0f;
        put_f16(y + NQS + NQH, d);
        for (int m = 0; m < 32; m++) y[m] = base3_byte(x + m, 32, 5, id); /* elements 0..159 */
        x += 5 * 32;
        for (int m = 0; m < 16; m++) y[32 + m] = base3_byte(x + m, 16, 5, id); /* 160..239 */
        x += 5 * 16;
        for (int j = 0; j < NQH; j++) y[NQS + j] = base3_byte(x + j, NQH, 4, id); /* 240..255 */
        x += 4 * NQH;
    }
}

void qmm_quantize_row_ternary_2bit_ref(const float *x, void *dst, int64_t k) {
    enum { QK = 256, NQS = 64, BYTES = NQS + 2 };
    uint8_t *y = dst;
    for (int64_t i = 0; i < k / QK; i++, y += BYTES) {
        const float d = abs_max(x, QK);
        const float id = d ? 1.0f / d : 0.0f;
        put_f16(y + NQS, d);
        for (int j = 0; j < NQS; j += 32) {
            for (int m = 0; m < 32; m++) {
                uint8_t q = 0;
                for (int n = 0; n < 4; n++) q = (uint8_t)(q + ((trit(x[m + n * 32], id) & 3) << (2 * n)));
                y[j + m] = q;
            }
            x += 4 * 32;
        }
    }
}
