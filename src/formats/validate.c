/*
 * validate.c — finding non-finite scales in packed rows (qmm_validate_rows,
 * QMM_FLAG_VALIDATE).
 *
 * Which fields are scales, per type (layouts from ggml-common.h, see blocks.h):
 *   f32, f16, bf16           every element (a "block" is one element)
 *   q4_0, q5_0, q8_0, q3_K,  the f16 d
 *   q6_K
 *   q4_1, q5_1               the f16 d and the f16 m
 *   q2_K, q4_K, q5_K         the f16 d and the f16 dmin
 *   q8_K                     the float32 d
 * A field is non-finite when its exponent bits are all ones (Inf or NaN).
 */
#include <stddef.h>
#include <string.h>

#include "core/types.h"
#include "formats/quants.h"

/* Where the 16-bit and 32-bit scale fields of a block start; -1 ends a list. */
typedef struct {
    int half[2];  /* offsets of f16 fields, -1 when unused */
    int f32;      /* offset of a float32 field, -1 when unused */
} scale_fields;

static bool lookup_fields(int type, scale_fields *f) {
    f->half[0] = f->half[1] = -1;
    f->f32 = -1;
    switch (type) {
    case QMM_TYPE_F32: f->f32 = 0; break;
    case QMM_TYPE_F16: f->half[0] = 0; break;
    case QMM_TYPE_BF16: break; /* handled by the caller (bf16 exponent) */
    case QMM_TYPE_Q4_0: f->half[0] = offsetof(block_q4_0, d); break;
    case QMM_TYPE_Q4_1: f->half[0] = offsetof(block_q4_1, d); f->half[1] = offsetof(block_q4_1, m); break;
    case QMM_TYPE_Q5_0: f->half[0] = offsetof(block_q5_0, d); break;
    case QMM_TYPE_Q5_1: f->half[0] = offsetof(block_q5_1, d); f->half[1] = offsetof(block_q5_1, m); break;
    case QMM_TYPE_Q8_0: f->half[0] = offsetof(block_q8_0, d); break;
    case QMM_TYPE_Q2_K: f->half[0] = offsetof(block_q2_K, d); f->half[1] = offsetof(block_q2_K, dmin); break;
    case QMM_TYPE_Q3_K: f->half[0] = offsetof(block_q3_K, d); break;
    case QMM_TYPE_Q4_K: f->half[0] = offsetof(block_q4_K, d); f->half[1] = offsetof(block_q4_K, dmin); break;
    case QMM_TYPE_Q5_K: f->half[0] = offsetof(block_q5_K, d); f->half[1] = offsetof(block_q5_K, dmin); break;
    case QMM_TYPE_Q6_K: f->half[0] = offsetof(block_q6_K, d); break;
    case QMM_TYPE_Q8_K: f->f32 = offsetof(block_q8_K, d); break;
    default: return false;
    }
    return true;
}

static bool half_nonfinite(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof(h));
    return (h & 0x7C00u) == 0x7C00u;
}

static bool bf16_nonfinite(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof(h));
    return (h & 0x7F80u) == 0x7F80u;
}

static bool f32_nonfinite(const uint8_t *p) {
    uint32_t u;
    memcpy(&u, p, sizeof(u));
    return (u & 0x7F800000u) == 0x7F800000u;
}

int64_t qmm_first_nonfinite_block(int type, const void *row, int64_t nblocks) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    scale_fields f;
    if (t == NULL || row == NULL || !lookup_fields(type, &f)) return -1;
    const uint8_t *p = row;
    for (int64_t b = 0; b < nblocks; b++, p += t->block_bytes) {
        if (type == QMM_TYPE_BF16 && bf16_nonfinite(p)) return b;
        if (f.half[0] >= 0 && half_nonfinite(p + f.half[0])) return b;
        if (f.half[1] >= 0 && half_nonfinite(p + f.half[1])) return b;
        if (f.f32 >= 0 && f32_nonfinite(p + f.f32)) return b;
    }
    return -1;
}
