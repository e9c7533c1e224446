/*
 * test_cpu_isa.c — every CPU ISA level (QMM_CPU_ISA = generic, avx2, avx512, amx on x86-64;
 * generic, neon, dotprod, i8mm on aarch64) against
 * qmm_matmul_ref, for every weight type of the type table, strategies gemv and fused, shapes
 * with m, n and k tails (n in 1, 2, 3, 15, 16, 17, 64, 65), with guard columns in Y checked.
 * A level this machine lacks must be refused at context creation (checked) and is then
 * reported as skipped, never passed. Also: batch-invariant mode gives bit-identical rows
 * for every n at every level, and a bad QMM_CPU_ISA name is an error, as is a bad
 * QMM_CPU_AVX_VNNI value (which picks the int8 kernel at avx2: checked by name). gemv also at n = 1..8
 * with long k with block tails and m = 131, in the f32 accuracy class, rows and threads
 * bit-identical (test_gemv_shapes_*).
 *
 * Limits per path (docs/KERNELS.md): paths that keep f32 activations nmse <= 1e-5 and
 * max_rel_err <= 1e-5; the AMX-BF16 path (fused at level amx, all types but f32) rounds W and
 * X to bf16: nmse <= 1e-5, max_rel_err <= 1e-2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/cpu_features.h"
#include "qmm.h"

/* Quantized rows of wf, or random valid blocks for a type without a reference quantizer. */
static qmm_status make_weights(qmm_type type, const float *wf, void *wq, int64_t m, int64_t k) {
    if (qmm_type_has_quantizer(type)) return qmm_quantize_rows(type, wf, wq, m, k);
    return qmm_random_rows(type, (uint64_t)type * 977 + (uint64_t)k, 0.5, wq, m, k);
}

static const int64_t ns[] = {1, 2, 3, 15, 16, 17, 64, 65};
#define N_NS (sizeof ns / sizeof ns[0])
#define GUARD 3 /* extra floats per Y row that must stay untouched */
static const float POISON = -12345.0f;

/* Deterministic uniform values in [-1, 1). */
static void fill(float *v, int64_t count, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < count; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
    }
}

/* Create a CPU context at ISA level `isa` (through QMM_CPU_ISA). */
static qmm_status make_ctx(qmm_cpu_isa isa, unsigned flags, qmm_context **ctx) {
    setenv("QMM_CPU_ISA", qmm_cpu_isa_name(isa), 1);
    qmm_context_params p = qmm_context_default_params();
    p.flags = flags;
    qmm_status s = qmm_context_create(&p, ctx);
    unsetenv("QMM_CPU_ISA");
    return s;
}

/* Skip (with the reason) when the machine lacks `isa`, after checking it is refused. */
static bool level_missing(qmm_cpu_isa isa) {
    if (qmm_cpu_isa_supported(isa)) return false;
    qmm_context *ctx = NULL;
    assert_int_equal(make_ctx(isa, 0, &ctx), QMM_ERR_UNSUPPORTED);
    assert_null(ctx);
    print_message("[  SKIPPED ] ISA level %s: not supported here (%s)\n", qmm_cpu_isa_name(isa),
                  qmm_last_error());
    return true;
}

/* The fused path of this level rounds W and X to bf16 (AMX-BF16; all types but f32). */
static bool bf16_fused(qmm_cpu_isa isa) {
#if defined(QMM_ARCH_X86_64)
    return isa >= QMM_CPU_ISA_AMX;
#else
    (void)isa;
    return false;
#endif
}

/* k for a type: a tail against the 32-element AMX step where the block size allows it. */
static int64_t pick_k(qmm_type type, int variant) {
    int64_t bs = qmm_type_block_size(type);
    if (bs == 1) return variant ? 72 : 40;
    if (bs == 32) return variant ? 96 : 160;
    return variant ? 512 : 256;
}

