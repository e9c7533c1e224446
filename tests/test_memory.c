/*
 * test_memory.c — qmm_weights_memory, the cache-policy parameters and the graph API on the
 * CPU backend (the CUDA side is in tests/test_cuda.c: test_residency_*, test_cache_*,
 * test_graph_api).
 *
 * Checks: a new weights object reports its GGUF rows only (m x row bytes padded to 64) and a
 * total equal to them; after a matmul of each strategy the report shows exactly the x86 layout
 * that strategy's kernel made (AMX-BF16 tiles for fused_amx_bf16, AMX-INT8 tiles for int8_amx,
 * nothing for gemv and the VNNI gemv), byte for byte as allocated, and the total is the sum;
 * the layouts stay (a later gemv call reports them still); NULL arguments are refused; the
 * context parameters cache / cache_limit are validated (unknown policy, negative, NaN,
 * infinite limit, a limit with another policy) and kept by qmm_context_get_params; the graph
 * functions return QMM_ERR_UNSUPPORTED on the CPU and QMM_ERR_INVALID_ARGUMENT for NULL / a
 * bad count.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu/x86/gemm_int8_avx2.h"
#include "cpu/x86/x86_kernels.h"
#include "qmm.h"
#include "test_util.h"

static size_t round64(size_t v) { return (v + 63) / 64 * 64; }
static int64_t round_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

static qmm_context *cpu_context(void) {
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = 2;
    qmm_context *ctx = NULL;
    assert_int_equal(qmm_context_create(&p, &ctx), QMM_OK);
    return ctx;
}

static void check_memory(const qmm_weights *w, size_t gguf, size_t bf16, size_t int8, const char *when) {
    qmm_weights_memory_info m;
    memset(&m, 0xAB, sizeof m); /* every field must be written */
    assert_int_equal(qmm_weights_memory(w, &m), QMM_OK);
    if (m.backend != QMM_BACKEND_CPU || m.gguf_bytes != gguf || m.bf16_bytes != bf16 ||
        m.int8_bytes != int8 || m.repacked_bytes != 0 || m.f16_bytes != 0 || m.fp8_bytes != 0 ||
        m.total_bytes != gguf + bf16 + int8)
        fail_msg("%s: backend %d gguf %zu (want %zu) bf16 %zu (want %zu) int8 %zu (want %zu) "
                 "repacked %zu f16 %zu fp8 %zu total %zu", when, (int)m.backend, m.gguf_bytes, gguf,
                 m.bf16_bytes, bf16, m.int8_bytes, int8, m.repacked_bytes, m.f16_bytes, m.fp8_bytes,
                 m.total_bytes);
}

/* One matmul with strategy s (n rows), checked against the reference loosely (the point here
 * is the memory report; test_conformance holds each path to its class). */
static const char *run(qmm_context *ctx, const qmm_weights *w, const tu_weights *tw, qmm_strategy s,
                       int64_t n, tu_rng *r) {
    float *x = malloc((size_t)(n * tw->k) * sizeof(float)), *y = malloc((size_t)(n * tw->m) * sizeof(float));
    float *ref = malloc((size_t)(n * tw->m) * sizeof(float));
    assert_true(x && y && ref);
    tu_fill_uniform(r, x, (size_t)(n * tw->k), -1.0f, 1.0f);
    assert_int_equal(qmm_context_set_strategy(ctx, s), QMM_OK);
    qmm_path path;
    assert_int_equal(qmm_matmul_path(ctx, w, n, &path), QMM_OK);
    assert_int_equal(qmm_matmul(ctx, w, n, x, tw->k, y, tw->m), QMM_OK);
    assert_int_equal(qmm_matmul_ref(tw->type, tw->m, tw->k, tw->buf.data, tw->row_stride, n, x, tw->k,
                                    ref, tw->m), QMM_OK);
    qmm_diff d;
    assert_int_equal(qmm_compare(n, tw->m, y, tw->m, ref, tw->m, &d), QMM_OK);
    if (!qmm_diff_ok(&d, path.max_nmse, path.max_rel_err))
        fail_msg("%s (%s): nmse %g max_rel %g", path.kernel, qmm_strategy_name(s), d.nmse, d.max_rel_err);
    free(x);
    free(y);
    free(ref);
    return path.kernel;
}

