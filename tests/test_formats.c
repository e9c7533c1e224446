/*
 * test_formats.c — the block formats, driven by the type table (src/core/types.h):
 *   - quantize -> dequantize error on random normal data within a per-type bound (the
 *     bounds are stated in BOUNDS below and in docs/FORMATS.md);
 *   - dequantize(quantize(dequantize(q))) == dequantize(q) for the types whose ggml
 *     quantizer is idempotent;
 *   - edge blocks: all zero, all equal, a negative largest-magnitude element, huge (~1e30)
 *     and subnormal inputs;
 *   - rounding ties of each quantizer, hand-built blocks with a distinct quant per position,
 *     extreme f16 scales (0x0001, 0x03FF, 0x7BFF, negative);
 *   - qmm_validate_rows / qmm_first_nonfinite_block on each scale field of each type;
 *   - bad arguments to qmm_quantize_rows / qmm_dequantize_rows / qmm_row_bytes /
 *     qmm_validate_rows: an error, and nothing written;
 *   - qmm_type_name / qmm_type_from_name round trip.
 * Bit-exactness against gguf.quants is checked separately by tests/test_gguf_quants.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/types.h"
#include "formats/fp16.h"
#include "formats/quants.h"
#include "qmm.h"
#include "test_util.h"

/* ---------------------------------------------------------------------------------------
 * Per-type round-trip bounds on N(0,1) data (k = 4096, 16 rows, seed 1).
 *   max_rel:  max over blocks of max|x - y| / max|x| within the block; for f16/bf16 (block
 *             of one) it is the per-element relative error |x - y| / |x|.
 *   nrmse:    sqrt(sum (x-y)^2 / sum x^2) over all the data.
 * Legacy and float bounds are derived (see docs/FORMATS.md): half a step of the quant grid,
 * a full step at the clamped end of q4_0/q5_0, plus the f16 rounding of d and m. K-quant and
 * nrmse bounds are measured values plus ~5-10%: a quantizer that truncates instead of
 * rounding, swaps nibbles or drops the minimum breaks them.
 * ------------------------------------------------------------------------------------- */
typedef struct {
    int type;
    double max_rel;
    double nrmse;
    bool idempotent; /* dequantize(quantize(y)) == y for y = a dequantized block */
    double overshoot; /* a block's max |y| may exceed its max |x| by this fraction */
} type_bound;

static const type_bound BOUNDS[] = {
    {QMM_TYPE_F32, 0.0, 0.0, true, 0},
    {QMM_TYPE_F16, 1.0 / 2048, 0.00023, true, 0},          /* 2^-11: half an ulp of 11 bits */
    {QMM_TYPE_BF16, 1.0 / 256, 0.00176, true, 0},          /* 2^-8: half an ulp of 8 bits */
    {QMM_TYPE_Q4_0, 0.125 * (1 + 1.0 / 256), 0.0900, true, 0},   /* |d|(1 + 8*2^-11), |d| = amax/8 */
    {QMM_TYPE_Q4_1, 1.0 / 15 + 3.0 / 2048, 0.0820, true, 0},     /* d/2 <= amax/15, + f16 of d, m */
    {QMM_TYPE_Q5_0, 0.0625 * (1 + 1.0 / 128), 0.0450, true, 0},  /* |d|(1 + 16*2^-11), |d| = amax/16 */
    {QMM_TYPE_Q5_1, 1.0 / 31 + 3.0 / 2048, 0.0400, true, 0},     /* d/2 <= amax/31, + f16 of d, m */
    {QMM_TYPE_Q8_0, 0.5 / 127 + 1.0 / 2048, 0.00560, true, 0},   /* d/2 = amax/254, + 127*f16 of d */
    {QMM_TYPE_Q2_K, 0.41, 0.310, false, 0},
    {QMM_TYPE_Q3_K, 0.24, 0.158, false, 0},
    {QMM_TYPE_Q4_K, 0.100, 0.0750, false, 0},
    {QMM_TYPE_Q5_K, 0.055, 0.0380, false, 0},
    {QMM_TYPE_Q6_K, 0.018, 0.0187, false, 0},
    {QMM_TYPE_Q8_K, 0.5 / 127 + 1e-6, 0.00735, false, 0},        /* d/2 with an f32 d */
    /* Unit-codec types with a reference quantizer (docs/FORMATS.md). iq4: measured values plus
     * ~10% (weighted scale fit: |y| can exceed the block's max). tq: half a step d = amax,
     * + the f16 error of d. mxfp4: d = 2^(floor(log2 amax) - 3) puts the grid's top 12d at
     * 1.5 * 2^floor(log2 amax): at most a quarter of amax from any x, and an x just above
     * 1.25 * 2^fl rounds up to it (overshoot 0.2). nvfp4: the UE4M3 scale of amax / 6 is off by
     * up to 2^-4, the top step is 2 scale units (half a step: amax/6 * (1 + 2^-4)). */
    {QMM_TYPE_IQ4_NL, 0.130, 0.0870, false, 0.15},
    {QMM_TYPE_IQ4_XS, 0.102, 0.0850, false, 0.15},
    {QMM_TYPE_TQ1_0, 0.5 + 1.0 / 2048, 0.850, true, 1.0 / 2048},
    {QMM_TYPE_TQ2_0, 0.5 + 1.0 / 2048, 0.850, true, 1.0 / 2048},
    {QMM_TYPE_MXFP4, 0.25, 0.125, true, 0.2},
    {QMM_TYPE_NVFP4, 1.0 / 6 * (1 + 1.0 / 16), 0.103, true, 1.0 / 16},
};

