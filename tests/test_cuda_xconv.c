/*
 * test_cuda_xconv.c — the per-call activation conversion kernels of the CUDA backend against
 * host rules, on both of their paths (vector: aligned pointers, ldx % 4 == 0, k % 4 == 0;
 * scalar: anything else) and on tails (k not a multiple of 4, n = 1, ldx > k, more rows than
 * gridDim.y holds).
 *
 *   qmm_cuda_x_to_f16    every element == qmm_fp32_to_fp16 (round to nearest even; exact f16
 *                        ties, subnormals, |x| >= 65520 -> +-Inf; NaN stays a NaN); nothing
 *                        written before dst or past its n*k halves.
 *   qmm_cuda_f32_to_f16  the same values, and *flag set exactly when a value is non-finite or
 *                        rounds to +-Inf; dst = NULL checks only.
 *   qmm_cuda_fp8_rows    scale[r] == max|row| / 448 (1 for a zero row) bit for bit, every byte
 *                        == E4M3(v / scale) rounded to nearest even (host encoder below, from
 *                        the OCP FP8 E4M3 definition: bias 7, 3 mantissa bits, 0x7E = 448,
 *                        subnormal step 2^-9), padding columns and rows zero, scale NaN and
 *                        *flag set for a row with NaN/Inf, nothing written past rows_pad*k_pad.
 *
 * Skips (exit 77) without the CUDA backend or a usable device; fp8 rows need sm_89+.
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

#include "qmm.h"
#include "test_util.h"

#ifndef QMM_WITH_CUDA

int main(void) {
    printf("test_cuda_xconv: skipped: this libqmm was built without the CUDA backend\n");
    return 77;
}

#else

#include <cuda_runtime.h>

#include "cuda/cuda_internal.h"
#include "formats/fp16.h"

#define CUDA_OK(call)                                                                    \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(e_));       \
    } while (0)

static bool g_fp8;

static uint32_t f32_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Activation-like values with the cases that matter for f16 rounding mixed in: exact ties
 * between neighbouring f16 values (normal and subnormal), the overflow boundary 65504 /
 * 65520, NaN and +-Inf when `specials`, otherwise uniform in [-4, 4). */
static void fill_values(tu_rng *r, float *x, size_t count, bool specials) {
    for (size_t i = 0; i < count; i++) {
        const unsigned kind = (unsigned)(tu_rng_u64(r) % 10);
        if (kind == 0) { /* midpoint between f16 h and h + 1 (exact in f32) */
            const uint16_t h = (uint16_t)(tu_rng_u64(r) % 0x7BFF);
            const float lo = qmm_fp16_to_fp32(h), hi = qmm_fp16_to_fp32((uint16_t)(h + 1));
            x[i] = (tu_rng_u64(r) & 1 ? -0.5f : 0.5f) * (lo + hi);
        } else if (kind == 1 && specials) {
            static const float edge[] = {65504.0f, 65519.996f, 65520.0f, 70000.0f, 1e30f};
            x[i] = (tu_rng_u64(r) & 1 ? -1.0f : 1.0f) * edge[tu_rng_u64(r) % 5];
        } else if (kind == 2 && specials) {
            const unsigned s = (unsigned)(tu_rng_u64(r) % 3);
            x[i] = s == 0 ? NAN : s == 1 ? INFINITY : -INFINITY;
        } else if (kind == 3) { /* f16 subnormal range and below */
            x[i] = ldexpf(tu_rng_uniform(r, -1.0f, 1.0f), -14 - (int)(tu_rng_u64(r) % 14));
        } else {
            x[i] = tu_rng_uniform(r, -4.0f, 4.0f);
        }
    }
}

static bool f16_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

/* GPU f16 h equals the host rounding of v (any NaN for a NaN). */
static bool f16_matches(uint16_t h, float v) {
    return isnan(v) ? f16_is_nan(h) : h == qmm_fp32_to_fp16(v);
}

/* ---------------------------------------------------------------------------------------
 * x_to_f16
 * ------------------------------------------------------------------------------------- */

typedef struct xcase {
    int64_t n, k, ldx;
    int64_t xoff; /* floats from a 256-byte aligned base: 1 makes rows unaligned */
    int64_t doff; /* halves from a 256-byte aligned base: 1 makes dst unaligned */
} xcase;

