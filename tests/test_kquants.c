/*
 * test_kquants.c — layout and quality properties of the K-quant formats q2_K .. q6_K
 * (src/formats/quants_k.c). The byte-for-byte comparison with ggml's own quantizers is
 * tests/test_kquant_ggml.py; this file checks what does not need ggml:
 *
 *  - 6-bit scale/min packing of q4_K/q5_K round-trips for every (sub-block, scale, min).
 *  - Dequantization of blocks packed HERE, by an independent packer written from the format
 *    definition, with a distinct quant at every position, distinct scales per sub-block,
 *    negative d and negative dmin (CASES.md D). All values are small integers times powers
 *    of two, so the expected floats are exact whatever the order of operations.
 *  - q3_K's signed 6-bit scales, all 64 values, and q6_K's signed int8 scales.
 *  - Reference quantizers: all-zero rows give all-zero blocks; round-trip error on N(0,1)
 *    data stays within stated bounds (regression limits, ~20-30% above what ggml's
 *    algorithms reach: RMSE q2_K 0.29, q3_K 0.15, q4_K 0.071, q5_K 0.036, q6_K 0.018).
 *  - Quantizing k = 3*256 elements as one row equals quantizing three 256-element rows.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "formats/blocks.h"
#include "formats/kquant_search.h"
#include "formats/quants.h"

#define H_NEG_HALF 0xB800u /* -0.5 */
#define H_QUARTER 0x3400u  /* 0.25 */
#define H_TWO 0x4000u      /* 2.0 */
#define H_NEG_ONE 0xBC00u  /* -1.0 */
#define H_ONE 0x3C00u      /* 1.0 */

static float half_value(uint16_t h) {
    switch (h) {
    case H_NEG_HALF: return -0.5f;
    case H_QUARTER: return 0.25f;
    case H_TWO: return 2.0f;
    case H_NEG_ONE: return -1.0f;
    case H_ONE: return 1.0f;
    default: fail_msg("test uses an f16 constant it has no value for: %#x", h);
    }
    return 0.0f;
}

/* Distinct-as-possible quant for element e of a `bits`-wide format, different per block b. */
static int quant_at(int e, int b, int bits) {
    return (e * 5 + e / (1 << bits) + 3 * b) & ((1 << bits) - 1);
}

/* ---- 6-bit scale/min packing (q4_K, q5_K), written from the layout picture:
 * bytes 0-3: scale 0-3 low 6 bits | top 2 bits of scale 4-7
 * bytes 4-7: min 0-3 low 6 bits   | top 2 bits of min 4-7
 * bytes 8-11: low nibble = scale 4-7 bits 0-3, high nibble = min 4-7 bits 0-3 */
