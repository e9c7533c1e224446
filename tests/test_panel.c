/*
 * test_panel.c — the AVX2 f32 panel kernel (src/cpu/x86/panel_f32_avx2.c) against the
 * portable one (src/cpu/panel_f32.c), bit for bit: every len 1..256, mr x nr blocks with
 * every edge of the 4 x 3 register block, X rows at every float alignment with NaN padding
 * after len, the last X row ending at an unreadable page (no read past len), W padding past
 * len filled with NaN, accumulators starting non-zero with guard doubles around them, and
 * data that makes every rounding count: mixed magnitudes with cancellation, subnormal
 * products, overflow to Inf, Inf and NaN inputs (a NaN matches any NaN: see same_results).
 * A scalar FMA kernel run on the same data must differ somewhere (the data is sensitive to
 * fused rounding, so a kernel that fused would fail). Skipped (77) without AVX2.
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
#include "cpu/x86/panel_f32_avx2.h"

#define LDW QMM_CPU_KP  /* W row stride, as the tiled driver uses */
#define MR_CAP 37       /* largest mr tried */
#define NR_CAP 9        /* largest nr tried */
#define LDACC (MR_CAP + 3)
#define GUARD_D 3       /* guard doubles before and after the accumulators */
#define ACC_COUNT (NR_CAP * LDACC + 2 * GUARD_D)

static uint32_t rng_state = 12345u;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static float from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* Kinds of test data. */
enum fill_kind { FILL_MIXED, FILL_SUBNORMAL, FILL_SPECIAL, FILL_KINDS };

/* One value of `kind`: mixed = random sign, mantissa and exponent in 2^-20..2^20 (sums
 * cancel and round); subnormal = values whose products are subnormal or underflow;
 * special = mostly mixed, with some +-Inf, NaNs of several payloads and huge values whose
 * products overflow. */
static float value(enum fill_kind kind) {
    const uint32_t sign = (rnd() & 1u) << 31, mant = rnd() & 0x7fffffu;
    switch (kind) {
    case FILL_MIXED: return from_bits(sign | (uint32_t)(127 - 20 + rnd() % 41) << 23 | mant);
    case FILL_SUBNORMAL: {
        const uint32_t e = rnd() % 4;
        if (e == 0) return from_bits(sign | (mant >> (rnd() % 23))); /* subnormal */
        return from_bits(sign | (uint32_t)(127 - 75 + rnd() % 20) << 23 | mant); /* ~2^-70 */
    }
    default: {
        const uint32_t c = rnd() % 64;
        if (c == 0) return from_bits(sign | 0x7f800000u);                           /* Inf */
        if (c == 1) return from_bits(sign | 0x7fc00000u | (rnd() & 0x3fffffu));     /* NaN */
        if (c == 2) return from_bits(sign | (uint32_t)(254 - rnd() % 4) << 23 | mant); /* huge */
        return value(FILL_MIXED);
    }
    }
}

/* A buffer of `floats` floats whose end is followed by an inaccessible page. */
typedef struct guarded {
    unsigned char *map;
    size_t map_bytes;
    float *end; /* one past the last readable float */
} guarded;

static guarded guarded_alloc(size_t floats) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t data_pages = (floats * sizeof(float) + page - 1) / page;
    guarded g;
    g.map_bytes = (data_pages + 1) * page;
    g.map = mmap(NULL, g.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g.map != MAP_FAILED);
    assert_int_equal(mprotect(g.map + data_pages * page, page, PROT_NONE), 0);
    g.end = (float *)(g.map + data_pages * page);
    return g;
}

static void guarded_free(guarded *g) { munmap(g->map, g->map_bytes); }

/* Scalar kernel in the panel order but with fused multiply-adds: must differ on the data. */
static void panel_fma(int64_t mr, int64_t nr, int64_t len, const float *w, int64_t ldw,
                      const float *x, int64_t ldx, double *acc, int64_t ldacc) {
    for (int64_t j = 0; j < nr; j++)
        for (int64_t r = 0; r < mr; r++) {
            float a[QMM_CPU_LANES] = {0};
            for (int64_t p = 0; p < len; p++)
                a[p % QMM_CPU_LANES] = fmaf(x[j * ldx + p], w[r * ldw + p], a[p % QMM_CPU_LANES]);
            acc[j * ldacc + r] += (double)qmm_cpu_lane_reduce(a);
        }
}

/*
 * Same bits in every double, except that a NaN matches any NaN. NaN payload and sign are not
 * part of the panel order: when two NaNs meet, x86 keeps the first operand's, and gcc may
 * swap the operands of a commutative float op — the portable kernel itself gives different
 * payloads for the same X and W row in its 4-row and 1-row code (seen with gcc 12). Where a
 * NaN is, and everything else (Inf and its sign, zeros' signs), must be identical.
 */
