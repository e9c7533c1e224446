/*
 * test_fused_avx2.c — strategy fused at ISA level avx2 (docs/KERNELS.md), both kernels:
 * fused_gemm_avx2 (outside batch-invariant mode from n = qmm_cpu_fused_gemm_min_n: a
 * register-blocked GEMM in its own order; below that n the call goes to fused_avx2, checked
 * by name) and fused_avx2 (the gemv order, which batch-invariant mode runs; reached here
 * through QMM_FLAG_BATCH_INVARIANT at n above every gemv_max_n of level avx2, 64, where it
 * does not hand the call to the gemv kernels):
 *
 *   - fused_avx2's order is gemv's: for every type gemv_avx2 has, Y of fused equals Y of
 *     gemv bit for bit (k with lane, chain-group and panel tails, 1 to 3 panels of 1024; m
 *     and n tails against the 4 x 3 block and the 48-row X sub-chunk); the data make the
 *     orders distinguishable (the portable fused order, at level generic, differs on them);
 *   - fused_gemm_avx2 against the reference for every weight type with its per-output bound,
 *     k with panel (256) and lane tails, m tails against its 16-row tile and 128-row task,
 *     n tails against its 6-row X group and 48-row X chunk;
 *   - rows independent of n: with QMM_FLAG_BATCH_INVARIANT (fused_avx2, and the gemv
 *     kernels of the same order at small n), for every weight type, rows of n in {1, 2, 7,
 *     16, 33, 512} on 1 and 2 threads are the bits of the same rows of n = 512 on 2 threads;
 *     without it (fused_gemm_avx2, whose order depends on k only) the same for n = g + {0,
 *     1, 6, 15, 32} (g = the kernel's first n) and 512;
 *   - each order's error bound, per output (u = 2^-24, S = sum |x w|): fused_avx2
 *     |y - ref| <= 34 u S + 2 u |ref|, independent of k; fused_gemm_avx2
 *     (min(k, 256) + ceil(k / 256) + 1) u S + 2 u |ref|; also for one-sign data at k = 16384
 *     (where one chain over all k would be about 8000 u S off);
 *   - non-finite W and X give the reference's class per output (NaN, +Inf, -Inf);
 *   - X whose last row ends at a PROT_NONE page, for the f32/f16/bf16 lane tails.
 * A machine without AVX2 skips (after checking the level is refused).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpu/cpu_features.h"
#include "cpu/cpu_internal.h"
#include "qmm.h"
#include "test_util.h"

#define U 0x1p-24

static bool no_avx2(void) {
    if (qmm_cpu_isa_supported(QMM_CPU_ISA_AVX2)) return false;
    print_message("[  SKIPPED ] this machine has no AVX2 level\n");
    return true;
}

/* A CPU context at `isa` with `threads` threads and `flags`. */
static qmm_context *make_ctx(const char *isa, int threads, unsigned flags) {
    setenv("QMM_CPU_ISA", isa, 1);
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = threads;
    p.flags = flags;
    qmm_context *ctx = NULL;
    const qmm_status s = qmm_context_create(&p, &ctx);
    unsetenv("QMM_CPU_ISA");
    assert_int_equal(s, QMM_OK);
    return ctx;
}

/* m rows of k elements of `type` (quantized from uniform [lo, hi), or random valid blocks). */
static unsigned char *make_w(qmm_type type, int64_t m, int64_t k, float lo, float hi,
                             tu_rng *r, size_t *rb) {
    assert_int_equal(qmm_row_bytes(type, k, rb), QMM_OK);
    float *src = malloc(sizeof(float) * (size_t)(m * k));
    unsigned char *q = malloc(*rb * (size_t)m);
    assert_non_null(src);
    assert_non_null(q);
    tu_fill_uniform(r, src, (size_t)(m * k), lo, hi);
    if (qmm_type_has_quantizer(type))
        assert_int_equal(qmm_quantize_rows(type, src, q, m, k), QMM_OK);
    else
        assert_int_equal(qmm_random_rows(type, tu_rng_u64(r), 0.5, q, m, k), QMM_OK);
    free(src);
    return q;
}