static void check_level(qmm_cpu_isa isa) {
    if (level_missing(isa)) {
        skip();
        return;
    }
    qmm_context *ctx;
    assert_int_equal(make_ctx(isa, 0, &ctx), QMM_OK);
    const int64_t m = 33; /* two full 16-row tiles and a tail of 1 */
    int failures = 0;
    for (int type = 0; type < QMM_TYPE_COUNT; type++) {
        if (!qmm_type_is_supported(type) || !qmm_type_is_weight((qmm_type)type)) continue;
        for (int variant = 0; variant < 2; variant++) {
            const int64_t k = pick_k((qmm_type)type, variant), nmax = 65;
            size_t rb;
            assert_int_equal(qmm_row_bytes((qmm_type)type, k, &rb), QMM_OK);
            float *wf = malloc(sizeof(float) * m * k);
            unsigned char *wq = malloc(rb * m);
            float *x = malloc(sizeof(float) * nmax * (k + 1));
            const int64_t ldy = m + GUARD;
            float *y = malloc(sizeof(float) * nmax * ldy);
            float *ref = malloc(sizeof(float) * nmax * m);
            fill(wf, m * k, (uint32_t)(type * 7 + variant));
            fill(x, nmax * (k + 1), (uint32_t)(type * 13 + variant + 100));
            assert_int_equal(make_weights((qmm_type)type, wf, wq, m, k), QMM_OK);
            assert_int_equal(qmm_matmul_ref((qmm_type)type, m, k, wq, rb, nmax, x, k + 1, ref, m),
                             QMM_OK);
            qmm_weights *w;
            assert_int_equal(qmm_weights_create(ctx, (qmm_type)type, m, k, wq, rb, &w), QMM_OK);
            const qmm_strategy strategies[] = {QMM_STRATEGY_GEMV, QMM_STRATEGY_FUSED};
            for (size_t si = 0; si < 2; si++) {
                assert_int_equal(qmm_context_set_strategy(ctx, strategies[si]), QMM_OK);
                const bool bf16_path = bf16_fused(isa) &&
                                       strategies[si] == QMM_STRATEGY_FUSED &&
                                       type != QMM_TYPE_F32;
                const double max_nmse = 1e-5, max_rel = bf16_path ? 1e-2 : 1e-5;
                for (size_t ni = 0; ni < N_NS; ni++) {
                    const int64_t n = ns[ni];
                    for (int64_t i = 0; i < nmax * ldy; i++) y[i] = POISON;
                    assert_int_equal(qmm_matmul(ctx, w, n, x, k + 1, y, ldy), QMM_OK);
                    qmm_diff d;
                    assert_int_equal(qmm_compare(n, m, y, ldy, ref, m, &d), QMM_OK);
                    bool guards_ok = true;
                    for (int64_t j = 0; j < nmax; j++)
                        for (int64_t i = (j < n ? m : 0); i < ldy; i++)
                            if (y[j * ldy + i] != POISON) guards_ok = false;
                    if (!qmm_diff_ok(&d, max_nmse, max_rel) || !guards_ok) {
                        print_error("%s %s %s m=%lld k=%lld n=%lld: nmse %.3g max_rel %.3g "
                                    "nonfinite %lld guards %s\n", qmm_cpu_isa_name(isa),
                                    qmm_type_name((qmm_type)type),
                                    qmm_strategy_name(strategies[si]), (long long)m,
                                    (long long)k, (long long)n, d.nmse, d.max_rel_err,
                                    (long long)d.n_nonfinite, guards_ok ? "ok" : "WRITTEN");
                        failures++;
                    }
                }
            }
            qmm_weights_free(w);
            free(wf);
            free(wq);
            free(x);
            free(y);
            free(ref);
        }
    }
    qmm_context_free(ctx);
    assert_int_equal(failures, 0);
}

