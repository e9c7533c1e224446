/*
 * test_amx_otf.c — the on-the-fly AMX-BF16 kernel (gemm_bf16_otf_amx.c: W decoded from its
 * GGUF blocks per call) against the packed kernel (gemm_bf16_amx.c on the bf16 copy made by
 * pack_bf16.c): the outputs must be bit-identical for every type the kernel takes x m and k
 * tails (m = 1, 17, 48, 77; k = 1, 33, 32, 256, 288, 768, 8448 where the type allows; k_pad
 * > 256 spans several decode chunks, n > 32 several X blocks whose partial sums are stored
 * between chunks) x n = 1..17, 31..33, 64, 65, 129 x 1 and 2 threads, with Y
 * padding that must keep its poison; the row scales equal the packer's; bf16 rows of
 * magnitude 2^-100 and 2^50 and one with values that are subnormal after scaling (the exact
 * fallback), X rows of 2^-60 and 2^60. Then through the public API with
 * QMM_FLAG_BATCH_INVARIANT (auto: gemv nowhere, on-the-fly up to otf_max_n, packed above):
 * every row of Y for n in {1..17, 32, 64, 65, 129, 512} equals the same row at n = 512, so
 * row 0 is the same across the switch point. (otf_max_n is 0 in the default build, so this
 * part crosses a switch only in a build with -DQMM_X86_OTF_MAX_N=64; the kernel-level
 * comparison above is what ties the two kernels together.) Skipped (77) without AMX.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/types.h"
#include "cpu/cpu_features.h"
#include "cpu/x86/x86_kernels.h"
#include "qmm.h"
#include "support/test_util.h"

static const int64_t ms[] = {1, 17, 48, 77};
static const int64_t ks[] = {1, 33, 32, 256, 288, 768, 8448};
static const int64_t ns_small[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                                   31, 32, 33, 64, 65, 129};
static const int64_t ns_large[] = {1, 17, 65};
#define NMAX 129
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int setup(void **state) {
    (void)state;
    return qmm_cpu_isa_supported(QMM_CPU_ISA_AMX) ? 0 : -1;
}

static void *scratch_alloc(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

/* m x k weights of `type` (row i at rows + i*stride), X (NMAX x k, ldx = k + 3) given: every
 * n of `ns` on 1 and 2 threads, on-the-fly vs packed, bit for bit. Returns failures. */
static int compare_kernels(qmm_type type, int64_t m, int64_t k, const unsigned char *rows,
                           size_t stride, const float *x, const int64_t *ns, size_t n_ns) {
    const int64_t ldx = k + 3, ldy = m + 1;
    qmm_x86_bf16_tiles tiles;
    assert_int_equal(qmm_x86_bf16_tiles_pack(type, m, k, rows, stride, 2, &tiles), QMM_OK);
    float *scale = NULL;
    assert_int_equal(qmm_x86_bf16_otf_row_scales(type, m, k, rows, stride, 2, &scale), QMM_OK);
    int failures = 0;
    if (memcmp(scale, tiles.row_scale, sizeof(float) * (size_t)tiles.m_pad) != 0) {
        print_error("%s m=%lld k=%lld: row scales differ from the packer's\n",
                    qmm_type_name(type), (long long)m, (long long)k);
        failures++;
    }
    const qmm_x86_bf16_otf ow = {.type = type, .rows = rows, .row_stride = stride,
                                 .row_scale = scale, .m = m, .k = k, .m_pad = tiles.m_pad,
                                 .k_pad = tiles.k_pad};
    float *yp = malloc(sizeof(float) * NMAX * (size_t)ldy);
    float *yo = malloc(sizeof(float) * NMAX * (size_t)ldy);
    assert_non_null(yp);
    assert_non_null(yo);
    for (size_t ni = 0; ni < n_ns; ni++) {
        const int64_t n = ns[ni];
        for (int threads = 1; threads <= 2; threads++) {
            void *sp = scratch_alloc(qmm_x86_gemm_bf16_amx_scratch(&tiles, n, threads));
            void *so = scratch_alloc(qmm_x86_gemm_bf16_otf_amx_scratch(&ow, n, threads));
            assert_non_null(sp);
            assert_non_null(so);
            tu_poison_fill(yp, (size_t)(n * ldy));
            tu_poison_fill(yo, (size_t)(n * ldy));
            qmm_x86_gemm_bf16_amx(&tiles, n, x, ldx, yp, ldy, sp, threads);
            qmm_x86_gemm_bf16_otf_amx(&ow, n, x, ldx, yo, ldy, so, threads);
            const bool same = tu_bits_equal(yp, ldy, yo, ldy, n, m);
            const bool pad = tu_padding_intact(yo, n, m, ldy) && tu_is_poison(yo[n * ldy - 1]);
            int64_t nonfinite = 0;
            for (int64_t j = 0; j < n; j++)
                for (int64_t i = 0; i < m; i++) nonfinite += !isfinite(yo[j * ldy + i]);
            if (!same || !pad || nonfinite != 0) {
                print_error("%s m=%lld k=%lld n=%lld threads=%d: %s, padding %s, %lld "
                            "non-finite\n", qmm_type_name(type), (long long)m, (long long)k,
                            (long long)n, threads, same ? "same bits" : "BITS DIFFER",
                            pad ? "intact" : "WRITTEN", (long long)nonfinite);
                failures++;
            }
            free(sp);
            free(so);
        }
    }
    free(yp);
    free(yo);
    free(scale);
    qmm_x86_bf16_tiles_free(&tiles);
    return failures;
}