/* Y = X W^T on ctx with strategy s; returns the kernel qmm_matmul_path names. */
static const char *run(qmm_context *ctx, qmm_weights *w, qmm_strategy s, int64_t n,
                       const float *x, int64_t ldx, float *y, int64_t ldy) {
    assert_int_equal(qmm_context_set_strategy(ctx, s), QMM_OK);
    qmm_path path;
    assert_int_equal(qmm_matmul_path(ctx, w, n, &path), QMM_OK);
    const qmm_status st = qmm_matmul(ctx, w, n, x, ldx, y, ldy);
    if (st != QMM_OK) fail_msg("qmm_matmul: %s", qmm_last_error());
    return path.kernel;
}

/* The two kernels of strategy fused at avx2 and the context flags that select them. */
typedef struct kernel {
    const char *name;
    unsigned flags;
} kernel;
static const kernel GEMM = {"fused_gemm_avx2", 0};
static const kernel DOT = {"fused_avx2", QMM_FLAG_BATCH_INVARIANT};
/* n above every gemv_max_n of level avx2 (src/cpu/auto_table.c): fused_avx2 itself runs */
#define DOT_MIN_N 65

/* The smallest n at which fused runs fused_gemm_avx2 for `type` (below it: fused_avx2). */
static int64_t gemm_n(qmm_type type) { return qmm_cpu_fused_gemm_min_n(QMM_CPU_ISA_AVX2, type); }

/* The S coefficient of a kernel's per-output bound at k. */
static double bound_coef(const kernel *kn, int64_t k) {
    if (kn == &DOT) return 34;
    return (double)(k < 256 ? k : 256) + (double)((k + 255) / 256) + 1;
}

/* The per-output bound of the kernel's order: |y - ref| <= coef u S + 2 u |ref| + k 2^-149,
 * S from the dequantized W (f64). Returns the number of outputs outside it. */
static int64_t check_bound(const kernel *kn, qmm_type type, int64_t m, int64_t k,
                           const unsigned char *wq, size_t rb, int64_t n, const float *x,
                           int64_t ldx, const float *y, int64_t ldy, const char *what) {
    float *wf = malloc(sizeof(float) * (size_t)k);
    float *ref = malloc(sizeof(float) * (size_t)(n * m));
    assert_non_null(wf);
    assert_non_null(ref);
    assert_int_equal(qmm_matmul_ref(type, m, k, wq, rb, n, x, ldx, ref, m), QMM_OK);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; i++) {
        assert_int_equal(qmm_dequantize_rows(type, wq + (size_t)i * rb, wf, 1, k), QMM_OK);
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += fabs((double)x[j * ldx + p] * wf[p]);
            const double yr = ref[j * m + i], yv = y[j * ldy + i];
            const double lim = bound_coef(kn, k) * U * s + 2 * U * fabs(yr) + (double)k * 0x1p-149;
            if (!(fabs(yv - yr) <= lim)) {
                if (bad++ < 5)
                    print_message("  %s %s k=%lld: y[%lld][%lld] = %.9g, ref %.9g, |diff| %.3g > %.3g\n",
                                  what, qmm_type_name(type), (long long)k, (long long)j,
                                  (long long)i, yv, yr, fabs(yv - yr), lim);
            }
        }
    }
    free(wf);
    free(ref);
    return bad;
}

/* k values of a type: lane, chain-group (32) and panel (1024) tails, 1 to 3 panels. */
static int ks_for(qmm_type type, int64_t *ks) {
    const int64_t bs = qmm_type_block_size(type);
    if (bs == 1) {
        static const int64_t k1[] = {1, 5, 8, 13, 31, 33, 100, 1023, 1024, 1025, 2063, 2500};
        memcpy(ks, k1, sizeof k1);
        return (int)(sizeof k1 / sizeof k1[0]);
    }
    static const int64_t kb[] = {32, 96, 1024, 1056, 2304, 3072};
    int c = 0;
    for (size_t i = 0; i < sizeof kb / sizeof kb[0]; i++) {
        const int64_t k = (kb[i] + bs - 1) / bs * bs;
        if (c == 0 || ks[c - 1] != k) ks[c++] = k;
    }
    return c;
}

