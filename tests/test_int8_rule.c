/*
 * test_int8_rule.c — the int8 class's X rule in portable C (qmm_cpu_int8_quantize_row,
 * src/cpu/int8_quantize.c), which the aarch64 int8 kernels use:
 *   - on rounding ties (x * 127 / amax = j + 0.5 exactly, amax = 127 * 2^s): q rounds to even;
 *   - on every block kind (ties, random values over exponents -150..110 with subnormals,
 *     blocks below 2^-100 (the 2^64 pre-scale), zero blocks, large one-sign blocks, NaN and
 *     +-Inf): |x - dx q| <= dx / 2 (1 + 2^-20), |q| <= 127, max |q| = 127 where amax > 0,
 *     s = dx * sum(q) exactly as a float product, NaN/Inf blocks give q = 0 and dx = s = NaN
 *     with the bits 0x7FC00000, zero blocks q = 0, dx = s = 0;
 *   - on x86-64 with AVX-512 (the level where qmm_x86_int8_quantize_row runs): the same bytes
 *     and scale bits as that function for every block, with a stride ld of 1 and of 3.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/cpu_features.h"
#include "cpu/cpu_internal.h"
#if defined(QMM_ARCH_X86_64)
#include "cpu/x86/x86_kernels.h"
#endif
#include "test_util.h"

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

enum { KINDS = 10 };

/* Block c of kind c % KINDS (see the top of the file). */
static void fill_block(float *b, int kind, tu_rng *r) {
    switch (kind) {
    case 0: case 1: case 2: { /* ties: amax = 127 * 2^sh, others (i + 0.5) * 2^sh */
        const float sc = ldexpf(1.0f, (int)(tu_rng_u64(r) % 61) - 30);
        for (int e = 0; e < 32; e++) {
            const int i = (int)(tu_rng_u64(r) % 253) - 126;
            b[e] = ((float)i + (i < 126 ? 0.5f : -0.5f)) * sc;
        }
        b[tu_rng_u64(r) % 32] = (kind == 1 ? -127.0f : 127.0f) * sc;
        break;
    }
    case 3: { /* random over a wide exponent range, subnormals included */
        const int ex = (int)(tu_rng_u64(r) % 260) - 150;
        for (int e = 0; e < 32; e++) b[e] = ldexpf(tu_rng_uniform(r, -1.0f, 1.0f), ex);
        break;
    }
    case 4: /* tiny: below 2^-100 */
        for (int e = 0; e < 32; e++) b[e] = ldexpf(tu_rng_uniform(r, -1.0f, 1.0f), -110 - (int)(tu_rng_u64(r) % 30));
        break;
    case 5: memset(b, 0, 32 * sizeof(float)); break;
    case 6: /* large, one sign */
        for (int e = 0; e < 32; e++) b[e] = tu_rng_uniform(r, 2000.0f, 60000.0f);
        break;
    case 7: /* one NaN */
        for (int e = 0; e < 32; e++) b[e] = tu_rng_uniform(r, -1.0f, 1.0f);
        b[tu_rng_u64(r) % 32] = NAN;
        break;
    case 8: /* one +-Inf */
        for (int e = 0; e < 32; e++) b[e] = tu_rng_uniform(r, -1.0f, 1.0f);
        b[tu_rng_u64(r) % 32] = (tu_rng_u64(r) & 1) ? INFINITY : -INFINITY;
        break;
    default: /* uniform, with -0 */
        for (int e = 0; e < 32; e++) b[e] = tu_rng_uniform(r, -3.0f, 3.0f);
        b[0] = -0.0f;
        break;
    }
}