static const type_bound *bound_of(int type) {
    for (size_t i = 0; i < sizeof(BOUNDS) / sizeof(BOUNDS[0]); i++)
        if (BOUNDS[i].type == type) return &BOUNDS[i];
    return NULL;
}

/* N(0,1) by Box-Muller on the shared generator. */
static float normal(tu_rng *r) {
    double u1 = (double)(tu_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
    double u2 = (double)(tu_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Quantize then dequantize nrows x k floats of `type` through the public API; the packed
 * bytes go to *packed (caller frees) when packed != NULL. */
static void round_trip(int type, const float *x, float *y, int64_t nrows, int64_t k,
                       unsigned char **packed) {
    size_t rb = 0;
    assert_int_equal(qmm_row_bytes((qmm_type)type, k, &rb), QMM_OK);
    tu_guarded q = tu_guarded_alloc(rb * (size_t)nrows);
    assert_non_null(q.data);
    assert_int_equal(qmm_quantize_rows((qmm_type)type, x, q.data, nrows, k), QMM_OK);
    assert_true(tu_guard_intact(&q));
    tu_guarded out = tu_guarded_alloc(sizeof(float) * (size_t)(nrows * k));
    assert_non_null(out.data);
    assert_int_equal(qmm_dequantize_rows((qmm_type)type, q.data, (float *)out.data, nrows, k), QMM_OK);
    assert_true(tu_guard_intact(&out));
    memcpy(y, out.data, sizeof(float) * (size_t)(nrows * k));
    tu_guarded_free(&out);
    if (packed) {
        *packed = malloc(rb * (size_t)nrows);
        assert_non_null(*packed);
        memcpy(*packed, q.data, rb * (size_t)nrows);
    }
    tu_guarded_free(&q);
}

/* Largest |x - y| / max|x| over the blocks of `bs` elements (per element when bs == 1,
 * skipping x == 0 there). */
static double max_block_rel_err(const float *x, const float *y, int64_t n, int64_t bs) {
    double worst = 0;
    for (int64_t b = 0; b < n / bs; b++) {
        double amax = 0, emax = 0;
        /* comparisons, not fmax: gcc 12's aarch64 vectorizer fails (ICE) on this fmax
         * reduction; both skip NaNs alike */
        for (int64_t j = b * bs; j < (b + 1) * bs; j++) {
            const double a = fabs((double)x[j]), e = fabs((double)x[j] - (double)y[j]);
            if (a > amax) amax = a;
            if (e > emax) emax = e;
        }
        if (amax > 0) worst = fmax(worst, emax / amax);
        else if (emax > 0) worst = INFINITY;
    }
    return worst;
}

static bool all_finite(const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(y[i])) return false;
    return true;
}

/* ---------------------------------------------------------------------------------------
 * The type table and names
 * ------------------------------------------------------------------------------------- */

static void test_type_names(void **state) {
    (void)state;
    int supported = 0;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL) {
            assert_null(qmm_type_name((qmm_type)t));
            assert_int_equal(qmm_type_block_size((qmm_type)t), 0);
            assert_false(qmm_type_is_supported(t));
            continue;
        }
        supported++;
        const char *name = qmm_type_name((qmm_type)t);
        assert_non_null(name);
        assert_string_equal(name, tr->name);
        qmm_type back = (qmm_type)-1;
        assert_int_equal(qmm_type_from_name(name, &back), QMM_OK);
        assert_int_equal(back, t);
        char upper[16];
        snprintf(upper, sizeof upper, "%s", name);
        for (char *c = upper; *c; c++)
            if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
        back = (qmm_type)-1;
        assert_int_equal(qmm_type_from_name(upper, &back), QMM_OK);
        assert_int_equal(back, t);
        size_t rb = 0;
        assert_int_equal(qmm_row_bytes((qmm_type)t, tr->block_size, &rb), QMM_OK);
        assert_int_equal(rb, tr->block_bytes);
        /* every type with a reference quantizer has a stated round-trip bound */
        if (tr->from_float_ref != NULL) assert_non_null(bound_of(t));
    }
    assert_int_equal(supported, 27); /* 26 weight types and q8_K */
    qmm_type out = QMM_TYPE_Q4_K;
    assert_int_equal(qmm_type_from_name("q4_k_m", &out), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_type_from_name("", &out), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(out, QMM_TYPE_Q4_K);
    assert_int_equal(qmm_type_from_name(NULL, &out), QMM_ERR_INVALID_ARGUMENT);
    assert_int_equal(qmm_type_from_name("q8_0", NULL), QMM_ERR_INVALID_ARGUMENT);
    assert_true(strlen(qmm_last_error()) > 0);
    assert_null(qmm_type_name((qmm_type)-1));
    assert_null(qmm_type_name((qmm_type)QMM_TYPE_COUNT));
}

/* ---------------------------------------------------------------------------------------
 * Round trips
 * ------------------------------------------------------------------------------------- */

enum { RT_ROWS = 16, RT_K = 4096 };

static void test_round_trip_bounds(void **state) {
    (void)state;
    float *x = malloc(sizeof(float) * RT_ROWS * RT_K);
    float *y = malloc(sizeof(float) * RT_ROWS * RT_K);
    assert_non_null(x);
    assert_non_null(y);
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL || tr->from_float_ref == NULL) continue; /* no quantizer to round-trip */
        const type_bound *b = bound_of(t);
        tu_rng r = tu_rng_make(1);
        for (int i = 0; i < RT_ROWS * RT_K; i++) x[i] = normal(&r);
        round_trip(t, x, y, RT_ROWS, RT_K, NULL);
        double se = 0, sx = 0;
        for (int i = 0; i < RT_ROWS * RT_K; i++) {
            se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
            sx += (double)x[i] * x[i];
        }
        const double nrmse = sqrt(se / sx);
        const double rel = max_block_rel_err(x, y, RT_ROWS * RT_K, tr->block_size);
        printf("  %-6s max block rel err %.6f (bound %.6f)  nrmse %.6f (bound %.6f)\n", tr->name,
               rel, b->max_rel, nrmse, b->nrmse);
        if (rel > b->max_rel || nrmse > b->nrmse)
            fail_msg("%s: round-trip error over its bound", tr->name);
        /* the same input gives the same bytes */
        unsigned char *p1, *p2;
        round_trip(t, x, y, 2, RT_K, &p1);
        round_trip(t, x, y, 2, RT_K, &p2);
        assert_memory_equal(p1, p2, 2 * (RT_K / tr->block_size) * tr->block_bytes);
        free(p1);
        free(p2);
    }
    free(x);
    free(y);
}