/* fused_avx2 (level avx2, batch-invariant, n > every gemv_max_n) == gemv (level avx2) bit for
 * bit for every type gemv_avx2 has. */
static void test_fused_equals_gemv(void **state) {
    (void)state;
    if (no_avx2()) {
        skip();
        return;
    }
    qmm_context *ctx = make_ctx("avx2", 2, DOT.flags), *gen = make_ctx("generic", 2, 0);
    /* past the 48-row sub-chunk: 17, 18 and 19 rows, a last 3 x 2, 3 x 3 and 3 x 1 block */
    static const int64_t ms[] = {1, 6, 37}, ns[] = {DOT_MIN_N, DOT_MIN_N + 1, DOT_MIN_N + 2};
    tu_rng r = tu_rng_make(0xF05ED);
    int compared = 0, types = 0, weight_types = 0, portable_differs = 0;
    int64_t bad = 0;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type type = (qmm_type)t;
        if (!qmm_type_is_supported(t) || !qmm_type_is_weight(type)) continue;
        weight_types++;
        int64_t ks[16];
        const int nk = ks_for(type, ks);
        bool has_gemv = false;
        for (int ki = 0; ki < nk; ki++)
            for (int mi = 0; mi < 3; mi++) {
                const int64_t m = ms[mi], k = ks[ki], nmax = DOT_MIN_N + 2, ldx = k + 3, ldy = m + 2;
                size_t rb;
                unsigned char *wq = make_w(type, m, k, -1.0f, 1.0f, &r, &rb);
                float *x = malloc(sizeof(float) * (size_t)(nmax * ldx));
                float *yf = malloc(sizeof(float) * (size_t)(nmax * ldy));
                float *yg = malloc(sizeof(float) * (size_t)(nmax * ldy));
                assert_true(x && yf && yg);
                /* magnitudes over several binades: sums of differently ordered terms round
                 * differently */
                for (int64_t e = 0; e < nmax * ldx; e++)
                    x[e] = tu_rng_uniform(&r, -1.0f, 1.0f) * ldexpf(1.0f, (int)(tu_rng_u64(&r) % 12));
                qmm_weights *w, *wg;
                assert_int_equal(qmm_weights_create(ctx, type, m, k, wq, rb, &w), QMM_OK);
                assert_int_equal(qmm_weights_create(gen, type, m, k, wq, rb, &wg), QMM_OK);
                for (int ni = 0; ni < 3; ni++) {
                    const int64_t n = ns[ni];
                    tu_poison_fill(yf, (size_t)(nmax * ldy));
                    tu_poison_fill(yg, (size_t)(nmax * ldy));
                    const char *kf = run(ctx, w, QMM_STRATEGY_FUSED, n, x, ldx, yf, ldy);
                    assert_string_equal(kf, "fused_avx2");
                    const char *kg = run(ctx, w, QMM_STRATEGY_GEMV, n, x, ldx, yg, ldy);
                    if (strcmp(kg, "gemv_avx2") != 0) break; /* gemv_portable: another order */
                    has_gemv = true;
                    compared++;
                    if (!tu_bits_equal(yf, ldy, yg, ldy, n, m)) {
                        if (bad++ < 10)
                            print_message("  %s m=%lld k=%lld n=%lld: fused_avx2 != gemv_avx2\n",
                                          qmm_type_name(type), (long long)m, (long long)k,
                                          (long long)n);
                    }
                    assert_true(tu_padding_intact(yf, n, m, ldy));
                    assert_true(tu_all_poison(yf + (n - 1) * ldy + m, (size_t)((nmax - n + 1) * ldy - m)));
                    bad += check_bound(&DOT, type, m, k, wq, rb, n, x, ldx, yf, ldy, "fused_avx2");
                    /* the portable order (level generic) on the same data */
                    run(gen, wg, QMM_STRATEGY_FUSED, n, x, ldx, yg, ldy);
                    portable_differs += !tu_bits_equal(yf, ldy, yg, ldy, n, m);
                }
                qmm_weights_free(w);
                qmm_weights_free(wg);
                free(wq);
                free(x);
                free(yf);
                free(yg);
            }
        types += has_gemv;
    }
    print_message("fused_avx2 vs gemv_avx2: %d types, %d (type, m, k, n) cases; the portable "
                  "order differs in %d of them\n", types, compared, portable_differs);
    assert_int_equal(bad, 0);
    assert_int_equal(types, weight_types); /* gemv_avx2 has every weight type (26) */
    assert_true(portable_differs > compared / 2); /* the data tell the orders apart */
    qmm_context_free(ctx);
    qmm_context_free(gen);
}

