/*
 * test_arm_int8.c — the aarch64 int8 kernels (src/cpu/arm/gemv_int8_*, docs/ARM64.md) beyond
 * the conformance suite, for every type of qmm_arm_int8_has_type, m in {1, 5, 67} (tasks of
 * 64 rows: a tail task), k of 1, 3 and 9 blocks (K-quants, iq4_xs: 1, 2, 3 super-blocks),
 * n = 1..9 and 17 (passes of 4 X rows with tails), X rows with a NaN block and a zero block:
 *   - the kernels called directly against a model of the int8 arithmetic: X quantized by the
 *     rule (qmm_cpu_int8_quantize_row), y_model = sum over blocks of dx * sum(q w) in long
 *     double with w the type's to_float; |y - y_model| <= 2^-21 sum |dx q w| + 2^-24 |y_model|
 *     (what separates them: to_float's rounding of d sc q - dmin mn, the double sums, the store;
 *     a wrong nibble, bit or scale moves a block by about |d x| >> that), NaN exactly where
 *     the model's block is NaN;
 *   - the neon kernel (SMULL/SADALP), the dotprod kernel (SDOT) and the i8mm kernel (SMMLA
 *     on pairs of W and X rows; odd m and n leave a lone row) on the GGUF blocks and on the
 *     repacked copy (qmm_arm_i8mm_pack) bit for bit;
 *   - row j of Y the same bits for every n (each X row's result depends on that row alone);
 *   - through the API at every aarch64 level the machine has: the int8 strategy names the
 *     level's kernel (qmm_matmul_path: int8_neon_gemv, int8_dotprod_gemv, and at i8mm
 *     int8_smmla for n = 2..8, int8_smmla_packed above but for q2_K) and gives the direct kernel's bits,
 *     with 1 and 2 threads; qmm_weights_memory's int8_bytes is 0 until the repacked copy is
 *     made and then its size (qmm_arm_i8mm_pack_bytes, rounded up to 64); auto at n = 1
 *     resolves to int8 (the unmeasured default of auto_table.c).
 * Levels the machine lacks (scripts/test-arm64.sh runs qemu with -cpu max and cortex-a57)
 * are reported as skipped.
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

#include "core/types.h"
#include "cpu/arm/arm_kernels.h"
#include "cpu/cpu_features.h"
#include "cpu/cpu_internal.h"
#include "qmm.h"
#include "test_util.h"

static const int64_t ms[] = {1, 5, 67};
static const int64_t ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17};
#define N_MAX 17

typedef struct problem {
    qmm_type type;
    int64_t m, k, ldx;
    unsigned char *w;  /* m rows of row_bytes */
    size_t row_bytes;
    float *x, *wf;     /* N_MAX x ldx; m x k */
    long double *model; /* N_MAX x m */
    double *scale;      /* N_MAX x m: sum |dx q w| */
    bool *nan;          /* N_MAX x m: the model is NaN */
} problem;