static bool same_results(const double *a, const double *b) {
    bool same = true;
    for (int i = 0; i < ACC_COUNT; i++) {
        if (memcmp(&a[i], &b[i], sizeof(double)) == 0 || (isnan(a[i]) && isnan(b[i]))) continue;
        print_error("acc[%d]: portable %a, avx2 %a\n", i, a[i], b[i]);
        same = false;
    }
    return same;
}

typedef struct fixture {
    float *w;     /* MR_CAP rows of LDW floats, 64-byte aligned */
    guarded xg;   /* X rows, the last one ending at the guard page */
    double *acc0, *acc_a, *acc_b; /* (NR_CAP x LDACC) + 2 GUARD_D doubles each */
} fixture;

static void fixture_init(fixture *f) {
    f->w = aligned_alloc(QMM_CPU_ALIGN, MR_CAP * LDW * sizeof(float));
    assert_non_null(f->w);
    f->xg = guarded_alloc(NR_CAP * (QMM_CPU_KP + 16) + 64);
    f->acc0 = malloc(ACC_COUNT * sizeof(double));
    f->acc_a = malloc(ACC_COUNT * sizeof(double));
    f->acc_b = malloc(ACC_COUNT * sizeof(double));
    assert_true(f->acc0 && f->acc_a && f->acc_b);
    for (int i = 0; i < ACC_COUNT; i++) f->acc0[i] = (double)(int32_t)rnd() * 0x1p-20;
}

static void fixture_free(fixture *f) {
    free(f->w);
    guarded_free(&f->xg);
    free(f->acc0);
    free(f->acc_a);
    free(f->acc_b);
}

/*
 * One case: fill W (NaN past len) and X (ldx = len + pad, NaN in the padding, the last row ending at the guard page), run both
 * kernels from the same accumulators and compare every double as bits (guards included).
 * Returns whether `other` (if non-NULL) gave different bits from the portable kernel.
 */
static bool run_case(fixture *f, enum fill_kind kind, int64_t mr, int64_t nr, int64_t len,
                     int64_t pad, qmm_cpu_panel_f32_fn other) {
    const float nan_pad = from_bits(0x7fc0dead);
    for (int64_t r = 0; r < mr; r++)
        for (int64_t p = 0; p < LDW; p++) f->w[r * LDW + p] = p < len ? value(kind) : nan_pad;
    const int64_t ldx = len + pad;
    /* The last row's element len-1 is the last readable float (the row starts' alignment
     * mod 32 bytes follows from ldx and len, so the pads of the callers cover all 8). */
    float *x = f->xg.end - ((nr - 1) * ldx + len);
    for (int64_t j = 0; j < nr; j++)
        for (int64_t p = 0; p < ldx && (j < nr - 1 || p < len); p++)
            x[j * ldx + p] = p < len ? value(kind) : nan_pad;
    memcpy(f->acc_a, f->acc0, ACC_COUNT * sizeof(double));
    memcpy(f->acc_b, f->acc0, ACC_COUNT * sizeof(double));
    qmm_cpu_panel_f32_portable(mr, nr, len, f->w, LDW, x, ldx, f->acc_a + GUARD_D, LDACC);
    qmm_cpu_panel_f32_avx2(mr, nr, len, f->w, LDW, x, ldx, f->acc_b + GUARD_D, LDACC);
    if (!same_results(f->acc_a, f->acc_b)) {
        print_error("kind %d mr %lld nr %lld len %lld ldx %lld\n", (int)kind, (long long)mr,
                    (long long)nr, (long long)len, (long long)ldx);
        fail();
    }
    if (other == NULL) return false;
    memcpy(f->acc_b, f->acc0, ACC_COUNT * sizeof(double));
    other(mr, nr, len, f->w, LDW, x, ldx, f->acc_b + GUARD_D, LDACC);
    return memcmp(f->acc_a, f->acc_b, ACC_COUNT * sizeof(double)) != 0;
}

static bool have_avx2(void) {
    const qmm_cpu_features *cf = qmm_cpu_features_get();
    return cf->avx2 && cf->os_ymm;
}