/* Batch-invariant: row j of Y has the same bits for every n, with the auto strategy. */
static void check_batch_invariant(qmm_cpu_isa isa) {
    if (level_missing(isa)) {
        skip();
        return;
    }
    qmm_context *ctx;
    assert_int_equal(make_ctx(isa, QMM_FLAG_BATCH_INVARIANT, &ctx), QMM_OK);
    const qmm_type types[] = {QMM_TYPE_Q4_0, QMM_TYPE_Q8_0, QMM_TYPE_Q4_K, QMM_TYPE_Q6_K,
                              QMM_TYPE_BF16, QMM_TYPE_F32};
    const int64_t m = 40, k = 512, nmax = 65;
    int failures = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        size_t rb;
        assert_int_equal(qmm_row_bytes(types[ti], k, &rb), QMM_OK);
        float *wf = malloc(sizeof(float) * m * k), *x = malloc(sizeof(float) * nmax * k);
        unsigned char *wq = malloc(rb * m);
        float *full = malloc(sizeof(float) * nmax * m), *y = malloc(sizeof(float) * nmax * m);
        fill(wf, m * k, 5u + (uint32_t)ti);
        fill(x, nmax * k, 50u + (uint32_t)ti);
        assert_int_equal(qmm_quantize_rows(types[ti], wf, wq, m, k), QMM_OK);
        qmm_weights *w;
        assert_int_equal(qmm_weights_create(ctx, types[ti], m, k, wq, rb, &w), QMM_OK);
        assert_int_equal(qmm_matmul(ctx, w, nmax, x, k, full, m), QMM_OK);
        for (size_t ni = 0; ni < N_NS; ni++) {
            /* Rows taken from the end of X, so each row sits at another position. */
            const int64_t n = ns[ni], first = nmax - n;
            assert_int_equal(qmm_matmul(ctx, w, n, x + first * k, k, y, m), QMM_OK);
            if (memcmp(y, full + first * m, sizeof(float) * n * m) != 0) {
                print_error("%s %s: batch-invariant rows differ at n=%lld\n",
                            qmm_cpu_isa_name(isa), qmm_type_name(types[ti]), (long long)n);
                failures++;
            }
        }
        qmm_weights_free(w);
        free(wf);
        free(x);
        free(wq);
        free(full);
        free(y);
    }
    qmm_context_free(ctx);
    assert_int_equal(failures, 0);
}

/* gemv at one level, n = 1..8, m = 131 (two 64-row chunks, a tail of 3 and row groups of 4
 * with tails), k with a block tail (4128 = 129 blocks of 32, 8704 = 34 super-blocks): the
 * f32 accuracy class (nmse <= 1e-10, max_rel_err <= 1e-5 vs qmm_matmul_ref), row j of Y the
 * same bits for every n (gemv's order depends only on k), and 1 thread == 2 threads. */