static void problem_make(problem *p, qmm_type type, int64_t m, int64_t k, tu_rng *r) {
    memset(p, 0, sizeof *p);
    p->type = type;
    p->m = m;
    p->k = k;
    p->ldx = k + 5;
    assert_int_equal(qmm_row_bytes(type, k, &p->row_bytes), QMM_OK);
    p->w = malloc(p->row_bytes * (size_t)m);
    p->wf = malloc(sizeof(float) * (size_t)(m * k));
    p->x = malloc(sizeof(float) * (size_t)(N_MAX * p->ldx));
    p->model = malloc(sizeof(long double) * (size_t)(N_MAX * m));
    p->scale = malloc(sizeof(double) * (size_t)(N_MAX * m));
    p->nan = malloc(sizeof(bool) * (size_t)(N_MAX * m));
    assert_true(p->w && p->wf && p->x && p->model && p->scale && p->nan);
    if (qmm_type_has_quantizer(type)) {
        tu_fill_uniform(r, p->wf, (size_t)(m * k), -1.0f, 1.0f);
        assert_int_equal(qmm_quantize_rows(type, p->wf, p->w, m, k), QMM_OK);
    } else {
        assert_int_equal(qmm_random_rows(type, tu_rng_u64(r), 1.0, p->w, m, k), QMM_OK);
    }
    assert_int_equal(qmm_dequantize_rows(type, p->w, p->wf, m, k), QMM_OK);
    tu_poison_fill(p->x, (size_t)(N_MAX * p->ldx));
    for (int64_t j = 0; j < N_MAX; j++) {
        float *xj = p->x + j * p->ldx;
        tu_fill_uniform(r, xj, (size_t)k, -1.0f, 1.0f);
        if (j % 3 == 1) memset(xj + 32 * (j % (k / 32)), 0, 32 * sizeof(float)); /* a zero block */
        if (j == 5) xj[32 * ((j + 1) % (k / 32)) + 7] = NAN;                       /* a NaN block */
    }
    /* the model */
    int8_t *q = malloc((size_t)k);
    float *dx = malloc(sizeof(float) * (size_t)(k / 32)), *s = malloc(sizeof(float) * (size_t)(k / 32));
    assert_true(q && dx && s);
    for (int64_t j = 0; j < N_MAX; j++) {
        qmm_cpu_int8_quantize_row(p->x + j * p->ldx, k, q, dx, s, 1);
        for (int64_t i = 0; i < m; i++) {
            long double y = 0;
            double sc = 0;
            bool nan = false;
            for (int64_t b = 0; b < k / 32; b++) {
                if (isnan(dx[b])) {
                    nan = true;
                    continue;
                }
                long double t = 0;
                for (int e = 0; e < 32; e++) {
                    const float wv = p->wf[i * k + 32 * b + e];
                    t += (long double)q[32 * b + e] * wv;
                    sc += fabs((double)q[32 * b + e] * (double)wv) * dx[b];
                }
                y += t * dx[b];
            }
            p->model[j * m + i] = y;
            p->scale[j * m + i] = sc;
            p->nan[j * m + i] = nan;
        }
    }
    free(q);
    free(dx);
    free(s);
}

static void problem_free(problem *p) {
    free(p->w);
    free(p->wf);
    free(p->x);
    free(p->model);
    free(p->scale);
    free(p->nan);
}

/* One kernel directly (0 neon, 1 dotprod, 2 i8mm, 3 i8mm on the repacked copy): y (n x ldy = m). */
static void run_direct(const problem *p, int level, int64_t n, int threads, float *y) {
    const size_t bytes = (qmm_arm_int8_x_scratch(n, p->k) + 63) / 64 * 64;
    const size_t extra = (qmm_arm_gemm_int8_i8mm_scratch(n, p->k) + 63) / 64 * 64;
    unsigned char *scratch = aligned_alloc(64, bytes + extra);
    assert_non_null(scratch);
    qmm_arm_int8_x *xs = NULL;
    qmm_arm_int8_x_prepare(p->x, p->ldx, n, p->k, scratch, threads, &xs);
    if (level == 3) {
        unsigned char *pk = malloc(qmm_arm_i8mm_pack_bytes(p->m, p->k));
        assert_non_null(pk);
        qmm_arm_i8mm_pack(p->type, p->m, p->k, p->w, p->row_bytes, pk, threads);
        qmm_arm_gemm_int8_i8mm_packed(p->type, p->m, p->k, pk, n, xs, scratch + bytes, y, p->m, threads);
        free(pk);
    } else if (level == 2)
        qmm_arm_gemm_int8_i8mm(p->type, p->m, p->k, p->w, p->row_bytes, n, xs, scratch + bytes, y, p->m, threads);
    else if (level == 1)
        qmm_arm_gemv_int8_dotprod(p->type, p->m, p->k, p->w, p->row_bytes, n, xs, y, p->m, threads);
    else
        qmm_arm_gemv_int8_neon(p->type, p->m, p->k, p->w, p->row_bytes, n, xs, y, p->m, threads);
    free(scratch);
}

static int check_model(const problem *p, int64_t n, const float *y, const char *what) {
    int bad = 0;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < p->m; i++) {
            const float v = y[j * p->m + i];
            const long double mv = p->model[j * p->m + i];
            if (p->nan[j * p->m + i]) {
                if (!isnan(v) && bad++ < 5)
                    print_error("%s %s m=%lld k=%lld: y[%lld][%lld] = %g, want NaN (NaN X block)\n", what,
                                qmm_type_name(p->type), (long long)p->m, (long long)p->k, (long long)j,
                                (long long)i, v);
                continue;
            }
            const double err = fabs((double)((long double)v - mv));
            const double bound = 0x1p-21 * p->scale[j * p->m + i] + 0x1p-24 * fabs((double)mv) + 0x1p-140;
            if (!(err <= bound) && bad++ < 5)
                print_error("%s %s m=%lld k=%lld n=%lld: y[%lld][%lld] = %.9g, model %.9Lg: |err| %.3g > %.3g\n",
                            what, qmm_type_name(p->type), (long long)p->m, (long long)p->k, (long long)n,
                            (long long)j, (long long)i, v, mv, err, bound);
        }
    return bad;
}