/* X: NMAX rows of k uniform [-1, 1) (ldx = k + 3); rows 3 and 5 times 2^-60 and 2^60. */
static float *make_x(int64_t k, tu_rng *r) {
    const int64_t ldx = k + 3;
    float *x = malloc(sizeof(float) * NMAX * (size_t)ldx);
    assert_non_null(x);
    tu_fill_uniform(r, x, (size_t)(NMAX * ldx), -1.0f, 1.0f);
    for (int64_t p = 0; p < k; p++) {
        x[3 * ldx + p] = ldexpf(x[3 * ldx + p], -60);
        x[5 * ldx + p] = ldexpf(x[5 * ldx + p], 60);
    }
    return x;
}

static void test_bits_every_type(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0x07F1);
    int failures = 0, cases = 0;
    for (int type = 0; type < QMM_TYPE_COUNT; type++) {
        if (!qmm_x86_gemm_bf16_otf_amx_has_type((qmm_type)type)) continue;
        for (size_t ki = 0; ki < COUNT(ks); ki++) {
            size_t rb;
            if (qmm_row_bytes((qmm_type)type, ks[ki], &rb) != QMM_OK) continue; /* k not a multiple of the block */
            float *x = make_x(ks[ki], &r);
            for (size_t mi = 0; mi < COUNT(ms); mi++) {
                const bool large = ks[ki] > 8192;
                if (large && ms[mi] != 48) continue;
                tu_weights w;
                assert_int_equal(tu_weights_make(&w, (qmm_type)type, ms[mi], ks[ki], 16, &r), QMM_OK);
                failures += compare_kernels((qmm_type)type, ms[mi], ks[ki], w.buf.data,
                                            w.row_stride, x, large ? ns_large : ns_small,
                                            large ? COUNT(ns_large) : COUNT(ns_small));
                tu_weights_free(&w);
                cases++;
            }
            free(x);
        }
    }
    assert_true(cases > 100);
    assert_int_equal(failures, 0);
}

/* bf16 weights with row scales != 1: row 0 of magnitude 2^-100, row 1 2^50, row 2 with
 * max 2^50 and elements of 2^-80 (subnormal after division by 2^50: the exact fallback),
 * row 3 with bf16 subnormals at scale 1; row 4 with max 2^50 and elements of
 * (2 - 2^-7) 2^-77, which after scaling are f32 subnormals that the packer rounds up to 2^-126
 * (vcvtne2ps2bf16 would flush them): X row 2 (1.5, 0 where row 4 has 2^50) makes them count.
 * The rest uniform. */
