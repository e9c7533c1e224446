/*
 * test_int8.c — the int8 strategy (docs/KERNELS.md "x86: int8_amx", "gemv_int8_avx512",
 * "int8_avx2") against qmm_matmul_ref within the int8 bound (nmse <= 5e-4, max_rel_err <= 2e-2):
 * every quantized type x shapes with m and k tails x n in {1..8, 16, 17, 64, 65}, with NaN after
 * k in every X row and poisoned Y padding that must stay untouched; batch invariance (row 0 has
 * the same bits for every n); the level's gemv kernel called directly against a model of the
 * same int8 arithmetic (the reference run on X replaced by dx * q) within 1e-10 nmse; CASES.md A
 * (activations of one sign, |x| 2000 to 60000: the min and offset terms use the block sums)
 * and C (q8_0 quants of -128, mixed with 127); float weights are refused with
 * QMM_ERR_UNSUPPORTED. The codebook types (iq4_nl, iq4_xs, mxfp4, nvfp4) as the others, with
 * random valid blocks where there is no reference quantizer, plus every E8M0 scale byte of
 * mxfp4 up to 239 (rows of neighbouring exponents) and every UE4M3 byte of nvfp4; a type
 * the type table does not know yet is skipped with a message.
 * Every test runs once per ISA configuration this machine has (QMM_CPU_ISA, QMM_CPU_AVX_VNNI):
 *   amx            int8_amx: the VNNI gemv up to its max_n, AMX above (and for every n with
 *                  QMM_FLAG_BATCH_INVARIANT);
 *   avx512         int8_avx512: the AVX-512 VNNI gemv below QMM_INT8_AVX2_GEMM_MIN_N, the
 *                  AVX2 int8 GEMM from there (every n with QMM_FLAG_BATCH_INVARIANT) for
 *                  the types it has;
 *   avx2+avx-vnni  int8_avx2 on vpdpbusd (ymm), where the CPU has AVX-VNNI, gemv then GEMM;
 *   avx2           int8_avx2 on vpmaddubsw + vpmaddwd (QMM_CPU_AVX_VNNI=off on such a CPU).
 * For a type without the GEMM the plain and the batch-invariant context run the same gemv,
 * so their Y must be the same bits at every n; where the CPU has AVX-512 the level's gemv
 * must give the AVX-512 kernel's bits (one order for all int8 gemv kernels). Skipped (77) without AVX2.
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
#include "cpu/x86/gemm_int8_avx2.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"
#include "formats/fp16.h"
#include "qmm.h"

#define MAX_NMSE 5e-4
#define MAX_REL 2e-2
static const float POISON = -12345.0f;
static const int64_t ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 22, 29, 64, 65};
#define N_NS (sizeof ns / sizeof ns[0])
#define NMAX 65
/* The level's gemv kernel is also called directly for n = 1..GEMV_MAX_N (at amx the VNNI gemv
 * runs for n <= qmm_x86_gemv_int8_avx512_max_n(type), at most 8, unless
 * QMM_FLAG_BATCH_INVARIANT). */
#define GEMV_MAX_N 8
/* gemv vs AMX, and either vs the model of the int8 arithmetic (exact integer dots, X as
 * dx * q): only the f32 rounding order differs. */
#define PATH_NMSE 1e-10
#define PATH_REL 1e-5

static uint32_t lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Uniform in [lo, hi). */
static void fill(float *v, int64_t count, uint32_t seed, float lo, float hi) {
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < count; i++)
        v[i] = lo + (hi - lo) * (float)(lcg(&s) * (1.0 / 16777216.0));
}

typedef void (*gemv_fn)(qmm_type, int64_t, int64_t, const unsigned char *, size_t, int64_t,
                        const float *, int64_t, float *, int64_t, void *, int);

/* One ISA configuration of the int8 strategy. */
typedef struct level {
    const char *name;
    const char *isa;   /* QMM_CPU_ISA */
    const char *vnni;  /* QMM_CPU_AVX_VNNI, or NULL */
    bool amx;          /* AMX above the gemv's max_n */
    gemv_fn gemv;      /* the gemv kernel the level runs */
} level;

static const level *g_level;

