/*
 * test_int8_quantize.c — the int8 strategy's X quantizer (x86_kernels.h:
 * qmm_x86_int8_quantize_row and its AVX2 and portable twins) gives the same bytes and scales at
 * every ISA level: q, dx and s compared bit for bit between the portable version and the AVX2
 * and AVX-512 ones (each where the CPU has it), on random rows of magnitudes 2^-140 .. 2^126
 * and on the CASES.md edge blocks: all zero, -0, one nonzero element, tiny max |x| (below,
 * at and above 2^-100, subnormal, 2^-149), the largest floats, +-Inf and NaN anywhere in a
 * block (q = 0, dx = s = the NaN 0x7FC00000), and exact .5 products (round to nearest even:
 * max |x| = 127 gives x * 127 / max |x| = x). A few blocks are also checked against the rule
 * itself (dx = max|x| / 127, q = nearest-even of x * 127 / max|x|). Skipped (77) without AVX2.
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
#include "cpu/x86/x86_kernels.h"

typedef void (*quant_fn)(const float *, int64_t, int8_t *, float *, float *, int64_t);

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Quantize x (k elements, scales ld apart) with every available version; all must agree bit
 * for bit with the portable one. Returns the number of differing rows (printed). */
static int agree(const char *what, const float *x, int64_t k, int64_t ld) {
    const int64_t nb = k / 32;
    int8_t *q0 = malloc((size_t)k), *q1 = malloc((size_t)k);
    float *d0 = malloc(sizeof(float) * (size_t)(nb * ld)), *s0 = malloc(sizeof(float) * (size_t)(nb * ld));
    float *d1 = malloc(sizeof(float) * (size_t)(nb * ld)), *s1 = malloc(sizeof(float) * (size_t)(nb * ld));
    assert_true(q0 && q1 && d0 && s0 && d1 && s1);
    memset(d0, 0x5A, sizeof(float) * (size_t)(nb * ld));
    memset(s0, 0x5A, sizeof(float) * (size_t)(nb * ld));
    qmm_x86_int8_quantize_row_generic(x, k, q0, d0, s0, ld);
    struct { const char *name; quant_fn fn; qmm_cpu_isa isa; } v[] = {
        {"avx2", qmm_x86_int8_quantize_row_avx2, QMM_CPU_ISA_AVX2},
        {"avx512", qmm_x86_int8_quantize_row, QMM_CPU_ISA_AVX512},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        if (!qmm_cpu_isa_supported(v[i].isa)) continue;
        memset(q1, 0x33, (size_t)k);
        memset(d1, 0x5A, sizeof(float) * (size_t)(nb * ld));
        memset(s1, 0x5A, sizeof(float) * (size_t)(nb * ld));
        v[i].fn(x, k, q1, d1, s1, ld);
        for (int64_t c = 0; c < nb; c++) {
            const bool same = memcmp(q0 + 32 * c, q1 + 32 * c, 32) == 0 &&
                              bits(d0[c * ld]) == bits(d1[c * ld]) &&
                              bits(s0[c * ld]) == bits(s1[c * ld]);
            if (!same && bad++ < 8)
                print_error("%s: block %lld: %s gives dx %a s %a, portable dx %a s %a%s\n", what,
                            (long long)c, v[i].name, (double)d1[c * ld], (double)s1[c * ld],
                            (double)d0[c * ld], (double)s0[c * ld],
                            memcmp(q0 + 32 * c, q1 + 32 * c, 32) ? " (quants differ)" : "");
        }
        /* only the scales of the blocks are written (the ld - 1 floats between stay) */
        for (int64_t e = 0; e < nb * ld; e++)
            if (e % ld != 0 && (bits(d1[e]) != 0x5A5A5A5Au || bits(s1[e]) != 0x5A5A5A5Au)) {
                print_error("%s: %s wrote between the scales (ld %lld)\n", what, v[i].name, (long long)ld);
                bad++;
                break;
            }
    }
    free(q0);
    free(q1);
    free(d0);
    free(s0);
    free(d1);
    free(s1);
    return bad;
}

static void test_random_rows(void **state) {
    (void)state;
    uint64_t s = 1;
    int bad = 0;
    const int64_t ks[] = {32, 64, 96, 512, 4128};
    for (int e = -140; e <= 126; e += 7)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki];
            float *x = malloc(sizeof(float) * (size_t)k);
            for (int64_t i = 0; i < k; i++) {
                const double u = (double)(rng(&s) >> 11) * 0x1p-53 * 2.0 - 1.0;
                /* mixed magnitudes within a block: some elements 2^-20 of the others */
                x[i] = (float)ldexp(u, e - (int)(rng(&s) % 4 == 0 ? 20 : 0));
            }
            char what[64];
            snprintf(what, sizeof what, "random 2^%d k=%lld", e, (long long)k);
            bad += agree(what, x, k, 1);
            bad += agree(what, x, k, 16);
            free(x);
        }
    assert_int_equal(bad, 0);
}