static void test_bits_row_scales(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0x5CA1E);
    const int64_t m = 37, k = 300;
    float *wf = malloc(sizeof(float) * (size_t)(m * k));
    assert_non_null(wf);
    tu_fill_uniform(&r, wf, (size_t)(m * k), -1.0f, 1.0f);
    for (int64_t p = 0; p < k; p++) {
        wf[0 * k + p] = ldexpf(wf[0 * k + p], -100);
        wf[1 * k + p] = ldexpf(wf[1 * k + p], 50);
        wf[2 * k + p] = p == 7 ? 0x1p50f : ldexpf(wf[2 * k + p], -80) * (p % 3 == 0 ? 1.99f : 1.0f);
        wf[3 * k + p] = p % 5 == 0 ? 0x1p-130f * (float)(p % 7) : wf[3 * k + p];
        wf[4 * k + p] = p == 7 ? 0x1p50f : 0x1.FEp-77f;
    }
    size_t rb;
    assert_int_equal(qmm_row_bytes(QMM_TYPE_BF16, k, &rb), QMM_OK);
    unsigned char *rows = malloc(rb * (size_t)m);
    assert_non_null(rows);
    assert_int_equal(qmm_quantize_rows(QMM_TYPE_BF16, wf, rows, m, k), QMM_OK);
    float *x = make_x(k, &r);
    for (int64_t p = 0; p < k; p++) x[2 * (k + 3) + p] = p == 7 ? 0.0f : 1.5f;
    assert_int_equal(compare_kernels(QMM_TYPE_BF16, m, k, rows, rb, x, ns_small, COUNT(ns_small)), 0);
    free(x);
    free(rows);
    free(wf);
}

/* The kernel's 16 x 16 transpose on a matrix of distinct words. */
static void test_transpose(void **state) {
    (void)state;
    uint32_t a[256];
    for (int i = 0; i < 256; i++) a[i] = (uint32_t)i * 2654435761u;
    uint32_t t[256];
    memcpy(t, a, sizeof a);
    qmm_x86_otf_transpose16_for_test(t);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) assert_int_equal(t[16 * i + j], a[16 * j + i]);
}

/* Batch-invariant contexts (1 and 2 threads, strategy auto): rows of Y at every n equal
 * those at n = 512 (packed kernel), so the switch from on-the-fly to packed keeps the bits. */
static void check_invariant(qmm_type type, int64_t m, int64_t k, int threads) {
    static const int64_t ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                                 32, 64, 65, 129, 512};
    const int64_t nmax = 512;
    tu_rng r = tu_rng_make(0x1A7 + (uint64_t)type);
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = threads;
    p.flags = QMM_FLAG_BATCH_INVARIANT;
    qmm_context *ctx;
    assert_int_equal(qmm_context_create(&p, &ctx), QMM_OK);
    tu_weights w;
    assert_int_equal(tu_weights_make(&w, type, m, k, 0, &r), QMM_OK);
    qmm_weights *wt;
    assert_int_equal(qmm_weights_create(ctx, type, m, k, w.buf.data, w.row_stride, &wt), QMM_OK);
    float *x = malloc(sizeof(float) * (size_t)(nmax * k));
    float *y512 = malloc(sizeof(float) * (size_t)(nmax * m));
    float *y = malloc(sizeof(float) * (size_t)(nmax * m));
    assert_non_null(x);
    assert_non_null(y512);
    assert_non_null(y);
    tu_fill_uniform(&r, x, (size_t)(nmax * k), -1.0f, 1.0f);
    assert_int_equal(qmm_matmul(ctx, wt, nmax, x, k, y512, m), QMM_OK);
    int failures = 0;
    for (size_t ni = 0; ni < COUNT(ns); ni++) {
        assert_int_equal(qmm_matmul(ctx, wt, ns[ni], x, k, y, m), QMM_OK);
        if (!tu_bits_equal(y, m, y512, m, ns[ni], m)) {
            print_error("%s m=%lld k=%lld threads=%d: rows at n=%lld differ from n=512%s\n",
                        qmm_type_name(type), (long long)m, (long long)k, threads,
                        (long long)ns[ni], memcmp(y, y512, sizeof(float) * (size_t)m) ? " (row 0 too)" : "");
            failures++;
        }
    }
    free(x);
    free(y512);
    free(y);
    qmm_weights_free(wt);
    tu_weights_free(&w);
    qmm_context_free(ctx);
    assert_int_equal(failures, 0);
}

static void test_batch_invariant_across_switch(void **state) {
    (void)state;
    static const qmm_type types[] = {QMM_TYPE_Q4_0, QMM_TYPE_Q8_0, QMM_TYPE_Q4_K, QMM_TYPE_Q6_K,
                                     QMM_TYPE_F16, QMM_TYPE_BF16, QMM_TYPE_Q5_1};
    for (size_t t = 0; t < COUNT(types); t++)
        for (int threads = 1; threads <= 2; threads++) check_invariant(types[t], 200, 512, threads);
}

int main(void) {
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AMX)) return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_bits_every_type),
        cmocka_unit_test(test_bits_row_scales),
        cmocka_unit_test(test_batch_invariant_across_switch),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