static void run_x_case(tu_rng *r, const xcase *c) {
    const int64_t xcount = c->xoff + (c->n - 1) * c->ldx + c->k;
    const int64_t dcount = c->doff + c->n * c->k + 8; /* 8 halves of guard after the output */
    float *x = malloc((size_t)xcount * sizeof(float));
    uint16_t *d = malloc((size_t)dcount * sizeof(uint16_t));
    assert_true(x != NULL && d != NULL);
    fill_values(r, x, (size_t)xcount, true);
    float *dx;
    uint16_t *dd;
    CUDA_OK(cudaMalloc((void **)&dx, (size_t)xcount * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&dd, (size_t)dcount * sizeof(uint16_t)));
    CUDA_OK(cudaMemcpy(dx, x, (size_t)xcount * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dd, 0xAB, (size_t)dcount * sizeof(uint16_t)));
    CUDA_OK(qmm_cuda_x_to_f16(dx + c->xoff, c->n, c->k, c->ldx, dd + c->doff, 0));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(d, dd, (size_t)dcount * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < dcount; i++) {
        const int64_t o = i - c->doff;
        if (o < 0 || o >= c->n * c->k) {
            if (d[i] != 0xABABu)
                fail_msg("x_to_f16 n %lld k %lld ldx %lld xoff %lld doff %lld: half %lld outside the "
                         "output written (0x%04x)", (long long)c->n, (long long)c->k, (long long)c->ldx,
                         (long long)c->xoff, (long long)c->doff, (long long)i, d[i]);
            continue;
        }
        const int64_t t = o / c->k, e = o % c->k;
        const float v = x[c->xoff + t * c->ldx + e];
        if (!f16_matches(d[i], v))
            fail_msg("x_to_f16 n %lld k %lld ldx %lld xoff %lld doff %lld: row %lld element %lld: "
                     "x = %a, gpu 0x%04x, host 0x%04x", (long long)c->n, (long long)c->k, (long long)c->ldx,
                     (long long)c->xoff, (long long)c->doff, (long long)t, (long long)e, (double)v, d[i],
                     qmm_fp32_to_fp16(v));
    }
    cudaFree(dx);
    cudaFree(dd);
    free(x);
    free(d);
}