/* fused_gemm_avx2 against the reference with its bound, every weight type: k with panel
 * (256) and lane tails, m against the 16-row tile (1, 6, 45: both of its halves) and the
 * 128-row task (523 at one k), n = g .. g + 5 (every tail of the 6-row X group) and g + 50
 * (past a 48-row X chunk), g the kernel's first n; Y's padding and the rows past n
 * untouched; at n = g - 1 fused runs fused_avx2: the bits of gemv_avx2. */
static void test_gemm_reference(void **state) {
    (void)state;
    if (no_avx2()) {
        skip();
        return;
    }
    qmm_context *ctx = make_ctx("avx2", 2, GEMM.flags);
    static const int64_t ms[] = {1, 6, 45, 523}, dn[] = {0, 1, 2, 3, 4, 5, 50};
    static const int64_t k1[] = {1, 5, 8, 13, 100, 255, 256, 257, 600, 1025};
    static const int64_t kb[] = {32, 256, 512, 800, 1280};
    tu_rng r = tu_rng_make(0x6E33);
    int cases = 0;
    int64_t bad = 0;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type type = (qmm_type)t;
        if (!qmm_type_is_supported(t) || !qmm_type_is_weight(type)) continue;
        const int64_t bs = qmm_type_block_size(type);
        int64_t ks[16];
        int nk = 0;
        for (size_t i = 0; i < (bs == 1 ? 10u : 5u); i++) {
            const int64_t k = bs == 1 ? k1[i] : (kb[i] + bs - 1) / bs * bs;
            if (nk == 0 || ks[nk - 1] != k) ks[nk++] = k;
        }
        for (int ki = 0; ki < nk; ki++)
            for (int mi = 0; mi < 4; mi++) {
                if (mi == 3 && ki != nk - 1) continue; /* m = 523 at the last k only */
                const int64_t g = gemm_n(type), m = ms[mi], k = ks[ki], nmax = g + 50;
                const int64_t ldx = k + 3, ldy = m + 2;
                size_t rb;
                unsigned char *wq = make_w(type, m, k, -1.0f, 1.0f, &r, &rb);
                float *x = malloc(sizeof(float) * (size_t)(nmax * ldx));
                float *y = malloc(sizeof(float) * (size_t)(nmax * ldy));
                assert_true(x && y);
                for (int64_t e = 0; e < nmax * ldx; e++)
                    x[e] = tu_rng_uniform(&r, -1.0f, 1.0f) * ldexpf(1.0f, (int)(tu_rng_u64(&r) % 12));
                qmm_weights *w;
                assert_int_equal(qmm_weights_create(ctx, type, m, k, wq, rb, &w), QMM_OK);
                if (g > 1 && mi < 3) { /* below the switch: fused_avx2, gemv's bits */
                    float *yg = malloc(sizeof(float) * (size_t)(nmax * ldy));
                    assert_non_null(yg);
                    assert_string_equal(run(ctx, w, QMM_STRATEGY_FUSED, g - 1, x, ldx, y, ldy), DOT.name);
                    assert_string_equal(run(ctx, w, QMM_STRATEGY_GEMV, g - 1, x, ldx, yg, ldy), "gemv_avx2");
                    if (!tu_bits_equal(y, ldy, yg, ldy, g - 1, m)) {
                        if (bad++ < 10)
                            print_message("  %s m=%lld k=%lld n=%lld: fused (fused_avx2) != gemv_avx2\n",
                                          qmm_type_name(type), (long long)m, (long long)k,
                                          (long long)(g - 1));
                    }
                    free(yg);
                }
                for (int ni = 0; ni < 7; ni++) {
                    const int64_t n = g + dn[ni];
                    tu_poison_fill(y, (size_t)(nmax * ldy));
                    assert_string_equal(run(ctx, w, QMM_STRATEGY_FUSED, n, x, ldx, y, ldy), GEMM.name);
                    assert_true(tu_padding_intact(y, n, m, ldy));
                    assert_true(tu_all_poison(y + (n - 1) * ldy + m, (size_t)((nmax - n + 1) * ldy - m)));
                    bad += check_bound(&GEMM, type, m, k, wq, rb, n, x, ldx, y, ldy, GEMM.name);
                    cases++;
                }
                qmm_weights_free(w);
                free(wq);
                free(x);
                free(y);
            }
    }
    print_message("fused_gemm_avx2 vs the reference: %d (type, m, k, n) cases\n", cases);
    assert_int_equal(bad, 0);
    qmm_context_free(ctx);
}