static void check_gemv_shapes(qmm_cpu_isa isa) {
    if (level_missing(isa)) {
        skip();
        return;
    }
    qmm_context *ctx[2];
    for (int t = 0; t < 2; t++) {
        setenv("QMM_CPU_ISA", qmm_cpu_isa_name(isa), 1);
        qmm_context_params p = qmm_context_default_params();
        p.n_threads = t + 1;
        assert_int_equal(qmm_context_create(&p, &ctx[t]), QMM_OK);
        unsetenv("QMM_CPU_ISA");
        assert_int_equal(qmm_context_set_strategy(ctx[t], QMM_STRATEGY_GEMV), QMM_OK);
    }
    const int64_t m = 131, nmax = 8, ldy = m + GUARD;
    int failures = 0;
    for (int type = 0; type < QMM_TYPE_COUNT; type++) {
        if (!qmm_type_is_supported(type) || !qmm_type_is_weight((qmm_type)type)) continue;
        const int64_t bs = qmm_type_block_size((qmm_type)type);
        const int64_t k = bs == 256 ? 8704 : bs == 64 ? 4160 : bs == 32 ? 4128 : 4100;
        size_t rb;
        assert_int_equal(qmm_row_bytes((qmm_type)type, k, &rb), QMM_OK);
        float *wf = malloc(sizeof(float) * m * k), *x = malloc(sizeof(float) * nmax * (k + 3));
        unsigned char *wq = malloc(rb * m);
        float *y = malloc(sizeof(float) * nmax * ldy), *y2 = malloc(sizeof(float) * nmax * ldy);
        float *ref = malloc(sizeof(float) * nmax * m), *row1 = malloc(sizeof(float) * nmax * m);
        fill(wf, m * k, (uint32_t)(type * 31 + 3));
        fill(x, nmax * (k + 3), (uint32_t)(type * 17 + 9));
        assert_int_equal(make_weights((qmm_type)type, wf, wq, m, k), QMM_OK);
        assert_int_equal(qmm_matmul_ref((qmm_type)type, m, k, wq, rb, nmax, x, k + 3, ref, m),
                         QMM_OK);
        qmm_weights *w[2];
        for (int t = 0; t < 2; t++)
            assert_int_equal(qmm_weights_create(ctx[t], (qmm_type)type, m, k, wq, rb, &w[t]), QMM_OK);
        for (int64_t n = 1; n <= nmax; n++) {
            for (int64_t i = 0; i < nmax * ldy; i++) y[i] = y2[i] = POISON;
            assert_int_equal(qmm_matmul(ctx[1], w[1], n, x, k + 3, y, ldy), QMM_OK);
            assert_int_equal(qmm_matmul(ctx[0], w[0], n, x, k + 3, y2, ldy), QMM_OK);
            qmm_diff d;
            assert_int_equal(qmm_compare(n, m, y, ldy, ref, m, &d), QMM_OK);
            bool guards_ok = true, same_threads = true, same_rows = true;
            for (int64_t j = 0; j < nmax; j++)
                for (int64_t i = 0; i < ldy; i++) {
                    const bool out = j < n && i < m;
                    if (!out && (y[j * ldy + i] != POISON || y2[j * ldy + i] != POISON))
                        guards_ok = false;
                    if (out && memcmp(&y[j * ldy + i], &y2[j * ldy + i], sizeof(float)) != 0)
                        same_threads = false;
                    if (out && n == 1) row1[i] = y[i];
                }
            /* row 0 of every n equals the n = 1 result */
            if (memcmp(y, row1, sizeof(float) * m) != 0) same_rows = false;
            if (!qmm_diff_ok(&d, 1e-10, 1e-5) || !guards_ok || !same_threads || !same_rows) {
                print_error("%s %s gemv m=%lld k=%lld n=%lld: nmse %.3g max_rel %.3g guards %s "
                            "threads %s rows %s\n", qmm_cpu_isa_name(isa),
                            qmm_type_name((qmm_type)type), (long long)m, (long long)k,
                            (long long)n, d.nmse, d.max_rel_err, guards_ok ? "ok" : "WRITTEN",
                            same_threads ? "same" : "DIFFER", same_rows ? "same" : "DIFFER");
                failures++;
            }
        }
        for (int t = 0; t < 2; t++) qmm_weights_free(w[t]);
        free(wf);
        free(x);
        free(wq);
        free(y);
        free(y2);
        free(ref);
        free(row1);
    }
    for (int t = 0; t < 2; t++) qmm_context_free(ctx[t]);
    assert_int_equal(failures, 0);
}

static void test_gemv_shapes_generic(void **state) {
    (void)state;
    check_gemv_shapes(QMM_CPU_ISA_GENERIC);
}
#if defined(QMM_ARCH_X86_64)
static void test_gemv_shapes_avx512(void **state) {
    (void)state;
    check_gemv_shapes(QMM_CPU_ISA_AVX512);
}

