/*
 * test_threads.c — the thread-safety rules of include/qmm.h (CASES.md H), with plain pthreads.
 *
 * The rules as the code enforces them:
 *   - a qmm_context is used by one thread at a time: one context per thread;
 *   - a qmm_weights object belongs to the context that made it: qmm_matmul with another
 *     context's weights is refused with QMM_ERR_INVALID_ARGUMENT (checked here), so "sharing
 *     weights between threads" means sharing them between calls on their own context, never
 *     across contexts;
 *   - the library holds no global mutable state a matmul writes: threads with their own
 *     contexts, weights made from the same bytes, and the same X get bit-identical outputs,
 *     equal to a run with no other thread active (checked here for every weight type and
 *     every strategy the context runs at ISA levels generic and best, many iterations, both
 *     threads at once).
 * Under ThreadSanitizer (docs/TRUST.md) the same program reports no race.
 */
#include <pthread.h>
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
#include "test_util.h"

#define N_THREADS 2
#define ITERS 20

typedef struct job {
    qmm_context *ctx; /* made by the main thread (QMM_CPU_ISA is read at creation) */
    qmm_type type;
    qmm_strategy strategy;
    int64_t m, k, n;
    const void *w;
    size_t row_stride;
    const float *x;
    const float *expect; /* n x m, from the solo run */
    int mismatches;      /* outputs differing from expect, over all iterations */
    qmm_status status;
    char error[256];
} job;

/* Make a context at ISA level `isa` running `strategy` on one thread. */
static qmm_context *make_ctx(qmm_cpu_isa isa, qmm_strategy strategy) {
    setenv("QMM_CPU_ISA", qmm_cpu_isa_name(isa), 1);
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = 1;
    p.strategy = strategy;
    qmm_context *ctx = NULL;
    qmm_status st = qmm_context_create(&p, &ctx);
    unsetenv("QMM_CPU_ISA");
    if (st != QMM_OK) fail_msg("context at %s: %s", qmm_cpu_isa_name(isa), qmm_last_error());
    return ctx;
}

/* One context (its own) and one weights object per thread; ITERS matmuls compared with the
 * solo run. */
static void *worker(void *arg) {
    job *jb = arg;
    qmm_context *ctx = jb->ctx;
    qmm_weights *w = NULL;
    float *y = malloc(sizeof(float) * (size_t)(jb->n * jb->m));
    jb->status = qmm_weights_create(ctx, jb->type, jb->m, jb->k, jb->w, jb->row_stride, &w);
    for (int it = 0; it < ITERS && jb->status == QMM_OK && y != NULL; it++) {
        jb->status = qmm_matmul(ctx, w, jb->n, jb->x, jb->k, y, jb->m);
        if (jb->status == QMM_OK && memcmp(y, jb->expect, sizeof(float) * (size_t)(jb->n * jb->m)))
            jb->mismatches++;
    }
    if (jb->status != QMM_OK) snprintf(jb->error, sizeof jb->error, "%s", qmm_last_error());
    free(y);
    qmm_weights_free(w);
    return NULL;
}