/* A context of the current level (the environment set around its creation). */
static qmm_status level_ctx(const qmm_context_params *p, qmm_context **out) {
    setenv("QMM_CPU_ISA", g_level->isa, 1);
    if (g_level->vnni) setenv("QMM_CPU_AVX_VNNI", g_level->vnni, 1);
    const qmm_status st = qmm_context_create(p, out);
    unsetenv("QMM_CPU_ISA");
    unsetenv("QMM_CPU_AVX_VNNI");
    return st;
}

/* The largest n the level runs its gemv for. */
static int64_t gemv_max_n(qmm_type type) {
    if (g_level->amx) return qmm_x86_gemv_int8_avx512_max_n(type);
    return qmm_x86_gemm_int8_avx2_has_type(type) ? QMM_INT8_AVX2_GEMM_MIN_N - 1 : INT64_MAX;
}

/* mxfp4 rows whose E8M0 scales are below 2^-119: the AMX kernel's d_w * dx is then subnormal
 * (fewer bits), so AMX is held to the int8 limits only there, not to the model. */
static bool tiny_scales;

static qmm_context *int8_ctx(void) {
    qmm_context *ctx = NULL;
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = 2;
    assert_int_equal(level_ctx(&p, &ctx), QMM_OK);
    assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_INT8), QMM_OK);
    return ctx;
}

/* A second context with QMM_FLAG_BATCH_INVARIANT: AMX for every n at amx, the gemv below. */
static qmm_context *inv_ctx;

static int setup(void **state) {
    (void)state;
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = 2;
    p.flags = QMM_FLAG_BATCH_INVARIANT;
    if (level_ctx(&p, &inv_ctx) != QMM_OK) return -1;
    return qmm_context_set_strategy(inv_ctx, QMM_STRATEGY_INT8) == QMM_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    qmm_context_free(inv_ctx);
    return 0;
}

/*
 * Run int8 on quantized rows wq (m x k of `type`) for X (NMAX rows, stride k + 3, NaN after
 * k) and every n of ns, in ctx and in inv_ctx (batch-invariant: AMX for every n at amx, the
 * gemv below); check against the reference and the Y padding; row 0's bits must be the same
 * for every n of one path (gemv: n <= max_n in ctx; AMX: larger n in ctx and every n in
 * inv_ctx); the level's gemv kernel called directly for every n <= 8 must match the
 * batch-invariant context within PATH_NMSE / PATH_REL (bit for bit below amx), ctx's bits where
 * ctx ran it, and the AVX-512 kernel's bits where the CPU has AVX-512.
 * Returns the number of failures (printed).
 */
