/*
 * test_amx_f32.c — f32 weights on the AMX path fused_amx_bf16x3 (strategy fused at ISA level
 * amx; docs/KERNELS.md) against qmm_matmul_ref: the f32 limits (nmse <= 1e-10, max_rel_err <=
 * 1e-5) and, per output, the stated bound |y - ref| <= (6k + 8) * 2^-24 * sum|x w| + 2^-24 |ref|
 * (recursive f32 summation of six bf16 products per element, representation error below
 * 2^-25 per product). k with tails (1, 31, 33) and long (4096, 16384), n in {1, 16, 17, 65}
 * with row 0 bit-identical for every n, X rows of magnitude 2^-60 and 2^60 (row scales), and
 * all-positive activations of 2000..60000 (CASES A). Skipped (77) without AMX.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/cpu_features.h"
#include "qmm.h"

static const int64_t ns[] = {1, 16, 17, 65};
#define N_NS (sizeof ns / sizeof ns[0])
#define NMAX 65

static void fill(float *v, int64_t count, uint32_t seed, float lo, float hi) {
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < count; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = lo + (hi - lo) * (float)((s >> 8) * (1.0 / 16777216.0));
    }
}

/* One case: m x k f32 weights uniform [-1, 1), X rows uniform [xlo, xhi) times row_mul. */
static int check(int64_t m, int64_t k, float xlo, float xhi, float row_mul, uint32_t seed) {
    qmm_context *ctx;
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = 2;
    assert_int_equal(qmm_context_create(&p, &ctx), QMM_OK);
    assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_FUSED), QMM_OK);
    float *w = malloc(sizeof(float) * m * k), *x = malloc(sizeof(float) * NMAX * k);
    float *ref = malloc(sizeof(float) * NMAX * m), *y = malloc(sizeof(float) * NMAX * m);
    float *row0 = malloc(sizeof(float) * m);
    fill(w, m * k, seed, -1.0f, 1.0f);
    fill(x, NMAX * k, seed + 1, xlo, xhi);
    for (int64_t i = 0; i < NMAX * k; i++) x[i] *= row_mul;
    assert_int_equal(qmm_matmul_ref(QMM_TYPE_F32, m, k, w, sizeof(float) * k, NMAX, x, k, ref, m),
                     QMM_OK);
    qmm_weights *wt;
    assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_F32, m, k, w, sizeof(float) * k, &wt),
                     QMM_OK);
    int failures = 0;
    for (size_t ni = 0; ni < N_NS; ni++) {
        const int64_t n = ns[ni];
        assert_int_equal(qmm_matmul(ctx, wt, n, x, k, y, m), QMM_OK);
        qmm_diff d;
        assert_int_equal(qmm_compare(n, m, y, m, ref, m, &d), QMM_OK);
        int64_t over = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double sabs = 0;
                for (int64_t q = 0; q < k; q++) sabs += fabs((double)x[j * k + q] * w[i * k + q]);
                const double bound = (6.0 * (double)k + 8.0) * 0x1p-24 * sabs +
                                     0x1p-24 * fabs(ref[j * m + i]);
                if (!(fabs((double)y[j * m + i] - ref[j * m + i]) <= bound)) over++;
            }
        if (ni == 0) memcpy(row0, y, sizeof(float) * (size_t)m);
        const bool same = memcmp(row0, y, sizeof(float) * (size_t)m) == 0;
        if (!qmm_diff_ok(&d, 1e-10, 1e-5) || over != 0 || !same) {
            print_error("f32 amx m=%lld k=%lld n=%lld x*%g: nmse %.3g max_rel %.3g nonfinite %lld, "
                        "%lld outputs over the bound, row 0 %s\n", (long long)m, (long long)k,
                        (long long)n, (double)row_mul, d.nmse, d.max_rel_err,
                        (long long)d.n_nonfinite, (long long)over, same ? "same" : "DIFFERS");
            failures++;
        }
    }
    qmm_weights_free(wt);
    qmm_context_free(ctx);
    free(w);
    free(x);
    free(ref);
    free(y);
    free(row0);
    return failures;
}

static void test_shapes(void **state) {
    (void)state;
    const int64_t ks[] = {1, 31, 33, 4096, 16384};
    int failures = 0;
    for (size_t i = 0; i < 5; i++) failures += check(ks[i] > 4096 ? 17 : 33, ks[i], -1.0f, 1.0f, 1.0f, (uint32_t)i);
    assert_int_equal(failures, 0);
}

static void test_row_scales(void **state) {
    (void)state;
    int failures = check(33, 256, -1.0f, 1.0f, 0x1p-60f, 11);
    failures += check(33, 256, -1.0f, 1.0f, 0x1p60f, 12);
    assert_int_equal(failures, 0);
}

static void test_large_one_sign(void **state) {
    (void)state;
    assert_int_equal(check(33, 1024, 2000.0f, 60000.0f, 1.0f, 13), 0);
}

int main(void) {
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AMX)) {
        print_message("[  SKIPPED ] fused_amx_bf16x3: no AMX on this machine\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_row_scales),
        cmocka_unit_test(test_large_one_sign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
