/*
 * test_gemv_float_avx512.c — the AVX-512 and AVX2 gemv row kernels of f32, f16 and bf16
 * (src/cpu/x86/gemv_float_avx512.c, gemv_float_avx2.c), called directly through
 * qmm_x86_gemv_avx512 and qmm_x86_gemv_avx2 (each test runs once per kernel):
 *   - every one of the 65536 f16 and bf16 bit patterns (and f32 specials) decodes to the
 *     float of src/formats/fp16.h (y = w * 1 with one nonzero element per row: exact; a
 *     NaN keeps sign and payload, made quiet by the FMA), at
 *     k = 1 (the masked tail alone) and k = 16 (a full group);
 *   - k = 1, 15, 17, 1023, 1025, 2063 with n = 1..8 against qmm_matmul_ref in the f32 accuracy
 *     class (nmse <= 1e-10, max_rel_err <= 1e-5), with W and X ending right before a
 *     PROT_NONE page: a read past the last row or the last X row faults.
 * Skipped (exit 77 semantics through cmocka's skip) where the kernel's ISA level is missing.
 */
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
#include "formats/fp16.h"
#include "qmm.h"

#if defined(__x86_64__)
#include "cpu/x86/x86_kernels.h"

/* A buffer of `bytes` whose last byte is followed by a PROT_NONE page. */
typedef struct guarded {
    void *map;
    size_t map_bytes;
    unsigned char *p;
} guarded;

static unsigned char *guarded_alloc(guarded *g, size_t bytes) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t data_pages = (bytes + page - 1) / page;
    g->map_bytes = (data_pages + 1) * page;
    g->map = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g->map != MAP_FAILED);
    unsigned char *guard = (unsigned char *)g->map + data_pages * page;
    assert_int_equal(mprotect(guard, page, PROT_NONE), 0);
    g->p = guard - bytes;
    return g->p;
}

static void guarded_free(guarded *g) { munmap(g->map, g->map_bytes); }

/* Deterministic uniform values in [-1, 1). */
static void fill(float *v, int64_t count, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < count; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
    }
}

/* The kernel under test (the cmocka state of each test). */
typedef struct kernel {
    const char *name;
    qmm_cpu_isa isa;
    qmm_status (*fn)(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                     size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                     int64_t ldy, int n_threads);
} kernel;
static const kernel k_avx512 = {"gemv_avx512", QMM_CPU_ISA_AVX512, qmm_x86_gemv_avx512};
static const kernel k_avx2 = {"gemv_avx2", QMM_CPU_ISA_AVX2, qmm_x86_gemv_avx2};

static bool missing(const kernel *kr) {
    if (qmm_cpu_isa_supported(kr->isa)) return false;
    print_message("[  SKIPPED ] %s: level %s missing on this machine\n", kr->name,
                  qmm_cpu_isa_name(kr->isa));
    return true;
}

/* The float of element code `c` of `type` as the type table decodes it. */
static float decode_ref(qmm_type type, uint32_t c) {
    if (type == QMM_TYPE_F16) return qmm_fp16_to_fp32((qmm_half)c);
    if (type == QMM_TYPE_BF16) return qmm_bf16_to_fp32((qmm_bf16)c);
    return qmm_f32_from_bits(c);
}

/* Same value: equal bits; a NaN with its sign and payload, made quiet (an FMA quiets a
 * signalling NaN: bf16 keeps them, f16's decode already quiets); zeros of either sign
 * (-0 * 1 + (+0) is +0). */
static bool same_value(float got, float want) {
    const uint32_t g = qmm_f32_bits(got), w = qmm_f32_bits(want);
    if (want == 0.0f) return got == 0.0f;
    if (want != want) return g == (w | 0x00400000u);
    return g == w;
}

/* Every code of a 16-bit type (f32: a list of specials): row i holds code i at element
 * i % k, zeros elsewhere; X = ones; y must be the decoded value. */