static int check_case(qmm_context *ctx, const char *what, qmm_type type, int64_t m, int64_t k,
                      const unsigned char *wq, size_t rb, const float *x) {
    const int64_t ldx = k + 3, ldy = m + 2;
    float *ref = malloc(sizeof(float) * NMAX * m);
    float *y = malloc(sizeof(float) * NMAX * ldy);
    float *yinv = malloc(sizeof(float) * NMAX * ldy);
    float *yk = malloc(sizeof(float) * NMAX * ldy);
    /* the model: the reference on X quantized as the int8 kernels do, dequantized as dx * q */
    float *model = malloc(sizeof(float) * NMAX * m);
    float *xdq = malloc(sizeof(float) * NMAX * k);
    {
        int8_t *q = malloc((size_t)k);
        float *dx = malloc(sizeof(float) * (size_t)(k / 32)), *sx = malloc(sizeof(float) * (size_t)(k / 32));
        for (int64_t j = 0; j < NMAX; j++) {
            qmm_x86_int8_quantize_row_generic(x + j * ldx, k, q, dx, sx, 1);
            for (int64_t p = 0; p < k; p++) xdq[j * k + p] = dx[p / 32] * (float)q[p];
        }
        free(q);
        free(dx);
        free(sx);
        assert_int_equal(qmm_matmul_ref(type, m, k, wq, rb, NMAX, xdq, k, model, m), QMM_OK);
    }
    void *scratch = aligned_alloc(64, (qmm_x86_gemv_int8_avx512_scratch(GEMV_MAX_N, k) + 63)
                                          / 64 * 64);
    float *y512 = malloc(sizeof(float) * NMAX * ldy);
    const bool cross = !g_level->amx && g_level->gemv != qmm_x86_gemv_int8_avx512 &&
                       qmm_cpu_isa_supported(QMM_CPU_ISA_AVX512);
    const int64_t max_n = gemv_max_n(type);
    int64_t first_amx = -1;
    float row0[2][1024];
    assert_true(m <= 1024);
    assert_int_equal(qmm_matmul_ref(type, m, k, wq, rb, NMAX, x, ldx, ref, m), QMM_OK);
    qmm_weights *w, *winv;
    assert_int_equal(qmm_weights_create(ctx, type, m, k, wq, rb, &w), QMM_OK);
    assert_int_equal(qmm_weights_create(inv_ctx, type, m, k, wq, rb, &winv), QMM_OK);
    int failures = 0;
    for (size_t ni = 0; ni < N_NS; ni++) {
        const int64_t n = ns[ni];
        const bool gemv = n <= max_n;
        for (int64_t i = 0; i < NMAX * ldy; i++) y[i] = yinv[i] = yk[i] = POISON;
        assert_int_equal(qmm_matmul(ctx, w, n, x, ldx, y, ldy), QMM_OK);
        assert_int_equal(qmm_matmul(inv_ctx, winv, n, x, ldx, yinv, ldy), QMM_OK);
        qmm_diff d, dinv, dpath = {0}, dmodel = {0}, dinvm;
        assert_int_equal(qmm_compare(n, m, y, ldy, ref, m, &d), QMM_OK);
        assert_int_equal(qmm_compare(n, m, yinv, ldy, ref, m, &dinv), QMM_OK);
        bool paths_ok = true;
        if (n <= GEMV_MAX_N) {
            g_level->gemv(type, m, k, wq, rb, n, x, ldx, yk, ldy, scratch, 2);
            assert_int_equal(qmm_compare(n, m, yk, ldy, yinv, ldy, &dpath), QMM_OK);
            assert_int_equal(qmm_compare(n, m, yk, ldy, model, m, &dmodel), QMM_OK);
            paths_ok = (tiny_scales || qmm_diff_ok(&dpath, PATH_NMSE, PATH_REL)) &&
                       qmm_diff_ok(&dmodel, PATH_NMSE, PATH_REL);
            for (int64_t j = 0; gemv && j < n; j++)
                if (memcmp(yk + j * ldy, y + j * ldy, sizeof(float) * (size_t)m) != 0)
                    paths_ok = false;
            if (cross) { /* one order for every int8 gemv kernel: the AVX-512 one's bits */
                qmm_x86_gemv_int8_avx512(type, m, k, wq, rb, n, x, ldx, y512, ldy, scratch, 2);
                for (int64_t j = 0; j < n; j++)
                    if (memcmp(yk + j * ldy, y512 + j * ldy, sizeof(float) * (size_t)m) != 0)
                        paths_ok = false;
            }
        }
        /* one kernel for every n (below amx, a type without the int8 GEMM): both contexts
         * run the same gemv, so the same bits at every n */
        for (int64_t j = 0; max_n == INT64_MAX && j < n; j++)
            if (memcmp(yinv + j * ldy, y + j * ldy, sizeof(float) * (size_t)m) != 0)
                paths_ok = false;
        /* the batch-invariant context (AMX, or the gemv for types without int8 tiles) vs the
         * model, every n */
        assert_int_equal(qmm_compare(n, m, yinv, ldy, model, m, &dinvm), QMM_OK);
        if (!qmm_diff_ok(&dinvm, PATH_NMSE, PATH_REL) && !tiny_scales) paths_ok = false;
        bool guards_ok = true;
        for (int64_t j = 0; j < NMAX; j++)
            for (int64_t i = (j < n ? m : 0); i < ldy; i++)
                if (y[j * ldy + i] != POISON || yinv[j * ldy + i] != POISON ||
                    (n <= GEMV_MAX_N && yk[j * ldy + i] != POISON))
                    guards_ok = false;
        /* the first n of each path (ns[0] = 1 for gemv, the first n > max_n for AMX) */
        if (!gemv && first_amx < 0) first_amx = n;
        if (ni == 0 || n == first_amx) memcpy(row0[gemv ? 0 : 1], y, sizeof(float) * (size_t)m);
        if (ni == 0) memcpy(row0[1], yinv, sizeof(float) * (size_t)m);
        const bool invariant = memcmp(row0[gemv ? 0 : 1], y, sizeof(float) * (size_t)m) == 0 &&
                               memcmp(row0[1], yinv, sizeof(float) * (size_t)m) == 0;
        if (!qmm_diff_ok(&d, MAX_NMSE, MAX_REL) || !qmm_diff_ok(&dinv, MAX_NMSE, MAX_REL) ||
            !guards_ok || !invariant || !paths_ok) {
            print_error("%s %s m=%lld k=%lld n=%lld: nmse %.3g max_rel %.3g nonfinite %lld; "
                        "invariant ctx nmse %.3g max_rel %.3g; gemv vs invariant ctx nmse %.3g max_rel "
                        "%.3g; gemv vs model nmse %.3g max_rel %.3g; invariant ctx vs model "
                        "nmse %.3g max_rel %.3g; guards %s row0 %s (%s)\n", what,
                        qmm_type_name(type), (long long)m, (long long)k, (long long)n, d.nmse,
                        d.max_rel_err, (long long)d.n_nonfinite, dinv.nmse, dinv.max_rel_err,
                        dpath.nmse, dpath.max_rel_err, dmodel.nmse, dmodel.max_rel_err,
                        dinvm.nmse, dinvm.max_rel_err, guards_ok ? "ok" : "WRITTEN",
                        invariant ? "same" : "DIFFERS", g_level->name);
            failures++;
        }
    }
    qmm_weights_free(w);
    qmm_weights_free(winv);
    free(ref);
    free(y);
    free(yinv);
    free(yk);
    free(y512);
    free(model);
    free(xdq);
    free(scratch);
    return failures;
}