static void test_idempotent(void **state) {
    (void)state;
    float *x = malloc(sizeof(float) * 4 * RT_K);
    float *y = malloc(sizeof(float) * 4 * RT_K);
    float *z = malloc(sizeof(float) * 4 * RT_K);
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL || tr->from_float_ref == NULL || !bound_of(t)->idempotent) continue;
        tu_rng r = tu_rng_make(2);
        for (int i = 0; i < 4 * RT_K; i++) x[i] = normal(&r) * (i < 2 * RT_K ? 1.0f : 37.5f);
        round_trip(t, x, y, 4, RT_K, NULL);
        round_trip(t, y, z, 4, RT_K, NULL);
        if (memcmp(y, z, sizeof(float) * 4 * RT_K) != 0)
            fail_msg("%s: dequantize(quantize(y)) != y for a dequantized y", tr->name);
    }
    free(x);
    free(y);
    free(z);
}

/* ---------------------------------------------------------------------------------------
 * Edge blocks (one row of 256 elements, a whole number of blocks for every type)
 * ------------------------------------------------------------------------------------- */

enum { EK = 256 };

static void check_edge_within_bound(const char *what, const float *x) {
    float y[EK];
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL || tr->from_float_ref == NULL) continue; /* no quantizer to round-trip */
        round_trip(t, x, y, 1, EK, NULL);
        if (!all_finite(y, EK)) fail_msg("%s, %s: non-finite output", what, tr->name);
        const double rel = max_block_rel_err(x, y, EK, tr->block_size);
        if (rel > bound_of(t)->max_rel)
            fail_msg("%s, %s: error %.6f over bound %.6f", what, tr->name, rel, bound_of(t)->max_rel);
    }
}

static void test_edge_all_zero(void **state) {
    (void)state;
    float x[EK] = {0}, y[EK];
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL || tr->from_float_ref == NULL) continue; /* no quantizer to round-trip */
        unsigned char *packed;
        round_trip(t, x, y, 1, EK, &packed);
        for (int i = 0; i < EK; i++)
            if (y[i] != 0.0f) fail_msg("%s: zero block gives %g at %d", tr->name, y[i], i);
        assert_int_equal(qmm_validate_rows((qmm_type)t, packed, 1, EK, (EK / tr->block_size) * tr->block_bytes), QMM_OK);
        if (t == QMM_TYPE_Q8_K) { /* bsums of a zero block are 0 */
            block_q8_K b;
            memcpy(&b, packed, sizeof b);
            for (int g = 0; g < QK_K / 16; g++) assert_int_equal(b.bsums[g], 0);
        }
        free(packed);
    }
}

static void test_edge_all_equal(void **state) {
    (void)state;
    const float values[] = {0.7f, -3.25f, 1000.0f, -40.0f, 1.0f};
    float x[EK];
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        for (int i = 0; i < EK; i++) x[i] = values[v];
        char what[48];
        snprintf(what, sizeof what, "all equal %g", values[v]);
        check_edge_within_bound(what, x);
    }
}

static void test_edge_negative_max(void **state) {
    (void)state;
    float x[EK];
    tu_rng r = tu_rng_make(3);
    for (int pos = 0; pos < 32; pos += 7) {
        tu_fill_uniform(&r, x, EK, -1.0f, 1.0f);
        for (int b = 0; b < EK / 32; b++) x[32 * b + pos] = -10.0f; /* every 32-block */
        check_edge_within_bound("negative max", x);
        float y[EK];
        for (int t = 0; t < QMM_TYPE_COUNT; t++) {
            if (qmm_type_traits_get(t) == NULL || !qmm_type_has_quantizer((qmm_type)t)) continue;
            round_trip(t, x, y, 1, EK, NULL);
            /* mxfp4: -10 is the block max, d = 1, and halfway between -8 and -12: ggml takes
             * the first index, -8 */
            const float lim = t == QMM_TYPE_MXFP4 ? -7.5f : -9.0f;
            for (int b = 0; b < EK / 32; b++)
                if (!(y[32 * b + pos] < lim))
                    fail_msg("%s: the -10 at %d came back as %g", qmm_type_name((qmm_type)t),
                             32 * b + pos, y[32 * b + pos]);
        }
    }
}

/* |x| ~ 1e30: an f16 scale cannot hold d ~ 1e30/127. The legacy types, q2_K, q4_K and q5_K
 * store an infinite d or dmin (as ggml does) and qmm_validate_rows reports it. q3_K and q6_K
 * weight their scale search by x*x, which overflows to Inf; the search then yields a NaN
 * scale that ggml's `scale > max` never takes, and the block is stored as all zero with d = 0
 * (ggml's own behaviour): finite, and valid; so does iq4_xs (x*x weights, d = -0), while
 * iq4_nl stores the NaN scale its fit gives (reported) and tq1_0 / tq2_0 an infinite d = amax.
 * nvfp4's UE4M3 scale saturates at 0x7E (224): every |k * 224 - x| rounds to |x|, the first
 * index (0) wins, and the block is all zero and valid. f32, bf16, q8_K (f32 d) and mxfp4
 * (E8M0 reaches 2^127) keep the values within their bounds. */
