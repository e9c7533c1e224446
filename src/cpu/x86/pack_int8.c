/*
 * pack_int8.c — repacks the types whose scales (and mins) are per 32-element block — q4_0,
 * q4_1, q5_0, q5_1, q8_0, q4_K, q5_K — into int8 AMX B-tiles with one float scale (and, for
 * the types with a min, one float min) per row and 32-element block (layout in
 * x86_kernels.h). The integer quants are copied exactly (q4_0: q - 8, q5_0: q - 16, q8_0: q,
 * q4_1/q5_1/q4_K/q5_K: the unsigned 4- or 5-bit q); the scale is the float the type's
 * dequantizer multiplies by (d, or d * sc for the K-quants) and the min the float it adds
 * (q4_1/q5_1: m; q4_K/q5_K: -(dmin * mn)), so scale * q + min is the type table's to_float
 * with the same float operands. q2_K, q3_K and q6_K (16-element sub-blocks) are not packed.
 * The 4-bit codebook types with one scale per 32 elements (int8 = the codebook value, no
 * min) are unpacked by pack_int8_codebook.c.
 * Portable C (no -m flags): runs once per weights object at creation, on OpenMP threads.
 * Format source: ggml-common.h / ggml-quants.c (block structs, dequantize_row_q4_K).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"
#include "formats/fp16.h"
#include "formats/kquant_search.h"

bool qmm_x86_int8_tiles_has_type(qmm_type type) {
    switch (type) {
    case QMM_TYPE_Q4_0: case QMM_TYPE_Q4_1: case QMM_TYPE_Q5_0: case QMM_TYPE_Q5_1:
    case QMM_TYPE_Q8_0: case QMM_TYPE_Q4_K: case QMM_TYPE_Q5_K: return true;
    default: return qmm_x86_int8_codebook_tiles_has_type(type); /* pack_int8_codebook.c */
    }
}

/* Whether the packed type has a min per block (the kernel's second term). */
static bool has_min(qmm_type type) {
    return type == QMM_TYPE_Q4_1 || type == QMM_TYPE_Q5_1 || type == QMM_TYPE_Q4_K ||
           type == QMM_TYPE_Q5_K;
}

