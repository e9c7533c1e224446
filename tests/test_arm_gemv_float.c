/*
 * test_arm_gemv_float.c — the aarch64 f32-class gemv for f32, f16 and bf16 weights
 * (src/cpu/arm/gemv_float_neon.c, docs/ARM64.md):
 *   - decoding: every one of the 65536 f16 codes and of the 65536 bf16 codes (each in a row of
 *     16 elements, X rows one-hot) comes out as the type's to_float value, bit for bit (f16
 *     NaNs too: FCVTL keeps the sign and payload and sets the quiet bit, as qmm_fp16_to_fp32;
 *     bf16 signaling NaNs come out quiet, the FMA's doing, as in the reference; -0 as +0);
 *   - the order: for f32, f16, bf16 and k in {1, 15, 16, 17, 1023, 1024, 1025, 2063, 4111},
 *     n = 1..5, the kernel's bits equal a plain-C model of the documented order (panels of
 *     1024; element p by fmaf into lane p % 16 of accumulator (p / 16) % 2; at a panel's end
 *     a0 + a1 widened into 16 double lanes; the tree d[i] + d[i + 8], + 4, + 2, + 1; one
 *     rounding to float) — the order of x86's gemv_avx512;
 *   - through the API at level neon and up: gemv runs gemv_neon for these types with the
 *     kernel's bits, and X rows that end flush against a PROT_NONE page are not read past;
 *   - every quantized weight type (W rows converted by to_float into a per-thread tile): for
 *     k = one block, 1024, 1024 + one block, 4096 + one block (for 256-element blocks:
 *     256, 1024, 1280, 4352), n = 1..5, the kernel's bits (1 and 2 threads) and those of the
 *     gemv and fused strategies through the API at level neon (kernels gemv_neon, fused_neon)
 *     equal the model of the order applied to to_float's values; m = 67 spans two tasks
 *     of 64 rows (or tiles of fewer rows for long k).
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

#include "cpu/arm/arm_kernels.h"
#include "cpu/cpu_features.h"
#include "qmm.h"
#include "test_util.h"

static const qmm_type ftypes[] = {QMM_TYPE_F32, QMM_TYPE_F16, QMM_TYPE_BF16};

static void test_every_code(void **state) {
    (void)state;
    for (int ti = 1; ti < 3; ti++) {
        const qmm_type t = ftypes[ti];
        /* row c holds code c at element c % 16 and zeros elsewhere; X row j is one-hot at j:
         * y[c % 16][c] = code c times 1 plus zeros (the other outputs meet Inf * 0) */
        const int64_t m = 65536, k = 16;
        uint16_t *w = calloc((size_t)(m * k), sizeof(uint16_t));
        float *wf = malloc(sizeof(float) * (size_t)m), *x = calloc((size_t)(k * k), sizeof(float));
        float *y = malloc(sizeof(float) * (size_t)(k * m));
        assert_true(w && wf && x && y);
        for (int64_t c = 0; c < m; c++) {
            const uint16_t code = (uint16_t)c;
            w[c * k + c % 16] = code;
            assert_int_equal(qmm_dequantize_rows(t, &code, wf + c, 1, 1), QMM_OK);
        }
        for (int64_t j = 0; j < k; j++) x[j * k + j] = 1.0f;
        qmm_arm_gemv_float_neon(t, m, k, (const unsigned char *)w, (size_t)k * 2, k, x, k, y, m, 2);
        int bad = 0;
        for (int64_t c = 0; c < m; c++) {
            const float v = y[(c % 16) * m + c], want = wf[c];
            /* -0 comes out +0 (0 + -0 * 1), as in the reference; a bf16 signaling NaN comes
             * out quiet (the FMA quiets it; to_float keeps the bits) */
            const bool ok = memcmp(&v, &want, 4) == 0 || (v == 0.0f && want == 0.0f) ||
                            (t == QMM_TYPE_BF16 && isnan(v) && isnan(want));
            if (!ok && bad++ < 5)
                print_error("%s code 0x%04x: %a, to_float %a\n", qmm_type_name(t), (unsigned)c, (double)v,
                            (double)want);
        }
        print_message("test_every_code: %s, 65536 codes\n", qmm_type_name(t));
        assert_int_equal(bad, 0);
        free(w); free(wf); free(x); free(y);
    }
}

