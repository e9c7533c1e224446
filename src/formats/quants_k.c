/*
 * quants_k.c — the K-quant formats q2_K, q3_K, q4_K, q5_K, q6_K: dequantization and the
 * reference quantizers (no importance weights).
 *
 * Source of the formats and algorithms: ggml's ggml-common.h (block layouts) and
 * ggml-quants.c (dequantize_row_*, quantize_row_*_ref); gguf-py's gguf/quants.py
 * (dequantization). Dequantization performs the same float operations in the same order as
 * ggml, so results are bit-identical; the quantizers reproduce ggml's bytes (see
 * kquant_search.h for the shared scale searches and the floating-point requirements).
 *
 * Super-blocks hold QK_K = 256 elements. Every function here handles one row of k elements,
 * k a multiple of 256 (the caller checks this).
 */
#include <math.h>
#include <string.h>

#include "formats/blocks.h"
#include "formats/fp16.h"
#include "formats/kquant_search.h"
#include "formats/quants.h"

/* ---------------------------------------------------------------------------------------
 * Dequantization
 * ------------------------------------------------------------------------------------- */

/* q2_K: y = d*sc*q - dmin*mn per 16-element sub-block; q is 2 bits. Byte qs[32*h + l]
 * holds, in bit pairs 0..3, elements 128*h + l + 32*p (p = pair index). */
static void dequantize_q2_K_aligned(const void *src, float *dst, int64_t k) {
    const block_q2_K *x = (const block_q2_K *)src;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = qmm_fp16_to_fp32(x[i].d);
        const float dmin = qmm_fp16_to_fp32(x[i].dmin);
        float *y = dst + i * QK_K;
        for (int h = 0; h < 2; h++) {
            const uint8_t *q = x[i].qs + 32 * h;
            for (int p = 0; p < 4; p++) {
                const int shift = 2 * p;
                for (int half = 0; half < 2; half++) {
                    const uint8_t sc = x[i].scales[8 * h + 2 * p + half];
                    const float dl = d * (float)(sc & 0xF);
                    const float ml = dmin * (float)(sc >> 4);
                    for (int l = 0; l < 16; l++) {
                        const int qv = (q[16 * half + l] >> shift) & 3;
                        y[128 * h + 32 * p + 16 * half + l] = dl * (float)qv - ml;
                    }
                }
            }
        }
    }
}

/* The signed 6-bit scale (-32..31) of q3_K sub-block j (0..15) from the 12 packed bytes:
 * low 4 bits in the low (j < 8) or high (j >= 8) nibble of byte j % 8, top 2 bits in bit
 * pair j / 4 of byte 8 + j % 4; stored with an offset of 32. */
static inline int q3_K_scale(const uint8_t *scales, int j) {
    const int lo = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
    const int hi = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

/* q3_K: y = d*(sc-32)*(q - (hbit ? 0 : 4)); low 2 bits as q2_K, the high bit of element
 * 128*h + 32*p + l (l < 32) is bit 4*h + p of hmask[l]. */
static void dequantize_q3_K_aligned(const void *src, float *dst, int64_t k) {
    const block_q3_K *x = (const block_q3_K *)src;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d_all = qmm_fp16_to_fp32(x[i].d);
        float *y = dst + i * QK_K;
        for (int h = 0; h < 2; h++) {
            const uint8_t *q = x[i].qs + 32 * h;
            for (int p = 0; p < 4; p++) {
                const int shift = 2 * p;
                const uint8_t hbit = (uint8_t)(1u << (4 * h + p));
                for (int half = 0; half < 2; half++) {
                    const float dl = d_all * (float)q3_K_scale(x[i].scales, 8 * h + 2 * p + half);
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        const int qv = ((q[l] >> shift) & 3) - ((x[i].hmask[l] & hbit) ? 0 : 4);
                        y[128 * h + 32 * p + l] = dl * (float)qv;
                    }
                }
            }
        }
    }
}

