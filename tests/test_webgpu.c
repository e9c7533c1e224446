/*
 * test_webgpu.c — what only the WebGPU backend has (docs/WEBGPU.md); the conformance suite
 * (backend webgpu of tests/test_conformance.c) holds its outputs to the reference over every
 * type, strategy, tail and fault class. Here:
 *   - the adapter is the platform's native API (Vulkan on Linux), never the GL fallback;
 *   - bad input: host pointers, x and y in one buffer, unaligned or out-of-range pointers,
 *     refused strategies, bad fused geometries — each a clear status, Y untouched;
 *   - the fused kernel gives the same bits at every valid geometry (the sum order is k's);
 *   - uploads and downloads at any alignment change no byte outside their range;
 *   - splits: weights over the storage binding limit (two buffers), X over it (windows),
 *     dispatches over maxComputeWorkgroupsPerDimension (more dispatches) — against the
 *     reference;
 *   - a caller's device and queue, and a caller's buffer imported as X;
 *   - the timer: timestamp queries, errors out of order;
 *   - threads with their own contexts at once give the bits of a solo run;
 *   - the power-of-two scaling of tiny X and W rows is exact (test_row_scaling);
 *   - shaders compiled trusted (the default) and with wgpu's runtime checks give the same
 *     bits for every type, fused and gemv, at tails (test_shader_checks).
 * Skips (77) only when no Vulkan adapter exists (lavapipe: apt-get install mesa-vulkan-drivers).
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "qmm.h"
#include "qmm_webgpu.h"
#include "test_util.h"

#ifdef QMM_WITH_WEBGPU
#include "webgpu/webgpu_internal.h"
#endif

#define CHECK_OK(call)                                                                        \
    do {                                                                                      \
        qmm_status st_ = (call);                                                              \
        if (st_ != QMM_OK) fail_msg("%s: %s: %s", #call, qmm_status_str(st_), qmm_last_error()); \
    } while (0)

#define CHECK_ERR(call, want, needle)                                                         \
    do {                                                                                      \
        qmm_status st_ = (call);                                                              \
        if (st_ != (want) || strstr(qmm_last_error(), (needle)) == NULL)                      \
            fail_msg("%s: got %s (%s), want %s with \"%s\"", #call, qmm_status_str(st_),       \
                     qmm_last_error(), qmm_status_str(want), needle);                         \
    } while (0)

static qmm_context *g_ctx;

static qmm_context *make_ctx(unsigned flags) {
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_WEBGPU;
    p.flags = flags;
    qmm_context *c = NULL;
    CHECK_OK(qmm_context_create(&p, &c));
    return c;
}

/* Weights of `type`, m x k, from uniform [-1, 1) (or random valid blocks). */
static void *make_rows(qmm_type type, int64_t m, int64_t k, tu_rng *r, size_t *row_bytes) {
    CHECK_OK(qmm_row_bytes(type, k, row_bytes));
    void *q = malloc(*row_bytes * (size_t)m);
    float *f = malloc(sizeof(float) * (size_t)(m * k));
    assert_true(q && f);
    tu_fill_uniform(r, f, (size_t)(m * k), -1.0f, 1.0f);
    if (qmm_type_has_quantizer(type)) CHECK_OK(qmm_quantize_rows(type, f, q, m, k));
    else CHECK_OK(qmm_random_rows(type, tu_rng_u64(r), 1.0, q, m, k));
    free(f);
    return q;
}

/* Runs the matmul on ctx with host x (n x k) and returns Y (n x m, malloc'ed). */
static float *run(qmm_context *ctx, const qmm_weights *w, int64_t m, int64_t k, int64_t n, const float *x) {
    void *dx, *dy;
    const size_t xb = sizeof(float) * (size_t)(n * k), yb = sizeof(float) * (size_t)(n * m);
    CHECK_OK(qmm_buffer_alloc(ctx, xb, &dx));
    CHECK_OK(qmm_buffer_alloc(ctx, yb, &dy));
    CHECK_OK(qmm_buffer_upload(ctx, dx, x, xb));
    CHECK_OK(qmm_matmul(ctx, w, n, dx, k, dy, m));
    float *y = malloc(yb);
    assert_non_null(y);
    CHECK_OK(qmm_buffer_download(ctx, y, dy, yb));
    qmm_buffer_free(ctx, dx);
    qmm_buffer_free(ctx, dy);
    return y;
}

/* Y within the F32 class of the reference. */
static void check_ref(qmm_type type, int64_t m, int64_t k, int64_t n, const void *q, size_t rb,
                      const float *x, const float *y, const char *what) {
    float *ref = malloc(sizeof(float) * (size_t)(n * m));
    assert_non_null(ref);
    CHECK_OK(qmm_matmul_ref(type, m, k, q, rb, n, x, k, ref, m));
    qmm_diff d;
    CHECK_OK(qmm_compare(n, m, y, m, ref, m, &d));
    double nmse, rel;
    qmm_precision_limits(QMM_PRECISION_F32, &nmse, &rel);
    if (!qmm_diff_ok(&d, nmse, rel))
        fail_msg("%s: %s m=%lld k=%lld n=%lld: nmse %.3g max_rel %.3g nonfinite %lld (worst row "
                 "%lld col %lld)", what, qmm_type_name(type), (long long)m, (long long)k,
                 (long long)n, d.nmse, d.max_rel_err, (long long)d.n_nonfinite,
                 (long long)d.worst_row, (long long)d.worst_col);
    free(ref);
}

/* ---------------------------------------------------------------------------------------
 * Power-of-two row scaling (wgsl/common.wgsl): X rows, or f32/bf16/mxfp4 W rows, whose
 * largest |value| is below 2^-40 are computed scaled and the outputs scaled back, so a
 * device that flushes subnormals still gets them right. Exact: Y of (X 2^-s) must be
 * ldexpf(Y of X, -s) bit for bit (correctly rounded, subnormal outputs included), where X
 * holds values of few bits (exact after the shift) and its largest |x| is 1.875. On a device
 * that keeps subnormals (lavapipe) an unscaled computation fails this at s = 140 (products
 * in the subnormal range round in absolute terms).
 * ------------------------------------------------------------------------------------- */

