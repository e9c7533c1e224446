/* fill.c — random benchmark inputs (see fill.h). */
#include <stdio.h>
#include "fill.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


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

/* Random valid blocks (qmm_random_rows: every byte random, every scale field a random
 * finite value) with elements of about 2^-9 in magnitude, as the quantized fill's scales. */
static qmm_status fill_bytes(fill_rng *r, qmm_type type, int64_t m, int64_t k, void *dst) {
    return qmm_random_rows(type, fill_rng_next(r), 0x1p-9, dst, m, k);
}

qmm_status fill_weights(fill_rng *r, fill_kind kind, qmm_type type, int64_t m, int64_t k,
                        void *dst) {
    size_t row_bytes;
    qmm_status st = qmm_row_bytes(type, k, &row_bytes);
    if (st != QMM_OK) return st;
    /* a type without a reference quantizer is filled with random valid blocks */
    if (kind == FILL_BYTES || !qmm_type_has_quantizer(type)) return fill_bytes(r, type, m, k, dst);
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