/* X of NMAX rows of k (stride k + 3): uniform [lo, hi) then NaN after k. */
static float *make_x(int64_t k, uint32_t seed, float lo, float hi) {
    const int64_t ldx = k + 3;
    float *x = malloc(sizeof(float) * NMAX * ldx);
    fill(x, NMAX * ldx, seed, lo, hi);
    for (int64_t j = 0; j < NMAX; j++)
        for (int64_t p = k; p < ldx; p++) x[j * ldx + p] = NAN;
    return x;
}

/* m rows of `type` into wq: uniform [-1, 1) weights through the reference quantizer, or random
 * valid blocks (qmm_random_rows) for a type without one. */
static void make_weights(qmm_type type, int64_t m, int64_t k, uint32_t seed, unsigned char *wq) {
    if (qmm_type_has_quantizer(type)) {
        float *wf = malloc(sizeof(float) * m * k);
        fill(wf, m * k, seed, -1.0f, 1.0f);
        assert_int_equal(qmm_quantize_rows(type, wf, wq, m, k), QMM_OK);
        free(wf);
    } else {
        assert_int_equal(qmm_random_rows(type, seed, 0.5, wq, m, k), QMM_OK);
    }
}

/* Random weights (make_weights), then check_case. */
static int check_random(qmm_context *ctx, const char *what, qmm_type type, int64_t m, int64_t k,
                        float xlo, float xhi, uint32_t seed) {
    size_t rb;
    assert_int_equal(qmm_row_bytes(type, k, &rb), QMM_OK);
    unsigned char *wq = malloc(rb * m);
    make_weights(type, m, k, seed, wq);
    float *x = make_x(k, seed + 1000, xlo, xhi);
    int f = check_case(ctx, what, type, m, k, wq, rb, x);
    free(wq);
    free(x);
    return f;
}

static const qmm_type int8_types[] = {QMM_TYPE_Q4_0,   QMM_TYPE_Q4_1,   QMM_TYPE_Q5_0,
                                      QMM_TYPE_Q5_1,   QMM_TYPE_Q8_0,   QMM_TYPE_Q2_K,
                                      QMM_TYPE_Q3_K,   QMM_TYPE_Q4_K,   QMM_TYPE_Q5_K,
                                      QMM_TYPE_Q6_K,   QMM_TYPE_IQ4_NL, QMM_TYPE_IQ4_XS,
                                      QMM_TYPE_MXFP4,  QMM_TYPE_NVFP4};
#define N_TYPES (sizeof int8_types / sizeof int8_types[0])

/* A type of the list the type table does not have yet (its codec not merged): skipped. */
static bool known(qmm_type t) {
    if (qmm_type_name(t) != NULL) return true;
    print_message("[  SKIP    ] type %d: not in the type table of this build\n", (int)t);
    return false;
}