static void test_rule(void **state) {
    (void)state;
    enum { K = 32 * KINDS * 40 };
    tu_rng r = tu_rng_make(0x1b);
    float *x = malloc(K * sizeof(float)), dx[K / 32], s[K / 32];
    int8_t *q = malloc(K);
    assert_true(x && q);
    for (int c = 0; c < K / 32; c++) fill_block(x + 32 * c, c % KINDS, &r);
    qmm_cpu_int8_quantize_row(x, K, q, dx, s, 1);
    int ties = 0;
    for (int c = 0; c < K / 32; c++) {
        const float *b = x + 32 * c;
        const int8_t *qb = q + 32 * c;
        const int kind = c % KINDS;
        bool finite = true;
        double amax = 0.0;
        for (int e = 0; e < 32; e++) {
            finite = finite && isfinite(b[e]);
            if (fabs((double)b[e]) > amax) amax = fabs((double)b[e]);
        }
        if (!finite) {
            for (int e = 0; e < 32; e++) assert_int_equal(qb[e], 0);
            assert_int_equal(bits(dx[c]), 0x7FC00000u);
            assert_int_equal(bits(s[c]), 0x7FC00000u);
            continue;
        }
        int sum = 0, qmax = 0;
        for (int e = 0; e < 32; e++) {
            sum += qb[e];
            qmax = abs(qb[e]) > qmax ? abs(qb[e]) : qmax;
            assert_true(qb[e] >= -127 && qb[e] <= 127);
        }
        assert_int_equal(bits(dx[c]), bits((float)amax / 127.0f));
        assert_int_equal(bits(s[c]), bits(dx[c] * (float)sum));
        if (amax == 0.0) {
            for (int e = 0; e < 32; e++) assert_int_equal(qb[e], 0);
            continue;
        }
        assert_int_equal(qmax, 127);
        for (int e = 0; e < 32; e++) {
            const double err = fabs((double)b[e] - (double)dx[c] * qb[e]);
            /* half a step of the exact amax / 127, plus |q| times the rounding of dx (relative
             * 2^-24, or up to 2^-150 where amax / 127 is a subnormal: dx may even be 0) */
            const double step = amax / 127.0, dxe = fabs((double)dx[c] - step);
            if (!(err <= step / 2 * (1 + 0x1p-20) + 127.0 * dxe))
                fail_msg("block %d (kind %d) element %d: x = %a, dx = %a, q = %d: |x - dx q| = %g", c,
                         kind, e, (double)b[e], (double)dx[c], qb[e], err);
            if (kind <= 2) { /* exact ties: x / (amax / 127) = j + 0.5 -> the even neighbour */
                const double v = (double)b[e] * 127.0 / amax, f = floor(v);
                if (v - f == 0.5) {
                    ties++;
                    const double want = fmod(f, 2.0) == 0.0 ? f : f + 1.0;
                    if (qb[e] != (int)want)
                        fail_msg("block %d element %d: tie %g rounded to %d, want %g", c, e, v, qb[e], want);
                }
            }
        }
    }
    print_message("test_rule: %d blocks, %d exact ties checked\n", K / 32, ties);
    assert_true(ties > 1000);
    free(x);
    free(q);
}

/* The portable rule against the AVX-512 one, bit for bit (stride 1 and 3). */
static void test_same_as_x86(void **state) {
    (void)state;
#if defined(QMM_ARCH_X86_64)
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AVX512)) {
        print_message("[  SKIPPED ] no AVX-512 here: qmm_x86_int8_quantize_row cannot run\n");
        skip();
        return;
    }
    enum { K = 32 * KINDS * 40 };
    tu_rng r = tu_rng_make(0x2c);
    float *x = malloc(K * sizeof(float));
    int8_t *q1 = malloc(K), *q2 = malloc(K);
    float *d1 = malloc(3 * K / 32 * sizeof(float)), *d2 = malloc(3 * K / 32 * sizeof(float));
    float *s1 = malloc(3 * K / 32 * sizeof(float)), *s2 = malloc(3 * K / 32 * sizeof(float));
    assert_true(x && q1 && q2 && d1 && d2 && s1 && s2);
    for (int c = 0; c < K / 32; c++) fill_block(x + 32 * c, (c * 7) % KINDS, &r);
    for (int ld = 1; ld <= 3; ld += 2) {
        memset(d1, 0, 3 * K / 32 * sizeof(float));
        memset(d2, 0, 3 * K / 32 * sizeof(float));
        qmm_cpu_int8_quantize_row(x, K, q1, d1, s1, ld);
        qmm_x86_int8_quantize_row(x, K, q2, d2, s2, ld);
        assert_memory_equal(q1, q2, K);
        for (int c = 0; c < K / 32; c++) {
            if (bits(d1[c * ld]) != bits(d2[c * ld]) || bits(s1[c * ld]) != bits(s2[c * ld]))
                fail_msg("block %d: portable dx %a s %a, AVX-512 dx %a s %a", c, (double)d1[c * ld],
                         (double)s1[c * ld], (double)d2[c * ld], (double)s2[c * ld]);
        }
    }
    print_message("test_same_as_x86: %d blocks bit-identical (ld 1 and 3)\n", K / 32);
    free(x); free(q1); free(q2); free(d1); free(d2); free(s1); free(s2);
#else
    print_message("[  SKIPPED ] not an x86-64 build: qmm_x86_int8_quantize_row does not exist here\n");
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_same_as_x86),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