static void pack_k4(const int sc[8], const int mn[8], uint8_t out[12]) {
    memset(out, 0, 12);
    for (int j = 0; j < 4; j++) {
        out[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        out[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
        out[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

static void test_scale_min_k4_roundtrip(void **state) {
    (void)state;
    for (int j = 0; j < 8; j++) {
        for (int s = 0; s < 64; s++) {
            for (int m = 0; m < 64; m++) {
                int sc[8], mn[8];
                for (int t = 0; t < 8; t++) { /* the other sub-blocks get unrelated values */
                    sc[t] = (s * 7 + t * 13 + 5) & 63;
                    mn[t] = (m * 11 + t * 29 + 1) & 63;
                }
                sc[j] = s;
                mn[j] = m;
                uint8_t lib[12], ref[12];
                for (int t = 0; t < 8; t++) qmm_kq_set_scale_min_k4(t, (uint8_t)sc[t], (uint8_t)mn[t], lib);
                pack_k4(sc, mn, ref);
                assert_memory_equal(lib, ref, 12);
                for (int t = 0; t < 8; t++) {
                    uint8_t gs, gm;
                    qmm_kq_get_scale_min_k4(t, lib, &gs, &gm);
                    if (gs != sc[t] || gm != mn[t])
                        fail_msg("sub-block %d: packed (%d,%d), unpacked (%d,%d)", t, sc[t], mn[t], gs, gm);
                }
            }
        }
    }
}

static void expect_row(const float *got, const float *want, int64_t k, const char *type) {
    for (int64_t i = 0; i < k; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            fail_msg("%s element %lld: got %.9g, expected %.9g", type, (long long)i, got[i], want[i]);
    }
}

/* ---- q2_K: element e in sub-block e/16 (scales[e/16] = scale | min << 4); its 2 bits sit in
 * byte 32*(e/128) + e%32 at bit 2*((e%128)/32). value = d*scale*q - dmin*min. */
static void test_q2_K_layout(void **state) {
    (void)state;
    block_q2_K blk[2];
    float want[2 * QK_K], got[2 * QK_K];
    const uint16_t ds[2] = {H_NEG_HALF, H_TWO}, dms[2] = {H_QUARTER, H_NEG_ONE};
    memset(blk, 0, sizeof blk);
    for (int b = 0; b < 2; b++) {
        blk[b].d = ds[b];
        blk[b].dmin = dms[b];
        for (int s = 0; s < 16; s++) blk[b].scales[s] = (uint8_t)(((s + b) & 15) | (((15 - s) & 15) << 4));
        for (int e = 0; e < QK_K; e++) {
            const int q = quant_at(e, b, 2);
            blk[b].qs[32 * (e / 128) + e % 32] |= (uint8_t)(q << (2 * ((e % 128) / 32)));
            const int sc = (e / 16 + b) & 15, mn = (15 - e / 16) & 15;
            want[b * QK_K + e] = half_value(ds[b]) * sc * q - half_value(dms[b]) * mn;
        }
    }
    qmm_dequantize_row_q2_K(blk, got, 2 * QK_K);
    expect_row(got, want, 2 * QK_K, "q2_K");
}

/* ---- q3_K: low 2 bits as q2_K; bit 2 of the 3-bit code in hmask[e%32] bit e/32 (set = code
 * >= 4); value = d * (scale6 - 32) * (code - 4); scale6 of sub-block j: low 4 bits in the low
 * (j < 8) or high (j >= 8) nibble of scales[j%8], top 2 bits at bit 2*(j/4) of scales[8+j%4]. */
static void pack_q3_scales(const int sc6[16], uint8_t out[12]) {
    memset(out, 0, 12);
    for (int j = 0; j < 16; j++) {
        out[j % 8] |= (uint8_t)((sc6[j] & 15) << (j < 8 ? 0 : 4));
        out[8 + j % 4] |= (uint8_t)((sc6[j] >> 4) << (2 * (j / 4)));
    }
}

static void test_q3_K_layout(void **state) {
    (void)state;
    enum { NB = 4 }; /* 4 blocks x 16 sub-blocks: every 6-bit scale value once */
    block_q3_K blk[NB];
    float want[NB * QK_K], got[NB * QK_K];
    memset(blk, 0, sizeof blk);
    for (int b = 0; b < NB; b++) {
        const uint16_t dh = (b & 1) ? H_NEG_HALF : H_TWO;
        blk[b].d = dh;
        int sc6[16];
        for (int j = 0; j < 16; j++) sc6[j] = (16 * b + 7 * j) & 63;
        pack_q3_scales(sc6, blk[b].scales);
        for (int e = 0; e < QK_K; e++) {
            const int code = quant_at(e, b, 3);
            blk[b].qs[32 * (e / 128) + e % 32] |= (uint8_t)((code & 3) << (2 * ((e % 128) / 32)));
            if (code & 4) blk[b].hmask[e % 32] |= (uint8_t)(1u << (e / 32));
            want[b * QK_K + e] = half_value(dh) * (sc6[e / 16] - 32) * (code - 4);
        }
    }
    qmm_dequantize_row_q3_K(blk, got, NB * QK_K);
    expect_row(got, want, NB * QK_K, "q3_K");
}

/* ---- q4_K / q5_K: element e in sub-block e/32; low 4 bits in byte 32*(e/64) + e%32, low
 * nibble if e%64 < 32 else high; q5_K's bit 4 in qh[e%32] bit e/32.
 * value = d*scale*q - dmin*min. */
static void fill_k4_scales(int b, int sc[8], int mn[8]) {
    for (int j = 0; j < 8; j++) {
        sc[j] = (9 * j + 17 * b + 40) & 63;
        mn[j] = (63 - 5 * j - 3 * b) & 63;
    }
}

static void test_q4_K_layout(void **state) {
    (void)state;
    block_q4_K blk[2];
    float want[2 * QK_K], got[2 * QK_K];
    const uint16_t ds[2] = {H_NEG_HALF, H_TWO}, dms[2] = {H_NEG_ONE, H_QUARTER};
    memset(blk, 0, sizeof blk);
    for (int b = 0; b < 2; b++) {
        int sc[8], mn[8];
        fill_k4_scales(b, sc, mn);
        blk[b].d = ds[b];
        blk[b].dmin = dms[b];
        pack_k4(sc, mn, blk[b].scales);
        for (int e = 0; e < QK_K; e++) {
            const int q = quant_at(e, b, 4);
            blk[b].qs[32 * (e / 64) + e % 32] |= (uint8_t)(q << (e % 64 < 32 ? 0 : 4));
            want[b * QK_K + e] = half_value(ds[b]) * sc[e / 32] * q - half_value(dms[b]) * mn[e / 32];
        }
    }
    qmm_dequantize_row_q4_K(blk, got, 2 * QK_K);
    expect_row(got, want, 2 * QK_K, "q4_K");
}

static void test_q5_K_layout(void **state) {
    (void)state;
    block_q5_K blk[2];
    float want[2 * QK_K], got[2 * QK_K];
    const uint16_t ds[2] = {H_NEG_HALF, H_TWO}, dms[2] = {H_QUARTER, H_NEG_ONE};
    memset(blk, 0, sizeof blk);
    for (int b = 0; b < 2; b++) {
        int sc[8], mn[8];
        fill_k4_scales(b, sc, mn);
        blk[b].d = ds[b];
        blk[b].dmin = dms[b];
        pack_k4(sc, mn, blk[b].scales);
        for (int e = 0; e < QK_K; e++) {
            const int q = quant_at(e, b, 5);
            blk[b].qs[32 * (e / 64) + e % 32] |= (uint8_t)((q & 15) << (e % 64 < 32 ? 0 : 4));
            if (q & 16) blk[b].qh[e % 32] |= (uint8_t)(1u << (e / 32));
            want[b * QK_K + e] = half_value(ds[b]) * sc[e / 32] * q - half_value(dms[b]) * mn[e / 32];
        }
    }
    qmm_dequantize_row_q5_K(blk, got, 2 * QK_K);
    expect_row(got, want, 2 * QK_K, "q5_K");
}

/* ---- q6_K: element e = 128h + 32p + l: low nibble in ql[64h + l + 32*(p&1)] (low nibble for
 * p < 2, high for p >= 2), top 2 bits at bit 2p of qh[32h + l]; signed int8 scale
 * scales[e/16]; value = d * scale * (q - 32). */
static void test_q6_K_layout(void **state) {
    (void)state;
    block_q6_K blk[2];
    float want[2 * QK_K], got[2 * QK_K];
    const uint16_t ds[2] = {H_NEG_HALF, H_ONE};
    static const int8_t scales[2][16] = {
        {-128, 127, -1, 1, 0, 77, -77, 64, -64, 3, -3, 100, -100, 33, -33, 5},
        {12, -12, 45, -45, 126, -127, 2, -2, 90, -90, 31, -31, 8, -8, 60, -60}};
    memset(blk, 0, sizeof blk);
    for (int b = 0; b < 2; b++) {
        blk[b].d = ds[b];
        memcpy(blk[b].scales, scales[b], 16);
        for (int e = 0; e < QK_K; e++) {
            const int q = quant_at(e, b, 6);
            const int h = e / 128, p = (e % 128) / 32, l = e % 32;
            blk[b].ql[64 * h + l + 32 * (p & 1)] |= (uint8_t)((q & 15) << (p < 2 ? 0 : 4));
            blk[b].qh[32 * h + l] |= (uint8_t)((q >> 4) << (2 * p));
            want[b * QK_K + e] = half_value(ds[b]) * scales[b][e / 16] * (q - 32);
        }
    }
    qmm_dequantize_row_q6_K(blk, got, 2 * QK_K);
    expect_row(got, want, 2 * QK_K, "q6_K");
}

/* ---- reference quantizers ---- */
typedef struct {
    const char *name;
    size_t block_bytes;
    void (*quantize)(const float *, void *, int64_t);
    void (*dequantize)(const void *, float *, int64_t);
    double max_rmse;    /* on N(0,1) data */
    double max_abs_err; /* largest |x - dequant(quant(x))| on the same data */
} ktype;

static const ktype ktypes[] = {
    {"q2_K", sizeof(block_q2_K), qmm_quantize_row_q2_K_ref, qmm_dequantize_row_q2_K, 0.36, 1.3},
    {"q3_K", sizeof(block_q3_K), qmm_quantize_row_q3_K_ref, qmm_dequantize_row_q3_K, 0.19, 0.75},
    {"q4_K", sizeof(block_q4_K), qmm_quantize_row_q4_K_ref, qmm_dequantize_row_q4_K, 0.088, 0.30},
    {"q5_K", sizeof(block_q5_K), qmm_quantize_row_q5_K_ref, qmm_dequantize_row_q5_K, 0.045, 0.16},
    {"q6_K", sizeof(block_q6_K), qmm_quantize_row_q6_K_ref, qmm_dequantize_row_q6_K, 0.022, 0.09},
};
#define N_KTYPES (sizeof ktypes / sizeof ktypes[0])

/* Box-Muller normal samples from a fixed xorshift stream (deterministic). */
static void normal_fill(float *x, int64_t n, uint64_t seed) {
    uint64_t s = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n; i += 2) {
        double u[2];
        for (int t = 0; t < 2; t++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            u[t] = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        }
        const double r = sqrt(-2.0 * log(u[0]));
        x[i] = (float)(r * cos(6.283185307179586 * u[1]));
        if (i + 1 < n) x[i + 1] = (float)(r * sin(6.283185307179586 * u[1]));
    }
}

static void test_quantize_zero_rows(void **state) {
    (void)state;
    float x[2 * QK_K] = {0}, y[2 * QK_K];
    uint8_t q[2 * 256], zero[2 * 256] = {0};
    for (size_t t = 0; t < N_KTYPES; t++) {
        memset(q, 0xAB, sizeof q);
        ktypes[t].quantize(x, q, 2 * QK_K);
        if (memcmp(q, zero, 2 * ktypes[t].block_bytes) != 0)
            fail_msg("%s: an all-zero row does not give all-zero blocks", ktypes[t].name);
        ktypes[t].dequantize(q, y, 2 * QK_K);
        for (int i = 0; i < 2 * QK_K; i++)
            if (y[i] != 0.0f) fail_msg("%s: zero row dequantizes to %g at %d", ktypes[t].name, y[i], i);
    }
}

static void test_quantize_error_bounds(void **state) {
    (void)state;
    enum { NB = 64 };
    float *x = malloc(sizeof(float) * NB * QK_K), *y = malloc(sizeof(float) * NB * QK_K);
    uint8_t *q = malloc(256 * NB);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(q);
    normal_fill(x, NB * QK_K, 42);
    for (size_t t = 0; t < N_KTYPES; t++) {
        ktypes[t].quantize(x, q, NB * QK_K);
        ktypes[t].dequantize(q, y, NB * QK_K);
        double se = 0, maxe = 0;
        for (int i = 0; i < NB * QK_K; i++) {
            const double e = fabs((double)x[i] - (double)y[i]);
            if (!(e == e)) fail_msg("%s: non-finite output at %d", ktypes[t].name, i);
            se += e * e;
            if (e > maxe) maxe = e;
        }
        const double rmse = sqrt(se / (NB * QK_K));
        print_message("%s: rmse %.4f (limit %.3f), max |err| %.4f (limit %.2f)\n", ktypes[t].name,
                      rmse, ktypes[t].max_rmse, maxe, ktypes[t].max_abs_err);
        if (rmse > ktypes[t].max_rmse || maxe > ktypes[t].max_abs_err)
            fail_msg("%s: round-trip error above its bound", ktypes[t].name);
        /* Scaling the input by a power of two scales the output exactly (no f16 range issue
         * for factor 4 at these magnitudes): a cheap check that no absolute constant sneaks in. */
        for (int i = 0; i < NB * QK_K; i++) x[i] *= 4.0f;
        uint8_t *q4 = malloc(256 * NB);
        float *y4 = malloc(sizeof(float) * NB * QK_K);
        assert_non_null(q4);
        assert_non_null(y4);
        ktypes[t].quantize(x, q4, NB * QK_K);
        ktypes[t].dequantize(q4, y4, NB * QK_K);
        for (int i = 0; i < NB * QK_K; i++) {
            if (y4[i] != 4.0f * y[i])
                fail_msg("%s: x*4 dequantizes to %.9g at %d, expected 4*%.9g", ktypes[t].name, y4[i], i, y[i]);
            x[i] *= 0.25f;
        }
        free(q4);
        free(y4);
    }
    free(x);
    free(y);
    free(q);
}

static void test_quantize_row_equals_blocks(void **state) {
    (void)state;
    float x[3 * QK_K];
    uint8_t whole[3 * 256], parts[3 * 256];
    normal_fill(x, 3 * QK_K, 7);
    for (int i = 0; i < QK_K; i++) x[QK_K + i] = x[QK_K + i] * 0.001f + 0.5f; /* a different block */
    for (size_t t = 0; t < N_KTYPES; t++) {
        const size_t bb = ktypes[t].block_bytes;
        ktypes[t].quantize(x, whole, 3 * QK_K);
        for (int b = 0; b < 3; b++) ktypes[t].quantize(x + b * QK_K, parts + b * bb, QK_K);
        if (memcmp(whole, parts, 3 * bb) != 0)
            fail_msg("%s: one 768-element row differs from three 256-element rows", ktypes[t].name);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_min_k4_roundtrip),
        cmocka_unit_test(test_q2_K_layout),
        cmocka_unit_test(test_q3_K_layout),
        cmocka_unit_test(test_q4_K_layout),
        cmocka_unit_test(test_q5_K_layout),
        cmocka_unit_test(test_q6_K_layout),
        cmocka_unit_test(test_quantize_zero_rows),
        cmocka_unit_test(test_quantize_error_bounds),
        cmocka_unit_test(test_quantize_row_equals_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