/* Few-bit values i / 8, |i| <= 15, the first element of each row 1.875. */
static void fill_eighths(tu_rng *r, float *v, int64_t rows, int64_t k) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t e = 0; e < k; e++)
            v[i * k + e] = e == 0 ? 1.875f : (float)((int)(tu_rng_u64(r) % 31) - 15) / 8.0f;
}

static void expect_scaled(const float *y, const float *y_big, int64_t count, int s, const char *what) {
    for (int64_t i = 0; i < count; i++) {
        const float want = ldexpf(y_big[i], -s);
        if (memcmp(&y[i], &want, sizeof want) != 0)
            fail_msg("%s: output %lld is %a, want %a (= %a * 2^-%d)", what, (long long)i, (double)y[i],
                     (double)want, (double)y_big[i], s);
    }
}

static void test_row_scaling(void **state) {
    (void)state;
    const int64_t m = 9, k = 256, n = 5;
    const qmm_strategy strategies[] = {QMM_STRATEGY_GEMV, QMM_STRATEGY_FUSED};
    tu_rng r = tu_rng_make(0x5CA1E);
    float *xb = malloc(sizeof(float) * (size_t)(n * k)), *xt = malloc(sizeof(float) * (size_t)(n * k));
    float *wf = malloc(sizeof(float) * (size_t)(m * k));
    assert_true(xb && xt && wf);
    fill_eighths(&r, xb, n, k);
    /* X rows scaled down (s = 140: many x subnormal, outputs subnormal) */
    const qmm_type xtypes[] = {QMM_TYPE_Q4_0, QMM_TYPE_Q6_K, QMM_TYPE_F16, QMM_TYPE_F32};
    for (size_t ti = 0; ti < sizeof xtypes / sizeof xtypes[0]; ti++) {
        size_t rb;
        void *q = make_rows(xtypes[ti], m, k, &r, &rb);
        for (size_t si = 0; si < 2; si++) {
            CHECK_OK(qmm_context_set_strategy(g_ctx, strategies[si]));
            qmm_weights *w;
            CHECK_OK(qmm_weights_create(g_ctx, xtypes[ti], m, k, q, rb, &w));
            float *yb = run(g_ctx, w, m, k, n, xb);
            const int shifts[] = {50, 100, 140};
            for (size_t j = 0; j < 3; j++) {
                for (int64_t i = 0; i < n * k; i++) {
                    xt[i] = ldexpf(xb[i], -shifts[j]);
                    assert_true(ldexpf(xt[i], shifts[j]) == xb[i]); /* the test's X is exact */
                }
                float *yt = run(g_ctx, w, m, k, n, xt);
                char what[96];
                snprintf(what, sizeof what, "%s %s, X times 2^-%d", qmm_type_name(xtypes[ti]),
                         qmm_strategy_name(strategies[si]), shifts[j]);
                expect_scaled(yt, yb, n * m, shifts[j], what);
                free(yt);
            }
            free(yb);
            qmm_weights_free(w);
        }
        free(q);
    }
    /* W rows scaled down: f32 and bf16 elements, mxfp4 E8M0 scales */
    const qmm_type wtypes[] = {QMM_TYPE_F32, QMM_TYPE_BF16, QMM_TYPE_MXFP4};
    for (size_t ti = 0; ti < sizeof wtypes / sizeof wtypes[0]; ti++) {
        const qmm_type t = wtypes[ti];
        size_t rb;
        CHECK_OK(qmm_row_bytes(t, k, &rb));
        uint8_t *big = malloc(rb * (size_t)m), *tiny = malloc(rb * (size_t)m);
        assert_true(big && tiny);
        const int shifts[] = {60, 124};
        for (size_t j = 0; j < 2; j++) {
            const int sw = shifts[j];
            fill_eighths(&r, wf, m, k);
            if (t == QMM_TYPE_F32) {
                memcpy(big, wf, rb * (size_t)m);
                float *v = (float *)(void *)tiny;
                for (int64_t i = 0; i < m * k; i++) v[i] = ldexpf(wf[i], -sw);
            } else if (t == QMM_TYPE_BF16) {
                CHECK_OK(qmm_quantize_rows(t, wf, big, m, k));
                for (int64_t i = 0; i < m * k; i++) wf[i] = ldexpf(wf[i], -sw);
                CHECK_OK(qmm_quantize_rows(t, wf, tiny, m, k));
            } else { /* mxfp4: random codes, every E8M0 byte 125 (values up to 1.5), then 125 - sw */
                CHECK_OK(qmm_random_rows(t, tu_rng_u64(&r), 1.0, big, m, k));
                for (int64_t i = 0; i < m * (k / 32); i++) big[(size_t)i * 17] = 125;
                memcpy(tiny, big, rb * (size_t)m);
                for (int64_t i = 0; i < m * (k / 32); i++) tiny[(size_t)i * 17] = (uint8_t)(125 - sw);
            }
            for (size_t si = 0; si < 2; si++) {
                CHECK_OK(qmm_context_set_strategy(g_ctx, strategies[si]));
                qmm_weights *wb, *wt;
                CHECK_OK(qmm_weights_create(g_ctx, t, m, k, big, rb, &wb));
                CHECK_OK(qmm_weights_create(g_ctx, t, m, k, tiny, rb, &wt));
                float *yb = run(g_ctx, wb, m, k, n, xb), *yt = run(g_ctx, wt, m, k, n, xb);
                char what[96];
                snprintf(what, sizeof what, "%s %s, W times 2^-%d", qmm_type_name(t),
                         qmm_strategy_name(strategies[si]), sw);
                expect_scaled(yt, yb, n * m, sw, what);
                free(yb);
                free(yt);
                qmm_weights_free(wb);
                qmm_weights_free(wt);
            }
        }
        free(big);
        free(tiny);
    }
    CHECK_OK(qmm_context_set_strategy(g_ctx, QMM_STRATEGY_AUTO));
    free(xb);
    free(xt);
    free(wf);
}

/* ---------------------------------------------------------------------------------------
 * The adapter
 * ------------------------------------------------------------------------------------- */