static void test_shapes(void **state) {
    (void)state;
    qmm_context *ctx = int8_ctx();
    /* m: under one tile, a tile and a tail, two tiles and a tail; k: odd and even numbers of
     * 32-blocks, a multiple of 512 (padded X stride), several q4_K super-blocks; nvfp4 (blocks
     * of 64): under one 512-element chunk, one block past a chunk, chunks and one block. */
    const int64_t ms[] = {5, 17, 33, 48};
    const int64_t ks_32[] = {32, 64, 96, 512, 1056, 4128};
    const int64_t ks_64[] = {64, 192, 448, 576, 1088, 4160};
    const int64_t ks_256[] = {256, 768, 1024, 4352};
    int failures = 0;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const qmm_type type = int8_types[ti];
        if (!known(type)) continue;
        const int64_t bsz = qmm_type_block_size(type);
        const int64_t *ks = bsz == 256 ? ks_256 : bsz == 64 ? ks_64 : ks_32;
        const size_t nk = bsz == 256 ? 4 : 6;
        for (size_t mi = 0; mi < 4; mi++)
            for (size_t ki = 0; ki < nk; ki++)
                failures += check_random(ctx, "uniform", type, ms[mi], ks[ki], -1.0f, 1.0f,
                                         (uint32_t)(ti * 100 + mi * 10 + ki));
    }
    qmm_context_free(ctx);
    assert_int_equal(failures, 0);
}

/* CASES A: a 32-block of activations large and of one sign (either sign). */
static void test_large_one_sign(void **state) {
    (void)state;
    qmm_context *ctx = int8_ctx();
    int failures = 0;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        if (!known(int8_types[ti])) continue;
        const int64_t k = qmm_type_block_size(int8_types[ti]) == 256 ? 512 : 256;
        failures += check_random(ctx, "A positive", int8_types[ti], 33, k, 2000.0f, 60000.0f,
                                 (uint32_t)(7 + ti));
        failures += check_random(ctx, "A negative", int8_types[ti], 33, k, -60000.0f, -2000.0f,
                                 (uint32_t)(17 + ti));
    }
    qmm_context_free(ctx);
    assert_int_equal(failures, 0);
}

/* CASES C: q8_0 quants of -128 (legal bytes the reference quantizer never makes), whole
 * blocks of -128, and -128 next to 127, with positive and negative d. */
static void test_q8_0_minus_128(void **state) {
    (void)state;
    qmm_context *ctx = int8_ctx();
    const int64_t m = 17, k = 256, nb = k / 32;
    const size_t rb = (size_t)nb * sizeof(block_q8_0);
    unsigned char *wq = malloc(rb * m);
    uint32_t s = 99;
    for (int64_t i = 0; i < m; i++)
        for (int64_t b = 0; b < nb; b++) {
            block_q8_0 blk;
            blk.d = qmm_fp32_to_fp16((b % 2 ? -1.0f : 1.0f) * (0.001f + 0.01f * (float)(i % 5)));
            for (int l = 0; l < 32; l++) {
                const uint32_t r = lcg(&s) % 4;
                blk.qs[l] = (int8_t)((i + b) % 3 == 0 ? -128 : r == 0 ? -128 : r == 1 ? 127
                                                              : (int)(lcg(&s) % 256) - 128);
            }
            memcpy(wq + (size_t)i * rb + (size_t)b * sizeof blk, &blk, sizeof blk);
        }
    int failures = 0;
    float *x = make_x(k, 5, -1.0f, 1.0f);
    failures += check_case(ctx, "C mixed x", QMM_TYPE_Q8_0, m, k, wq, rb, x);
    free(x);
    x = make_x(k, 6, 2000.0f, 60000.0f); /* every product -128 * 127 in a block */
    failures += check_case(ctx, "C large x", QMM_TYPE_Q8_0, m, k, wq, rb, x);
    free(x);
    free(wq);
    qmm_context_free(ctx);
    assert_int_equal(failures, 0);
}