static void test_edge_huge(void **state) {
    (void)state;
    float x[EK], y[EK];
    tu_rng r = tu_rng_make(4);
    for (int i = 0; i < EK; i++) x[i] = normal(&r) * 1e30f;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL || tr->from_float_ref == NULL) continue; /* no quantizer to round-trip */
        unsigned char *packed;
        round_trip(t, x, y, 1, EK, &packed);
        const size_t rb = (EK / tr->block_size) * tr->block_bytes;
        if (t == QMM_TYPE_F32 || t == QMM_TYPE_BF16 || t == QMM_TYPE_Q8_K || t == QMM_TYPE_MXFP4) {
            assert_true(all_finite(y, EK));
            assert_true(max_block_rel_err(x, y, EK, tr->block_size) <= bound_of(t)->max_rel);
            assert_int_equal(qmm_validate_rows((qmm_type)t, packed, 1, EK, rb), QMM_OK);
        } else if (t == QMM_TYPE_Q3_K || t == QMM_TYPE_Q6_K || t == QMM_TYPE_IQ4_XS ||
                   t == QMM_TYPE_NVFP4) {
            for (int i = 0; i < EK; i++) assert_true(y[i] == 0.0f);
            assert_int_equal(qmm_validate_rows((qmm_type)t, packed, 1, EK, rb), QMM_OK);
        } else {
            if (qmm_first_nonfinite_block(t, packed, EK / tr->block_size) != 0)
                fail_msg("%s: |x| ~ 1e30 should leave a non-finite f16 scale in block 0", tr->name);
            assert_int_equal(qmm_validate_rows((qmm_type)t, packed, 1, EK, rb), QMM_ERR_NUMERIC);
        }
        free(packed);
    }
}

/* Subnormal float32 inputs (and tiny normal ones below the f16 range): every type gives
 * finite output no larger in magnitude than the block's largest input (times 1 + the
 * type's overshoot), with finite scales; f32 and bf16 keep them (bf16 rounds to its own
 * subnormals). */
static void test_edge_subnormal(void **state) {
    (void)state;
    const float scales[] = {1e-40f, 1e-44f, 1e-30f, 1e-9f};
    float x[EK], y[EK];
    tu_rng r = tu_rng_make(5);
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        for (int i = 0; i < EK; i++) x[i] = normal(&r) * scales[s];
        for (int t = 0; t < QMM_TYPE_COUNT; t++) {
            const qmm_type_traits *tr = qmm_type_traits_get(t);
            if (tr == NULL || tr->from_float_ref == NULL) continue;
            unsigned char *packed;
            round_trip(t, x, y, 1, EK, &packed);
            assert_true(all_finite(y, EK));
            const int64_t bs = tr->block_size > 32 ? tr->block_size : 32;
            for (int64_t b = 0; b < EK / bs; b++) {
                float amax = 0;
                for (int64_t j = b * bs; j < (b + 1) * bs; j++) amax = fmaxf(amax, fabsf(x[j]));
                for (int64_t j = b * bs; j < (b + 1) * bs; j++)
                    if (fabsf(y[j]) > (t == QMM_TYPE_BF16 ? (1.0f + 1.0f / 256) * amax + ldexpf(1.0f, -133) : (float)(1.0001 * (1 + bound_of(t)->overshoot)) * amax))
                        fail_msg("%s, scale %g: |y| %g > block max %g", tr->name, scales[s], y[j], amax);
            }
            if (t == QMM_TYPE_F32) assert_memory_equal(x, y, sizeof x);
            if (t == QMM_TYPE_BF16)
                for (int i = 0; i < EK; i++) assert_true(fabsf(x[i] - y[i]) <= ldexpf(1.0f, -134) + fabsf(x[i]) / 256);
            assert_int_equal(qmm_validate_rows((qmm_type)t, packed, 1, EK, (EK / tr->block_size) * tr->block_bytes), QMM_OK);
            free(packed);
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Conversions, rounding ties, hand-built blocks
 * ------------------------------------------------------------------------------------- */

static void test_half_conversions(void **state) {
    (void)state;
    assert_true(qmm_fp16_to_fp32(0x0001) == ldexpf(1.0f, -24));
    assert_true(qmm_fp16_to_fp32(0x03FF) == 1023 * ldexpf(1.0f, -24));
    assert_true(qmm_fp16_to_fp32(0x0400) == ldexpf(1.0f, -14));
    assert_true(qmm_fp16_to_fp32(0x7BFF) == 65504.0f);
    assert_true(qmm_fp16_to_fp32(0xFBFF) == -65504.0f);
    assert_true(qmm_fp16_to_fp32(0x8001) == -ldexpf(1.0f, -24));
    assert_true(isinf(qmm_fp16_to_fp32(0x7C00)) && qmm_fp16_to_fp32(0x7C00) > 0);
    assert_true(isinf(qmm_fp16_to_fp32(0xFC00)) && qmm_fp16_to_fp32(0xFC00) < 0);
    assert_true(isnan(qmm_fp16_to_fp32(0x7E00)));
    assert_true(isnan(qmm_fp16_to_fp32(0x7C01))); /* signalling NaN stays NaN */
    assert_int_equal(qmm_f32_bits(qmm_fp16_to_fp32(0x8000)), 0x80000000u);
    /* every finite half survives half -> float -> half */
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7C00) != 0x7C00) assert_int_equal(qmm_fp32_to_fp16(qmm_fp16_to_fp32((qmm_half)h)), h);
    /* round to nearest, ties to even */
    assert_int_equal(qmm_fp32_to_fp16(1.0f + ldexpf(1.0f, -11)), 0x3C00);     /* tie -> even */
    assert_int_equal(qmm_fp32_to_fp16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3C02); /* tie -> even */
    assert_int_equal(qmm_fp32_to_fp16(65504.0f), 0x7BFF);
    assert_int_equal(qmm_fp32_to_fp16(65519.996f), 0x7BFF);
    assert_int_equal(qmm_fp32_to_fp16(65520.0f), 0x7C00);
    assert_int_equal(qmm_fp32_to_fp16(-1e30f), 0xFC00);
    assert_int_equal(qmm_fp32_to_fp16(ldexpf(1.0f, -25)), 0x0000);            /* tie -> 0 */
    assert_int_equal(qmm_fp32_to_fp16(ldexpf(1.0f, -25) * 1.0000001f), 0x0001);
    assert_int_equal(qmm_fp32_to_fp16(ldexpf(3.0f, -25)), 0x0002);            /* 1.5 -> 2 */
    assert_int_equal(qmm_fp32_to_fp16(-ldexpf(1023.5f, -24)), 0x8400);        /* carries to normal */
    assert_int_equal(qmm_fp32_to_fp16(1e-40f), 0x0000);
    assert_int_equal(qmm_fp32_to_fp16(NAN) & 0x7E00, 0x7E00);
    /* bf16 */
    assert_int_equal(qmm_fp32_to_bf16(qmm_f32_from_bits(0x3F808000u)), 0x3F80); /* tie -> even */
    assert_int_equal(qmm_fp32_to_bf16(qmm_f32_from_bits(0x3F818000u)), 0x3F82); /* tie -> even */
    assert_int_equal(qmm_fp32_to_bf16(qmm_f32_from_bits(0x3F808001u)), 0x3F81);
    assert_int_equal(qmm_fp32_to_bf16(qmm_f32_from_bits(0x00018000u)), 0x0002); /* subnormal kept */
    assert_int_equal(qmm_fp32_to_bf16(qmm_f32_from_bits(0x7F800001u)), 0x7FC0); /* sNaN -> quiet */
    assert_int_equal(qmm_fp32_to_bf16(qmm_f32_from_bits(0xFF800000u)), 0xFF80);
    assert_int_equal(qmm_fp32_to_bf16(qmm_f32_from_bits(0x7F7FFFFFu)), 0x7F80); /* FLT_MAX -> Inf */
    assert_true(qmm_bf16_to_fp32(0x0001) == ldexpf(1.0f, -133));
}