static void test_adapter_is_native_api(void **state) {
    (void)state;
    qmm_webgpu_info info;
    CHECK_OK(qmm_webgpu_get_info(g_ctx, &info));
    print_message("adapter: %s (%s, %s), driver %s, wgpu-native 0x%08x; f16 %d, timestamps %d; "
                  "storage binding %llu, workgroup storage %u, invocations %u; offered: subgroups %d "
                  "(%u-%u), cooperative matrix %d\n", info.adapter,
                  info.backend_api, info.adapter_type, info.driver, info.wgpu_version,
                  info.shader_f16, info.timestamp_query,
                  (unsigned long long)info.max_storage_buffer_binding_size,
                  info.max_compute_workgroup_storage_size, info.max_compute_invocations_per_workgroup,
                  info.adapter_subgroups, info.subgroup_min_size, info.subgroup_max_size,
                  info.adapter_cooperative_matrix);
    /* the adapter's subgroup sizes, when it reports them, are powers of two, min <= max */
    if (info.subgroup_max_size != 0) {
        assert_true(info.subgroup_min_size >= 1 && info.subgroup_min_size <= info.subgroup_max_size);
        assert_int_equal(info.subgroup_max_size & (info.subgroup_max_size - 1u), 0);
    }
#if defined(__linux__)
    /* never the OpenGL fallback wgpu-native takes silently without a Vulkan driver */
    assert_string_equal(info.backend_api, "Vulkan");
#endif
    assert_true(info.adapter[0] != '\0');
    assert_false(info.caller_device);
    assert_int_equal(info.wgpu_version, 0x1d000101u);
    qmm_device_info di;
    CHECK_OK(qmm_context_device_info(g_ctx, &di));
    assert_string_equal(di.name, info.adapter);
    assert_true(qmm_backend_available(QMM_BACKEND_WEBGPU));
    assert_string_equal(qmm_backend_name(QMM_BACKEND_WEBGPU), "webgpu");
}

/* ---------------------------------------------------------------------------------------
 * Bad input
 * ------------------------------------------------------------------------------------- */

static void test_bad_input(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0xBAD);
    const int64_t m = 9, k = 64, n = 3;
    size_t rb;
    void *q = make_rows(QMM_TYPE_Q8_0, m, k, &r, &rb);
    qmm_weights *w;
    CHECK_OK(qmm_weights_create(g_ctx, QMM_TYPE_Q8_0, m, k, q, rb, &w));
    float hx[3 * 64], hy[3 * 9];
    tu_fill_uniform(&r, hx, 3 * 64, -1, 1);
    void *dx, *dy, *both;
    CHECK_OK(qmm_buffer_alloc(g_ctx, sizeof hx, &dx));
    CHECK_OK(qmm_buffer_alloc(g_ctx, sizeof hy + 8, &dy));
    CHECK_OK(qmm_buffer_alloc(g_ctx, sizeof hx + sizeof hy, &both));
    CHECK_OK(qmm_buffer_upload(g_ctx, dx, hx, sizeof hx));
    tu_poison_fill(hy, 27);
    CHECK_OK(qmm_buffer_upload(g_ctx, dy, hy, sizeof hy));
    /* host memory as x or y */
    CHECK_ERR(qmm_matmul(g_ctx, w, n, hx, k, dy, m), QMM_ERR_INVALID_ARGUMENT, "not in a buffer of this WebGPU context");
    CHECK_ERR(qmm_matmul(g_ctx, w, n, dx, k, hy, m), QMM_ERR_INVALID_ARGUMENT, "not in a buffer of this WebGPU context");
    /* x and y in one buffer (no overlap) */
    CHECK_ERR(qmm_matmul(g_ctx, w, n, both, k, (float *)both + n * k, m), QMM_ERR_INVALID_ARGUMENT,
              "same WebGPU buffer");
    /* a range past the end of the buffer; an unaligned pointer */
    CHECK_ERR(qmm_matmul(g_ctx, w, n, (float *)dx + 1, k, dy, m), QMM_ERR_INVALID_ARGUMENT, "run past the end");
    CHECK_ERR(qmm_matmul(g_ctx, w, n, dx, k, (float *)((char *)dy + 2), m), QMM_ERR_INVALID_ARGUMENT,
              "not 4-byte aligned");
    /* pointers of another context */
    qmm_context *other = make_ctx(0);
    void *ox;
    CHECK_OK(qmm_buffer_alloc(other, sizeof hx, &ox));
    CHECK_ERR(qmm_matmul(g_ctx, w, n, ox, k, dy, m), QMM_ERR_INVALID_ARGUMENT, "not in a buffer of this WebGPU context");
    CHECK_ERR(qmm_buffer_upload(g_ctx, ox, hx, 4), QMM_ERR_INVALID_ARGUMENT, "not in a buffer");
    qmm_buffer_free(other, ox);
    qmm_context_free(other);
    /* uploads and downloads beyond a buffer */
    CHECK_ERR(qmm_buffer_upload(g_ctx, dx, hx, sizeof hx + 4), QMM_ERR_INVALID_ARGUMENT, "run past the end");
    CHECK_ERR(qmm_buffer_download(g_ctx, hx, (char *)dx + 8, sizeof hx), QMM_ERR_INVALID_ARGUMENT, "run past the end");
    /* strategies the backend does not have */
    static const qmm_strategy refused[] = {QMM_STRATEGY_REF, QMM_STRATEGY_INT8, QMM_STRATEGY_DEQUANT_SGEMM,
                                           QMM_STRATEGY_CACHED_F16, QMM_STRATEGY_FP8, QMM_STRATEGY_DEQUANT_HGEMM};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK_OK(qmm_context_set_strategy(g_ctx, refused[i]));
        CHECK_ERR(qmm_matmul(g_ctx, w, n, dx, k, dy, m), QMM_ERR_UNSUPPORTED, qmm_strategy_name(refused[i]));
    }
    CHECK_OK(qmm_context_set_strategy(g_ctx, QMM_STRATEGY_AUTO));
    /* nothing above wrote Y */
    float back[27];
    CHECK_OK(qmm_buffer_download(g_ctx, back, dy, sizeof back));
    assert_true(tu_all_poison(back, 27));
    /* webgpu params on another backend; a device without its queue */
    qmm_context_params p = qmm_context_default_params();
    p.webgpu_device = (void *)&p;
    qmm_context *bad = NULL;
    CHECK_ERR(qmm_context_create(&p, &bad), QMM_ERR_INVALID_ARGUMENT, "webgpu_device");
    p.backend = QMM_BACKEND_WEBGPU;
    CHECK_ERR(qmm_context_create(&p, &bad), QMM_ERR_INVALID_ARGUMENT, "webgpu_queue is NULL");
    assert_null(bad);
    /* the functions of qmm_webgpu.h on a CPU context */
    qmm_context *cpu;
    CHECK_OK(qmm_context_create(NULL, &cpu));
    qmm_webgpu_info info;
    CHECK_ERR(qmm_webgpu_get_info(cpu, &info), QMM_ERR_INVALID_ARGUMENT, "not webgpu");
    CHECK_ERR(qmm_webgpu_set_fused_geometry(cpu, 16, 16, 32), QMM_ERR_INVALID_ARGUMENT, "not webgpu");
    qmm_context_free(cpu);
    /* timer out of order */
    double ms;
    CHECK_ERR(qmm_timer_end(g_ctx, &ms), QMM_ERR_INVALID_ARGUMENT, "no qmm_timer_begin");
    free(q);
    qmm_weights_free(w);
    qmm_buffer_free(g_ctx, dx);
    qmm_buffer_free(g_ctx, dy);
    qmm_buffer_free(g_ctx, both);
}