/* q4_K: y = d*sc*q - dmin*mn per 32-element sub-block; byte qs[32*c + l] holds element
 * 64*c + l in its low nibble and 64*c + 32 + l in its high nibble. */
static void dequantize_q4_K_aligned(const void *src, float *dst, int64_t k) {
    const block_q4_K *x = (const block_q4_K *)src;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = qmm_fp16_to_fp32(x[i].d);
        const float dmin = qmm_fp16_to_fp32(x[i].dmin);
        float *y = dst + i * QK_K;
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = x[i].qs + 32 * c;
            uint8_t sc, m;
            qmm_kq_get_scale_min_k4(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            qmm_kq_get_scale_min_k4(2 * c + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) y[64 * c + l] = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) y[64 * c + 32 + l] = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

/* q5_K: as q4_K, plus bit 4 of element 64*c + l (+32) in bit 2c (2c+1) of qh[l]. */
static void dequantize_q5_K_aligned(const void *src, float *dst, int64_t k) {
    const block_q5_K *x = (const block_q5_K *)src;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = qmm_fp16_to_fp32(x[i].d);
        const float dmin = qmm_fp16_to_fp32(x[i].dmin);
        const uint8_t *qh = x[i].qh;
        float *y = dst + i * QK_K;
        for (int c = 0; c < 4; c++) {
            const uint8_t *ql = x[i].qs + 32 * c;
            const uint8_t u1 = (uint8_t)(1u << (2 * c)), u2 = (uint8_t)(2u << (2 * c));
            uint8_t sc, m;
            qmm_kq_get_scale_min_k4(2 * c, x[i].scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            qmm_kq_get_scale_min_k4(2 * c + 1, x[i].scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                const int qv = (ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0);
                y[64 * c + l] = d1 * (float)qv - m1;
            }
            for (int l = 0; l < 32; l++) {
                const int qv = (ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0);
                y[64 * c + 32 + l] = d2 * (float)qv - m2;
            }
        }
    }
}

/* q6_K: y = d*sc*(q-32), q = 4 low bits | 2 high bits << 4. In half h (128 elements),
 * element 128*h + 32*p + l (p = 0..3, l < 32) has its low nibble in ql[64*h + l + 32*(p&1)]
 * (low nibble for p < 2, high for p >= 2), its high bits in bit pair p of qh[32*h + l], and
 * its scale in scales[8*h + 2*p + l/16]. */
static void dequantize_q6_K_aligned(const void *src, float *dst, int64_t k) {
    const block_q6_K *x = (const block_q6_K *)src;
    const int64_t nb = k / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = qmm_fp16_to_fp32(x[i].d);
        float *y = dst + i * QK_K;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h;
            const uint8_t *qh = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            for (int p = 0; p < 4; p++) {
                /* (d * sc) * (q - 32), the scale of 16 elements formed once */
                for (int s16 = 0; s16 < 2; s16++) {
                    const float ds = d * (float)sc[2 * p + s16];
                    for (int l = 16 * s16; l < 16 * s16 + 16; l++) {
                        const int lo = (ql[l + 32 * (p & 1)] >> (4 * (p >> 1))) & 0xF;
                        const int hi = (qh[l] >> (2 * p)) & 3;
                        const int qv = (lo | (hi << 4)) - 32;
                        y[128 * h + 32 * p + l] = ds * (float)qv;
                    }
                }
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Reference quantization (ggml's quantize_row_*_ref: no importance weights)
 * ------------------------------------------------------------------------------------- */

/* Pack 2-bit quants L[0..255] (values 0..3) the way q2_K/q3_K store them: byte 32*h + l
 * holds elements 128*h + l + 32*p in bit pair p. */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
        }
    }
}

static void quantize_q2_K_aligned(const float *src, void *dst, int64_t k) {
    block_q2_K *y = (block_q2_K *)dst;
    const int64_t nb = k / QK_K;
    const float q4scale = 15.f;
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];

    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK_K;
        float max_scale = 0.0f, max_min = 0.0f; /* scales are >= 0 since the min is deducted */
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
            scales[j] = qmm_kq_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j],
                                                Laux, -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }

        if (max_scale > 0.0f) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                y[i].scales[j] = (uint8_t)qmm_kq_nearest_int(iscale * scales[j]);
            }
            y[i].d = qmm_fp32_to_fp16(max_scale / q4scale);
        } else {
            memset(y[i].scales, 0, sizeof(y[i].scales));
            y[i].d = qmm_fp32_to_fp16(0.0f);
        }
        if (max_min > 0.0f) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j) {
                const int l = qmm_kq_nearest_int(iscale * mins[j]);
                y[i].scales[j] |= (uint8_t)((unsigned)l << 4);
            }
            y[i].dmin = qmm_fp32_to_fp16(max_min / q4scale);
        } else {
            y[i].dmin = qmm_fp32_to_fp16(0.0f);
        }

        /* Requantize against the rounded scales; sub-blocks with a zero scale keep L. */
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = qmm_fp16_to_fp32(y[i].d) * (float)(y[i].scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = qmm_fp16_to_fp32(y[i].dmin) * (float)(y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                const int l = qmm_kq_nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = (uint8_t)(l < 0 ? 0 : (l > 3 ? 3 : l));
            }
        }
        pack_2bit(L, y[i].qs);
    }
}