static bool same_bits(const float *a, const float *b, size_t count) {
    return memcmp(a, b, count * sizeof(float)) == 0;
}

/* k for a type: 1, 3 and 9 blocks of 32 (K-quants and iq4_xs: 1, 2, 3 super-blocks; nvfp4:
 * 1, 3, 9 blocks of 64). */
static int64_t k_of(qmm_type type, int v) {
    const int64_t bs = qmm_type_block_size(type);
    if (bs == 256) return 256 * (v + 1);
    return bs * (v == 0 ? 1 : v == 1 ? 3 : 9);
}

static void test_kernels_direct(void **state) {
    (void)state;
    const bool dotprod = qmm_cpu_isa_supported(QMM_CPU_ISA_DOTPROD);
    const bool i8mm = qmm_cpu_isa_supported(QMM_CPU_ISA_I8MM);
    const int levels = i8mm ? 4 : dotprod ? 2 : 1;
    if (!dotprod) print_message("[  SKIPPED ] dotprod kernel: the CPU lacks SDOT (neon kernel only)\n");
    if (!i8mm) print_message("[  SKIPPED ] i8mm kernels: the CPU lacks SMMLA\n");
    static const char *const names[4] = {"neon", "dotprod", "i8mm", "i8mm repacked"};
    tu_rng r = tu_rng_make(0xa64);
    int failures = 0, cases = 0;
    float *y[4], *y1 = malloc(sizeof(float) * N_MAX * 67);
    for (int l = 0; l < 4; l++) y[l] = malloc(sizeof(float) * N_MAX * 67);
    assert_true(y[0] && y[1] && y[2] && y[3] && y1);
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        if (!qmm_type_is_supported(t) || !qmm_arm_int8_has_type((qmm_type)t)) continue;
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (int v = 0; v < 3; v++) {
                problem p;
                problem_make(&p, (qmm_type)t, ms[mi], k_of((qmm_type)t, v), &r);
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                    const int64_t n = ns[ni];
                    cases++;
                    for (int l = 0; l < levels; l++) {
                        run_direct(&p, l, n, 2, y[l]);
                        failures += check_model(&p, n, y[l], names[l]) > 0;
                        if (l > 0 && !same_bits(y[0], y[l], (size_t)(n * p.m))) {
                            print_error("%s m=%lld k=%lld n=%lld: neon and %s differ\n", qmm_type_name(p.type),
                                        (long long)p.m, (long long)p.k, (long long)n, names[l]);
                            failures++;
                        }
                    }
                    if (n == 1) memcpy(y1, y[0], sizeof(float) * (size_t)p.m);
                    else if (!same_bits(y1, y[0], (size_t)p.m)) {
                        print_error("%s m=%lld k=%lld: row 0 at n=%lld differs from n=1\n", qmm_type_name(p.type),
                                    (long long)p.m, (long long)p.k, (long long)n);
                        failures++;
                    }
                }
                problem_free(&p);
            }
    }
    print_message("test_kernels_direct: %d cases\n", cases);
    free(y[0]);
    free(y[1]);
    free(y[2]);
    free(y[3]);
    free(y1);
    assert_true(cases > 0);
    assert_int_equal(failures, 0);
}

static qmm_context *make_ctx(qmm_cpu_isa isa, int threads) {
    setenv("QMM_CPU_ISA", qmm_cpu_isa_name(isa), 1);
    qmm_context_params prm = qmm_context_default_params();
    prm.n_threads = threads;
    qmm_context *ctx = NULL;
    const qmm_status st = qmm_context_create(&prm, &ctx);
    unsetenv("QMM_CPU_ISA");
    return st == QMM_OK ? ctx : NULL;
}