static void test_H_threads_own_context_identical(void **state) {
    (void)state;
    static const qmm_strategy strategies[] = {QMM_STRATEGY_GEMV, QMM_STRATEGY_FUSED,
                                              QMM_STRATEGY_DEQUANT_SGEMM, QMM_STRATEGY_INT8,
                                              QMM_STRATEGY_AUTO};
    tu_rng r = tu_rng_make(0x7);
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        if (!qmm_type_is_supported(t) || !qmm_type_is_weight((qmm_type)t)) continue;
        int64_t m = 33, k = 512, n = 9;
        tu_weights wt;
        assert_int_equal(tu_weights_make(&wt, (qmm_type)t, m, k, 0, &r), QMM_OK);
        float *x = malloc(sizeof(float) * (size_t)(n * k));
        float *solo = malloc(sizeof(float) * (size_t)(n * m));
        assert_true(x && solo);
        tu_fill_uniform(&r, x, (size_t)(n * k), -1.0f, 1.0f);
        qmm_cpu_isa levels[2] = {QMM_CPU_ISA_GENERIC, qmm_cpu_isa_best()};
        for (int l = 0; l < (levels[1] == QMM_CPU_ISA_GENERIC ? 1 : 2); l++)
        for (size_t s = 0; s < sizeof strategies / sizeof strategies[0]; s++) {
            /* The solo run, no other thread active. */
            qmm_context *ctx = make_ctx(levels[l], strategies[s]);
            qmm_weights *w;
            assert_int_equal(qmm_weights_create(ctx, (qmm_type)t, m, k, wt.buf.data,
                                                wt.row_stride, &w), QMM_OK);
            qmm_status st = qmm_matmul(ctx, w, n, x, k, solo, m);
            qmm_weights_free(w);
            qmm_context_free(ctx);
            if (st == QMM_ERR_UNSUPPORTED) {
                print_message("[  SKIPPED ] %s: %s at %s unsupported\n",
                              qmm_type_name((qmm_type)t), qmm_strategy_name(strategies[s]),
                              qmm_cpu_isa_name(levels[l]));
                continue;
            }
            assert_int_equal(st, QMM_OK);
            job jobs[N_THREADS];
            pthread_t th[N_THREADS];
            for (int i = 0; i < N_THREADS; i++)
                jobs[i] = (job){make_ctx(levels[l], strategies[s]), (qmm_type)t, strategies[s],
                                m, k, n, wt.buf.data, wt.row_stride, x, solo, 0, QMM_OK, ""};
            for (int i = 0; i < N_THREADS; i++)
                assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
            for (int i = 0; i < N_THREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
            for (int i = 0; i < N_THREADS; i++) {
                qmm_context_free(jobs[i].ctx);
                if (jobs[i].status != QMM_OK)
                    fail_msg("[H] %s %s at %s thread %d: %s", qmm_type_name((qmm_type)t),
                             qmm_strategy_name(strategies[s]), qmm_cpu_isa_name(levels[l]), i,
                             jobs[i].error);
                if (jobs[i].mismatches != 0)
                    fail_msg("[H] %s %s at %s thread %d: %d of %d runs differ from the solo run",
                             qmm_type_name((qmm_type)t), qmm_strategy_name(strategies[s]),
                             qmm_cpu_isa_name(levels[l]), i, jobs[i].mismatches, ITERS);
            }
        }
        free(x);
        free(solo);
        tu_weights_free(&wt);
    }
}

/* Weights of one context used with another: refused, Y untouched. */
static void test_H_weights_of_another_context_refused(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0x77);
    tu_weights wt;
    assert_int_equal(tu_weights_make(&wt, QMM_TYPE_Q4_0, 4, 64, 0, &r), QMM_OK);
    qmm_context *a, *b;
    assert_int_equal(qmm_context_create(NULL, &a), QMM_OK);
    assert_int_equal(qmm_context_create(NULL, &b), QMM_OK);
    qmm_weights *w;
    assert_int_equal(qmm_weights_create(a, QMM_TYPE_Q4_0, 4, 64, wt.buf.data, wt.row_stride, &w),
                     QMM_OK);
    float x[64], y[4];
    tu_fill_uniform(&r, x, 64, -1.0f, 1.0f);
    tu_poison_fill(y, 4);
    assert_int_equal(qmm_matmul(b, w, 1, x, 64, y, 4), QMM_ERR_INVALID_ARGUMENT);
    assert_true(tu_all_poison(y, 4));
    assert_int_equal(qmm_matmul(a, w, 1, x, 64, y, 4), QMM_OK);
    qmm_weights_free(w);
    qmm_context_free(a);
    qmm_context_free(b);
    tu_weights_free(&wt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_H_threads_own_context_identical),
        cmocka_unit_test(test_H_weights_of_another_context_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