static void check_decode(const kernel *kr, qmm_type type, int64_t k) {
    static const uint32_t f32_codes[] = {0x00000001u, 0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                                         0x7F800000u, 0xFF800000u, 0x7FC00001u, 0xFFC12345u,
                                         0x3F800000u, 0xBEAAAAABu, 0x80000000u, 0x00000000u};
    const int64_t m = type == QMM_TYPE_F32 ? (int64_t)(sizeof f32_codes / sizeof f32_codes[0])
                                           : 65536;
    const size_t esz = type == QMM_TYPE_F32 ? 4 : 2;
    guarded gw, gx;
    unsigned char *w = guarded_alloc(&gw, (size_t)m * (size_t)k * esz);
    float *x = (float *)guarded_alloc(&gx, sizeof(float) * (size_t)k);
    memset(w, 0, (size_t)m * (size_t)k * esz);
    for (int64_t p = 0; p < k; p++) x[p] = 1.0f;
    for (int64_t i = 0; i < m; i++) {
        const uint32_t c = type == QMM_TYPE_F32 ? f32_codes[i] : (uint32_t)i;
        unsigned char *dst = w + ((size_t)i * (size_t)k + (size_t)(i % k)) * esz;
        if (esz == 4) memcpy(dst, &c, 4);
        else {
            const uint16_t h = (uint16_t)c;
            memcpy(dst, &h, 2);
        }
    }
    float *y = malloc(sizeof(float) * (size_t)m);
    assert_int_equal(kr->fn(type, m, k, w, (size_t)k * esz, 1, x, k, y, m, 2), QMM_OK);
    int bad = 0;
    for (int64_t i = 0; i < m; i++) {
        const uint32_t c = type == QMM_TYPE_F32 ? f32_codes[i] : (uint32_t)i;
        const float want = decode_ref(type, c);
        if (!same_value(y[i], want)) {
            if (bad++ < 5)
                print_error("%s %s k=%lld code 0x%x: got 0x%08x want 0x%08x\n", kr->name,
                            qmm_type_name(type),
                            (long long)k, (unsigned)c, (unsigned)qmm_f32_bits(y[i]),
                            (unsigned)qmm_f32_bits(want));
        }
    }
    free(y);
    guarded_free(&gw);
    guarded_free(&gx);
    assert_int_equal(bad, 0);
}

static void test_decode_exact(void **state) {
    const kernel *kr = *state;
    if (missing(kr)) {
        skip();
        return;
    }
    const qmm_type types[] = {QMM_TYPE_F32, QMM_TYPE_F16, QMM_TYPE_BF16};
    for (size_t t = 0; t < 3; t++) {
        check_decode(kr, types[t], 1);
        check_decode(kr, types[t], 16);
    }
}

/* Short and odd k, W and X against guard pages, n = 1..8, vs qmm_matmul_ref. */
static void test_k_tails_guarded(void **state) {
    const kernel *kr = *state;
    if (missing(kr)) {
        skip();
        return;
    }
    const qmm_type types[] = {QMM_TYPE_F32, QMM_TYPE_F16, QMM_TYPE_BF16};
    const int64_t ks[] = {1, 15, 17, 1023, 1025, 2063};
    const int64_t m = 67, nmax = 8;
    int failures = 0;
    for (size_t t = 0; t < 3; t++)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki];
            size_t rb;
            assert_int_equal(qmm_row_bytes(types[t], k, &rb), QMM_OK);
            float *wf = malloc(sizeof(float) * (size_t)(m * k));
            fill(wf, m * k, (uint32_t)(t * 7 + ki + 1));
            guarded gw, gx;
            unsigned char *w = guarded_alloc(&gw, rb * (size_t)m);
            assert_int_equal(qmm_quantize_rows(types[t], wf, w, m, k), QMM_OK);
            for (int64_t n = 1; n <= nmax; n++) {
                /* X rows packed (ldx = k): the last X row ends at the guard page. */
                float *x = (float *)guarded_alloc(&gx, sizeof(float) * (size_t)(n * k));
                fill(x, n * k, (uint32_t)(t * 13 + ki * 3 + (size_t)n + 100));
                float *y = malloc(sizeof(float) * (size_t)(n * m));
                float *ref = malloc(sizeof(float) * (size_t)(n * m));
                assert_int_equal(qmm_matmul_ref(types[t], m, k, w, rb, n, x, k, ref, m), QMM_OK);
                assert_int_equal(kr->fn(types[t], m, k, w, rb, n, x, k, y, m, 2), QMM_OK);
                qmm_diff d;
                assert_int_equal(qmm_compare(n, m, y, m, ref, m, &d), QMM_OK);
                if (!qmm_diff_ok(&d, 1e-10, 1e-5)) {
                    print_error("%s %s k=%lld n=%lld: nmse %.3g max_rel %.3g\n", kr->name,
                                qmm_type_name(types[t]), (long long)k, (long long)n, d.nmse,
                                d.max_rel_err);
                    failures++;
                }
                free(y);
                free(ref);
                guarded_free(&gx);
            }
            guarded_free(&gw);
            free(wf);
        }
    assert_int_equal(failures, 0);
}

#define KERNEL_TESTS(kr)                                                                  \
    cmocka_unit_test_prestate(test_decode_exact, (void *)&(kr)),                          \
        cmocka_unit_test_prestate(test_k_tails_guarded, (void *)&(kr))
#else
static void test_decode_exact(void **state) { (void)state; skip(); }
static void test_k_tails_guarded(void **state) { (void)state; skip(); }
#define KERNEL_TESTS(kr) cmocka_unit_test(test_decode_exact), cmocka_unit_test(test_k_tails_guarded)
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        KERNEL_TESTS(k_avx512),
        KERNEL_TESTS(k_avx2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