static void test_gemv_shapes_avx2(void **state) {
    (void)state;
    check_gemv_shapes(QMM_CPU_ISA_AVX2);
}

/* gemv at level avx2 gives the same bits as gemv at level avx512 (one summation order,
 * gemv_common.h), for every weight type, n = 1..8 and 17, k with tails (block types: 1, 3,
 * 33 and 129 blocks; f32/f16/bf16 also k = 5, 1041). Every weight type has an AVX2 row
 * kernel (the grid i-quants and tq types through to_float: gemv_tofloat_impl.h), so every
 * (type, k) must be compared. Both levels are needed. */
static void test_gemv_avx2_vs_avx512(void **state) {
    (void)state;
    if (level_missing(QMM_CPU_ISA_AVX512)) {
        skip();
        return;
    }
    qmm_context *ctx[2];
    const qmm_cpu_isa lv[2] = {QMM_CPU_ISA_AVX2, QMM_CPU_ISA_AVX512};
    for (int t = 0; t < 2; t++) {
        assert_int_equal(make_ctx(lv[t], 0, &ctx[t]), QMM_OK);
        assert_int_equal(qmm_context_set_strategy(ctx[t], QMM_STRATEGY_GEMV), QMM_OK);
    }
    const int64_t m = 67, nmax = 17;
    int failures = 0, compared = 0, weight_types = 0;
    for (int type = 0; type < QMM_TYPE_COUNT; type++) {
        if (!qmm_type_is_supported(type) || !qmm_type_is_weight((qmm_type)type)) continue;
        weight_types++;
        const int64_t bs = qmm_type_block_size((qmm_type)type);
        const int64_t ks[] = {bs == 1 ? 5 : bs, 3 * bs, bs == 1 ? 1041 : 33 * bs, 129 * bs};
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki];
            size_t rb;
            assert_int_equal(qmm_row_bytes((qmm_type)type, k, &rb), QMM_OK);
            float *wf = malloc(sizeof(float) * m * k), *x = malloc(sizeof(float) * nmax * k);
            unsigned char *wq = malloc(rb * m);
            float *y[2] = {malloc(sizeof(float) * nmax * m), malloc(sizeof(float) * nmax * m)};
            fill(wf, m * k, (uint32_t)(type * 13 + k));
            fill(x, nmax * k, (uint32_t)(type * 7 + k + 1));
            assert_int_equal(make_weights((qmm_type)type, wf, wq, m, k), QMM_OK);
            const char *kern = NULL;
            for (int t = 0; t < 2; t++) {
                qmm_weights *w;
                assert_int_equal(qmm_weights_create(ctx[t], (qmm_type)type, m, k, wq, rb, &w), QMM_OK);
                if (t == 0) {
                    qmm_path path;
                    assert_int_equal(qmm_matmul_path(ctx[t], w, 1, &path), QMM_OK);
                    kern = path.kernel;
                }
                for (int64_t n = 1; n <= nmax; n += (n == 8 ? 9 : 1))
                    assert_int_equal(qmm_matmul(ctx[t], w, n, x, k, y[t], m), QMM_OK);
                qmm_weights_free(w);
            }
            if (kern != NULL && strcmp(kern, "gemv_avx2") == 0) {
                compared++;
                if (memcmp(y[0], y[1], sizeof(float) * nmax * m) != 0) {
                    print_error("gemv avx2 != avx512: %s k=%lld\n", qmm_type_name((qmm_type)type),
                                (long long)k);
                    failures++;
                }
            } else if (ki == 0) {
                print_message("gemv avx2 vs avx512: %s runs %s at avx2, not compared\n",
                              qmm_type_name((qmm_type)type), kern ? kern : "?");
            }
            free(wf);
            free(x);
            free(wq);
            free(y[0]);
            free(y[1]);
        }
    }
    for (int t = 0; t < 2; t++) qmm_context_free(ctx[t]);
    print_message("gemv avx2 vs avx512: %d (type, k) cases bit-identical checked\n", compared);
    assert_int_equal(compared, 4 * weight_types);
    assert_int_equal(failures, 0);
}

