/*
 * test_tune_fit.c — `qmm tune`'s fit (tools/qmm/tune_fit.c) on made-up timings: the row it
 * picks reproduces the fastest candidate wherever one rule can, thresholds sit on the grid
 * (the last grid n open-ended), int8 is never chosen where it does not exist or was not
 * measured, the shapes' weights decide between conflicting shapes, and a grid point where
 * nothing was measured gives no row.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../tools/qmm/tune_fit.c"

static const int64_t ns[] = {1, 2, 4, 8, 16, 32, 64, 512};
#define G ((int)(sizeof ns / sizeof ns[0]))

/* Times where candidate best[s][i] costs 1 and the others 2 (INFINITY where inf[c] bit i). */
static void make(double *t, int shapes, const int best[][G]) {
    for (int s = 0; s < shapes; s++)
        for (int i = 0; i < G; i++)
            for (int c = 0; c < TUNE_CAND; c++)
                t[((size_t)s * G + (size_t)i) * TUNE_CAND + (size_t)c] = c == best[s][i] ? 1.0 : 2.0;
}

static void test_one_shape(void **state) {
    (void)state;
    double t[G * TUNE_CAND];
    const double w[1] = {1.0};
    const int best[1][G] = {{TUNE_GEMV, TUNE_GEMV, TUNE_GEMV, TUNE_INT8, TUNE_INT8, TUNE_INT8,
                             TUNE_FUSED, TUNE_FUSED}};
    make(t, 1, best);
    tune_data d = {.ns = ns, .n_ns = G, .n_shapes = 1, .weight = w, .t = t, .int8_ok = true};
    tune_rule r;
    assert_true(tune_fit(&d, 1, &r));
    assert_int_equal(r.int8_lo, 8);
    assert_int_equal(r.int8_hi, 32);
    assert_int_equal(r.gemv_max, 4);
    assert_true(fabs(tune_rule_loss(&d, &r, 1) - G) < 1e-12);
    assert_true(fabs(tune_rule_worst(&d, &r, 0) - 1.0) < 1e-12);
    for (int i = 0; i < G; i++) assert_int_equal(tune_rule_choice(&r, ns[i]), best[0][i]);
    /* without an int8 kernel: gemv while it is second best, i.e. never int8 */
    d.int8_ok = false;
    assert_true(tune_fit(&d, 1, &r));
    assert_true(r.int8_lo > r.int8_hi);
    for (int i = 0; i < G; i++) assert_int_not_equal(tune_rule_choice(&r, ns[i]), TUNE_INT8);
    assert_true(tune_rule_worst(&d, &r, 0) > 1.5); /* int8 was the best at 8..32 */
}

static void test_open_ended_and_pruned(void **state) {
    (void)state;
    double t[G * TUNE_CAND];
    const double w[1] = {1.0};
    /* int8 best from n = 2 on, to the end of the grid; gemv at n = 1 */
    const int best[1][G] = {{TUNE_GEMV, TUNE_INT8, TUNE_INT8, TUNE_INT8, TUNE_INT8, TUNE_INT8,
                             TUNE_INT8, TUNE_INT8}};
    make(t, 1, best);
    tune_data d = {.ns = ns, .n_ns = G, .n_shapes = 1, .weight = w, .t = t, .int8_ok = true};
    tune_rule r;
    assert_true(tune_fit(&d, 1, &r));
    assert_int_equal(r.int8_lo, 2);
    assert_int_equal(r.int8_hi, TUNE_N_OPEN);
    assert_int_equal(r.gemv_max, 1);
    assert_int_equal(tune_rule_choice(&r, 100000), TUNE_INT8);
    /* gemv pruned (not measured) above n = 4, fused the second best: the rule must never
     * pick gemv where it was not measured */
    const int best2[1][G] = {{TUNE_GEMV, TUNE_GEMV, TUNE_GEMV, TUNE_GEMV, TUNE_GEMV,
                              TUNE_GEMV, TUNE_GEMV, TUNE_GEMV}};
    make(t, 1, best2);
    for (int i = 4; i < G; i++) t[(size_t)i * TUNE_CAND + TUNE_GEMV] = INFINITY;
    d.int8_ok = false;
    assert_true(tune_fit(&d, 1, &r));
    assert_int_equal(r.gemv_max, 8);
    assert_true(isfinite(tune_rule_loss(&d, &r, 1)));
    /* nothing measured at one n: no rule */
    for (int c = 0; c < TUNE_CAND; c++) t[3 * TUNE_CAND + (size_t)c] = INFINITY;
    assert_false(tune_fit(&d, 1, &r));
}

static void test_weighted_shapes(void **state) {
    (void)state;
    double t[2 * G * TUNE_CAND];
    /* shape 0 wants gemv through n = 16, shape 1 fused from n = 1 */
    const int best[2][G] = {
        {TUNE_GEMV, TUNE_GEMV, TUNE_GEMV, TUNE_GEMV, TUNE_GEMV, TUNE_FUSED, TUNE_FUSED,
         TUNE_FUSED},
        {TUNE_FUSED, TUNE_FUSED, TUNE_FUSED, TUNE_FUSED, TUNE_FUSED, TUNE_FUSED, TUNE_FUSED,
         TUNE_FUSED}};
    make(t, 2, best);
    double w[2] = {10.0, 1.0};
    tune_data d = {.ns = ns, .n_ns = G, .n_shapes = 2, .weight = w, .t = t, .int8_ok = false};
    tune_rule r;
    assert_true(tune_fit(&d, 3, &r));
    assert_int_equal(r.gemv_max, 16); /* the heavy shape wins */
    assert_true(tune_rule_worst(&d, &r, 1) > 1.5);
    w[0] = 1.0;
    w[1] = 10.0;
    assert_true(tune_fit(&d, 3, &r));
    assert_int_equal(r.gemv_max, 0);
    /* each shape on its own gets its own rule */
    assert_true(tune_fit(&d, 1, &r));
    assert_int_equal(r.gemv_max, 16);
    assert_true(tune_fit(&d, 2, &r));
    assert_int_equal(r.gemv_max, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_shape),
        cmocka_unit_test(test_open_ended_and_pruned),
        cmocka_unit_test(test_weighted_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