/* Rows independent of n for strategy fused at avx2 with the kernel's flags, every weight
 * type, n in {1, 2, 7, 16, 33, 512}, 1 and 2 threads (auto takes int8 there for the int8
 * types: test_int8 checks its invariance). Returns the rows that differ. */
static int64_t rows_independent_of_n(const kernel *kn, int *cases_out) {
    qmm_context *ctx[2] = {make_ctx("avx2", 1, kn->flags), make_ctx("avx2", 2, kn->flags)};
    static const int64_t ns[] = {1, 2, 7, 16, 33, 512};
    const int64_t m = 45, nmax = 512;
    tu_rng r = tu_rng_make(0xB1);
    /* fused_gemm_avx2 from its first n (smaller n run fused_avx2) */
    int64_t bad = 0;
    int cases = 0;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type type = (qmm_type)t;
        if (!qmm_type_is_supported(t) || !qmm_type_is_weight(type)) continue;
        const int64_t bs = qmm_type_block_size(type);
        const int64_t kk[2] = {bs == 1 ? 1000 : (1000 + bs - 1) / bs * bs,
                               bs == 1 ? 2500 : (2500 + bs - 1) / bs * bs};
        for (int ki = 0; ki < 2; ki++) {
            const int64_t k = kk[ki], ldx = k + 1;
            size_t rb;
            unsigned char *wq = make_w(type, m, k, -1.0f, 1.0f, &r, &rb);
            float *x = malloc(sizeof(float) * (size_t)(nmax * ldx));
            float *base = malloc(sizeof(float) * (size_t)(nmax * m));
            float *y = malloc(sizeof(float) * (size_t)(nmax * m));
            assert_true(x && base && y);
            tu_fill_uniform(&r, x, (size_t)(nmax * ldx), -1.0f, 1.0f);
            qmm_weights *w[2];
            for (int c = 0; c < 2; c++)
                assert_int_equal(qmm_weights_create(ctx[c], type, m, k, wq, rb, &w[c]), QMM_OK);
            const char *kb = run(ctx[1], w[1], QMM_STRATEGY_FUSED, nmax, x, ldx, base, m);
            assert_string_equal(kb, kn->name);
            bad += check_bound(kn, type, m, k, wq, rb, nmax, x, ldx, base, m, "rows");
            for (int c = 0; c < 2; c++)
                for (int ni = 0; ni < 6; ni++) {
                    const int64_t g = kn == &GEMM ? gemm_n(type) - 1 : 0;
                    const int64_t n = ni < 5 ? ns[ni] + g : ns[ni];
                    const char *used = run(ctx[c], w[c], QMM_STRATEGY_FUSED, n, x, ldx, y, m);
                    if (kn == &GEMM) assert_string_equal(used, GEMM.name);
                    cases++;
                    if (!tu_bits_equal(base, m, y, m, n, m)) {
                        if (bad++ < 10)
                            print_message("  %s k=%lld n=%lld threads=%d (%s): rows differ from "
                                          "n = 512\n", qmm_type_name(type), (long long)k,
                                          (long long)n, c + 1, used);
                    }
                }
            for (int c = 0; c < 2; c++) qmm_weights_free(w[c]);
            free(wq);
            free(x);
            free(base);
            free(y);
        }
    }
    for (int c = 0; c < 2; c++) qmm_context_free(ctx[c]);
    *cases_out = cases;
    return bad;
}