/* The 32 high bits of a q5_0 / q5_1 block (qh, little-endian). */
static uint32_t qh32(const unsigned char qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

/* An f16 field at byte `at` of a block. */
static float half_at(const unsigned char *blk, size_t at) {
    qmm_half h;
    memcpy(&h, blk + at, sizeof h);
    return qmm_fp16_to_fp32(h);
}

/* q4_0, q4_1, q5_0, q5_1 (blocks.h: d, then m if MIN, then qh[4] if QH, then qs[16]): element l
 * of a block is the low (l < 16) or high nibble of qs[l % 16], with bit l of qh as bit 4,
 * minus off (8, 16, or 0 for the types with a min). */
static void unpack_legacy(const unsigned char *row, int64_t nb, size_t bytes, bool min, bool qh5,
                          int off, int8_t *q, float *d, float *mn) {
    const size_t qh_at = min ? 4 : 2, qs_at = qh_at + (qh5 ? 4 : 0);
    for (int64_t b = 0; b < nb; b++) {
        const unsigned char *blk = row + (size_t)b * bytes;
        d[b] = half_at(blk, 0);
        mn[b] = min ? half_at(blk, 2) : 0.0f;
        const uint32_t qh = qh5 ? qh32(blk + qh_at) : 0u;
        for (int l = 0; l < 32; l++) {
            const uint8_t byte = blk[qs_at + (l % 16)];
            const int nib = l < 16 ? byte & 0xF : byte >> 4;
            q[32 * b + l] = (int8_t)((nib | (int)(((qh >> l) & 1u) << 4)) - off);
        }
    }
}

/* q4_K, q5_K: sub-block sb of a super-block has scale d * sc and min -(dmin * m)
 * (qmm_kq_get_scale_min_k4); its q is the low (sb even) or high nibble of qs[32 * (sb / 2) + l],
 * plus 16 when bit sb of qh[l] is set (q5_K). */
static void unpack_k45(const unsigned char *row, int64_t nsuper, bool q5, int8_t *q, float *d,
                       float *mn) {
    for (int64_t s = 0; s < nsuper; s++) {
        block_q5_K b5;
        block_q4_K b4;
        const uint8_t *scales, *qs, *qh = NULL;
        float dd, dmin;
        if (q5) {
            memcpy(&b5, row + (size_t)s * sizeof b5, sizeof b5);
            scales = b5.scales, qs = b5.qs, qh = b5.qh;
            dd = qmm_fp16_to_fp32(b5.d), dmin = qmm_fp16_to_fp32(b5.dmin);
        } else {
            memcpy(&b4, row + (size_t)s * sizeof b4, sizeof b4);
            scales = b4.scales, qs = b4.qs;
            dd = qmm_fp16_to_fp32(b4.d), dmin = qmm_fp16_to_fp32(b4.dmin);
        }
        for (int sb = 0; sb < 8; sb++) {
            uint8_t sc, m;
            qmm_kq_get_scale_min_k4(sb, scales, &sc, &m);
            const int64_t b = 8 * s + sb;
            d[b] = dd * (float)sc;
            mn[b] = -(dmin * (float)m);
            const uint8_t *qsb = qs + 32 * (sb / 2);
            for (int l = 0; l < 32; l++)
                q[32 * b + l] = (int8_t)((sb % 2 == 0 ? qsb[l] & 0xF : qsb[l] >> 4) +
                                         (qh != NULL && ((qh[l] >> sb) & 1) ? 16 : 0));
        }
    }
}

/* One W row: 32-element blocks of int8 quants q[k], scales d[k/32], mins mn[k/32] (the
 * added float; 0 for types without a min). Also used by pack_int8_x8.c (x86_kernels.h). */
void qmm_x86_int8_unpack_row(qmm_type type, const unsigned char *row, int64_t k, int8_t *q,
                             float *d, float *mn) {
    const int64_t nb = k / 32;
    switch (type) {
    case QMM_TYPE_Q4_0: unpack_legacy(row, nb, sizeof(block_q4_0), false, false, 8, q, d, mn); break;
    case QMM_TYPE_Q4_1: unpack_legacy(row, nb, sizeof(block_q4_1), true, false, 0, q, d, mn); break;
    case QMM_TYPE_Q5_0: unpack_legacy(row, nb, sizeof(block_q5_0), false, true, 16, q, d, mn); break;
    case QMM_TYPE_Q5_1: unpack_legacy(row, nb, sizeof(block_q5_1), true, true, 0, q, d, mn); break;
    case QMM_TYPE_Q4_K: unpack_k45(row, k / 256, false, q, d, mn); break;
    case QMM_TYPE_Q5_K: unpack_k45(row, k / 256, true, q, d, mn); break;
    case QMM_TYPE_Q8_0:
        for (int64_t b = 0; b < nb; b++) {
            block_q8_0 blk;
            memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
            d[b] = qmm_fp16_to_fp32(blk.d);
            mn[b] = 0.0f;
            memcpy(q + 32 * b, blk.qs, 32);
        }
        break;
    default: /* the codebook types (qmm_x86_int8_codebook_tiles_has_type): no min */
        qmm_x86_int8_codebook_unpack_row(type, row, k, q, d);
        for (int64_t b = 0; b < nb; b++) mn[b] = 0.0f;
        break;
    }
}

qmm_status qmm_x86_int8_tiles_pack(qmm_type type, int64_t m, int64_t k, const void *rows,
                                   size_t row_stride, int n_threads,
                                   qmm_x86_int8_tiles *out) {
    if (!qmm_x86_int8_tiles_has_type(type))
        return qmm_error(QMM_ERR_INTERNAL, "int8 tile packing: type %d is not handled",
                         (int)type);
    if (k % 32 != 0)
        return qmm_error(QMM_ERR_INTERNAL, "int8 tile packing: k=%lld is not a multiple of 32",
                         (long long)k);
    const int64_t m_pad = (m + 15) / 16 * 16, kc = k / 32, groups = m_pad / 16;
    size_t qbytes, nscale;
    if (!qmm_mul_size((size_t)m_pad, (size_t)k, &qbytes) ||
        !qmm_mul_size((size_t)m_pad, (size_t)kc * sizeof(float), &nscale))
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "int8 tile packing: %lld x %lld overflows",
                         (long long)m, (long long)k);
    int8_t *q = aligned_alloc(64, (qbytes + 63) / 64 * 64);
    float *d = aligned_alloc(64, (nscale + 63) / 64 * 64);
    float *mn = has_min(type) ? aligned_alloc(64, (nscale + 63) / 64 * 64) : NULL;
    if (q == NULL || d == NULL || (has_min(type) && mn == NULL)) {
        free(q);
        free(d);
        free(mn);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY,
                         "int8 tile packing: cannot allocate %zu bytes for %lld x %lld weights",
                         qbytes + 2 * nscale, (long long)m, (long long)k);
    }
    int failed = 0;
#pragma omp parallel num_threads(n_threads < 1 ? 1 : n_threads) reduction(| : failed)
    {
        int8_t *rq = malloc((size_t)k);
        float *rd = malloc((size_t)kc * sizeof(float)), *rm = malloc((size_t)kc * sizeof(float));
        if (rq == NULL || rd == NULL || rm == NULL) failed = 1;
#pragma omp for schedule(static)
        for (int64_t g = 0; g < groups; g++) {
            if (failed) continue;
            for (int64_t j = 0; j < 16; j++) {
                const int64_t i = g * 16 + j;
                if (i < m) {
                    qmm_x86_int8_unpack_row(type, (const unsigned char *)rows + (size_t)i * row_stride,
                                            k, rq, rd, rm);
                } else {
                    memset(rq, 0, (size_t)k);
                    memset(rd, 0, (size_t)kc * sizeof(float));
                    memset(rm, 0, (size_t)kc * sizeof(float));
                }
                for (int64_t c = 0; c < kc; c++) {
                    int8_t *tile = q + (size_t)(g * kc + c) * 512;
                    for (int r = 0; r < 8; r++) memcpy(tile + r * 64 + j * 4, rq + 32 * c + 4 * r, 4);
                    d[(size_t)(g * kc + c) * 16 + (size_t)j] = rd[c];
                    if (mn != NULL) mn[(size_t)(g * kc + c) * 16 + (size_t)j] = rm[c];
                }
            }
        }
        free(rq);
        free(rd);
        free(rm);
    }
    if (failed) {
        free(q);
        free(d);
        free(mn);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "int8 tile packing: cannot allocate row buffers");
    }
    out->q = q;
    out->d = d;
    out->mn = mn;
    out->m = m;
    out->k = k;
    out->m_pad = m_pad;
    return QMM_OK;
}

void qmm_x86_int8_tiles_free(qmm_x86_int8_tiles *t) {
    if (t == NULL) return;
    free(t->q);
    free(t->d);
    free(t->mn);
    memset(t, 0, sizeof *t);
}