static void quantize_q3_K_aligned(const float *src, void *dst, int64_t k) {
    block_q3_K *y = (block_q3_K *)dst;
    const int64_t nb = k / QK_K;
    int8_t L[QK_K];
    float scales[QK_K / 16];

    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK_K;
        float max_scale = 0.0f, amax = 0.0f;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = qmm_kq_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            const float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }

        memset(y[i].scales, 0, sizeof(y[i].scales));
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                int8_t l = (int8_t)qmm_kq_nearest_int(iscale * scales[j]);
                l = (int8_t)((l < -32 ? -32 : (l > 31 ? 31 : l)) + 32);
                if (j < 8) {
                    y[i].scales[j] = (uint8_t)(l & 0xF);
                } else {
                    y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                }
                y[i].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            y[i].d = qmm_fp32_to_fp16(1.0f / iscale);
        } else {
            y[i].d = qmm_fp32_to_fp16(0.0f);
        }

        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = qmm_fp16_to_fp32(y[i].d) * (float)q3_K_scale(y[i].scales, j);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                int l = qmm_kq_nearest_int(x[16 * j + ii] / d);
                l = l < -4 ? -4 : (l > 3 ? 3 : l);
                L[16 * j + ii] = (int8_t)(l + 4);
            }
        }

        /* High bit of element j goes to bit j / 32 of hmask[j % 32]; the low 2 bits stay. */
        uint8_t low[QK_K];
        memset(y[i].hmask, 0, sizeof(y[i].hmask));
        for (int j = 0; j < QK_K; ++j) {
            int l = L[j];
            if (l > 3) {
                y[i].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                l -= 4;
            }
            low[j] = (uint8_t)l;
        }
        pack_2bit(low, y[i].qs);
    }
}

/*
 * The shared part of q4_K and q5_K: per 32-element sub-block an asymmetric scale/min search
 * (nmax levels, search grid rmin + rdelta*is, is = 0..nstep), 6-bit scales and mins relative
 * to the super-block maxima, and the quants L (0..nmax) recomputed against the rounded
 * scales. Writes d, dmin and the 12 packed scale bytes.
 */
