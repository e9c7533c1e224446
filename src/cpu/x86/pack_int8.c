/*
 * pack_int8.c — repacks the types whose scales (and mins) are per 32-element block — q4_0,
 * q4_1, q5_0, q5_1, q8_0, q4_K, q5_K — into int8 AMX B-tiles with one float scale (and, for
 * the types with a min, one float min) per row and 32-element block (layout in
 * x86_kernels.h). The integer quants are copied exactly (q4_0: q - 8, q5_0: q - 16, q8_0: q,
 * q4_1/q5_1/q4_K/q5_K: the unsigned 4- or 5-bit q); the scale is the float the type's
 * dequantizer multiplies by (d, or d * sc for the K-quants) and the min the float it adds
 * (q4_1/q5_1: m; q4_K/q5_K: -(dmin * mn)), so scale * q + min is the type table's to_float
 * with the same float operands. q2_K, q3_K and q6_K (16-element sub-blocks) are not packed.
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
    default: return false;
    }
}

/* Whether the packed type has a min per block (the kernel's second term). */
static bool has_min(qmm_type type) {
    return type == QMM_TYPE_Q4_1 || type == QMM_TYPE_Q5_1 || type == QMM_TYPE_Q4_K ||
           type == QMM_TYPE_Q5_K;
}

/* The 32 high bits of a q5_0 / q5_1 block (qh, little-endian). */
static uint32_t qh32(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

/* One W row: 32-element blocks of int8 quants q[k], scales d[k/32], mins mn[k/32] (the
 * added float; 0 for types without a min). */
static void unpack_row(qmm_type type, const unsigned char *row, int64_t k, int8_t *q, float *d,
                       float *mn) {
    const int64_t nb = k / 32;
    if (type == QMM_TYPE_Q4_1) {
        for (int64_t b = 0; b < nb; b++) {
            block_q4_1 blk;
            memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
            d[b] = qmm_fp16_to_fp32(blk.d);
            mn[b] = qmm_fp16_to_fp32(blk.m);
            for (int l = 0; l < 16; l++) {
                q[32 * b + l] = (int8_t)(blk.qs[l] & 0xF);
                q[32 * b + 16 + l] = (int8_t)(blk.qs[l] >> 4);
            }
        }
    } else if (type == QMM_TYPE_Q5_0 || type == QMM_TYPE_Q5_1) {
        const bool q50 = type == QMM_TYPE_Q5_0;
        const size_t bytes = q50 ? sizeof(block_q5_0) : sizeof(block_q5_1);
        for (int64_t b = 0; b < nb; b++) {
            if (q50) {
                block_q5_0 blk;
                memcpy(&blk, row + (size_t)b * bytes, sizeof blk);
                d[b] = qmm_fp16_to_fp32(blk.d);
                mn[b] = 0.0f;
                const uint32_t qh = qh32(blk.qh);
                for (int l = 0; l < 16; l++) {
                    q[32 * b + l] = (int8_t)((int)((blk.qs[l] & 0xF) | (((qh >> l) & 1u) << 4)) - 16);
                    q[32 * b + 16 + l] = (int8_t)((int)((blk.qs[l] >> 4) | (((qh >> (l + 16)) & 1u) << 4)) - 16);
                }
            } else {
                block_q5_1 blk;
                memcpy(&blk, row + (size_t)b * bytes, sizeof blk);
                d[b] = qmm_fp16_to_fp32(blk.d);
                mn[b] = qmm_fp16_to_fp32(blk.m);
                const uint32_t qh = qh32(blk.qh);
                for (int l = 0; l < 16; l++) {
                    q[32 * b + l] = (int8_t)((blk.qs[l] & 0xF) | (((qh >> l) & 1u) << 4));
                    q[32 * b + 16 + l] = (int8_t)((blk.qs[l] >> 4) | (((qh >> (l + 16)) & 1u) << 4));
                }
            }
        }
    } else if (type == QMM_TYPE_Q5_K) {
        for (int64_t s = 0; s < k / 256; s++) {
            block_q5_K blk;
            memcpy(&blk, row + (size_t)s * sizeof blk, sizeof blk);
            const float dd = qmm_fp16_to_fp32(blk.d), dmin = qmm_fp16_to_fp32(blk.dmin);
            for (int sb = 0; sb < 8; sb++) {
                uint8_t sc, m;
                qmm_kq_get_scale_min_k4(sb, blk.scales, &sc, &m);
                const int64_t b = 8 * s + sb;
                d[b] = dd * (float)sc;
                mn[b] = -(dmin * (float)m);
                const uint8_t *qs = blk.qs + 32 * (sb / 2);
                for (int l = 0; l < 32; l++)
                    q[32 * b + l] = (int8_t)((sb % 2 == 0 ? qs[l] & 0xF : qs[l] >> 4) +
                                             ((blk.qh[l] >> sb) & 1 ? 16 : 0));
            }
        }
    } else if (type == QMM_TYPE_Q4_0) {
        for (int64_t b = 0; b < nb; b++) {
            block_q4_0 blk;
            memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
            d[b] = qmm_fp16_to_fp32(blk.d);
            mn[b] = 0.0f;
            for (int l = 0; l < 16; l++) {
                q[32 * b + l] = (int8_t)((blk.qs[l] & 0xF) - 8);
                q[32 * b + 16 + l] = (int8_t)((blk.qs[l] >> 4) - 8);
            }
        }
    } else if (type == QMM_TYPE_Q8_0) {
        for (int64_t b = 0; b < nb; b++) {
            block_q8_0 blk;
            memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
            d[b] = qmm_fp16_to_fp32(blk.d);
            mn[b] = 0.0f;
            memcpy(q + 32 * b, blk.qs, 32);
        }
    } else { /* q4_K */
        for (int64_t s = 0; s < k / 256; s++) {
            block_q4_K blk;
            memcpy(&blk, row + (size_t)s * sizeof blk, sizeof blk);
            const float dd = qmm_fp16_to_fp32(blk.d), dmin = qmm_fp16_to_fp32(blk.dmin);
            for (int sb = 0; sb < 8; sb++) {
                uint8_t sc, m;
                qmm_kq_get_scale_min_k4(sb, blk.scales, &sc, &m);
                const int64_t b = 8 * s + sb;
                d[b] = dd * (float)sc;
                mn[b] = -(dmin * (float)m);
                const uint8_t *qs = blk.qs + 32 * (sb / 2);
                for (int l = 0; l < 32; l++)
                    q[32 * b + l] = (int8_t)(sb % 2 == 0 ? qs[l] & 0xF : qs[l] >> 4);
            }
        }
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
                    unpack_row(type, (const unsigned char *)rows + (size_t)i * row_stride, k, rq,
                               rd, rm);
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