static void test_batch_invariant(void **state) {
    (void)state;
    if (no_avx2()) {
        skip();
        return;
    }
    int cases[2];
    const int64_t bad_dot = rows_independent_of_n(&DOT, &cases[0]);
    const int64_t bad_gemm = rows_independent_of_n(&GEMM, &cases[1]);
    print_message("rows independent of n at avx2: %d (type, k, n, threads) cases batch-invariant, "
                  "%d of fused_gemm_avx2\n", cases[0], cases[1]);
    assert_int_equal(bad_dot, 0);
    assert_int_equal(bad_gemm, 0);
    /* batch-invariant: the decode sizes run the gemv kernel of the same order where the type
     * has one */
    qmm_context *ctx = make_ctx("avx2", 2, DOT.flags);
    tu_rng r = tu_rng_make(0xB2);
    qmm_weights *w;
    size_t rb;
    unsigned char *wq = make_w(QMM_TYPE_Q4_0, 8, 64, -1.0f, 1.0f, &r, &rb);
    assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_Q4_0, 8, 64, wq, rb, &w), QMM_OK);
    qmm_path path;
    assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_FUSED), QMM_OK);
    assert_int_equal(qmm_matmul_path(ctx, w, 1, &path), QMM_OK);
    assert_int_equal(path.strategy, QMM_STRATEGY_FUSED);
    assert_string_equal(path.kernel, "gemv_avx2");
    assert_int_equal(path.precision, QMM_PRECISION_F32);
    qmm_weights_free(w);
    free(wq);
    qmm_context_free(ctx);
}

/* One-sign data at long k (16 panels of 1024, 64 of 256; every rounding error of one sign of
 * partial sums): each kernel's bound still holds. */
static void one_sign_long_k(const kernel *kn) {
    qmm_context *ctx = make_ctx("avx2", 2, kn->flags);
    static const qmm_type types[] = {QMM_TYPE_F32, QMM_TYPE_F16, QMM_TYPE_BF16, QMM_TYPE_Q8_0,
                                     QMM_TYPE_Q4_K, QMM_TYPE_Q6_K, QMM_TYPE_IQ2_XXS};
    const int64_t m = 19, k = 16384, n = kn == &DOT ? DOT_MIN_N : gemm_n(QMM_TYPE_F32) + 4;
    tu_rng r = tu_rng_make(0xA1);
    int64_t bad = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        size_t rb;
        unsigned char *wq = make_w(types[ti], m, k, 0.25f, 1.0f, &r, &rb);
        float *x = malloc(sizeof(float) * (size_t)(n * k)), *y = malloc(sizeof(float) * (size_t)(n * m));
        assert_true(x && y);
        tu_fill_uniform(&r, x, (size_t)(n * k), 1500.0f, 3000.0f);
        qmm_weights *w;
        assert_int_equal(qmm_weights_create(ctx, types[ti], m, k, wq, rb, &w), QMM_OK);
        assert_string_equal(run(ctx, w, QMM_STRATEGY_FUSED, n, x, k, y, m), kn->name);
        bad += check_bound(kn, types[ti], m, k, wq, rb, n, x, k, y, m, "one-sign");
        qmm_weights_free(w);
        free(wq);
        free(x);
        free(y);
    }
    assert_int_equal(bad, 0);
    qmm_context_free(ctx);
}

static void test_bound_one_sign_long_k(void **state) {
    (void)state;
    if (no_avx2()) {
        skip();
        return;
    }
    one_sign_long_k(&GEMM);
    one_sign_long_k(&DOT);
}

static int fclass(float v) { return isnan(v) ? 0 : isinf(v) ? (v > 0 ? 1 : 2) : 3; }