#endif

static void test_generic(void **state) { (void)state; check_level(QMM_CPU_ISA_GENERIC); }
static void test_invariant_generic(void **state) {
    (void)state;
    check_batch_invariant(QMM_CPU_ISA_GENERIC);
}
#if defined(QMM_ARCH_X86_64)
static void test_avx2(void **state) { (void)state; check_level(QMM_CPU_ISA_AVX2); }
static void test_avx512(void **state) { (void)state; check_level(QMM_CPU_ISA_AVX512); }
static void test_amx(void **state) { (void)state; check_level(QMM_CPU_ISA_AMX); }
static void test_invariant_avx512(void **state) {
    (void)state;
    check_batch_invariant(QMM_CPU_ISA_AVX512);
}
static void test_invariant_amx(void **state) {
    (void)state;
    check_batch_invariant(QMM_CPU_ISA_AMX);
}
#endif

#if defined(QMM_ARCH_AARCH64)
static void test_neon(void **state) { (void)state; check_level(QMM_CPU_ISA_NEON); }
static void test_dotprod(void **state) { (void)state; check_level(QMM_CPU_ISA_DOTPROD); }
static void test_i8mm(void **state) { (void)state; check_level(QMM_CPU_ISA_I8MM); }
static void test_invariant_neon(void **state) {
    (void)state;
    check_batch_invariant(QMM_CPU_ISA_NEON);
}
static void test_invariant_i8mm(void **state) {
    (void)state;
    check_batch_invariant(QMM_CPU_ISA_I8MM);
}
static void test_gemv_shapes_neon(void **state) {
    (void)state;
    check_gemv_shapes(QMM_CPU_ISA_NEON);
}
static void test_gemv_shapes_i8mm(void **state) {
    (void)state;
    check_gemv_shapes(QMM_CPU_ISA_I8MM);
}
#endif

/* Bad names are INVALID_ARGUMENT, a level of another architecture is UNSUPPORTED; the best
 * level is always accepted. QMM_TEST_EXPECT_ISA (set by scripts/test-arm64.sh for each
 * emulated CPU) names the best level this machine must be detected at. */