/* Quantize one 32-element (or 256) block of `type` and return the dequantized values. */
static void one_block(int type, const float *x, int64_t k, float *y) { round_trip(type, x, y, 1, k, NULL); }

static void test_rounding_ties(void **state) {
    (void)state;
    float x[QK_K], y[QK_K];
    /* q8_0: max 127 -> d = 1, id = 1; roundf: ties away from zero */
    memset(x, 0, sizeof x);
    x[0] = 127.0f; x[1] = 2.5f; x[2] = -2.5f; x[3] = 0.5f; x[4] = -0.5f; x[5] = 3.5f;
    one_block(QMM_TYPE_Q8_0, x, 32, y);
    assert_true(y[1] == 3.0f && y[2] == -3.0f && y[3] == 1.0f && y[4] == -1.0f && y[5] == 4.0f);
    /* q4_0: max -8 -> d = 1; (int8)(x + 8.5) truncation: ties round up (toward +Inf) */
    memset(x, 0, sizeof x);
    x[0] = -8.0f; x[1] = 2.5f; x[2] = -2.5f; x[3] = 0.5f; x[4] = -0.5f; x[5] = 7.5f; x[6] = 7.9f;
    one_block(QMM_TYPE_Q4_0, x, 32, y);
    assert_true(y[0] == -8.0f && y[1] == 3.0f && y[2] == -2.0f && y[3] == 1.0f && y[4] == 0.0f);
    assert_true(y[5] == 7.0f && y[6] == 7.0f); /* clamped at q = 15 */
    /* q5_0: max -16 -> d = 1; same rule with +16.5 */
    memset(x, 0, sizeof x);
    x[0] = -16.0f; x[1] = 2.5f; x[2] = -2.5f; x[3] = 15.5f;
    one_block(QMM_TYPE_Q5_0, x, 32, y);
    assert_true(y[0] == -16.0f && y[1] == 3.0f && y[2] == -2.0f && y[3] == 15.0f);
    /* q4_1: min 0, max 15 -> d = 1, m = 0; (x - min) * id + 0.5 truncated: ties up */
    memset(x, 0, sizeof x);
    x[0] = 15.0f; x[1] = 2.5f; x[2] = 0.5f; x[3] = 14.5f;
    one_block(QMM_TYPE_Q4_1, x, 32, y);
    assert_true(y[0] == 15.0f && y[1] == 3.0f && y[2] == 1.0f && y[3] == 15.0f);
    /* q5_1: min 0, max 31 -> d = 1 */
    memset(x, 0, sizeof x);
    x[0] = 31.0f; x[1] = 2.5f; x[2] = 30.5f;
    one_block(QMM_TYPE_Q5_1, x, 32, y);
    assert_true(y[0] == 31.0f && y[1] == 3.0f && y[2] == 31.0f);
    /* q8_K: max -127 -> iscale = 1, d = 1; nearest_int: ties to even */
    memset(x, 0, sizeof x);
    x[0] = -127.0f; x[1] = 2.5f; x[2] = 3.5f; x[3] = -2.5f; x[4] = 0.5f; x[5] = -1.5f;
    one_block(QMM_TYPE_Q8_K, x, QK_K, y);
    assert_true(y[0] == -127.0f && y[1] == 2.0f && y[2] == 4.0f && y[3] == -2.0f && y[4] == 0.0f && y[5] == -2.0f);
}