static void test_cpu_memory_per_strategy(void **state) {
    (void)state;
    static const struct {
        qmm_type type;
        int64_t m, k;
    } cases[] = {{QMM_TYPE_Q4_0, 37, 256}, {QMM_TYPE_Q4_K, 50, 512}, {QMM_TYPE_F32, 20, 96}};
    tu_rng r = tu_rng_make(0x3e3);
    qmm_context *ctx = cpu_context();
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        tu_weights tw;
        assert_int_equal(tu_weights_make(&tw, cases[ci].type, cases[ci].m, cases[ci].k, 8, &r), QMM_OK);
        const int64_t m = tw.m, k = tw.k;
        const size_t gguf = round64(tw.row_bytes) * (size_t)m;
        qmm_weights *w = NULL;
        assert_int_equal(qmm_weights_create(ctx, tw.type, m, k, tw.buf.data, tw.row_stride, &w), QMM_OK);
        check_memory(w, gguf, 0, 0, "after creation");
        const char *kg = run(ctx, w, &tw, QMM_STRATEGY_GEMV, 3, &r);
        (void)kg;
        check_memory(w, gguf, 0, 0, "after gemv");
        size_t bf16 = 0, int8 = 0;
        const char *kf = run(ctx, w, &tw, QMM_STRATEGY_FUSED, 20, &r);
        if (strcmp(kf, "fused_amx_bf16") == 0 || strcmp(kf, "fused_amx_bf16x3") == 0) {
            const size_t m_pad = (size_t)round_up(m, QMM_X86_TILE_M), k_pad = (size_t)round_up(k, QMM_X86_TILE_K);
            const size_t parts = tw.type == QMM_TYPE_F32 ? 3 : 1;
            bf16 = round64(parts * m_pad * k_pad * 2) + round64(m_pad * sizeof(float));
        }
        check_memory(w, gguf, bf16, 0, kf);
        qmm_strategy got;
        assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_INT8), QMM_OK);
        if (qmm_matmul_strategy(ctx, w, 20, &got) == QMM_OK) {
            const char *ki = run(ctx, w, &tw, QMM_STRATEGY_INT8, 20, &r);
            if (strcmp(ki, "int8_amx") == 0) {
                const size_t m_pad = (size_t)round_up(m, 16);
                const size_t scales = round64(m_pad * (size_t)(k / 32) * sizeof(float));
                int8 = round64(m_pad * (size_t)k) + scales + (tw.type == QMM_TYPE_Q4_K ? scales : 0);
            } else if (strncmp(ki, "int8_avx2_gemm", strlen("int8_avx2_gemm")) == 0) {
                /* the AVX2 int8 GEMM's interleaved copy (gemm_int8_avx2_layout.h) */
                int8 = round64(qmm_x86_gemm_int8_avx2_packed_bytes(tw.type, m, k));
                assert_true(int8 > 0);
            }
            check_memory(w, gguf, bf16, int8, ki);
        }
        run(ctx, w, &tw, QMM_STRATEGY_GEMV, 1, &r);
        check_memory(w, gguf, bf16, int8, "gemv after the other strategies (layouts kept)");
        print_message("%s %lldx%lld: gguf %zu, bf16 tiles %zu (%s), int8 tiles %zu\n",
                      qmm_type_name(tw.type), (long long)m, (long long)k, gguf, bf16, kf, int8);
        qmm_weights_free(w);
        tu_weights_free(&tw);
    }
    qmm_context_free(ctx);
}

static void test_memory_null(void **state) {
    (void)state;
    qmm_context *ctx = cpu_context();
    tu_rng r = tu_rng_make(5);
    tu_weights tw;
    assert_int_equal(tu_weights_make(&tw, QMM_TYPE_Q8_0, 4, 64, 0, &r), QMM_OK);
    qmm_weights *w = NULL;
    assert_int_equal(qmm_weights_create(ctx, tw.type, 4, 64, tw.buf.data, tw.row_stride, &w), QMM_OK);
    qmm_weights_memory_info m;
    assert_int_equal(qmm_weights_memory(NULL, &m), QMM_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(qmm_last_error(), "w is NULL"));
    assert_int_equal(qmm_weights_memory(w, NULL), QMM_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(qmm_last_error(), "out is NULL"));
    qmm_weights_free(w);
    tu_weights_free(&tw);
    qmm_context_free(ctx);
}