/* The documented order in plain C (w already decoded to floats). */
static float model(const float *w, const float *x, int64_t k) {
    double d[16] = {0};
    float a[2][16] = {{0}};
    for (int64_t p = 0; p < k; p++) {
        a[(p / 16) % 2][p % 16] = fmaf(w[p], x[p], a[(p / 16) % 2][p % 16]);
        if ((p + 1) % 1024 == 0 || p + 1 == k) {
            for (int l = 0; l < 16; l++) {
                d[l] += (double)(a[0][l] + a[1][l]);
                a[0][l] = a[1][l] = 0.0f;
            }
        }
    }
    double s8[8], s4[4], s2[2];
    for (int i = 0; i < 8; i++) s8[i] = d[i] + d[i + 8];
    for (int i = 0; i < 4; i++) s4[i] = s8[i] + s8[i + 4];
    for (int i = 0; i < 2; i++) s2[i] = s4[i] + s4[i + 2];
    return (float)(s2[0] + s2[1]);
}

static void test_order(void **state) {
    (void)state;
    static const int64_t ks[] = {1, 15, 16, 17, 1023, 1024, 1025, 2063, 4111};
    tu_rng r = tu_rng_make(0xf10a7);
    const int64_t m = 7, nmax = 5;
    int bad = 0, cases = 0;
    for (int ti = 0; ti < 3; ti++)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const qmm_type t = ftypes[ti];
            const int64_t k = ks[ki], ldx = k + 3;
            size_t rb;
            assert_int_equal(qmm_row_bytes(t, k, &rb), QMM_OK);
            float *src = malloc(sizeof(float) * (size_t)(m * k)), *wf = malloc(sizeof(float) * (size_t)(m * k));
            unsigned char *w = malloc(rb * (size_t)m);
            float *x = malloc(sizeof(float) * (size_t)(nmax * ldx)), *y = malloc(sizeof(float) * (size_t)(nmax * m));
            assert_true(src && wf && w && x && y);
            tu_fill_uniform(&r, src, (size_t)(m * k), -1.0f, 1.0f);
            tu_fill_uniform(&r, x, (size_t)(nmax * ldx), -1.0f, 1.0f);
            assert_int_equal(qmm_quantize_rows(t, src, w, m, k), QMM_OK);
            assert_int_equal(qmm_dequantize_rows(t, w, wf, m, k), QMM_OK);
            for (int64_t n = 1; n <= nmax; n++) {
                qmm_arm_gemv_float_neon(t, m, k, w, rb, n, x, ldx, y, m, 2);
                for (int64_t j = 0; j < n; j++)
                    for (int64_t i = 0; i < m; i++) {
                        const float want = model(wf + i * k, x + j * ldx, k), v = y[j * m + i];
                        cases++;
                        /* -0 comes out +0 (0 + -0 * 1), as in the reference; a bf16 signaling NaN comes
             * out quiet (the FMA quiets it; to_float keeps the bits) */
            const bool ok = memcmp(&v, &want, 4) == 0 || (v == 0.0f && want == 0.0f) ||
                            (t == QMM_TYPE_BF16 && isnan(v) && isnan(want));
            if (!ok && bad++ < 5)
                            print_error("%s k=%lld n=%lld y[%lld][%lld] = %a, the order's model %a\n",
                                        qmm_type_name(t), (long long)k, (long long)n, (long long)j,
                                        (long long)i, (double)v, (double)want);
                    }
            }
            free(src); free(wf); free(w); free(x); free(y);
        }
    print_message("test_order: %d outputs equal to the model\n", cases - bad);
    assert_int_equal(bad, 0);
}