/* Float weights (f16): int8 is refused with QMM_ERR_UNSUPPORTED, Y untouched. */
static void test_unsupported_type(void **state) {
    (void)state;
    qmm_context *ctx = int8_ctx();
    const int64_t m = 16, k = 256;
    size_t rb;
    assert_int_equal(qmm_row_bytes(QMM_TYPE_F16, k, &rb), QMM_OK);
    float *wf = malloc(sizeof(float) * m * k);
    unsigned char *wq = malloc(rb * m);
    fill(wf, m * k, 3, -1.0f, 1.0f);
    assert_int_equal(qmm_quantize_rows(QMM_TYPE_F16, wf, wq, m, k), QMM_OK);
    qmm_weights *w;
    assert_int_equal(qmm_weights_create(ctx, QMM_TYPE_F16, m, k, wq, rb, &w), QMM_OK);
    float x[256], y[16];
    fill(x, k, 4, -1.0f, 1.0f);
    for (int i = 0; i < 16; i++) y[i] = POISON;
    assert_int_equal(qmm_matmul(ctx, w, 1, x, k, y, m), QMM_ERR_UNSUPPORTED);
    for (int i = 0; i < 16; i++) assert_true(y[i] == POISON);
    qmm_weights_free(w);
    free(wf);
    free(wq);
    qmm_context_free(ctx);
}

/* X blocks holding NaN, +Inf or -Inf: every output of that token is NaN (the block gets
 * q = 0, dx = s = NaN), the other tokens stay finite, on the VNNI gemv (n = 3) and the AMX
 * path (n = 20), plain and batch-invariant. Before the rule, a NaN was saturated to a quant
 * of -128 under a finite dx: finite, wrong outputs. */
static void test_nonfinite_x(void **state) {
    (void)state;
    static const qmm_type types[] = {QMM_TYPE_Q4_0, QMM_TYPE_Q8_0,   QMM_TYPE_Q4_K,
                                     QMM_TYPE_Q2_K, QMM_TYPE_Q6_K,   QMM_TYPE_Q5_1,
                                     QMM_TYPE_IQ4_NL, QMM_TYPE_IQ4_XS, QMM_TYPE_MXFP4,
                                     QMM_TYPE_NVFP4};
    const int64_t m = 17, k = 256, nmax = 20;
    qmm_context *ctx = int8_ctx();
    float *x = malloc(sizeof(float) * nmax * k);
    float *y = malloc(sizeof(float) * nmax * m);
    assert_true(x && y);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (!known(types[ti])) continue;
        size_t rb;
        assert_int_equal(qmm_row_bytes(types[ti], k, &rb), QMM_OK);
        unsigned char *wq = malloc(rb * m);
        assert_non_null(wq);
        make_weights(types[ti], m, k, 11, wq);
        for (int inv = 0; inv < 2; inv++) {
            qmm_context *c = inv ? inv_ctx : ctx;
            qmm_weights *w;
            assert_int_equal(qmm_weights_create(c, types[ti], m, k, wq, rb, &w), QMM_OK);
            for (int64_t n = 3; n <= nmax; n += nmax - 3) {
                fill(x, nmax * k, 12, -1.0f, 1.0f);
                x[1 * k + 70] = NAN;       /* token 1, block 2 */
                x[2 * k + 3] = INFINITY;   /* token 2, block 0 */
                x[(n - 1) * k + 255] = -INFINITY; /* last token, last block */
                assert_int_equal(qmm_matmul(c, w, n, x, k, y, m), QMM_OK);
                for (int64_t t = 0; t < n; t++)
                    for (int64_t i = 0; i < m; i++) {
                        const bool bad_token = t == 1 || t == 2 || t == n - 1;
                        const float v = y[t * m + i];
                        if (bad_token ? !isnan(v) : !isfinite(v))
                            fail_msg("%s n=%lld %s: y[%lld][%lld] = %g (token %s)", qmm_type_name(types[ti]),
                                     (long long)n, inv ? "invariant" : "plain", (long long)t, (long long)i,
                                     (double)v, bad_token ? "holds NaN/Inf: NaN expected" : "finite");
                    }
            }
            qmm_weights_free(w);
        }
        free(wq);
    }
    free(x);
    free(y);
    qmm_context_free(ctx);
}

/* mxfp4: every E8M0 byte from 0 (2^-128 after the codebook's halving) to 239, in weight sets
 * whose blocks take one of 12 neighbouring exponents (so no set's outputs are dominated by a
 * few blocks); the nibbles random (every codebook index). Below e = 12 the AMX kernel is held to
 * the int8 limits only (tiny_scales). nvfp4: every UE4M3 byte (0x00 and 0x7F decode to 0,
 * bit 7 is ignored) as the scales of one weight set. */