static void test_x_to_f16_paths(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(4608);
    const xcase cases[] = {
        /* vector path: aligned, ldx % 4 == 0, k % 4 == 0 */
        {1, 4, 4, 0, 0},      {3, 4608, 4608, 0, 0},  {5, 1024, 1028, 0, 0}, {70, 64, 128, 0, 0},
        {2, 4096 * 4 + 8, 4096 * 4 + 8, 0, 0}, /* more quads per row than one block's threads */
        /* scalar path: each condition broken alone */
        {3, 4608, 4608, 1, 0},  {3, 4608, 4609, 0, 0}, {3, 4606, 4606, 0, 0}, {3, 4608, 4608, 0, 1},
        /* tails */
        {1, 1, 1, 0, 0},      {1, 3, 3, 0, 0},        {4, 5, 9, 0, 0},       {7, 37, 40, 0, 0},
        {2, 1029, 2000, 3, 1}, {1, 4611, 4611, 0, 0},
        /* more rows than gridDim.y (65535): the row loop */
        {70000, 1, 1, 0, 0},  {65537, 4, 4, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_x_case(&r, &cases[i]);
}

/* ---------------------------------------------------------------------------------------
 * f32_to_f16 (weights at creation) and its flag
 * ------------------------------------------------------------------------------------- */

static void run_f16_case(tu_rng *r, int64_t count, int64_t soff, int64_t doff, bool with_dst, bool specials,
                         int64_t plant /* -1: none, else index set to 65520 (rounds to Inf) */) {
    const int64_t scount = soff + count, dcount = doff + count + 8;
    float *x = malloc((size_t)(scount > 0 ? scount : 1) * sizeof(float));
    uint16_t *d = malloc((size_t)dcount * sizeof(uint16_t));
    assert_true(x != NULL && d != NULL);
    fill_values(r, x, (size_t)scount, specials);
    if (plant >= 0) x[soff + plant] = -65520.0f;
    bool want = false;
    for (int64_t i = 0; i < count; i++) {
        const float v = x[soff + i];
        want = want || !isfinite(v) || (qmm_fp32_to_fp16(v) & 0x7FFFu) == 0x7C00u;
    }
    float *dx;
    uint16_t *dd;
    int *dflag, flag = 0;
    CUDA_OK(cudaMalloc((void **)&dx, (size_t)(scount > 0 ? scount : 1) * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&dd, (size_t)dcount * sizeof(uint16_t)));
    CUDA_OK(cudaMalloc((void **)&dflag, sizeof(int)));
    if (scount > 0) CUDA_OK(cudaMemcpy(dx, x, (size_t)scount * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dd, 0xAB, (size_t)dcount * sizeof(uint16_t)));
    CUDA_OK(cudaMemset(dflag, 0, sizeof(int)));
    CUDA_OK(qmm_cuda_f32_to_f16(dx + soff, count, with_dst ? dd + doff : NULL, dflag, 0));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(d, dd, (size_t)dcount * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&flag, dflag, sizeof(int), cudaMemcpyDeviceToHost));
    if ((flag != 0) != want)
        fail_msg("f32_to_f16 count %lld soff %lld doff %lld dst %d: flag %d, want %d", (long long)count,
                 (long long)soff, (long long)doff, (int)with_dst, flag, (int)want);
    for (int64_t i = 0; i < dcount; i++) {
        const int64_t o = i - doff;
        if (!with_dst || o < 0 || o >= count) {
            if (d[i] != 0xABABu)
                fail_msg("f32_to_f16 count %lld soff %lld doff %lld dst %d: half %lld written (0x%04x)",
                         (long long)count, (long long)soff, (long long)doff, (int)with_dst, (long long)i, d[i]);
            continue;
        }
        if (!f16_matches(d[i], x[soff + o]))
            fail_msg("f32_to_f16 count %lld soff %lld doff %lld: element %lld: x = %a, gpu 0x%04x, host 0x%04x",
                     (long long)count, (long long)soff, (long long)doff, (long long)o, (double)x[soff + o], d[i],
                     qmm_fp32_to_fp16(x[soff + o]));
    }
    cudaFree(dx);
    cudaFree(dd);
    cudaFree(dflag);
    free(x);
    free(d);
}

static void test_f32_to_f16_paths(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(65520);
    static const int64_t counts[] = {0, 1, 3, 4, 5, 1027, 300001};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        const int64_t c = counts[i];
        for (int off = 0; off < 4; off++) {
            const int64_t soff = off & 1, doff = off >> 1;
            run_f16_case(&r, c, soff, doff, true, false, -1);        /* finite, in range: no flag */
            if (c > 0) {
                run_f16_case(&r, c, soff, doff, true, false, c - 1); /* -65520 last: flag */
                run_f16_case(&r, c, soff, doff, true, true, -1);     /* specials */
            }
        }
        run_f16_case(&r, c, 0, 0, false, false, -1); /* check only */
        if (c > 0) run_f16_case(&r, c, 1, 0, false, false, c / 2);
    }
}

/* ---------------------------------------------------------------------------------------
 * fp8 rows
 * ------------------------------------------------------------------------------------- */

/* E4M3 bits of finite q (round to nearest even; beyond 448 saturates to +-448 = 0x7E, as
 * __NV_SATFINITE). */
static uint8_t e4m3_host(float q) {
    const uint8_t sign = signbit(q) ? 0x80u : 0u;
    const float a = fabsf(q);
    if (a < 0x1p-6f) return (uint8_t)(sign | (uint8_t)rintf(a * 512.0f)); /* subnormal, step 2^-9 */
    int e2;
    (void)frexpf(a, &e2);
    int ex = e2 - 1;                                           /* a = 2^ex * [1, 2) */
    int mq = (int)rintf((ldexpf(a, -ex) - 1.0f) * 8.0f);       /* exact scaling, RNE */
    if (mq == 8) ex++, mq = 0;
    if (ex + 7 > 15 || (ex + 7 == 15 && mq == 7)) return (uint8_t)(sign | 0x7Eu);
    return (uint8_t)(sign | (uint8_t)((ex + 7) << 3) | (uint8_t)mq);
}

typedef struct fcase {
    int64_t rows, rows_pad, k, ld, k_pad;
    int64_t soff;  /* floats: 1 makes rows unaligned */
    int64_t doff;  /* bytes: 1 or 2 makes dst unaligned (byte stores) */
    bool bad_row;  /* row 0 gets a NaN/Inf */
    bool zero_row; /* the last row is all zeros */
} fcase;