/* Through the API, X rows ending flush against an unreadable page. */
static void test_api_guarded(void **state) {
    (void)state;
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_NEON)) {
        skip();
        return;
    }
    const long page = sysconf(_SC_PAGESIZE);
    tu_rng r = tu_rng_make(0xf10a8);
    setenv("QMM_CPU_ISA", "neon", 1);
    qmm_context *ctx = NULL;
    assert_int_equal(qmm_context_create(NULL, &ctx), QMM_OK);
    unsetenv("QMM_CPU_ISA");
    assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_GEMV), QMM_OK);
    for (int ti = 0; ti < 3; ti++) {
        const qmm_type t = ftypes[ti];
        const int64_t m = 9, k = 1041, n = 3;
        size_t rb;
        assert_int_equal(qmm_row_bytes(t, k, &rb), QMM_OK);
        float *src = malloc(sizeof(float) * (size_t)(m * k)), *y = malloc(sizeof(float) * (size_t)(n * m));
        float *yk = malloc(sizeof(float) * (size_t)(n * m));
        unsigned char *w = malloc(rb * (size_t)m);
        assert_true(src && y && yk && w);
        tu_fill_uniform(&r, src, (size_t)(m * k), -1.0f, 1.0f);
        assert_int_equal(qmm_quantize_rows(t, src, w, m, k), QMM_OK);
        /* X: n rows of k floats, the last one ending at a PROT_NONE page */
        const size_t xbytes = sizeof(float) * (size_t)(n * k);
        const size_t span = (xbytes + (size_t)page - 1) / (size_t)page * (size_t)page;
        unsigned char *map = mmap(NULL, span + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(map != MAP_FAILED);
        assert_int_equal(mprotect(map + span, (size_t)page, PROT_NONE), 0);
        float *x = (float *)(map + span - xbytes);
        tu_fill_uniform(&r, x, (size_t)(n * k), -1.0f, 1.0f);
        qmm_weights *wt = NULL;
        assert_int_equal(qmm_weights_create(ctx, t, m, k, w, rb, &wt), QMM_OK);
        qmm_path path;
        assert_int_equal(qmm_matmul_path(ctx, wt, n, &path), QMM_OK);
        assert_string_equal(path.kernel, "gemv_neon");
        assert_int_equal(qmm_matmul(ctx, wt, n, x, k, y, m), QMM_OK);
        qmm_arm_gemv_float_neon(t, m, k, w, rb, n, x, k, yk, m, 1);
        assert_memory_equal(y, yk, sizeof(float) * (size_t)(n * m));
        qmm_weights_free(wt);
        munmap(map, span + (size_t)page);
        free(src); free(y); free(yk); free(w);
    }
    qmm_context_free(ctx);
}