static void test_edge_blocks(void **state) {
    (void)state;
    enum { NB = 24 };
    float x[NB * 32];
    uint64_t s = 7;
    for (int i = 0; i < NB * 32; i++) x[i] = (float)((double)(rng(&s) >> 11) * 0x1p-53 - 0.5);
    float *b;
    b = x + 0 * 32; for (int i = 0; i < 32; i++) b[i] = 0.0f;                 /* all zero */
    b = x + 1 * 32; for (int i = 0; i < 32; i++) b[i] = -0.0f;                /* -0 */
    b = x + 2 * 32; for (int i = 0; i < 32; i++) b[i] = 0.0f; b[17] = -3.0f;  /* one nonzero */
    b = x + 3 * 32; for (int i = 0; i < 32; i++) b[i] *= 0x1p-110f;           /* amax < 2^-100 */
    b = x + 4 * 32; for (int i = 0; i < 32; i++) b[i] = from_bits(1u + (uint32_t)i * 977u); /* subnormal */
    b = x + 5 * 32; for (int i = 0; i < 32; i++) b[i] = 0.0f; b[3] = 0x1p-149f; /* the smallest */
    b = x + 6 * 32; for (int i = 0; i < 32; i++) b[i] *= 0x1p-99f; b[9] = 0x1p-100f; /* at 2^-100 */
    b = x + 7 * 32; for (int i = 0; i < 32; i++) b[i] *= 0x1p-101f; b[9] = -0x1.fffffep-101f; /* just below */
    b = x + 8 * 32; for (int i = 0; i < 32; i++) b[i] *= 0x1p127f; b[0] = 3.4028235e38f; /* largest */
    b = x + 9 * 32; for (int i = 0; i < 32; i++) b[i] = -3.4028235e38f;       /* all -FLT_MAX */
    x[10 * 32 + 0] = INFINITY;                                                /* +Inf first */
    x[11 * 32 + 31] = -INFINITY;                                              /* -Inf last */
    x[12 * 32 + 15] = NAN;                                                    /* NaN */
    x[13 * 32 + 16] = -NAN;
    b = x + 14 * 32; for (int i = 0; i < 32; i++) b[i] = INFINITY;            /* all Inf */
    b = x + 15 * 32; for (int i = 0; i < 32; i++) b[i] = from_bits(0x7F800001u + (uint32_t)i); /* sNaN */
    /* exact .5 products: amax = 127 -> inv = 1, so q = nearest-even(x) */
    b = x + 16 * 32;
    for (int i = 0; i < 32; i++) b[i] = (float)(i % 2 ? -1 : 1) * ((float)(i * 4) + 0.5f);
    b[0] = 127.0f;
    b = x + 17 * 32; for (int i = 0; i < 32; i++) b[i] = (float)i - 15.5f; b[31] = -127.0f;
    /* ties after scaling: amax = 254 (inv = 0.5): x = 2j + 1 gives j + 0.5 */
    b = x + 18 * 32; for (int i = 0; i < 32; i++) b[i] = (float)(2 * i + 1) * (i % 3 ? 1.0f : -1.0f); b[5] = 254.0f;
    b = x + 19 * 32; for (int i = 0; i < 32; i++) b[i] = 1.0f;                /* constant */
    b = x + 20 * 32; for (int i = 0; i < 32; i++) b[i] = (float)((i * 37) % 255 - 127); /* integers */
    assert_int_equal(agree("edge blocks", x, NB * 32, 1), 0);
    assert_int_equal(agree("edge blocks, strided scales", x, NB * 32, 3), 0);

    /* the rule itself, on the portable version */
    int8_t q[NB * 32];
    float dx[NB], sx[NB];
    qmm_x86_int8_quantize_row_generic(x, NB * 32, q, dx, sx, 1);
    for (int c = 0; c < 2; c++) {
        assert_true(bits(dx[c]) == 0 && bits(sx[c]) == 0);
        for (int i = 0; i < 32; i++) assert_int_equal(q[32 * c + i], 0);
    }
    assert_true(dx[2] == 3.0f / 127.0f && q[2 * 32 + 17] == -127);
    for (int c = 3; c <= 7; c++) { /* tiny blocks still use all of -127..127 */
        int amax = 0;
        for (int i = 0; i < 32; i++) amax = abs(q[32 * c + i]) > amax ? abs(q[32 * c + i]) : amax;
        assert_int_equal(amax, 127);
        /* dx = max|x| / 127 as a float: block 5's 2^-149 / 127 rounds to 0 */
        assert_true(isfinite(dx[c]) && (c == 5 ? dx[c] == 0.0f : dx[c] > 0.0f));
    }
    for (int c = 10; c <= 15; c++) {
        assert_true(bits(dx[c]) == 0x7FC00000u && bits(sx[c]) == 0x7FC00000u);
        for (int i = 0; i < 32; i++) assert_int_equal(q[32 * c + i], 0);
    }
    for (int i = 0; i < 32; i++) { /* block 16: q = nearest-even(x) */
        const float v = x[16 * 32 + i];
        assert_int_equal(q[16 * 32 + i], (int)nearbyint((double)v));
        assert_true(fabs((double)q[16 * 32 + i] - (double)v) <= 0.5);
    }
    assert_int_equal(q[16 * 32 + 1], -4);  /* -4.5 -> -4 */
    assert_int_equal(q[16 * 32 + 2], 8);   /* 8.5 -> 8 */
    assert_int_equal(q[17 * 32 + 0], -16); /* -15.5 -> -16 */
    assert_int_equal(q[17 * 32 + 1], -14); /* -14.5 -> -14 */
    assert_int_equal(q[18 * 32 + 1], 2);   /* 3 / 2 = 1.5 -> 2 */
    assert_int_equal(q[18 * 32 + 2], 2);   /* 5 / 2 = 2.5 -> 2 */
    assert_true(dx[16] == 1.0f && dx[18] == 2.0f);
    int sum = 0;
    for (int i = 0; i < 32; i++) sum += q[20 * 32 + i];
    assert_true(sx[20] == dx[20] * (float)sum);
}

int main(void) {
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AVX2)) {
        print_message("[  SKIPPED ] int8 X quantizer: no AVX2 on this machine\n");
        return 77;
    }
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AVX512))
        print_message("[  NOTE    ] no AVX-512 here: portable vs AVX2 only\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_rows),
        cmocka_unit_test(test_edge_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
