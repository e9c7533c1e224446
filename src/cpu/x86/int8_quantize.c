/*
 * int8_quantize.c — the int8 strategy's X quantizer in portable C: the contract of
 * qmm_x86_int8_quantize_row (x86_kernels.h, AVX-512 in gemm_int8_amx.c) operation for
 * operation, so all three (portable, AVX2, AVX-512) give the same bytes and scales
 * (tests/test_int8_quantize.c). The float operations are the SIMD ones, one IEEE operation
 * each (C11 mode: no contraction): amax = max |x| (exact in any order), d = amax / 127,
 * pre = 2^64 for amax < 2^-100 (else 1), inv = 127 / (amax * pre) (0 for amax = 0),
 * q = round-to-nearest-even((x * pre) * inv) (|q| <= 127, so the int8 saturation of the SIMD
 * versions never acts), s = d * (float)sum(q).
 */
#include <math.h>
#include <string.h>

#include "cpu/x86/x86_kernels.h"

void qmm_x86_int8_quantize_row_generic(const float *x, int64_t k, int8_t *q, float *dx,
                                       float *s, int64_t ld) {
    const union { uint32_t u; float f; } nan_bits = {0x7FC00000u};
    for (int64_t c = 0; c < k / 32; c++) {
        const float *b = x + 32 * c;
        bool finite = true;
        float amax = 0.0f;
        for (int e = 0; e < 32; e++) {
            const float a = fabsf(b[e]);
            if (!(a < INFINITY)) finite = false;
            else if (a > amax) amax = a;
        }
        if (!finite) { /* NaN or +-Inf in the block: q = 0, dx = s = NaN */
            memset(q + 32 * c, 0, 32);
            dx[c * ld] = s[c * ld] = nan_bits.f;
            continue;
        }
        const float d = amax / 127.0f;
        const float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
        const float inv = amax > 0.0f ? 127.0f / (amax * pre) : 0.0f;
        int32_t sum = 0;
        for (int e = 0; e < 32; e++) {
            const int32_t v = (int32_t)nearbyintf((b[e] * pre) * inv);
            q[32 * c + e] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
            sum += v;
        }
        dx[c * ld] = d;
        s[c * ld] = d * (float)sum;
    }
}