static void test_codebook_scales(void **state) {
    (void)state;
    qmm_context *ctx = int8_ctx();
    int failures = 0;
    const int64_t m = 17, k = 256;
    uint32_t s = 21;
    if (known(QMM_TYPE_MXFP4)) {
        size_t rb;
        assert_int_equal(qmm_row_bytes(QMM_TYPE_MXFP4, k, &rb), QMM_OK);
        unsigned char *wq = malloc(rb * m);
        float *x = make_x(k, 31, -1.0f, 1.0f);
        for (int base = 0; base <= 228; base += 12) {
            for (size_t b = 0; b < rb * m; b++) wq[b] = (unsigned char)(lcg(&s) & 0xFF);
            for (int64_t b = 0; b < m * k / 32; b++)
                wq[b * sizeof(block_mxfp4) + offsetof(block_mxfp4, e)] =
                    (unsigned char)(base + (int)(lcg(&s) % 12));
            tiny_scales = base < 12;
            failures += check_case(ctx, "E8M0 scales", QMM_TYPE_MXFP4, m, k, wq, rb, x);
            tiny_scales = false;
        }
        free(x);
        free(wq);
    }
    if (known(QMM_TYPE_NVFP4)) {
        size_t rb;
        assert_int_equal(qmm_row_bytes(QMM_TYPE_NVFP4, k, &rb), QMM_OK);
        unsigned char *wq = malloc(rb * m);
        float *x = make_x(k, 32, -1.0f, 1.0f);
        for (size_t b = 0; b < rb * m; b++) wq[b] = (unsigned char)(lcg(&s) & 0xFF);
        int code = 0;
        for (int64_t b = 0; b < m * k / 64; b++)
            for (int sub = 0; sub < 4; sub++)
                wq[b * sizeof(block_nvfp4) + offsetof(block_nvfp4, d) + sub] =
                    (unsigned char)(code++ % 256);
        assert_true(code >= 256);
        failures += check_case(ctx, "UE4M3 scales", QMM_TYPE_NVFP4, m, k, wq, rb, x);
        free(x);
        free(wq);
    }
    qmm_context_free(ctx);
    assert_int_equal(failures, 0);
}

/* QMM_INT8_LEVELS=<name,...> runs only the named configurations. */
static bool selected(const char *name) {
    const char *list = getenv("QMM_INT8_LEVELS");
    if (list == NULL || list[0] == '\0') return true;
    const size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        const size_t tl = end ? (size_t)(end - p) : strlen(p);
        if (tl == len && strncmp(p, name, len) == 0) return true;
        if (!end) break;
        p = end + 1;
    }
    return false;
}

int main(void) {
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AVX2)) {
        print_message("[  SKIPPED ] int8 strategy: no AVX2 on this machine (no portable int8)\n");
        return 77;
    }
    const level levels[] = {
        {"amx", "amx", NULL, true, qmm_x86_gemv_int8_avx512},
        {"avx512", "avx512", NULL, false, qmm_x86_gemv_int8_avx512},
        {"avx2+avx-vnni", "avx2", "auto", false, qmm_x86_gemv_int8_avxvnni},
        {"avx2", "avx2", "off", false, qmm_x86_gemv_int8_avx2},
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_large_one_sign),
        cmocka_unit_test(test_q8_0_minus_128),
        cmocka_unit_test(test_unsupported_type),
        cmocka_unit_test(test_nonfinite_x),
        cmocka_unit_test(test_codebook_scales),
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        const qmm_cpu_isa isa = levels[i].amx ? QMM_CPU_ISA_AMX
                                : strcmp(levels[i].isa, "avx512") == 0 ? QMM_CPU_ISA_AVX512
                                                                       : QMM_CPU_ISA_AVX2;
        const bool needs_vnni = levels[i].gemv == qmm_x86_gemv_int8_avxvnni;
        if (!qmm_cpu_isa_supported(isa) || (needs_vnni && !qmm_cpu_features_get()->avx_vnni)) {
            print_message("[  SKIPPED ] int8 at %s: not on this machine\n", levels[i].name);
            continue;
        }
        if (!selected(levels[i].name)) continue;
        g_level = &levels[i];
        char name[64];
        snprintf(name, sizeof name, "int8 at %s", levels[i].name);
        failed += _cmocka_run_group_tests(name, tests, sizeof tests / sizeof tests[0], setup, teardown);
    }
    return failed;
}
