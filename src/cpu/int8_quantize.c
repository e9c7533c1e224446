/*
 * int8_quantize.c — the int8 class's X rule in portable C (qmm_cpu_int8_quantize_row,
 * cpu_internal.h): the same bytes and scales as the AVX-512 qmm_x86_int8_quantize_row and the
 * CUDA quantizer, for any architecture (the ARM int8 kernels use it; tests/test_int8_rule.c
 * holds it to the x86 function bit for bit where that one can run).
 *
 * Per 32-element block: amax = max |x| (exact in any order), dx = amax / 127 (one rounding);
 * pre = 2^64 when amax < 2^-100 (so 127 / amax cannot overflow; exact), inv = 127 / (amax *
 * pre) (0 for an all-zero block); q = round-to-nearest-even((x * pre) * inv) (two roundings,
 * as the vector code), in -127..127; s = dx * sum(q) (the integer sum is exact). A block
 * holding NaN or +-Inf: q = 0 and dx = s = NaN (bits 0x7FC00000).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

static float nonfinite_scale(void) {
    const union {
        uint32_t u;
        float f;
    } v = {0x7FC00000u};
    return v.f;
}

void qmm_cpu_int8_quantize_row(const float *x, int64_t k, int8_t *q, float *dx, float *s,
                               int64_t ld) {
    for (int64_t c = 0; c < k / 32; c++) {
        const float *b = x + 32 * c;
        float amax = 0.0f;
        int finite = 1;
        for (int e = 0; e < 32; e++) {
            const float a = fabsf(b[e]);
            finite &= a < INFINITY; /* false for NaN and +-Inf */
            amax = a > amax ? a : amax;
        }
        if (!finite) {
            memset(q + 32 * c, 0, 32);
            dx[c * ld] = s[c * ld] = nonfinite_scale();
            continue;
        }
        const float d = amax / 127.0f;
        const float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
        const float inv = amax > 0.0f ? 127.0f / (amax * pre) : 0.0f;
        int32_t sum = 0;
        for (int e = 0; e < 32; e++) {
            /* nearbyintf: the default rounding mode, to nearest with ties to even; |v| <= 127
             * up to rounding, so the clamp only guards the conversion */
            float v = nearbyintf((b[e] * pre) * inv);
            v = v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v;
            q[32 * c + e] = (int8_t)v;
            sum += (int32_t)v;
        }
        dx[c * ld] = d;
        s[c * ld] = d * (float)sum;
    }
}

qmm_status qmm_cpu_rows_nonfinite(qmm_type type, int64_t m, int64_t k, const unsigned char *rows,
                                  size_t stride, int n_threads, int *found) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    if (t == NULL) return qmm_error(QMM_ERR_INTERNAL, "qmm_cpu_rows_nonfinite: bad type %d", (int)type);
    int any = 0, failed = 0;
#pragma omp parallel num_threads(n_threads < 1 ? 1 : n_threads) reduction(| : any, failed)
    {
        float *row = malloc((size_t)k * sizeof(float));
        if (row == NULL) failed = 1;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m; i++) {
            if (row == NULL || any) continue;
            t->to_float(rows + (size_t)i * stride, row, k);
            for (int64_t e = 0; e < k; e++) any |= !isfinite(row[e]);
        }
        free(row);
    }
    if (failed) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "cannot allocate a row buffer of %lld floats",
                                 (long long)k);
    *found = any != 0;
    return QMM_OK;
}