static void quantize_k4_superblock(const float *x, int nmax, float rmin, float rdelta, int nstep,
                                   qmm_half *d_out, qmm_half *dmin_out, uint8_t *packed,
                                   uint8_t *L) {
    uint8_t Laux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = qmm_kq_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j],
                                            Laux, rmin, rdelta, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }

    const float inv_scale = max_scale > 0.0f ? 63.f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.f / max_min : 0.0f;
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)qmm_kq_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)qmm_kq_nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        qmm_kq_set_scale_min_k4(j, ls, lm, packed);
    }
    *d_out = qmm_fp32_to_fp16(max_scale / 63.f);
    *dmin_out = qmm_fp32_to_fp16(max_min / 63.f);

    const float d_all = qmm_fp16_to_fp32(*d_out), dmin_all = qmm_fp16_to_fp32(*dmin_out);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        qmm_kq_get_scale_min_k4(j, packed, &sc, &m);
        const float d = d_all * (float)sc;
        if (d == 0.0f) continue;
        const float dm = dmin_all * (float)m;
        for (int ii = 0; ii < 32; ++ii) {
            const int l = qmm_kq_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)(l < 0 ? 0 : (l > nmax ? nmax : l));
        }
    }
}

static void quantize_q4_K_aligned(const float *src, void *dst, int64_t k) {
    block_q4_K *y = (block_q4_K *)dst;
    const int64_t nb = k / QK_K;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < nb; i++) {
        quantize_k4_superblock(src + i * QK_K, 15, -1.f, 0.1f, 20, &y[i].d, &y[i].dmin,
                               y[i].scales, L);
        for (int c = 0; c < 4; ++c) {
            for (int l = 0; l < 32; ++l) {
                y[i].qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
            }
        }
    }
}

static void quantize_q5_K_aligned(const float *src, void *dst, int64_t k) {
    block_q5_K *y = (block_q5_K *)dst;
    const int64_t nb = k / QK_K;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < nb; i++) {
        quantize_k4_superblock(src + i * QK_K, 31, -0.5f, 0.1f, 15, &y[i].d, &y[i].dmin,
                               y[i].scales, L);
        memset(y[i].qh, 0, sizeof(y[i].qh));
        for (int c = 0; c < 4; ++c) {
            const uint8_t m1 = (uint8_t)(1u << (2 * c)), m2 = (uint8_t)(2u << (2 * c));
            for (int l = 0; l < 32; ++l) {
                int l1 = L[64 * c + l], l2 = L[64 * c + 32 + l];
                if (l1 > 15) {
                    l1 -= 16;
                    y[i].qh[l] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    y[i].qh[l] |= m2;
                }
                y[i].qs[32 * c + l] = (uint8_t)(l1 | (l2 << 4));
            }
        }
    }
}