/* Every len 1..256 with blocks covering the 4 x 3 register block and all its edges. */
static void test_every_len(void **state) {
    (void)state;
    static const int64_t mrs[] = {1, 2, 3, 4, 5, 6, 7, 8, 11, 32, 37};
    static const int64_t nrs[] = {1, 2, 3, 4, 5, 6, 7, 9};
    fixture f;
    fixture_init(&f);
    int fma_differs = 0, cases = 0;
    for (int64_t len = 1; len <= QMM_CPU_KP; len++)
        for (size_t a = 0; a < sizeof mrs / sizeof mrs[0]; a++)
            for (size_t b = 0; b < sizeof nrs / sizeof nrs[0]; b++) {
                /* all pairs for short rows, a rotating subset for long ones (time) */
                if (len > 40 && (a + b + (size_t)len) % 5 != 0) continue;
                const enum fill_kind kind = (enum fill_kind)((a + b + (size_t)len) % FILL_KINDS);
                const int64_t pad = (int64_t)((a * 3 + b + (size_t)len) % 9);
                fma_differs += run_case(&f, kind, mrs[a], nrs[b], len, pad,
                                        kind == FILL_MIXED ? panel_fma : NULL);
                cases++;
            }
    print_message("%d cases bit-identical; the FMA kernel differed in %d of the mixed ones\n",
                  cases, fma_differs);
    assert_true(fma_differs > 0);
    fixture_free(&f);
}

/* Every X alignment (ldx = len + pad for pad 0..15 moves each row's start by every float
 * offset mod 8) for tail lengths, with each kind of data. */
static void test_alignment_and_kinds(void **state) {
    (void)state;
    static const int64_t lens[] = {1, 7, 8, 9, 15, 31, 33, 100, 255, 256};
    fixture f;
    fixture_init(&f);
    for (int kind = 0; kind < FILL_KINDS; kind++)
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
            for (int64_t pad = 0; pad < 16; pad++)
                for (int rep = 0; rep < 3; rep++)
                    run_case(&f, (enum fill_kind)kind, 1 + rnd() % MR_CAP, 1 + rnd() % NR_CAP,
                             lens[l], pad, NULL);
    fixture_free(&f);
}

/* Inf - Inf in one lane, NaNs of two payloads in another, overflow in a third: NaN exactly
 * where the portable kernel has one, the rest identical bits. Values chosen, not random, so each lane's event certainly occurs. */
static void test_inf_nan_lanes(void **state) {
    (void)state;
    fixture f;
    fixture_init(&f);
    for (int64_t len = 1; len <= 40; len++) {
        const int64_t mr = 5, nr = 4, ldx = len + 1;
        float *x = f.xg.end - ((nr - 1) * ldx + len);
        for (int64_t r = 0; r < mr; r++)
            for (int64_t p = 0; p < LDW; p++) f.w[r * LDW + p] = p < len ? value(FILL_MIXED) : NAN;
        for (int64_t j = 0; j < nr; j++)
            for (int64_t p = 0; p < len; p++) x[j * ldx + p] = value(FILL_MIXED);
        /* lane 0: +Inf then -Inf (Inf - Inf = default NaN); lane 1: a NaN with a payload in X
         * and another in W; lane 2: two products that overflow */
        x[0] = INFINITY;
        if (len > 8) x[8] = -INFINITY;
        if (len > 1) {
            x[ldx + 1] = from_bits(0x7fc00123);
            f.w[1 * LDW + 1] = from_bits(0xffc04567);
        }
        if (len > 2) {
            x[2 * ldx + 2] = 3e38f;
            f.w[2 * LDW + 2] = 3e38f;
        }
        memcpy(f.acc_a, f.acc0, ACC_COUNT * sizeof(double));
        memcpy(f.acc_b, f.acc0, ACC_COUNT * sizeof(double));
        qmm_cpu_panel_f32_portable(mr, nr, len, f.w, LDW, x, ldx, f.acc_a + GUARD_D, LDACC);
        qmm_cpu_panel_f32_avx2(mr, nr, len, f.w, LDW, x, ldx, f.acc_b + GUARD_D, LDACC);
        assert_true(same_results(f.acc_a, f.acc_b));
        assert_true(isnan(f.acc_b[GUARD_D]) || isinf(f.acc_b[GUARD_D]));
    }
    fixture_free(&f);
}

/* The panel table: the avx2 kernel at levels avx2 and up, exact order; portable at generic. */
static void test_selection(void **state) {
    (void)state;
    assert_string_equal(qmm_cpu_panel_f32_select(QMM_CPU_ISA_GENERIC)->name, "portable");
    const qmm_cpu_panel_f32_kernel *k = qmm_cpu_panel_f32_select(QMM_CPU_ISA_AVX2);
    assert_string_equal(k->name, "avx2");
    assert_true(k->exact_order);
    assert_ptr_equal(k->run, qmm_cpu_panel_f32_avx2);
    assert_string_equal(qmm_cpu_panel_f32_select(QMM_CPU_ISA_AMX)->name, "avx2");
}

int main(void) {
    if (!have_avx2()) {
        printf("[  SKIPPED ] this CPU or OS has no AVX2\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_len),
        cmocka_unit_test(test_alignment_and_kinds),
        cmocka_unit_test(test_inf_nan_lanes),
        cmocka_unit_test(test_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