/* Every quantized weight type: the kernel and the API's gemv / fused against the model. */
static void test_quantized_order(void **state) {
    (void)state;
    const bool api = qmm_cpu_isa_supported(QMM_CPU_ISA_NEON);
    qmm_context *ctx = NULL;
    if (api) {
        setenv("QMM_CPU_ISA", "neon", 1);
        assert_int_equal(qmm_context_create(NULL, &ctx), QMM_OK);
        unsetenv("QMM_CPU_ISA");
    }
    tu_rng r = tu_rng_make(0xf10a9);
    const int64_t m = 67, nmax = 5;
    int bad = 0, cases = 0, types = 0;
    for (int ti = 0; ti < QMM_TYPE_COUNT; ti++) {
        const qmm_type t = (qmm_type)ti;
        if (!qmm_type_is_supported(ti) || !qmm_type_is_weight(t) || qmm_arm_gemv_float_has_type(t))
            continue;
        assert_true(qmm_arm_gemv_neon_has_type(t));
        types++;
        const int64_t bs = qmm_type_block_size(t);
        const int64_t ks[] = {bs, 1024, 1024 + bs, 4096 + bs};
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki], ldx = k + 3;
            if (k % bs != 0) continue;
            size_t rb;
            assert_int_equal(qmm_row_bytes(t, k, &rb), QMM_OK);
            float *wf = malloc(sizeof(float) * (size_t)(m * k));
            unsigned char *w = malloc(rb * (size_t)m);
            float *x = malloc(sizeof(float) * (size_t)(nmax * ldx)), *y = malloc(sizeof(float) * (size_t)(nmax * m));
            const size_t per = qmm_arm_gemv_neon_scratch(t, k);
            void *scratch = aligned_alloc(64, 2 * per);
            assert_true(wf && w && x && y && scratch && per > 0);
            if (qmm_type_has_quantizer(t)) {
                float *src = malloc(sizeof(float) * (size_t)(m * k));
                assert_non_null(src);
                tu_fill_uniform(&r, src, (size_t)(m * k), -1.0f, 1.0f);
                assert_int_equal(qmm_quantize_rows(t, src, w, m, k), QMM_OK);
                free(src);
            } else {
                assert_int_equal(qmm_random_rows(t, 0x5eed + (uint64_t)ti, 1.0, w, m, k), QMM_OK);
            }
            tu_fill_uniform(&r, x, (size_t)(nmax * ldx), -1.0f, 1.0f);
            assert_int_equal(qmm_dequantize_rows(t, w, wf, m, k), QMM_OK);
            float *want = malloc(sizeof(float) * (size_t)(nmax * m));
            assert_non_null(want);
            for (int64_t j = 0; j < nmax; j++)
                for (int64_t i = 0; i < m; i++) want[j * m + i] = model(wf + i * k, x + j * ldx, k);
            qmm_weights *wt = NULL;
            if (api) assert_int_equal(qmm_weights_create(ctx, t, m, k, w, rb, &wt), QMM_OK);
            /* run 0, 1: the kernel on 1 and 2 threads; 2, 3: the API's gemv and fused */
            for (int run = 0; run < (api ? 4 : 2); run++)
                for (int64_t n = 1; n <= nmax; n++) {
                    memset(y, 0xff, sizeof(float) * (size_t)(nmax * m));
                    if (run < 2) {
                        qmm_arm_gemv_neon(t, m, k, w, rb, n, x, ldx, y, m, scratch, run + 1);
                    } else {
                        const qmm_strategy st = run == 2 ? QMM_STRATEGY_GEMV : QMM_STRATEGY_FUSED;
                        assert_int_equal(qmm_context_set_strategy(ctx, st), QMM_OK);
                        qmm_path path;
                        assert_int_equal(qmm_matmul_path(ctx, wt, n, &path), QMM_OK);
                        assert_string_equal(path.kernel, run == 2 ? "gemv_neon" : "fused_neon");
                        assert_int_equal(qmm_matmul(ctx, wt, n, x, ldx, y, m), QMM_OK);
                    }
                    for (int64_t j = 0; j < n; j++)
                        for (int64_t i = 0; i < m; i++) {
                            const float v = y[j * m + i], u = want[j * m + i];
                            cases++;
                            if (memcmp(&v, &u, 4) != 0 && !(v == 0.0f && u == 0.0f) && bad++ < 5)
                                print_error("%s k=%lld run %d n=%lld y[%lld][%lld] = %a, the order's model %a\n",
                                            qmm_type_name(t), (long long)k, run, (long long)n,
                                            (long long)j, (long long)i, (double)v, (double)u);
                        }
                }
            qmm_weights_free(wt);
            free(wf); free(w); free(x); free(y); free(want); free(scratch);
        }
    }
    qmm_context_free(ctx);
    print_message("test_quantized_order: %d types, %d outputs equal to the model\n", types, cases - bad);
    assert_true(types >= 14);
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_api_guarded),
        cmocka_unit_test(test_quantized_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
