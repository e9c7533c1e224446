/* fill.c — random benchmark inputs (see fill.h). */
#include <stdio.h>
#include "fill.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/blocks.h"

void fill_rng_seed(fill_rng *r, uint64_t seed) { r->state = seed ^ 0x6A09E667F3BCC908ull; }

uint64_t fill_rng_next(fill_rng *r) { /* splitmix64 (Steele, Lea, Flood 2014) */
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(fill_rng *r) { /* (0, 1] */
    return ((double)(fill_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

double fill_rng_normal(fill_rng *r) {
    const double two_pi = 6.283185307179586;
    return sqrt(-2.0 * log(rng_unit(r))) * cos(two_pi * rng_unit(r));
}

void fill_normal(fill_rng *r, float *dst, size_t count) {
    for (size_t i = 0; i < count; i++) dst[i] = (float)fill_rng_normal(r);
}

/* A random finite f16: random sign, exponent field 3..8 (2^-12 .. 2^-7 scaled by 1.mant),
 * so |value| is in [2^-12, 2^-6). */
static uint16_t random_scale_f16(fill_rng *r) {
    uint64_t v = fill_rng_next(r);
    uint16_t sign = (uint16_t)((v & 1) << 15);
    uint16_t exp = (uint16_t)(3 + (v >> 1) % 6);
    uint16_t mant = (uint16_t)((v >> 8) & 0x3FF);
    return (uint16_t)(sign | (exp << 10) | mant);
}

/* Offsets of the f16 scale fields inside each block of a type (blocks.h structs). */
typedef struct scale_fields {
    qmm_type type;
    size_t offsets[2];
    int n;
} scale_fields;

static const scale_fields scale_table[] = {
    {QMM_TYPE_Q4_0, {offsetof(block_q4_0, d)}, 1},
    {QMM_TYPE_Q4_1, {offsetof(block_q4_1, d), offsetof(block_q4_1, m)}, 2},
    {QMM_TYPE_Q5_0, {offsetof(block_q5_0, d)}, 1},
    {QMM_TYPE_Q5_1, {offsetof(block_q5_1, d), offsetof(block_q5_1, m)}, 2},
    {QMM_TYPE_Q8_0, {offsetof(block_q8_0, d)}, 1},
    {QMM_TYPE_Q2_K, {offsetof(block_q2_K, d), offsetof(block_q2_K, dmin)}, 2},
    {QMM_TYPE_Q3_K, {offsetof(block_q3_K, d)}, 1},
    {QMM_TYPE_Q4_K, {offsetof(block_q4_K, d), offsetof(block_q4_K, dmin)}, 2},
    {QMM_TYPE_Q5_K, {offsetof(block_q5_K, d), offsetof(block_q5_K, dmin)}, 2},
    {QMM_TYPE_Q6_K, {offsetof(block_q6_K, d)}, 1},
};

static qmm_status fill_bytes(fill_rng *r, qmm_type type, int64_t m, int64_t k, void *dst,
                             size_t row_bytes) {
    uint8_t *p = dst;
    const size_t total = (size_t)m * row_bytes;
    if (type == QMM_TYPE_F32) {
        float *f = dst;
        for (size_t i = 0; i < total / 4; i++) {
            uint64_t v = fill_rng_next(r);
            double mag = ldexp(1.0 + (double)(v >> 12) / 4503599627370496.0, -12 + (int)((v >> 1) % 6));
            f[i] = (float)((v & 1) ? -mag : mag);
        }
        return QMM_OK;
    }
    if (type == QMM_TYPE_F16) {
        uint16_t *h = dst;
        for (size_t i = 0; i < total / 2; i++) h[i] = random_scale_f16(r);
        return QMM_OK;
    }
    if (type == QMM_TYPE_BF16) { /* the top half of a float32 of the same range */
        uint16_t *h = dst;
        for (size_t i = 0; i < total / 2; i++) {
            uint64_t v = fill_rng_next(r);
            uint32_t sign = (uint32_t)(v & 1) << 31, exp = (uint32_t)(127 - 12 + (v >> 1) % 6);
            uint32_t bits = sign | (exp << 23) | ((uint32_t)(v >> 8) & 0x7F0000u);
            h[i] = (uint16_t)(bits >> 16);
        }
        return QMM_OK;
    }
    const scale_fields *sf = NULL;
    for (size_t i = 0; i < sizeof scale_table / sizeof scale_table[0]; i++)
        if (scale_table[i].type == type) sf = &scale_table[i];
    if (sf == NULL) return QMM_ERR_UNSUPPORTED;
    for (size_t i = 0; i + 8 <= total; i += 8) {
        uint64_t v = fill_rng_next(r);
        memcpy(p + i, &v, 8);
    }
    for (size_t i = total & ~(size_t)7; i < total; i++) p[i] = (uint8_t)fill_rng_next(r);
    const size_t bb = qmm_type_block_bytes(type);
    const int64_t nb = k / qmm_type_block_size(type);
    for (int64_t row = 0; row < m; row++) {
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *blk = p + (size_t)row * row_bytes + (size_t)b * bb;
            for (int f = 0; f < sf->n; f++) {
                uint16_t h = random_scale_f16(r);
                memcpy(blk + sf->offsets[f], &h, sizeof h);
            }
        }
    }
    return QMM_OK;
}

qmm_status fill_weights(fill_rng *r, fill_kind kind, qmm_type type, int64_t m, int64_t k,
                        void *dst) {
    size_t row_bytes;
    qmm_status st = qmm_row_bytes(type, k, &row_bytes);
    if (st != QMM_OK) return st;
    if (kind == FILL_BYTES) return fill_bytes(r, type, m, k, dst, row_bytes);
    const int64_t rows_per_chunk = 64;
    float *tmp = malloc((size_t)rows_per_chunk * (size_t)k * sizeof *tmp);
    if (tmp == NULL) return QMM_ERR_OUT_OF_MEMORY;
    for (int64_t r0 = 0; r0 < m && st == QMM_OK; r0 += rows_per_chunk) {
        int64_t rows = m - r0 < rows_per_chunk ? m - r0 : rows_per_chunk;
        fill_normal(r, tmp, (size_t)rows * (size_t)k);
        st = qmm_quantize_rows(type, tmp, (uint8_t *)dst + (size_t)r0 * row_bytes, rows, k);
    }
    free(tmp);
    return st;
}

bool fill_kind_parse(const char *s, fill_kind *out) {
    if (strcmp(s, "quantized") == 0) *out = FILL_QUANTIZED;
    else if (strcmp(s, "bytes") == 0) *out = FILL_BYTES;
    else {
        fprintf(stderr, "qmm bench: --fill: unknown fill '%s' (expected quantized or bytes)\n", s);
        return false;
    }
    return true;
}
