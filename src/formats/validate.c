/*
 * validate.c — the scale fields of a block, by kind (formats/codec.h, qmm_type_layout): finding
 * non-finite scales in packed rows (qmm_validate_rows, QMM_FLAG_VALIDATE) and filling blocks
 * with random valid bytes (qmm_type_random_blocks: benchmarks and tests).
 *
 * Non-finite, per kind: f16, bf16, f32 with all exponent bits set (Inf or NaN); an E8M0 byte
 * 0xFF and a UE4M3 byte with all of its low 7 bits set (0x7F, 0xFF): NaN in the OCP MX and
 * E4M3 definitions. ggml decodes those two bytes to finite numbers (2^127, and 0 resp. 240):
 * qmm's dequantizers do exactly as ggml does, and validation reports them.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/types.h"
#include "formats/fp16.h"
#include "formats/quants.h"

/* The f16 scale of QMM_SCALE_F16_IQ1M: the top nibbles of four little-endian uint16 at p. */
static uint16_t iq1m_scale(const uint8_t *p) {
    uint16_t sc[4];
    for (int i = 0; i < 4; i++) sc[i] = (uint16_t)(p[2 * i] | (p[2 * i + 1] << 8));
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                      (sc[3] & 0xF000));
}

static bool field_nonfinite(qmm_scale_kind kind, const uint8_t *p) {
    uint32_t u = 0;
    switch (kind) {
    case QMM_SCALE_F16: u = (uint32_t)p[0] | ((uint32_t)p[1] << 8); return (u & 0x7C00u) == 0x7C00u;
    case QMM_SCALE_BF16: u = (uint32_t)p[0] | ((uint32_t)p[1] << 8); return (u & 0x7F80u) == 0x7F80u;
    case QMM_SCALE_F32: memcpy(&u, p, 4); return (u & 0x7F800000u) == 0x7F800000u;
    case QMM_SCALE_E8M0: return p[0] == 0xFF;
    case QMM_SCALE_UE4M3: return (p[0] & 0x7F) == 0x7F;
    case QMM_SCALE_F16_IQ1M: return (iq1m_scale(p) & 0x7C00u) == 0x7C00u;
    case QMM_SCALE_NONE: break;
    }
    return false;
}

/* Bytes one field of a kind occupies. */
static size_t field_bytes(qmm_scale_kind kind) {
    switch (kind) {
    case QMM_SCALE_F16: case QMM_SCALE_BF16: return 2;
    case QMM_SCALE_F32: return 4;
    case QMM_SCALE_E8M0: case QMM_SCALE_UE4M3: return 1;
    case QMM_SCALE_F16_IQ1M: return 8;
    case QMM_SCALE_NONE: break;
    }
    return 0;
}

int64_t qmm_first_nonfinite_block(int type, const void *row, int64_t nblocks) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    if (t == NULL || row == NULL) return -1;
    const uint8_t *p = row;
    for (int64_t b = 0; b < nblocks; b++, p += t->block_bytes)
        for (int f = 0; f < QMM_MAX_SCALE_FIELDS; f++) {
            const qmm_scale_field *sf = &t->layout->scales[f];
            const size_t w = field_bytes((qmm_scale_kind)sf->kind);
            for (int c = 0; c < sf->count; c++)
                if (field_nonfinite((qmm_scale_kind)sf->kind, p + sf->offset + (size_t)c * w)) return b;
        }
    return -1;
}

/* ---------------------------------------------------------------------------------------
 * Random valid blocks
 * ------------------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 (Steele, Lea, Flood 2014) */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A random float of magnitude in [mag/2, 2*mag) with a random sign, its magnitude at most
 * `max` (the largest finite value of the field's kind). */
static float random_value(uint64_t *rng, double mag, double max) {
    const uint64_t v = rng_next(rng);
    double f = ldexp(1.0 + (double)(v >> 12) / 4503599627370496.0, (int)((v >> 1) % 2) - 1) * mag;
    if (f > max) f = max;
    return (float)((v & 1) ? -f : f);
}

/* ggml's value of a UE4M3 byte (its decode with the 0.5 factor; exponent 0 is subnormal). */
static double ue4m3_value(int b) {
    const int e = (b >> 3) & 0xF, mnt = b & 7;
    return (e == 0 ? mnt * 0x1p-9 : (1.0 + mnt / 8.0) * ldexp(1.0, e - 7)) * 0.5;
}

/* Smallest UE4M3 byte (never 0 or 0x7F) whose value is at least `mag`, randomized by one
 * step either way. */
static uint8_t random_ue4m3(uint64_t *rng, double mag) {
    int best = 0x7E;
    for (int b = 0x01; b < 0x7F; b++)
        if (ue4m3_value(b) >= mag) {
            best = b;
            break;
        }
    int r = best + (int)(rng_next(rng) % 5) - 2;
    if (r < 0x01) r = 0x01;
    if (r > 0x7E) r = 0x7E;
    return (uint8_t)r;
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void random_field(uint64_t *rng, qmm_scale_kind kind, double mag, uint8_t *p) {
    switch (kind) {
    case QMM_SCALE_F16: put16(p, qmm_fp32_to_fp16(random_value(rng, mag, 65504.0))); break;
    case QMM_SCALE_BF16: put16(p, qmm_fp32_to_bf16(random_value(rng, mag, 0x1.FEp127))); break;
    case QMM_SCALE_F32: {
        const float f = random_value(rng, mag, 0x1.FFFFFEp127);
        memcpy(p, &f, 4);
        break;
    }
    case QMM_SCALE_E8M0: { /* ggml's value: 2^(e - 128); at most 0xFC, so that 12 * 2^(e - 128)
                            * (the largest codebook value) stays finite */
        int e = 128 + (int)lround(log2(mag)) + (int)(rng_next(rng) % 3) - 1;
        p[0] = (uint8_t)(e < 1 ? 1 : e > 0xFC ? 0xFC : e);
        break;
    }
    case QMM_SCALE_UE4M3: p[0] = random_ue4m3(rng, mag); break;
    case QMM_SCALE_F16_IQ1M: {
        const uint16_t h = qmm_fp32_to_fp16(random_value(rng, mag, 65504.0));
        for (int i = 0; i < 4; i++) {
            const uint16_t sc = (uint16_t)((p[2 * i] | (p[2 * i + 1] << 8)) & 0x0FFF);
            put16(p + 2 * i, (uint16_t)(sc | (((h >> (4 * i)) & 0xF) << 12)));
        }
        break;
    }
    case QMM_SCALE_NONE: break;
    }
}

bool qmm_type_random_blocks(int type, uint64_t *rng, double scale, void *dst, int64_t nblocks) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    if (t == NULL || dst == NULL) return false;
    uint8_t *p = dst;
    const double mag = scale / (t->layout->max_q > 0 ? t->layout->max_q : 1.0);
    for (int64_t b = 0; b < nblocks; b++, p += t->block_bytes) {
        for (size_t i = 0; i < t->block_bytes; i++) p[i] = (uint8_t)rng_next(rng);
        for (int f = 0; f < QMM_MAX_SCALE_FIELDS; f++) {
            const qmm_scale_field *sf = &t->layout->scales[f];
            const size_t w = field_bytes((qmm_scale_kind)sf->kind);
            for (int c = 0; c < sf->count; c++)
                random_field(rng, (qmm_scale_kind)sf->kind, mag, p + sf->offset + (size_t)c * w);
        }
    }
    return true;
}