/* Distinct quant per position, so a nibble-order or high-bit mistake shows. */
static void test_known_blocks(void **state) {
    (void)state;
    float y[QK_K];
    const qmm_half scales[] = {0x3C00 /* 1 */, 0xC000 /* -2 */, 0x0001, 0x03FF, 0x7BFF};
    for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        const float d = qmm_fp16_to_fp32(scales[s]);
        block_q4_0 a = {.d = scales[s]};
        for (int j = 0; j < 16; j++) a.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        qmm_dequantize_row_q4_0(&a, y, 32);
        for (int j = 0; j < 16; j++) {
            assert_true(y[j] == (float)(j - 8) * d);
            assert_true(y[j + 16] == (float)(7 - j) * d);
        }
        block_q4_1 b = {.d = scales[s], .m = 0xBC00 /* -1 */};
        for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        qmm_dequantize_row_q4_1(&b, y, 32);
        for (int j = 0; j < 16; j++) {
            assert_true(y[j] == (float)j * d + -1.0f);
            assert_true(y[j + 16] == (float)(15 - j) * d + -1.0f);
        }
        block_q5_0 c = {.d = scales[s], .qh = {0xA5, 0x0F, 0x33, 0x81}};
        const uint32_t qh = 0x81330FA5u; /* the bytes above, little-endian */
        for (int j = 0; j < 16; j++) c.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        qmm_dequantize_row_q5_0(&c, y, 32);
        for (int j = 0; j < 32; j++) {
            const int lo = j < 16 ? j : 15 - (j - 16);
            const int q = lo | (int)((qh >> j) & 1) << 4;
            assert_true(y[j] == (float)(q - 16) * d);
        }
        block_q5_1 e = {.d = scales[s], .m = 0x3800 /* 0.5 */, .qh = {0xA5, 0x0F, 0x33, 0x81}};
        memcpy(e.qs, c.qs, 16);
        qmm_dequantize_row_q5_1(&e, y, 32);
        for (int j = 0; j < 32; j++) {
            const int lo = j < 16 ? j : 15 - (j - 16);
            const int q = lo | (int)((qh >> j) & 1) << 4;
            assert_true(y[j] == (float)q * d + 0.5f);
        }
        block_q8_0 f = {.d = scales[s]};
        for (int j = 0; j < 32; j++) f.qs[j] = (int8_t)(j * 8 - 128); /* -128 is legal bytes */
        qmm_dequantize_row_q8_0(&f, y, 32);
        for (int j = 0; j < 32; j++) assert_true(y[j] == (float)(j * 8 - 128) * d);
    }
    block_q8_K g;
    memset(&g, 0, sizeof g);
    g.d = -0.25f;
    for (int j = 0; j < QK_K; j++) g.qs[j] = (int8_t)(j - 128);
    qmm_dequantize_row_q8_K(&g, y, QK_K);
    for (int j = 0; j < QK_K; j++) assert_true(y[j] == -0.25f * (float)(j - 128));
}

static void test_q8_K_bsums(void **state) {
    (void)state;
    float x[4 * QK_K];
    tu_rng r = tu_rng_make(6);
    for (int i = 0; i < 4 * QK_K; i++) x[i] = normal(&r) * (i < 2 * QK_K ? 1.0f : 1e-3f);
    block_q8_K b[4];
    assert_int_equal(qmm_quantize_rows(QMM_TYPE_Q8_K, x, b, 1, 4 * QK_K), QMM_OK);
    for (int i = 0; i < 4; i++) {
        int has_extreme = 0;
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) {
                sum += b[i].qs[16 * g + j];
                has_extreme |= b[i].qs[16 * g + j] == 127 || b[i].qs[16 * g + j] == -127;
            }
            assert_int_equal(b[i].bsums[g], sum);
        }
        assert_true(has_extreme);
    }
}

/* ---------------------------------------------------------------------------------------
 * Validation of scales
 * ------------------------------------------------------------------------------------- */

/* Byte offsets of each type's scale fields, written out from ggml-common.h independently of
 * validate.c; kind 2 = f16, 4 = f32, 3 = bf16 element. */
typedef struct { int type; int n; int off[2]; int kind; } scale_spec;
static const scale_spec SPECS[] = {
    {QMM_TYPE_F32, 1, {0, 0}, 4},  {QMM_TYPE_F16, 1, {0, 0}, 2},   {QMM_TYPE_BF16, 1, {0, 0}, 3},
    {QMM_TYPE_Q4_0, 1, {0, 0}, 2}, {QMM_TYPE_Q4_1, 2, {0, 2}, 2},  {QMM_TYPE_Q5_0, 1, {0, 0}, 2},
    {QMM_TYPE_Q5_1, 2, {0, 2}, 2}, {QMM_TYPE_Q8_0, 1, {0, 0}, 2},  {QMM_TYPE_Q2_K, 2, {80, 82}, 2},
    {QMM_TYPE_Q3_K, 1, {108, 0}, 2}, {QMM_TYPE_Q4_K, 2, {0, 2}, 2}, {QMM_TYPE_Q5_K, 2, {0, 2}, 2},
    {QMM_TYPE_Q6_K, 1, {208, 0}, 2}, {QMM_TYPE_Q8_K, 1, {0, 0}, 4},
};