/* Inf and NaN in W (f32, f16, bf16 elements; a q8_0 scale) and in X: the class of every
 * output is the reference's (Inf * 0 = NaN, Inf - Inf = NaN, Inf + finite = Inf). */
static void nonfinite(const kernel *kn) {
    qmm_context *ctx = make_ctx("avx2", 2, kn->flags);
    static const qmm_type types[] = {QMM_TYPE_F32, QMM_TYPE_F16, QMM_TYPE_BF16, QMM_TYPE_Q8_0};
    const int64_t m = 9, n = kn == &DOT ? DOT_MIN_N : gemm_n(QMM_TYPE_F32) + 1;
    static const int64_t ks[] = {37, 1056, 2080};
    tu_rng r = tu_rng_make(0x1F);
    int64_t bad = 0, nonfinite_seen = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int ki = 0; ki < 3; ki++) {
            const qmm_type type = types[ti];
            const int64_t k = type == QMM_TYPE_Q8_0 ? (ks[ki] + 31) / 32 * 32 : ks[ki];
            size_t rb;
            unsigned char *wq = make_w(type, m, k, -1.0f, 1.0f, &r, &rb);
            /* row 1: +Inf at element 3; row 2: -Inf at 5 and +Inf at k-1; row 3: NaN at k/2;
             * row 4: +Inf at 0 and the rest zero (times X = 0: NaN) */
            static const uint16_t hinf = 0x7C00, hninf = 0xFC00, hnan = 0x7E01;
            static const uint16_t binf = 0x7F80, bninf = 0xFF80, bnan = 0x7FC1;
            for (int64_t e = 0; e < k && type != QMM_TYPE_Q8_0; e++) {
                const int64_t i = 4;
                if (type == QMM_TYPE_F32) ((float *)(wq + i * rb))[e] = 0.0f;
                else memset(wq + i * rb + 2 * e, 0, 2);
            }
            struct { int64_t row, el; int kind; } plant[] = {
                {1, 3, 0}, {2, 5, 1}, {2, k - 1, 0}, {3, k / 2, 2}, {4, 0, 0}};
            for (size_t pi = 0; pi < 5 && type != QMM_TYPE_Q8_0; pi++) {
                unsigned char *row = wq + plant[pi].row * rb;
                if (type == QMM_TYPE_F32) {
                    const float v[3] = {INFINITY, -INFINITY, NAN};
                    memcpy(row + 4 * plant[pi].el, &v[plant[pi].kind], 4);
                } else {
                    const uint16_t *v = type == QMM_TYPE_F16 ? (const uint16_t[]){hinf, hninf, hnan}
                                                             : (const uint16_t[]){binf, bninf, bnan};
                    memcpy(row + 2 * plant[pi].el, &v[plant[pi].kind], 2);
                }
            }
            if (type == QMM_TYPE_Q8_0) { /* block 1 of row 1: scale +Inf; row 2: NaN */
                memcpy(wq + rb + 34, &hinf, 2);
                memcpy(wq + 2 * rb, &hnan, 2);
            }
            float *x = malloc(sizeof(float) * (size_t)(n * k)), *y = malloc(sizeof(float) * (size_t)(n * m));
            float *ref = malloc(sizeof(float) * (size_t)(n * m));
            assert_true(x && y && ref);
            tu_fill_uniform(&r, x, (size_t)(n * k), -1.0f, 1.0f);
            x[1 * k + 0] = 0.0f;       /* X row 1 meets row 4's Inf with 0: NaN */
            x[2 * k + 7] = INFINITY;   /* X row 2: +Inf */
            x[3 * k + k - 1] = NAN;    /* X row 3: NaN in the tail */
            x[4 * k + 3] = -INFINITY;  /* X row 4 meets row 1's +Inf: -Inf */
            assert_int_equal(qmm_matmul_ref(type, m, k, wq, rb, n, x, k, ref, m), QMM_OK);
            qmm_weights *w;
            assert_int_equal(qmm_weights_create(ctx, type, m, k, wq, rb, &w), QMM_OK);
            assert_string_equal(run(ctx, w, QMM_STRATEGY_FUSED, n, x, k, y, m), kn->name);
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < m; i++) {
                    const float a = y[j * m + i], b = ref[j * m + i];
                    nonfinite_seen += fclass(b) != 3;
                    if (fclass(a) != fclass(b) ||
                        (fclass(b) == 3 && !(fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b))))) {
                        if (bad++ < 10)
                            print_message("  %s k=%lld y[%lld][%lld] = %g, ref %g\n",
                                          qmm_type_name(type), (long long)k, (long long)j,
                                          (long long)i, a, b);
                    }
                }
            qmm_weights_free(w);
            free(wq);
            free(x);
            free(y);
            free(ref);
        }
    assert_int_equal(bad, 0);
    assert_true(nonfinite_seen > 40);
    qmm_context_free(ctx);
}