static void quantize_q6_K_aligned(const float *src, void *dst, int64_t k) {
    block_q6_K *y = (block_q6_K *)dst;
    const int64_t nb = k / QK_K;
    int8_t L[QK_K];
    float scales[QK_K / 16];

    for (int64_t i = 0; i < nb; i++) {
        const float *x = src + i * QK_K;
        float max_scale = 0.0f, max_abs_scale = 0.0f;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float scale = qmm_kq_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            const float abs_scale = fabsf(scale);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scale;
            }
        }

        if (max_abs_scale < QMM_KQ_GROUP_MAX_EPS) {
            memset(&y[i], 0, sizeof(y[i])); /* d = +0 */
            continue;
        }

        const float iscale = -128.f / max_scale;
        y[i].d = qmm_fp32_to_fp16(1.0f / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const int l = qmm_kq_nearest_int(iscale * scales[ib]);
            y[i].scales[ib] = (int8_t)(l < 127 ? l : 127);
        }

        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = qmm_fp16_to_fp32(y[i].d) * (float)y[i].scales[j];
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii) {
                int l = qmm_kq_nearest_int(x[16 * j + ii] / d);
                l = l < -32 ? -32 : (l > 31 ? 31 : l);
                L[16 * j + ii] = (int8_t)(l + 32);
            }
        }

        /* Element 128*h + 32*p + l: low nibble into ql[64*h + l + 32*(p&1)] (low half for
         * p < 2, high half otherwise), high 2 bits into bit pair p of qh[32*h + l]. */
        for (int h = 0; h < 2; ++h) {
            const int8_t *Lh = L + 128 * h;
            uint8_t *ql = y[i].ql + 64 * h;
            uint8_t *qh = y[i].qh + 32 * h;
            for (int l = 0; l < 32; ++l) {
                const uint8_t q0 = (uint8_t)Lh[l], q1 = (uint8_t)Lh[l + 32];
                const uint8_t q2 = (uint8_t)Lh[l + 64], q3 = (uint8_t)Lh[l + 96];
                ql[l] = (uint8_t)((q0 & 0xF) | ((q2 & 0xF) << 4));
                ql[l + 32] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
                qh[l] = (uint8_t)((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Row entry points. The functions above access blocks as structs, which needs 2-byte
 * alignment; rows may sit at any address (any row stride is legal), so each block goes
 * through an aligned local copy.
 * ------------------------------------------------------------------------------------- */

typedef union {
    block_q2_K q2;
    block_q3_K q3;
    block_q4_K q4;
    block_q5_K q5;
    block_q6_K q6;
} any_k_block;

static void dequantize_by_block(void (*f)(const void *, float *, int64_t), size_t bytes,
                                const void *src, float *dst, int64_t k) {
    any_k_block b;
    for (int64_t i = 0; i < k / QK_K; i++) {
        memcpy(&b, (const uint8_t *)src + (size_t)i * bytes, bytes);
        f(&b, dst + i * QK_K, QK_K);
    }
}

static void quantize_by_block(void (*f)(const float *, void *, int64_t), size_t bytes,
                              const float *src, void *dst, int64_t k) {
    any_k_block b;
    for (int64_t i = 0; i < k / QK_K; i++) {
        memset(&b, 0, sizeof b);
        f(src + i * QK_K, &b, QK_K);
        memcpy((uint8_t *)dst + (size_t)i * bytes, &b, bytes);
    }
}

void qmm_dequantize_row_q2_K(const void *src, float *dst, int64_t k) {
    dequantize_by_block(dequantize_q2_K_aligned, sizeof(block_q2_K), src, dst, k);
}
void qmm_quantize_row_q2_K_ref(const float *src, void *dst, int64_t k) {
    quantize_by_block(quantize_q2_K_aligned, sizeof(block_q2_K), src, dst, k);
}

void qmm_dequantize_row_q3_K(const void *src, float *dst, int64_t k) {
    dequantize_by_block(dequantize_q3_K_aligned, sizeof(block_q3_K), src, dst, k);
}
void qmm_quantize_row_q3_K_ref(const float *src, void *dst, int64_t k) {
    quantize_by_block(quantize_q3_K_aligned, sizeof(block_q3_K), src, dst, k);
}

void qmm_dequantize_row_q4_K(const void *src, float *dst, int64_t k) {
    dequantize_by_block(dequantize_q4_K_aligned, sizeof(block_q4_K), src, dst, k);
}
void qmm_quantize_row_q4_K_ref(const float *src, void *dst, int64_t k) {
    quantize_by_block(quantize_q4_K_aligned, sizeof(block_q4_K), src, dst, k);
}

void qmm_dequantize_row_q5_K(const void *src, float *dst, int64_t k) {
    dequantize_by_block(dequantize_q5_K_aligned, sizeof(block_q5_K), src, dst, k);
}
void qmm_quantize_row_q5_K_ref(const float *src, void *dst, int64_t k) {
    quantize_by_block(quantize_q5_K_aligned, sizeof(block_q5_K), src, dst, k);
}

void qmm_dequantize_row_q6_K(const void *src, float *dst, int64_t k) {
    dequantize_by_block(dequantize_q6_K_aligned, sizeof(block_q6_K), src, dst, k);
}
void qmm_quantize_row_q6_K_ref(const float *src, void *dst, int64_t k) {
    quantize_by_block(quantize_q6_K_aligned, sizeof(block_q6_K), src, dst, k);
}