static void put_nonfinite(unsigned char *p, int kind, int nan) {
    if (kind == 2 || kind == 3) {
        const uint16_t h = kind == 2 ? (nan ? 0x7E01 : 0xFC00) : (nan ? 0xFFC1 : 0x7F80);
        memcpy(p, &h, 2);
    } else {
        const uint32_t u = nan ? 0x7FC00001u : 0xFF800000u;
        memcpy(p, &u, 4);
    }
}

static void test_validate_scales(void **state) {
    (void)state;
    enum { VK = 2048, VROWS = 3, PAD = 5 }; /* 8 super-blocks: block 5 exists for every type */
    float x[VK * VROWS];
    tu_rng r = tu_rng_make(7);
    for (int i = 0; i < VK * VROWS; i++) x[i] = normal(&r);
    for (size_t s = 0; s < sizeof SPECS / sizeof SPECS[0]; s++) {
        const scale_spec *sp = &SPECS[s];
        const qmm_type_traits *tr = qmm_type_traits_get(sp->type);
        assert_non_null(tr);
        const int64_t nb = VK / tr->block_size;
        const size_t rb = (size_t)nb * tr->block_bytes, stride = rb + PAD;
        unsigned char *w = malloc(stride * VROWS);
        memset(w, 0xFF, stride * VROWS); /* the padding reads as NaN and must be ignored */
        for (int i = 0; i < VROWS; i++) tr->from_float_ref(x + i * VK, w + i * stride, VK);
        assert_int_equal(qmm_validate_rows((qmm_type)sp->type, w, VROWS, VK, stride), QMM_OK);
        /* non-scale bytes of 0xFF are not scales */
        if (sp->kind == 2 && tr->block_size > 1) {
            unsigned char *blk = w + stride + 3 * tr->block_bytes;
            for (size_t byte = 0; byte < tr->block_bytes; byte++) {
                bool is_scale = false;
                for (int f = 0; f < sp->n; f++)
                    if ((int)byte == sp->off[f] || (int)byte == sp->off[f] + 1) is_scale = true;
                if (!is_scale) blk[byte] = 0xFF;
            }
            assert_int_equal(qmm_validate_rows((qmm_type)sp->type, w, VROWS, VK, stride), QMM_OK);
        }
        /* extreme but finite f16 scales pass */
        if (sp->kind == 2) {
            const uint16_t ext[] = {0x0001, 0x03FF, 0x7BFF, 0xFBFF, 0x8000};
            for (int f = 0; f < sp->n; f++)
                for (int e = 0; e < 5; e++) memcpy(w + 2 * stride + (size_t)e * tr->block_bytes + sp->off[f], &ext[e], 2);
            assert_int_equal(qmm_validate_rows((qmm_type)sp->type, w, VROWS, VK, stride), QMM_OK);
        }
        /* each scale field, Inf and NaN, in row 1 block 5 */
        for (int f = 0; f < sp->n; f++) {
            for (int nan = 0; nan < 2; nan++) {
                unsigned char *p = w + stride + 5 * tr->block_bytes + sp->off[f];
                unsigned char saved[4];
                memcpy(saved, p, 4);
                put_nonfinite(p, sp->kind, nan);
                if (qmm_first_nonfinite_block(sp->type, w + stride, nb) != 5)
                    fail_msg("%s: non-finite field %d (nan=%d) not found in block 5", tr->name, f, nan);
                assert_int_equal(qmm_first_nonfinite_block(sp->type, w, nb), -1);
                assert_int_equal(qmm_validate_rows((qmm_type)sp->type, w, VROWS, VK, stride), QMM_ERR_NUMERIC);
                const char *msg = qmm_last_error();
                if (strstr(msg, "row 1") == NULL || strstr(msg, "block 5") == NULL)
                    fail_msg("%s: validation message does not name row 1, block 5: %s", tr->name, msg);
                memcpy(p, saved, 4);
            }
        }
        assert_int_equal(qmm_validate_rows((qmm_type)sp->type, w, VROWS, VK, stride), QMM_OK);
        free(w);
    }
    assert_int_equal(qmm_first_nonfinite_block(4, x, 1), -1); /* unsupported id: nothing */
}

/* ---------------------------------------------------------------------------------------
 * Bad arguments: an error, a message, and nothing written
 * ------------------------------------------------------------------------------------- */

/* qmm_random_rows: valid rows (validation passes, every element finite) for every type at
 * every scale it accepts, the same bytes for the same seed, and scales out of range refused. */
static void test_random_rows(void **state) {
    (void)state;
    const double scales[] = {1e-6, 1e-3, 1.0, 1e4, 1e8, 1e29};
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL) continue;
        const int64_t k = tr->block_size == 1 ? 64 : tr->block_size * 2, rows = 3;
        size_t rb;
        assert_int_equal(qmm_row_bytes((qmm_type)t, k, &rb), QMM_OK);
        unsigned char *a = malloc(rb * rows), *b = malloc(rb * rows);
        float *f = malloc(sizeof(float) * (size_t)(k * rows));
        assert_true(a && b && f);
        for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
            assert_int_equal(qmm_random_rows((qmm_type)t, 7, scales[i], a, rows, k), QMM_OK);
            assert_int_equal(qmm_random_rows((qmm_type)t, 7, scales[i], b, rows, k), QMM_OK);
            assert_memory_equal(a, b, rb * rows);
            if (qmm_validate_rows((qmm_type)t, a, rows, k, rb) != QMM_OK)
                fail_msg("%s scale %g: %s", tr->name, scales[i], qmm_last_error());
            assert_int_equal(qmm_dequantize_rows((qmm_type)t, a, f, rows, k), QMM_OK);
            for (int64_t e = 0; e < k * rows; e++)
                if (!isfinite(f[e])) fail_msg("%s scale %g: element %lld = %g", tr->name, scales[i], (long long)e, f[e]);
        }
        assert_int_equal(qmm_random_rows((qmm_type)t, 7, 0.0, a, rows, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_random_rows((qmm_type)t, 7, 1e30, a, rows, k), QMM_ERR_INVALID_ARGUMENT);
        free(a);
        free(b);
        free(f);
    }
}