static void run_fp8_case(tu_rng *r, const fcase *c) {
    const int64_t scount = c->soff + (c->rows - 1) * c->ld + c->k;
    const int64_t dcount = c->doff + c->rows_pad * c->k_pad + 16;
    float *x = malloc((size_t)scount * sizeof(float));
    uint8_t *d = malloc((size_t)dcount);
    float *sc = malloc((size_t)(c->rows_pad + 1) * sizeof(float));
    assert_true(x != NULL && d != NULL && sc != NULL);
    for (int64_t i = 0; i < scount; i++) {
        /* a wide spread of magnitudes per row, some tiny (E4M3 subnormals after scaling) */
        const float u = tu_rng_uniform(r, -1.0f, 1.0f);
        x[i] = ldexpf(u, (int)(tu_rng_u64(r) % 24) - 12);
    }
    if (c->bad_row) x[c->soff + c->k / 2] = (tu_rng_u64(r) & 1) ? NAN : -INFINITY;
    if (c->zero_row)
        for (int64_t e = 0; e < c->k; e++) x[c->soff + (c->rows - 1) * c->ld + e] = 0.0f;
    float *dx, *dsc;
    uint8_t *dd;
    int *dflag, flag = 0;
    CUDA_OK(cudaMalloc((void **)&dx, (size_t)scount * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&dd, (size_t)dcount));
    CUDA_OK(cudaMalloc((void **)&dsc, (size_t)(c->rows_pad + 1) * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&dflag, sizeof(int)));
    CUDA_OK(cudaMemcpy(dx, x, (size_t)scount * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dd, 0xAB, (size_t)dcount));
    CUDA_OK(cudaMemset(dsc, 0xAB, (size_t)(c->rows_pad + 1) * sizeof(float)));
    CUDA_OK(cudaMemset(dflag, 0, sizeof(int)));
    CUDA_OK(qmm_cuda_fp8_rows(dx + c->soff, c->rows, c->rows_pad, c->k, c->ld, c->k_pad, dd + c->doff, dsc,
                              dflag, 0));
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(d, dd, (size_t)dcount, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(sc, dsc, (size_t)(c->rows_pad + 1) * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(&flag, dflag, sizeof(int), cudaMemcpyDeviceToHost));
    char what[160];
    snprintf(what, sizeof what, "fp8_rows rows %lld/%lld k %lld ld %lld k_pad %lld soff %lld doff %lld",
             (long long)c->rows, (long long)c->rows_pad, (long long)c->k, (long long)c->ld, (long long)c->k_pad,
             (long long)c->soff, (long long)c->doff);
    if ((flag != 0) != c->bad_row) fail_msg("%s: flag %d, want %d", what, flag, (int)c->bad_row);
    for (int64_t i = 0; i < c->doff; i++)
        if (d[i] != 0xABu) fail_msg("%s: byte %lld before dst written", what, (long long)i);
    for (int64_t i = c->doff + c->rows_pad * c->k_pad; i < dcount; i++)
        if (d[i] != 0xABu) fail_msg("%s: byte %lld past rows_pad * k_pad written", what, (long long)i);
    if (f32_bits(sc[c->rows_pad]) != 0xABABABABu) fail_msg("%s: scale past rows_pad written", what);
    for (int64_t j = 0; j < c->rows_pad; j++) {
        const uint8_t *out = d + c->doff + j * c->k_pad;
        if (j >= c->rows) {
            if (f32_bits(sc[j]) != 0u) fail_msg("%s: padding row %lld: scale %a, want 0", what, (long long)j, (double)sc[j]);
            for (int64_t e = 0; e < c->k_pad; e++)
                if (out[e] != 0) fail_msg("%s: padding row %lld byte %lld = 0x%02x", what, (long long)j, (long long)e, out[e]);
            continue;
        }
        const float *v = x + c->soff + j * c->ld;
        if (c->bad_row && j == 0) {
            if (!isnan(sc[0])) fail_msg("%s: row with NaN/Inf: scale %a, want NaN", what, (double)sc[0]);
        } else {
            float amax = 0.0f;
            for (int64_t e = 0; e < c->k; e++) amax = fabsf(v[e]) > amax ? fabsf(v[e]) : amax;
            const float s = amax > 0.0f ? amax / 448.0f : 1.0f;
            if (f32_bits(sc[j]) != f32_bits(s))
                fail_msg("%s: row %lld: scale %a, host %a", what, (long long)j, (double)sc[j], (double)s);
            for (int64_t e = 0; e < c->k; e++) {
                const uint8_t want = e4m3_host(v[e] / s);
                if (out[e] != want)
                    fail_msg("%s: row %lld element %lld: v / s = %a, gpu 0x%02x, host 0x%02x", what, (long long)j,
                             (long long)e, (double)(v[e] / s), out[e], want);
            }
        }
        for (int64_t e = c->k; e < c->k_pad; e++)
            if (out[e] != 0) fail_msg("%s: row %lld padding column %lld = 0x%02x", what, (long long)j, (long long)e, out[e]);
    }
    cudaFree(dx);
    cudaFree(dd);
    cudaFree(dsc);
    cudaFree(dflag);
    free(x);
    free(d);
    free(sc);
}

static void test_fp8_rows_paths(void **state) {
    (void)state;
    if (!g_fp8) {
        print_message("test_fp8_rows_paths: skipped (sm < 89: the fp8 strategy is refused)\n");
        skip();
    }
    tu_rng r = tu_rng_make(448);
    const fcase cases[] = {
        /* vector loads, 4-byte stores (the backend's shapes: k_pad = k rounded up to 16) */
        {5, 16, 4608, 4608, 4608, 0, 0, false, true},
        {3, 16, 1024, 1028, 1024, 0, 0, true, false},
        {17, 32, 40, 40, 48, 0, 0, false, true},  /* padding columns and rows */
        {1, 16, 4097, 4100, 4112, 0, 0, false, false}, /* float4 rows, partial last quad */
        /* scalar loads */
        {4, 16, 4608, 4608, 4608, 1, 0, true, true},
        {3, 16, 1001, 1003, 1008, 0, 0, false, false},
        {1, 1, 1, 1, 16, 0, 0, false, false},
        /* byte stores: dst unaligned, k_pad not a multiple of 4 */
        {3, 5, 37, 37, 38, 0, 1, false, true},
        {2, 4, 64, 64, 64, 0, 2, true, false},
        {2, 3, 5, 8, 7, 1, 3, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_fp8_case(&r, &cases[i]);
}

/* The host E4M3 encoder against the format's known points (so a wrong encoder cannot agree
 * with a wrong kernel by accident on the cases above). */
static void test_e4m3_host_points(void **state) {
    (void)state;
    assert_int_equal(e4m3_host(448.0f), 0x7E);
    assert_int_equal(e4m3_host(-448.0f), 0xFE);
    assert_int_equal(e4m3_host(463.0f), 0x7E);   /* below the tie 464: 448 */
    assert_int_equal(e4m3_host(1.0f), 0x38);     /* exponent field 7 */
    assert_int_equal(e4m3_host(1.0625f), 0x38);  /* tie between 1 and 1.125: even (1) */
    assert_int_equal(e4m3_host(1.1875f), 0x3A);  /* tie between 1.125 and 1.25: even (1.25) */
    assert_int_equal(e4m3_host(0x1p-6f), 0x08);  /* smallest normal */
    assert_int_equal(e4m3_host(0x1p-9f), 0x01);  /* smallest subnormal */
    assert_int_equal(e4m3_host(0x1p-10f), 0x00); /* tie with 0: even (0) */
    assert_int_equal(e4m3_host(0x1.8p-9f), 0x02); /* tie between 1 and 2 steps: even (2) */
    assert_int_equal(e4m3_host(0x1.fp-7f), 0x08); /* rounds up into the normals */
    assert_int_equal(e4m3_host(240.0f), 0x77);   /* 2^7 * 1.875 */
    assert_int_equal(e4m3_host(f32_from_bits(0x3F880000u)), 0x38); /* 1.0625: tie again */
}

int main(void) {
    if (!qmm_backend_available(QMM_BACKEND_CUDA)) {
        printf("test_cuda_xconv: skipped: no usable CUDA device\n");
        return 77;
    }
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess)
        g_fp8 = 10 * major + minor >= 89;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_host_points),
        cmocka_unit_test(test_x_to_f16_paths),
        cmocka_unit_test(test_f32_to_f16_paths),
        cmocka_unit_test(test_fp8_rows_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