/* ---------------------------------------------------------------------------------------
 * Fused geometry
 * ------------------------------------------------------------------------------------- */

static void test_fused_geometry(void **state) {
    (void)state;
    qmm_webgpu_info info;
    CHECK_OK(qmm_webgpu_get_info(g_ctx, &info));
    int a, b, c;
    CHECK_OK(qmm_webgpu_get_fused_geometry(g_ctx, &a, &b, &c));
    assert_int_equal(a, 16);
    assert_int_equal(b, 16);
    assert_int_equal(c, 32);
    CHECK_ERR(qmm_webgpu_set_fused_geometry(g_ctx, 3, 16, 32), QMM_ERR_INVALID_ARGUMENT, "WG_M = 3");
    CHECK_ERR(qmm_webgpu_set_fused_geometry(g_ctx, 16, 64, 32), QMM_ERR_INVALID_ARGUMENT, "WG_N = 64");
    CHECK_ERR(qmm_webgpu_set_fused_geometry(g_ctx, 16, 16, 12), QMM_ERR_INVALID_ARGUMENT, "TILE_K = 12");
    /* 32 x 32 x 64: 64 KiB of workgroup memory, beyond every adapter seen (lavapipe 32, H200 48) */
    if (info.max_compute_workgroup_storage_size < 65536)
        CHECK_ERR(qmm_webgpu_set_fused_geometry(g_ctx, 32, 32, 64), QMM_ERR_INVALID_ARGUMENT,
                  "bytes of workgroup memory");
    CHECK_OK(qmm_webgpu_get_fused_geometry(g_ctx, &a, &b, &c)); /* a refusal changes nothing */
    assert_int_equal(a * 10000 + b * 100 + c, 161632);

    /* the same bits at every accepted geometry: each output sums over k in order */
    tu_rng r = tu_rng_make(0x6E0);
    const int64_t m = 70, k = 96, n = 37;
    size_t rb;
    void *q = make_rows(QMM_TYPE_Q8_0, m, k, &r, &rb);
    float *x = malloc(sizeof(float) * (size_t)(n * k));
    tu_fill_uniform(&r, x, (size_t)(n * k), -1, 1);
    qmm_context *ctx = make_ctx(0);
    CHECK_OK(qmm_context_set_strategy(ctx, QMM_STRATEGY_FUSED));
    qmm_weights *w;
    CHECK_OK(qmm_weights_create(ctx, QMM_TYPE_Q8_0, m, k, q, rb, &w));
    float *y0 = run(ctx, w, m, k, n, x);
    check_ref(QMM_TYPE_Q8_0, m, k, n, q, rb, x, y0, "fused, default geometry");
    static const int geoms[][3] = {{2, 2, 8}, {4, 8, 16}, {8, 4, 64}, {32, 8, 32}, {8, 32, 8}, {16, 16, 64}};
    int tried = 0;
    for (size_t g = 0; g < sizeof geoms / sizeof geoms[0]; g++) {
        if (qmm_webgpu_set_fused_geometry(ctx, geoms[g][0], geoms[g][1], geoms[g][2]) != QMM_OK) {
            print_message("geometry %d %d %d refused here: %s\n", geoms[g][0], geoms[g][1], geoms[g][2],
                          qmm_last_error());
            continue;
        }
        float *y = run(ctx, w, m, k, n, x);
        if (!tu_bits_equal(y, m, y0, m, n, m))
            fail_msg("fused at WG_M=%d WG_N=%d TILE_K=%d differs from the default geometry", geoms[g][0],
                     geoms[g][1], geoms[g][2]);
        free(y);
        tried++;
    }
    assert_true(tried >= 4);
    free(y0);
    free(x);
    free(q);
    qmm_weights_free(w);

    /* the library's per-call TILE_K (src/webgpu/auto_table.c): no rule at present, so 32 with
     * no threshold for any call under the default geometry, and the set geometry's once the
     * caller sets one, back with 0, 0, 0 */
    CHECK_OK(qmm_webgpu_set_fused_geometry(ctx, 16, 16, 16));
    int tk = 0;
    int64_t minw = -1;
    CHECK_OK(qmm_webgpu_fused_tile_k(ctx, 4608, 512, &tk, &minw));
    assert_int_equal(tk * 1000 + (int)minw, 16000);
    CHECK_OK(qmm_webgpu_set_fused_geometry(ctx, 0, 0, 0));
    static const int64_t calls[][2] = {{4608, 512}, {1024, 512}, {64 * 24 - 5, 64 * 16}, {4608, 2048}, {1, 1}};
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        minw = -1;
        CHECK_OK(qmm_webgpu_fused_tile_k(ctx, calls[i][0], calls[i][1], &tk, &minw));
        assert_int_equal(tk * 1000 + (int)minw, 32000);
    }
    qmm_context_free(ctx);
}