static void test_cache_params(void **state) {
    (void)state;
    qmm_context_params d = qmm_context_default_params();
    assert_int_equal(d.cache, QMM_CACHE_DEFAULT);
    assert_true(d.cache_limit == 0.0);
    struct {
        int cache;
        double limit;
        qmm_status want;
        const char *says;
    } cases[] = {
        {QMM_CACHE_DEFAULT, 0.0, QMM_OK, NULL},
        {QMM_CACHE_NONE, 0.0, QMM_OK, NULL},
        {QMM_CACHE_UNLIMITED, 0.0, QMM_OK, NULL},
        {QMM_CACHE_LIMIT, 0.0, QMM_OK, NULL},
        {QMM_CACHE_LIMIT, 2.5, QMM_OK, NULL},
        {4, 0.0, QMM_ERR_INVALID_ARGUMENT, "cache policy 4"},
        {-1, 0.0, QMM_ERR_INVALID_ARGUMENT, "cache policy -1"},
        {QMM_CACHE_LIMIT, -1.0, QMM_ERR_INVALID_ARGUMENT, "cache_limit (-1)"},
        {QMM_CACHE_LIMIT, NAN, QMM_ERR_INVALID_ARGUMENT, "cache_limit"},
        {QMM_CACHE_LIMIT, INFINITY, QMM_ERR_INVALID_ARGUMENT, "cache_limit (inf)"},
        {QMM_CACHE_DEFAULT, 2.0, QMM_ERR_INVALID_ARGUMENT, "only meaningful with QMM_CACHE_LIMIT"},
        {QMM_CACHE_UNLIMITED, 1.0, QMM_ERR_INVALID_ARGUMENT, "only meaningful with QMM_CACHE_LIMIT"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qmm_context_params p = qmm_context_default_params();
        p.n_threads = 1;
        p.cache = (qmm_cache_policy)cases[i].cache;
        p.cache_limit = cases[i].limit;
        qmm_context *ctx = NULL;
        const qmm_status st = qmm_context_create(&p, &ctx);
        if (st != cases[i].want)
            fail_msg("case %zu (cache %d, limit %g): %s (%s), want %s", i, cases[i].cache, cases[i].limit,
                     qmm_status_str(st), qmm_last_error(), qmm_status_str(cases[i].want));
        if (st == QMM_OK) {
            const qmm_context_params got = qmm_context_get_params(ctx);
            assert_int_equal(got.cache, cases[i].cache);
            assert_true(got.cache_limit == cases[i].limit);
            qmm_context_free(ctx);
        } else {
            assert_null(ctx);
            if (strstr(qmm_last_error(), cases[i].says) == NULL)
                fail_msg("case %zu: error '%s' does not say '%s'", i, qmm_last_error(), cases[i].says);
        }
    }
}

static void test_graph_api_cpu(void **state) {
    (void)state;
    qmm_context *ctx = cpu_context();
    double ms = -1.0;
    assert_int_equal(qmm_graph_begin(ctx), QMM_ERR_UNSUPPORTED);
    assert_non_null(strstr(qmm_last_error(), "qmm_timer_begin"));
    assert_int_equal(qmm_graph_end(ctx), QMM_ERR_UNSUPPORTED);
    assert_int_equal(qmm_graph_replay(ctx, 1, &ms), QMM_ERR_UNSUPPORTED);
    assert_true(ms == -1.0);
    assert_int_equal(qmm_graph_replay(ctx, 0, &ms), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_graph_replay(ctx, 1, NULL), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_graph_begin(NULL), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_graph_end(NULL), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_graph_replay(NULL, 1, &ms), QMM_ERR_INVALID_ARGUMENT);
    qmm_context_free(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_memory_per_strategy),
        cmocka_unit_test(test_memory_null),
        cmocka_unit_test(test_cache_params),
        cmocka_unit_test(test_graph_api_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