static void test_api_levels(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0xa65);
    int failures = 0, ran = 0;
    float *y = malloc(sizeof(float) * N_MAX * 67), *yd = malloc(sizeof(float) * N_MAX * 67);
    assert_true(y && yd);
    for (int isa = QMM_CPU_ISA_NEON; isa < QMM_CPU_ISA_COUNT; isa++) {
        if (!qmm_cpu_isa_supported((qmm_cpu_isa)isa)) {
            print_message("[  SKIPPED ] level %s: not on this CPU\n", qmm_cpu_isa_name((qmm_cpu_isa)isa));
            continue;
        }
        const char *gemv = isa >= QMM_CPU_ISA_DOTPROD ? "int8_dotprod_gemv" : "int8_neon_gemv";
        for (int threads = 1; threads <= 2; threads++) {
            qmm_context *ctx = make_ctx((qmm_cpu_isa)isa, threads);
            assert_non_null(ctx);
            for (int t = 0; t < QMM_TYPE_COUNT; t++) {
                if (!qmm_type_is_supported(t) || !qmm_arm_int8_has_type((qmm_type)t)) continue;
                problem p;
                problem_make(&p, (qmm_type)t, 67, k_of((qmm_type)t, 1), &r);
                qmm_weights *w = NULL;
                assert_int_equal(qmm_weights_create(ctx, p.type, p.m, p.k, p.w, p.row_bytes, &w), QMM_OK);
                qmm_path path;
                assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_AUTO), QMM_OK);
                assert_int_equal(qmm_matmul_path(ctx, w, 1, &path), QMM_OK);
                if (path.strategy != QMM_STRATEGY_INT8) {
                    print_error("%s %s: auto at n = 1 resolved to %s, want int8\n", qmm_cpu_isa_name((qmm_cpu_isa)isa),
                                qmm_type_name(p.type), qmm_strategy_name(path.strategy));
                    failures++;
                }
                assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_INT8), QMM_OK);
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                    const int64_t n = ns[ni];
                    const bool smmla = isa >= QMM_CPU_ISA_I8MM && n >= 2, packed = smmla && n > 8 && p.type != QMM_TYPE_Q2_K;
                    const char *want = packed ? "int8_smmla_packed" : smmla ? "int8_smmla" : gemv;
                    qmm_weights_memory_info mem;
                    assert_int_equal(qmm_weights_memory(w, &mem), QMM_OK);
                    const size_t pack_bytes = (qmm_arm_i8mm_pack_bytes(p.m, p.k) + 63) / 64 * 64;
                    /* ns increases: the copy exists exactly after the first n > 8 */
                    const size_t want_mem =
                        isa >= QMM_CPU_ISA_I8MM && n > 9 && p.type != QMM_TYPE_Q2_K ? pack_bytes : 0;
                    if (mem.int8_bytes != want_mem) {
                        print_error("%s %s n=%lld: int8_bytes %zu before the call, want %zu\n",
                                    qmm_cpu_isa_name((qmm_cpu_isa)isa), qmm_type_name(p.type), (long long)n,
                                    mem.int8_bytes, want_mem);
                        failures++;
                    }
                    assert_int_equal(qmm_matmul_path(ctx, w, n, &path), QMM_OK);
                    if (strcmp(path.kernel, want) != 0 || path.precision != QMM_PRECISION_INT8) {
                        print_error("%s %s n=%lld: kernel %s, want %s\n", qmm_cpu_isa_name((qmm_cpu_isa)isa),
                                    qmm_type_name(p.type), (long long)n, path.kernel, want);
                        failures++;
                    }
                    assert_int_equal(qmm_matmul(ctx, w, n, p.x, p.ldx, y, p.m), QMM_OK);
                    run_direct(&p, packed ? 3 : smmla ? 2 : isa >= QMM_CPU_ISA_DOTPROD, n, 1, yd);
                    ran++;
                    if (!same_bits(y, yd, (size_t)(n * p.m))) {
                        print_error("%s %s n=%lld threads=%d: the API's int8 differs from the kernel\n",
                                    qmm_cpu_isa_name((qmm_cpu_isa)isa), qmm_type_name(p.type), (long long)n, threads);
                        failures++;
                    }
                }
                qmm_weights_free(w);
                problem_free(&p);
            }
            qmm_context_free(ctx);
        }
    }
    free(y);
    free(yd);
    print_message("test_api_levels: %d runs\n", ran);
    assert_true(ran > 0);
    assert_int_equal(failures, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_direct),
        cmocka_unit_test(test_api_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