/* ---------------------------------------------------------------------------------------
 * Shader checks (docs/WEBGPU.md "Shader checks"): qmm compiles its WGSL trusted, without
 * wgpu's index clamps and loop-bounding counters, unless webgpu_shader_checks is set. The
 * kernels' indices are in range by construction; were one not, the clamped (checked) read
 * and the unchecked one would differ. So: the same bits both ways, for every weight type,
 * fused and gemv, at tails of m, n and the gemv token groups, with one tiny X row (the
 * scaled path, common.wgsl) — and both within the F32 class of the reference.
 * ------------------------------------------------------------------------------------- */

static void test_shader_checks(void **state) {
    (void)state;
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_WEBGPU;
    qmm_context *plain = NULL, *checked = NULL;
    CHECK_OK(qmm_context_create(&p, &plain));
    p.webgpu_shader_checks = true;
    CHECK_OK(qmm_context_create(&p, &checked));
    qmm_webgpu_info ia, ib;
    CHECK_OK(qmm_webgpu_get_info(plain, &ia));
    CHECK_OK(qmm_webgpu_get_info(checked, &ib));
    assert_false(ia.shader_checks);
    assert_true(ib.shader_checks);
    tu_rng r = tu_rng_make(0x5C7);
    const int64_t m = 70;
    static const struct { qmm_strategy s; int64_t n; } runs[] = {{QMM_STRATEGY_FUSED, 37}, {QMM_STRATEGY_GEMV, 6}};
    int types = 0;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        if (!qmm_type_is_supported(t) || !qmm_type_is_weight((qmm_type)t)) continue;
        /* block size 1 (the float types): a k tail, so that the last X row ends 5 elements
         * into its last 8-element piece at the end of its buffer (the words past it, which
         * x_bits8 leaves unread, lie past the buffer) */
        const int64_t k = qmm_type_block_size((qmm_type)t) == 1 ? 509 : 512;
        size_t rb;
        void *q = make_rows((qmm_type)t, m, k, &r, &rb);
        qmm_weights *wa = NULL, *wb = NULL;
        CHECK_OK(qmm_weights_create(plain, (qmm_type)t, m, k, q, rb, &wa));
        CHECK_OK(qmm_weights_create(checked, (qmm_type)t, m, k, q, rb, &wb));
        for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
            const int64_t n = runs[i].n;
            float *x = malloc(sizeof(float) * (size_t)(n * k));
            assert_non_null(x);
            tu_fill_uniform(&r, x, (size_t)(n * k), -1, 1);
            for (int64_t e = 0; e < k; e++) x[2 * k + e] = ldexpf(x[2 * k + e], -60); /* tiny row */
            CHECK_OK(qmm_context_set_strategy(plain, runs[i].s));
            CHECK_OK(qmm_context_set_strategy(checked, runs[i].s));
            float *ya = run(plain, wa, m, k, n, x), *yb = run(checked, wb, m, k, n, x);
            if (!tu_bits_equal(ya, m, yb, m, n, m))
                fail_msg("%s %s n=%lld: trusted and checked shaders differ", qmm_type_name((qmm_type)t),
                         qmm_strategy_name(runs[i].s), (long long)n);
            check_ref((qmm_type)t, m, k, n, q, rb, x, ya, qmm_strategy_name(runs[i].s));
            free(ya);
            free(yb);
            free(x);
        }
        qmm_weights_free(wa);
        qmm_weights_free(wb);
        free(q);
        types++;
    }
    assert_true(types >= 20);
    qmm_context_free(plain);
    qmm_context_free(checked);
    p.backend = QMM_BACKEND_CPU; /* the flag belongs to WebGPU contexts */
    qmm_context *bad = NULL;
    CHECK_ERR(qmm_context_create(&p, &bad), QMM_ERR_INVALID_ARGUMENT, "webgpu_shader_checks");
    assert_null(bad);
}

/* ---------------------------------------------------------------------------------------
 * Buffers
 * ------------------------------------------------------------------------------------- */