static void test_bad_arguments(void **state) {
    (void)state;
    enum { BK = 512, BYTES = 8192 };
    float src[BK] = {0};
    unsigned char dst[BYTES], ref[BYTES];
    memset(ref, 0xA5, sizeof ref);
    const int bad_types[] = {-1, 4, 5, 9, 24, 28, 31, 38, QMM_TYPE_COUNT, 1000};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        const qmm_type t = (qmm_type)bad_types[i];
        memcpy(dst, ref, sizeof dst);
        assert_int_equal(qmm_quantize_rows(t, src, dst, 1, BK), QMM_ERR_UNSUPPORTED);
        assert_int_equal(qmm_dequantize_rows(t, dst, (float *)dst, 1, BK), QMM_ERR_UNSUPPORTED);
        assert_int_equal(qmm_validate_rows(t, dst, 1, BK, BYTES), QMM_ERR_UNSUPPORTED);
        size_t rb = 77;
        assert_int_equal(qmm_row_bytes(t, BK, &rb), QMM_ERR_UNSUPPORTED);
        assert_int_equal(rb, 77);
        assert_memory_equal(dst, ref, sizeof dst);
        assert_true(strlen(qmm_last_error()) > 0);
    }
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        const qmm_type_traits *tr = qmm_type_traits_get(t);
        if (tr == NULL) continue;
        const qmm_type ty = (qmm_type)t;
        /* k <= 0, and (for blocks > 1) k not a multiple of the block size */
        const int64_t bad_k[] = {0, -tr->block_size, INT64_MIN, tr->block_size + 1};
        const int nbad = tr->block_size > 1 ? 4 : 3;
        for (int i = 0; i < nbad; i++) {
            const int64_t k = bad_k[i];
            memcpy(dst, ref, sizeof dst);
            float out[BK];
            memset(out, 0xA5, sizeof out);
            size_t rb = 77;
            assert_int_equal(qmm_row_bytes(ty, k, &rb), QMM_ERR_INVALID_ARGUMENT);
            assert_int_equal(rb, 77);
            assert_int_equal(qmm_quantize_rows(ty, src, dst, 1, k), QMM_ERR_INVALID_ARGUMENT);
            assert_int_equal(qmm_dequantize_rows(ty, ref, out, 1, k), QMM_ERR_INVALID_ARGUMENT);
            assert_int_equal(qmm_validate_rows(ty, ref, 1, k, BYTES), QMM_ERR_INVALID_ARGUMENT);
            assert_memory_equal(dst, ref, sizeof dst);
            assert_memory_equal(out, ref, sizeof out);
            char msg[64];
            snprintf(msg, sizeof msg, "%lld", (long long)k);
            if (strstr(qmm_last_error(), msg) == NULL)
                fail_msg("%s: error for k=%lld does not name it: %s", tr->name, (long long)k, qmm_last_error());
        }
        const int64_t k = tr->block_size == 1 ? 64 : tr->block_size;
        float out[BK];
        memset(out, 0xA5, sizeof out);
        memcpy(dst, ref, sizeof dst);
        size_t rb = 77;
        assert_int_equal(qmm_row_bytes(ty, k, NULL), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_row_bytes(ty, k, &rb), QMM_OK);
        assert_int_equal(qmm_quantize_rows(ty, NULL, dst, 1, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_quantize_rows(ty, src, NULL, 1, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_quantize_rows(ty, src, dst, -1, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_quantize_rows(ty, src, dst, INT64_MAX, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_dequantize_rows(ty, NULL, out, 1, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_dequantize_rows(ty, ref, NULL, 1, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_dequantize_rows(ty, ref, out, -1, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_dequantize_rows(ty, ref, out, INT64_MAX / 2, k), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_validate_rows(ty, NULL, 1, k, rb), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_validate_rows(ty, ref, -1, k, rb), QMM_ERR_INVALID_ARGUMENT);
        assert_int_equal(qmm_validate_rows(ty, ref, 2, k, rb - 1), QMM_ERR_INVALID_ARGUMENT);
        /* zero rows: success, nothing written */
        assert_int_equal(qmm_quantize_rows(ty, src, dst, 0, k),
                         tr->from_float_ref != NULL ? QMM_OK : QMM_ERR_UNSUPPORTED);
        assert_int_equal(qmm_dequantize_rows(ty, ref, out, 0, k), QMM_OK);
        assert_memory_equal(dst, ref, sizeof dst);
        assert_memory_equal(out, ref, sizeof out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_half_conversions),
        cmocka_unit_test(test_round_trip_bounds),
        cmocka_unit_test(test_idempotent),
        cmocka_unit_test(test_edge_all_zero),
        cmocka_unit_test(test_edge_all_equal),
        cmocka_unit_test(test_edge_negative_max),
        cmocka_unit_test(test_edge_huge),
        cmocka_unit_test(test_edge_subnormal),
        cmocka_unit_test(test_rounding_ties),
        cmocka_unit_test(test_known_blocks),
        cmocka_unit_test(test_q8_K_bsums),
        cmocka_unit_test(test_validate_scales),
        cmocka_unit_test(test_random_rows),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
