/*
 * fp16.h — exact conversions between float32 and the two 16-bit float formats GGUF stores:
 * IEEE-754 binary16 ("f16", qmm_half) and bfloat16 ("bf16", qmm_bf16).
 *
 * Semantics (the facts of ggml's ggml-impl.h, which gguf.quants follows):
 *   qmm_fp16_to_fp32  exact for every input: normals, subnormals (0x0001 = 2^-24), +-0, +-Inf;
 *                     a NaN stays NaN with its sign and payload, made quiet.
 *   qmm_fp32_to_fp16  round to nearest, ties to even (ggml_compute_fp32_to_fp16 and the F16C
 *                     instruction agree on this); results below 2^-14 become f16 subnormals,
 *                     anything >= 65520 in magnitude becomes +-Inf, 2^-25 and below become +-0;
 *                     NaN becomes sign | 0x7E00 (ggml's software conversion).
 *   qmm_bf16_to_fp32  exact: the 16 bits are the high half of the float32.
 *   qmm_fp32_to_bf16  round to nearest, ties to even, on the bits (ggml_compute_fp32_to_bf16):
 *                     subnormals are rounded, not flushed (current ggml); NaN becomes the
 *                     truncated high half with the quiet bit (0x0040) forced on.
 *
 * Integer-only code: the results do not depend on the FPU's flush-to-zero or contraction
 * settings.
 */
#ifndef QMM_FORMATS_FP16_H
#define QMM_FORMATS_FP16_H

#include <stdint.h>
#include <string.h>

#include "formats/blocks.h"

static inline uint32_t qmm_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float qmm_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* binary16 bits -> float32, exact (see the top of this file). */
static inline float qmm_fp16_to_fp32(qmm_half h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0x1F) /* Inf, or NaN made quiet */
        return qmm_f32_from_bits(sign | 0x7F800000u | (man << 13) | (man ? 0x00400000u : 0));
    if (exp != 0) /* normal: rebias 15 -> 127 */
        return qmm_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0) return qmm_f32_from_bits(sign);
    /* subnormal man * 2^-24: shift the leading one up to bit 10, lowering the exponent */
    uint32_t e = 113; /* the biased float32 exponent of 2^-14 */
    while (!(man & 0x400u)) {
        man <<= 1;
        e--;
    }
    return qmm_f32_from_bits(sign | (e << 23) | ((man & 0x3FFu) << 13));
}

/* float32 -> binary16 bits, round to nearest even (see the top of this file). */
static inline qmm_half qmm_fp32_to_fp16(float f) {
    const uint32_t x = qmm_f32_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (qmm_half)(sign | 0x7E00u); /* NaN */
    if (ax >= 0x477FF000u) return (qmm_half)(sign | 0x7C00u); /* >= 65520 or Inf: Inf */
    if (ax >= 0x38800000u) { /* f16 normal range: rebias, round the 13 dropped bits */
        const uint32_t r = ax - 0x38000000u;
        return (qmm_half)(sign | ((r + 0x0FFFu + ((r >> 13) & 1u)) >> 13));
    }
    if (ax <= 0x33000000u) return (qmm_half)sign; /* <= 2^-25: zero (2^-25 ties to even 0) */
    /* f16 subnormal: the value in units of 2^-24 is man * 2^(e - 126), e <= 112 */
    const uint32_t man = (ax & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - (ax >> 23); /* 14 .. 24 */
    const uint32_t rem = man & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    uint32_t q = man >> shift;
    if (rem > half || (rem == half && (q & 1u))) q++; /* may carry into 0x400 = 2^-14 */
    return (qmm_half)(sign | q);
}

/* bfloat16 bits -> float32, exact. */
static inline float qmm_bf16_to_fp32(qmm_bf16 h) { return qmm_f32_from_bits((uint32_t)h << 16); }

/* float32 -> bfloat16 bits, round to nearest even; NaN made quiet (see the top). */
static inline qmm_bf16 qmm_fp32_to_bf16(float f) {
    const uint32_t x = qmm_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (qmm_bf16)((x >> 16) | 0x0040u);
    return (qmm_bf16)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

#endif /* QMM_FORMATS_FP16_H */