static void test_unaligned_transfers(void **state) {
    (void)state;
    unsigned char *img = malloc(64), pat[64], back[64];
    for (int i = 0; i < 64; i++) img[i] = (unsigned char)(0xC0 + i);
    void *b;
    CHECK_OK(qmm_buffer_alloc(g_ctx, 61, &b)); /* not a whole number of words */
    CHECK_OK(qmm_buffer_upload(g_ctx, b, img, 61));
    static const int cases[][2] = {{3, 1}, {1, 2}, {5, 7}, {2, 13}, {0, 61}, {7, 50}, {60, 1}, {4, 4}, {57, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int off = cases[c][0], len = cases[c][1];
        for (int i = 0; i < len; i++) pat[i] = (unsigned char)(17 * c + i);
        CHECK_OK(qmm_buffer_upload(g_ctx, (char *)b + off, pat, (size_t)len));
        memcpy(img + off, pat, (size_t)len);
        CHECK_OK(qmm_buffer_download(g_ctx, back, b, 61));
        if (memcmp(back, img, 61) != 0) fail_msg("upload of %d bytes at %d changed other bytes", len, off);
        memset(back, 0, sizeof back);
        CHECK_OK(qmm_buffer_download(g_ctx, back, (char *)b + off, (size_t)len));
        if (memcmp(back, pat, (size_t)len) != 0) fail_msg("download of %d bytes at %d is wrong", len, off);
    }
    CHECK_ERR(qmm_buffer_upload(g_ctx, (char *)b + 60, pat, 2), QMM_ERR_INVALID_ARGUMENT, "run past the end");
    qmm_buffer_free(g_ctx, b);
    free(img);
}

/* ---------------------------------------------------------------------------------------
 * Splits at the device's limits
 * ------------------------------------------------------------------------------------- */

static void test_splits(void **state) {
    (void)state;
    qmm_webgpu_info info;
    CHECK_OK(qmm_webgpu_get_info(g_ctx, &info));
    const uint64_t bind = info.max_storage_buffer_binding_size;
    if (bind > ((uint64_t)256 << 20)) {
        print_message("[  SKIPPED ] splits: the binding limit (%llu bytes) makes the cases too large "
                      "for this test\n", (unsigned long long)bind);
        return;
    }
    tu_rng r = tu_rng_make(0x5B1);
    /* 1. f32 weights over one binding: two buffers; gemv and fused at n = 2 */
    {
        const int64_t k = 1024, m = (int64_t)(bind / (k * 4)) + 77;
        size_t rb;
        void *q = make_rows(QMM_TYPE_F32, m, k, &r, &rb);
        float x[2 * 1024];
        tu_fill_uniform(&r, x, 2 * 1024, -1, 1);
        qmm_weights *w;
        CHECK_OK(qmm_weights_create(g_ctx, QMM_TYPE_F32, m, k, q, rb, &w));
#ifdef QMM_WITH_WEBGPU
        assert_int_equal(((const qmm_wgpu_weights *)w->backend)->nchunks, 2);
#endif
        for (int s = 0; s < 2; s++) {
            CHECK_OK(qmm_context_set_strategy(g_ctx, s ? QMM_STRATEGY_FUSED : QMM_STRATEGY_GEMV));
            float *y = run(g_ctx, w, m, k, 2, x);
            check_ref(QMM_TYPE_F32, m, k, 2, q, rb, x, y, s ? "fused, W in two buffers" : "gemv, W in two buffers");
            free(y);
        }
        qmm_weights_free(w);
        free(q);
    }
    /* 2. X and Y over one binding, and more than 65535 x 64 tokens: fused in windows and
     *    several dispatches; gemv over 65535 x 4 tokens: several dispatches */
    {
        const int64_t k = 8, m = 3, n = (int64_t)(bind / (k * 4)) + 65536 * 64 / 16;
        size_t rb;
        void *q = make_rows(QMM_TYPE_F32, m, k, &r, &rb);
        float *x = malloc(sizeof(float) * (size_t)(n * k));
        assert_non_null(x);
        tu_fill_uniform(&r, x, (size_t)(n * k), -1, 1);
        qmm_weights *w;
        CHECK_OK(qmm_weights_create(g_ctx, QMM_TYPE_F32, m, k, q, rb, &w));
        for (int s = 0; s < 2; s++) {
            const int64_t ns = s ? n : 65535 * 4 + 9;
            CHECK_OK(qmm_context_set_strategy(g_ctx, s ? QMM_STRATEGY_FUSED : QMM_STRATEGY_GEMV));
            float *y = run(g_ctx, w, m, k, ns, x);
            check_ref(QMM_TYPE_F32, m, k, ns, q, rb, x, y, s ? "fused, X over one binding" : "gemv, n > 65535 x 4");
            free(y);
        }
        qmm_weights_free(w);
        free(q);
        free(x);
    }
    CHECK_OK(qmm_context_set_strategy(g_ctx, QMM_STRATEGY_AUTO));
}

/* ---------------------------------------------------------------------------------------
 * A caller's device and buffers
 * ------------------------------------------------------------------------------------- */

#ifdef QMM_WITH_WEBGPU
typedef struct req {
    volatile int done;
    void *h;
} req;
static void on_adapter(WGPURequestAdapterStatus s, WGPUAdapter a, WGPUStringView m, void *u1, void *u2) {
    (void)s;
    (void)m;
    (void)u2;
    ((req *)u1)->h = a;
    ((req *)u1)->done = 1;
}
static void on_device(WGPURequestDeviceStatus s, WGPUDevice d, WGPUStringView m, void *u1, void *u2) {
    (void)s;
    (void)m;
    (void)u2;
    ((req *)u1)->h = d;
    ((req *)u1)->done = 1;
}
static int g_uncaptured;
static void on_uncaptured(WGPUDevice const *d, WGPUErrorType t, WGPUStringView m, void *u1, void *u2) {
    (void)d;
    (void)t;
    (void)m;
    (void)u1;
    (void)u2;
    g_uncaptured++;
}
#endif

static void test_caller_device(void **state) {
    (void)state;
#ifdef QMM_WITH_WEBGPU
    CHECK_OK(qmm_wgpu_load());
    WGPUInstanceExtras ex;
    memset(&ex, 0, sizeof ex);
    ex.chain.sType = (WGPUSType)WGPUSType_InstanceExtras;
    ex.backends = WGPUInstanceBackend_Vulkan;
    WGPUInstanceDescriptor idesc;
    memset(&idesc, 0, sizeof idesc);
    idesc.nextInChain = &ex.chain;
    WGPUInstance inst = W.wgpuCreateInstance(&idesc);
    assert_non_null(inst);
    req ra = {0, NULL}, rd = {0, NULL};
    WGPURequestAdapterCallbackInfo aci;
    memset(&aci, 0, sizeof aci);
    aci.mode = WGPUCallbackMode_AllowSpontaneous;
    aci.callback = on_adapter;
    aci.userdata1 = &ra;
    W.wgpuInstanceRequestAdapter(inst, NULL, aci);
    while (!ra.done) W.wgpuInstanceProcessEvents(inst);
    assert_non_null(ra.h);
    WGPUDeviceDescriptor dd;
    memset(&dd, 0, sizeof dd);
    dd.uncapturedErrorCallbackInfo.callback = on_uncaptured;
    WGPURequestDeviceCallbackInfo dci;
    memset(&dci, 0, sizeof dci);
    dci.mode = WGPUCallbackMode_AllowSpontaneous;
    dci.callback = on_device;
    dci.userdata1 = &rd;
    W.wgpuAdapterRequestDevice((WGPUAdapter)ra.h, &dd, dci);
    while (!rd.done) W.wgpuInstanceProcessEvents(inst);
    assert_non_null(rd.h);
    WGPUDevice dev = rd.h;
    WGPUQueue queue = W.wgpuDeviceGetQueue(dev);

    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_WEBGPU;
    p.webgpu_device = dev;
    p.webgpu_queue = queue;
    qmm_context *ctx;
    CHECK_OK(qmm_context_create(&p, &ctx));
    qmm_webgpu_info info;
    CHECK_OK(qmm_webgpu_get_info(ctx, &info));
    assert_true(info.caller_device);
    assert_false(info.timestamp_query); /* not requested by this device's maker */
    /* no adapter behind a caller's device: nothing is claimed of it */
    assert_false(info.adapter_subgroups);
    assert_false(info.adapter_cooperative_matrix);
    assert_int_equal(info.subgroup_max_size, 0);
    double ms;
    CHECK_ERR(qmm_timer_begin(ctx), QMM_ERR_UNSUPPORTED, "timestamp-query");

    /* X in a buffer the caller made, imported; Y from qmm */
    tu_rng r = tu_rng_make(0xCA11);
    const int64_t m = 21, k = 256, n = 5;
    size_t rb;
    void *q = make_rows(QMM_TYPE_Q4_K, m, k, &r, &rb);
    float x[5 * 256];
    tu_fill_uniform(&r, x, 5 * 256, -1, 1);
    WGPUBufferDescriptor bd;
    memset(&bd, 0, sizeof bd);
    bd.size = sizeof x + 64;
    bd.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    WGPUBuffer xb = W.wgpuDeviceCreateBuffer(dev, &bd);
    W.wgpuQueueWriteBuffer(queue, xb, 64, x, sizeof x);
    void *dx, *dy;
    CHECK_OK(qmm_webgpu_buffer_import(ctx, xb, sizeof x + 64, &dx));
    CHECK_OK(qmm_buffer_alloc(ctx, sizeof(float) * (size_t)(n * m), &dy));
    void *h;
    uint64_t off;
    CHECK_OK(qmm_webgpu_buffer_handle(ctx, (char *)dx + 64, &h, &off));
    assert_ptr_equal(h, xb);
    assert_int_equal(off, 64);
    /* a buffer without Storage usage is refused */
    bd.usage = WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;
    WGPUBuffer nb = W.wgpuDeviceCreateBuffer(dev, &bd);
    void *dn;
    CHECK_ERR(qmm_webgpu_buffer_import(ctx, nb, 16, &dn), QMM_ERR_INVALID_ARGUMENT, "lacks Storage");
    CHECK_ERR(qmm_webgpu_buffer_import(ctx, xb, sizeof x + 65, &dn), QMM_ERR_INVALID_ARGUMENT, "> the buffer's size");
    qmm_weights *w;
    CHECK_OK(qmm_weights_create(ctx, QMM_TYPE_Q4_K, m, k, q, rb, &w));
    for (int s = 0; s < 2; s++) {
        CHECK_OK(qmm_context_set_strategy(ctx, s ? QMM_STRATEGY_FUSED : QMM_STRATEGY_GEMV));
        CHECK_OK(qmm_matmul(ctx, w, n, (const float *)((char *)dx + 64), k, dy, m));
        float y[5 * 21];
        CHECK_OK(qmm_buffer_download(ctx, y, dy, sizeof y));
        check_ref(QMM_TYPE_Q4_K, m, k, n, q, rb, x, y, "caller's device");
    }
    qmm_weights_free(w);
    qmm_buffer_free(ctx, dx); /* releases qmm's reference; the caller's buffer lives on */
    qmm_buffer_free(ctx, dy);
    qmm_context_free(ctx);
    assert_int_equal(W.wgpuBufferGetSize(xb), sizeof x + 64);
    assert_int_equal(g_uncaptured, 0);
    W.wgpuBufferRelease(nb);
    W.wgpuBufferDestroy(xb);
    W.wgpuBufferRelease(xb);
    W.wgpuQueueRelease(queue);
    W.wgpuDeviceRelease(dev);
    W.wgpuAdapterRelease((WGPUAdapter)ra.h);
    W.wgpuInstanceRelease(inst);
    free(q);
    (void)ms;
#else
    skip();
#endif
}

/* ---------------------------------------------------------------------------------------
 * Timer
 * ------------------------------------------------------------------------------------- */

static void test_timer(void **state) {
    (void)state;
    qmm_webgpu_info info;
    CHECK_OK(qmm_webgpu_get_info(g_ctx, &info));
    if (!info.timestamp_query) {
        print_message("[  SKIPPED ] timer: no timestamp-query on this adapter\n");
        return;
    }
    double ms = -1;
    CHECK_OK(qmm_timer_begin(g_ctx));
    CHECK_OK(qmm_timer_end(g_ctx, &ms));
    assert_true(ms == 0.0); /* no pass in the region */
    tu_rng r = tu_rng_make(0x7173);
    const int64_t m = 256, k = 512, n = 64;
    size_t rb;
    void *q = make_rows(QMM_TYPE_Q4_0, m, k, &r, &rb);
    qmm_weights *w;
    CHECK_OK(qmm_weights_create(g_ctx, QMM_TYPE_Q4_0, m, k, q, rb, &w));
    void *dx, *dy;
    CHECK_OK(qmm_buffer_alloc(g_ctx, sizeof(float) * (size_t)(n * k), &dx));
    CHECK_OK(qmm_buffer_alloc(g_ctx, sizeof(float) * (size_t)(n * m), &dy));
    CHECK_OK(qmm_context_set_strategy(g_ctx, QMM_STRATEGY_FUSED));
    CHECK_OK(qmm_matmul(g_ctx, w, n, dx, k, dy, m)); /* compiles the pipeline */
    CHECK_OK(qmm_context_synchronize(g_ctx));
    double one = 0, three = 0;
    CHECK_OK(qmm_timer_begin(g_ctx));
    CHECK_OK(qmm_matmul(g_ctx, w, n, dx, k, dy, m));
    CHECK_OK(qmm_timer_end(g_ctx, &one));
    CHECK_OK(qmm_timer_begin(g_ctx));
    for (int i = 0; i < 3; i++) CHECK_OK(qmm_matmul(g_ctx, w, n, dx, k, dy, m));
#ifdef QMM_WITH_WEBGPU
    /* one timed compute pass per call (times alone are too noisy on a shared CPU to compare) */
    assert_int_equal(qmm_wgpu_ctx(g_ctx)->timed_passes, 3);
#endif
    CHECK_OK(qmm_timer_end(g_ctx, &three));
    print_message("timer: one fused call %.3f ms, three %.3f ms\n", one, three);
    assert_true(one > 0.0 && three > 0.0 && one < 60000.0 && three < 60000.0);
    /* more passes than a region holds: an error at qmm_timer_end, and the next region works */
    CHECK_OK(qmm_timer_begin(g_ctx));
#ifdef QMM_WITH_WEBGPU
    qmm_wgpu_ctx(g_ctx)->timed_passes = QMM_WGPU_TIMED_PASSES; /* as if full */
    CHECK_OK(qmm_matmul(g_ctx, w, n, dx, k, dy, m));
    CHECK_ERR(qmm_timer_end(g_ctx, &three), QMM_ERR_UNSUPPORTED, "more than 512 compute passes");
#else
    CHECK_OK(qmm_timer_end(g_ctx, &three));
#endif
    CHECK_OK(qmm_timer_begin(g_ctx));
    CHECK_OK(qmm_matmul(g_ctx, w, n, dx, k, dy, m));
    CHECK_OK(qmm_timer_end(g_ctx, &one));
    assert_true(one > 0.0);
    CHECK_OK(qmm_context_set_strategy(g_ctx, QMM_STRATEGY_AUTO));
    qmm_weights_free(w);
    qmm_buffer_free(g_ctx, dx);
    qmm_buffer_free(g_ctx, dy);
    free(q);
}

/* ---------------------------------------------------------------------------------------
 * Threads: one context each, at the same time
 * ------------------------------------------------------------------------------------- */

typedef struct thread_job {
    qmm_type type;
    int64_t m, k, n;
    const void *q;
    size_t rb;
    const float *x, *expect; /* expect: the solo run, gemv then fused (2 x n x m) */
    int mismatches;
    char error[256];
} thread_job;

static void *thread_run(void *arg) {
    thread_job *j = arg;
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_WEBGPU;
    qmm_context *ctx = NULL;
    qmm_weights *w = NULL;
    void *dx = NULL, *dy = NULL;
    const size_t yb = sizeof(float) * (size_t)(j->n * j->m);
    float *y = malloc(yb);
    qmm_status st = y ? qmm_context_create(&p, &ctx) : QMM_ERR_OUT_OF_MEMORY;
    if (st == QMM_OK) st = qmm_weights_create(ctx, j->type, j->m, j->k, j->q, j->rb, &w);
    if (st == QMM_OK) st = qmm_buffer_alloc(ctx, sizeof(float) * (size_t)(j->n * j->k), &dx);
    if (st == QMM_OK) st = qmm_buffer_alloc(ctx, yb, &dy);
    if (st == QMM_OK) st = qmm_buffer_upload(ctx, dx, j->x, sizeof(float) * (size_t)(j->n * j->k));
    for (int it = 0; it < 6 && st == QMM_OK; it++) {
        const int s = it & 1;
        st = qmm_context_set_strategy(ctx, s ? QMM_STRATEGY_FUSED : QMM_STRATEGY_GEMV);
        if (st == QMM_OK) st = qmm_matmul(ctx, w, j->n, dx, j->k, dy, j->m);
        if (st == QMM_OK) st = qmm_buffer_download(ctx, y, dy, yb);
        if (st == QMM_OK && memcmp(y, j->expect + (size_t)s * (size_t)(j->n * j->m), yb) != 0) j->mismatches++;
    }
    if (st != QMM_OK) snprintf(j->error, sizeof j->error, "%s: %s", qmm_status_str(st), qmm_last_error());
    qmm_buffer_free(ctx, dx);
    qmm_buffer_free(ctx, dy);
    qmm_weights_free(w);
    qmm_context_free(ctx);
    free(y);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0x7EAD);
    const int64_t m = 90, k = 512, n = 11;
    thread_job jobs[2];
    void *qs[2];
    float *xs[2], *expect[2];
    for (int t = 0; t < 2; t++) {
        const qmm_type type = t ? QMM_TYPE_IQ2_XS : QMM_TYPE_Q5_K;
        size_t rb;
        qs[t] = make_rows(type, m, k, &r, &rb);
        xs[t] = malloc(sizeof(float) * (size_t)(n * k));
        tu_fill_uniform(&r, xs[t], (size_t)(n * k), -1, 1);
        qmm_weights *w;
        CHECK_OK(qmm_weights_create(g_ctx, type, m, k, qs[t], rb, &w));
        expect[t] = malloc(2 * sizeof(float) * (size_t)(n * m));
        for (int s = 0; s < 2; s++) {
            CHECK_OK(qmm_context_set_strategy(g_ctx, s ? QMM_STRATEGY_FUSED : QMM_STRATEGY_GEMV));
            float *y = run(g_ctx, w, m, k, n, xs[t]);
            memcpy(expect[t] + (size_t)s * (size_t)(n * m), y, sizeof(float) * (size_t)(n * m));
            free(y);
        }
        qmm_weights_free(w);
        jobs[t] = (thread_job){type, m, k, n, qs[t], rb, xs[t], expect[t], 0, ""};
    }
    CHECK_OK(qmm_context_set_strategy(g_ctx, QMM_STRATEGY_AUTO));
    pthread_t th[2];
    for (int t = 0; t < 2; t++) assert_int_equal(pthread_create(&th[t], NULL, thread_run, &jobs[t]), 0);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < 2; t++) {
        if (jobs[t].error[0]) fail_msg("thread %d: %s", t, jobs[t].error);
        assert_int_equal(jobs[t].mismatches, 0);
        free(qs[t]);
        free(xs[t]);
        free(expect[t]);
    }
}

int main(void) {
    tu_webgpu_env();
    const qmm_status st = qmm_backend_check(QMM_BACKEND_WEBGPU);
    if (st != QMM_OK) {
        /* skip only when the build has no WebGPU or the machine no adapter of the native API */
        const char *why = qmm_last_error();
        const bool skip = strstr(why, "built without") || strstr(why, "was not built") || strstr(why, "adapter found");
        printf("test_webgpu: %s: %s\n", skip ? "skipped" : "FAILED", why);
        return skip ? 77 : 1;
    }
    g_ctx = make_ctx(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adapter_is_native_api),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_fused_geometry),
        cmocka_unit_test(test_unaligned_transfers),
        cmocka_unit_test(test_splits),
        cmocka_unit_test(test_row_scaling),
        cmocka_unit_test(test_shader_checks),
        cmocka_unit_test(test_caller_device),
        cmocka_unit_test(test_timer),
        cmocka_unit_test(test_threads),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    qmm_context_free(g_ctx);
    return rc;
}