static void test_nonfinite(void **state) {
    (void)state;
    if (no_avx2()) {
        skip();
        return;
    }
    nonfinite(&GEMM);
    nonfinite(&DOT);
}

/* X rows whose last element is the last byte before a PROT_NONE page: nothing past k is read
 * (lane tails of the f32/f16/bf16 rows). */
static void test_x_guard_page(void **state) {
    (void)state;
    if (no_avx2()) {
        skip();
        return;
    }
    qmm_context *ctxs[2] = {make_ctx("avx2", 2, GEMM.flags), make_ctx("avx2", 2, DOT.flags)};
    static const qmm_type types[] = {QMM_TYPE_F32, QMM_TYPE_F16, QMM_TYPE_BF16};
    static const int64_t ks[] = {1, 7, 9, 31, 1025, 2051};
    /* fused_gemm_avx2 at its first n and 3 more, fused_avx2 (batch-invariant) at DOT_MIN_N */
    const int64_t ns[] = {gemm_n(QMM_TYPE_F32), gemm_n(QMM_TYPE_F32) + 3, DOT_MIN_N};
    const int64_t m = 7;
    tu_rng r = tu_rng_make(0x9A);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t ti = 0; ti < 3; ti++)
        for (int ki = 0; ki < 6; ki++)
            for (int ni = 0; ni < 3; ni++) {
                const int64_t k = ks[ki], n = ns[ni];
                const kernel *kn = ni < 2 ? &GEMM : &DOT;
                qmm_context *ctx = ctxs[ni < 2 ? 0 : 1];
                size_t rb;
                unsigned char *wq = make_w(types[ti], m, k, -1.0f, 1.0f, &r, &rb);
                const size_t bytes = sizeof(float) * (size_t)(n * k);
                const size_t pages = (bytes + page - 1) / page;
                unsigned char *map = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                assert_true(map != MAP_FAILED);
                assert_int_equal(mprotect(map + pages * page, page, PROT_NONE), 0);
                float *x = (float *)(map + pages * page - bytes);
                tu_fill_uniform(&r, x, (size_t)(n * k), -1.0f, 1.0f);
                float *y = malloc(sizeof(float) * (size_t)(n * m)), *yg = malloc(sizeof(float) * (size_t)(n * m));
                qmm_weights *w;
                assert_int_equal(qmm_weights_create(ctx, types[ti], m, k, wq, rb, &w), QMM_OK);
                assert_string_equal(run(ctx, w, QMM_STRATEGY_FUSED, n, x, k, y, m), kn->name);
                assert_string_equal(run(ctx, w, QMM_STRATEGY_GEMV, n, x, k, yg, m), "gemv_avx2");
                if (kn == &DOT) assert_true(tu_bits_equal(y, m, yg, m, n, m));
                assert_int_equal(check_bound(kn, types[ti], m, k, wq, rb, n, x, k, y, m, "guard"), 0);
                qmm_weights_free(w);
                munmap(map, (pages + 1) * page);
                free(wq);
                free(y);
                free(yg);
            }
    for (int c = 0; c < 2; c++) qmm_context_free(ctxs[c]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_equals_gemv),
        cmocka_unit_test(test_gemm_reference),
        cmocka_unit_test(test_batch_invariant),
        cmocka_unit_test(test_bound_one_sign_long_k),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_x_guard_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