static void test_isa_env(void **state) {
    (void)state;
    qmm_context *ctx = NULL;
    setenv("QMM_CPU_ISA", "avx9000", 1);
    assert_int_equal(qmm_context_create(NULL, &ctx), QMM_ERR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_non_null(strstr(qmm_last_error(), "avx9000"));
    static const char *const all_levels[] = {"avx2", "avx512", "amx", "neon", "dotprod", "i8mm"};
    for (size_t i = 0; i < sizeof all_levels / sizeof all_levels[0]; i++) {
        qmm_cpu_isa isa;
        if (qmm_cpu_isa_from_name(all_levels[i], &isa) == QMM_OK) continue; /* this build's */
        setenv("QMM_CPU_ISA", all_levels[i], 1);
        assert_int_equal(qmm_context_create(NULL, &ctx), QMM_ERR_UNSUPPORTED);
        assert_null(ctx);
        assert_non_null(strstr(qmm_last_error(), all_levels[i]));
    }
    unsetenv("QMM_CPU_ISA");
    const char *expect = getenv("QMM_TEST_EXPECT_ISA");
    if (expect != NULL && expect[0] != '\0') {
        print_message("best ISA level detected: %s (expected %s)\n",
                      qmm_cpu_isa_name(qmm_cpu_isa_best()), expect);
        assert_string_equal(qmm_cpu_isa_name(qmm_cpu_isa_best()), expect);
    }
    assert_int_equal(make_ctx(qmm_cpu_isa_best(), 0, &ctx), QMM_OK);
    qmm_context_free(ctx);
    for (int i = 0; i < QMM_CPU_ISA_COUNT; i++)
        print_message("ISA level %-7s %s\n", qmm_cpu_isa_name((qmm_cpu_isa)i),
                      qmm_cpu_isa_supported((qmm_cpu_isa)i) ? "supported" : "not supported");
}

#if defined(QMM_ARCH_X86_64)
/* QMM_CPU_AVX_VNNI: a bad value is INVALID_ARGUMENT; at level avx2 the int8 kernel is the
 * AVX-VNNI one exactly where the CPU has it and the variable is not "off"/"0" (and never at
 * level generic, which has no int8). */
static void test_avx_vnni_env(void **state) {
    (void)state;
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AVX2)) skip();
    qmm_context *ctx = NULL;
    setenv("QMM_CPU_AVX_VNNI", "maybe", 1);
    assert_int_equal(qmm_context_create(NULL, &ctx), QMM_ERR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_non_null(strstr(qmm_last_error(), "QMM_CPU_AVX_VNNI"));
    const int64_t m = 8, k = 256;
    size_t rb;
    assert_int_equal(qmm_row_bytes(QMM_TYPE_Q4_K, k, &rb), QMM_OK);
    unsigned char *wq = calloc(m, rb);
    assert_non_null(wq);
    const char *values[] = {"off", "0", "auto", ""};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        setenv("QMM_CPU_AVX_VNNI", values[i], 1);
        assert_int_equal(make_ctx(QMM_CPU_ISA_AVX2, 0, &ctx), QMM_OK);
        assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_INT8), QMM_OK);
        qmm_weights *w;
        assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_Q4_K, m, k, wq, rb, &w), QMM_OK);
        qmm_path path;
        assert_int_equal(qmm_matmul_path(ctx, w, 1, &path), QMM_OK);
        const bool vnni = qmm_cpu_features_get()->avx_vnni && i >= 2;
        assert_string_equal(path.kernel, vnni ? "int8_avxvnni_gemv" : "int8_avx2_gemv");
        qmm_weights_free(w);
        qmm_context_free(ctx);
    }
    unsetenv("QMM_CPU_AVX_VNNI");
    free(wq);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_env),
        cmocka_unit_test(test_generic),
#if defined(QMM_ARCH_X86_64)
        cmocka_unit_test(test_avx_vnni_env),
        cmocka_unit_test(test_avx2),
        cmocka_unit_test(test_avx512),
        cmocka_unit_test(test_amx),
#endif
#if defined(QMM_ARCH_AARCH64)
        cmocka_unit_test(test_neon),
        cmocka_unit_test(test_dotprod),
        cmocka_unit_test(test_i8mm),
#endif
        cmocka_unit_test(test_invariant_generic),
#if defined(QMM_ARCH_X86_64)
        cmocka_unit_test(test_invariant_avx512),
        cmocka_unit_test(test_invariant_amx),
#endif
#if defined(QMM_ARCH_AARCH64)
        cmocka_unit_test(test_invariant_neon),
        cmocka_unit_test(test_invariant_i8mm),
#endif
        cmocka_unit_test(test_gemv_shapes_generic),
#if defined(QMM_ARCH_X86_64)
        cmocka_unit_test(test_gemv_shapes_avx2),
        cmocka_unit_test(test_gemv_shapes_avx512),
        cmocka_unit_test(test_gemv_avx2_vs_avx512),
#endif
#if defined(QMM_ARCH_AARCH64)
        cmocka_unit_test(test_gemv_shapes_neon),
        cmocka_unit_test(test_gemv_shapes_i8mm),
#endif
    };
    /* QMM_TEST_ISA_ONLY: the detection and the override only (an emulated CPU checked for
     * its best level, scripts/test-arm64.sh) */
    const char *only = getenv("QMM_TEST_ISA_ONLY");
    if (only != NULL && only[0] != '\0') cmocka_set_test_filter("test_isa_env");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
