/*
 * gemv_codebook_avx2.c — AVX2 gemv row kernels (f32 class) for the codebook types iq4_nl,
 * iq4_xs, mxfp4 and nvfp4 (contract and summation order: gemv_common.h, accumulators:
 * gemv_avx2_impl.h); the port of gemv_codebook_avx512.c.
 *
 * The nibbles look up the int8 codebook (qmm_iq4_values, qmm_kvalues_e2m1) with one pshufb
 * per 16 elements; the entry is converted (exactly) and multiplied by the (sub-)block scale
 * with the product the dequantizer forms (iq4_nl: d * values[q]; iq4_xs: (d * (ls - 32)) *
 * values[q]; mxfp4: kvalues[q] * 2^(e - 128); nvfp4: kvalues[q] * ue4m3(d[s]) / 2) — the
 * AVX-512 table entries — so every decoded value equals to_float's bit for bit. Nibble
 * order: iq4_nl, mxfp4 and each 32-element sub-block of iq4_xs as q4_0 (qs[j] low = element
 * j, high = j + 16); nvfp4 sub-block s: qs[8s + i] low = element 16s + i, high = 16s + 8 + i.
 */
#include "cpu/x86/gemv_avx2_impl.h"

#include <stddef.h>

#include "core/types.h"
#include "formats/codec_fp4.h"
#include "formats/codec_iq4.h"

#define BODY_ARGS                                                                         \
    const unsigned char *w, size_t stride, int R, int64_t k, const float *x, int64_t ldx,   \
        int nr, qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1

/* codebook[idx[e]] * d for the 16 4-bit indices in the bytes of idx. */
QMM_GEMV_INLINE qmm_v16 lookup16(__m128i cb, __m128i idx, float d) {
    const __m128i v = _mm_shuffle_epi8(cb, idx);
    return qmm_gemv_scale((qmm_i16){_mm256_cvtepi8_epi32(v), _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8))},
                          _mm256_set1_ps(d));
}

/* The 16 bytes at p: low nibbles (elements 0..15) and high nibbles (16..31). */
QMM_GEMV_INLINE void nibbles(const uint8_t *p, __m128i *lo, __m128i *hi) {
    const __m128i q = _mm_loadu_si128((const __m128i *)p), m = _mm_set1_epi8(0x0F);
    *lo = _mm_and_si128(q, m);
    *hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
}

/* iq4_nl (f16 d) and mxfp4 (E8M0 e): 32-element blocks, 16 bytes of nibbles. */
QMM_GEMV_INLINE void cb32_body(BODY_ARGS, int fp4) {
    const size_t bsz = fp4 ? sizeof(block_mxfp4) : sizeof(block_iq4_nl);
    const size_t qs_off = fp4 ? offsetof(block_mxfp4, qs) : offsetof(block_iq4_nl, qs);
    const __m128i cb = _mm_loadu_si128((const __m128i *)(fp4 ? qmm_kvalues_e2m1 : qmm_iq4_values));
    float d[2][16];
    qmm_gemv_acc acc[2];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        if (i % 16 == 0) {
            const int cnt = ib1 - i < 16 ? (int)(ib1 - i) : 16;
            for (int r = 0; r < R; r++) {
                const unsigned char *b0 = w + r * stride + i * bsz;
                if (fp4)
                    for (int t = 0; t < cnt; t++)
                        d[r][t] = qmm_e8m0_to_fp32_half(b0[(size_t)t * bsz]);
                else
                    qmm_gemv_halves(b0 + offsetof(block_iq4_nl, d), bsz, cnt, d[r]);
            }
        }
        for (int r = 0; r < R; r++) {
            if (i % 2 == 0) qmm_gemv_prefetch(w + r * stride + i * bsz, 1, ahead);
            __m128i lo, hi;
            nibbles(w + r * stride + i * bsz + qs_off, &lo, &hi);
            qmm_gemv_fma16(&acc[r], nr, lookup16(cb, lo, d[r][i % 16]), x, ldx, 32 * i);
            qmm_gemv_fma16(&acc[r], nr, lookup16(cb, hi, d[r][i % 16]), x, ldx, 32 * i + 16);
        }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, 32);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void iq4_nl_body(BODY_ARGS) { cb32_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 0); }
QMM_GEMV_INLINE void mxfp4_body(BODY_ARGS) { cb32_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 1); }

/* iq4_xs: super-blocks of 256, sub-block ib scaled by d * (ls - 32), ls = nibble ib of
 * scales_l | bits 2ib..2ib+1 of scales_h << 4. */
QMM_GEMV_INLINE void iq4_xs_body(BODY_ARGS) {
    const __m128i cb = _mm_loadu_si128((const __m128i *)qmm_iq4_values);
    qmm_gemv_acc acc[2];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float dl[2][8];
        for (int r = 0; r < R; r++) {
            const block_iq4_xs *b = (const block_iq4_xs *)(w + r * stride) + i;
            qmm_gemv_prefetch((const unsigned char *)b, sizeof *b, ahead);
            const float d = qmm_gemv_half(&b->d);
            for (int ib = 0; ib < 8; ib++) {
                const int ls = ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                               (((b->scales_h >> (2 * ib)) & 3) << 4);
                dl[r][ib] = d * (float)(ls - 32);
            }
        }
        for (int ib = 0; ib < 8; ib++)
            for (int r = 0; r < R; r++) {
                const block_iq4_xs *b = (const block_iq4_xs *)(w + r * stride) + i;
                __m128i lo, hi;
                nibbles(b->qs + 16 * ib, &lo, &hi);
                qmm_gemv_fma16(&acc[r], nr, lookup16(cb, lo, dl[r][ib]), x, ldx, QK_K * i + 32 * ib);
                qmm_gemv_fma16(&acc[r], nr, lookup16(cb, hi, dl[r][ib]), x, ldx,
                               QK_K * i + 32 * ib + 16);
            }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_K);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

/* nvfp4: 64-element blocks, 4 UE4M3 sub-block scales, then 8 bytes of nibbles per sub-block
 * (low nibbles: lanes 0..7, high: lanes 8..15). */
QMM_GEMV_INLINE void nvfp4_body(BODY_ARGS) {
    const __m128i cb = _mm_loadu_si128((const __m128i *)qmm_kvalues_e2m1), m = _mm_set1_epi8(0x0F);
    qmm_gemv_acc acc[2];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float ds[2][4];
        for (int r = 0; r < R; r++) {
            const block_nvfp4 *b = (const block_nvfp4 *)(w + r * stride) + i;
            if (i % 2 == 0) qmm_gemv_prefetch((const unsigned char *)b, 1, ahead);
            for (int s = 0; s < 4; s++) ds[r][s] = qmm_ue4m3_to_fp32(b->d[s]);
        }
        for (int s = 0; s < 4; s++)
            for (int r = 0; r < R; r++) {
                const block_nvfp4 *b = (const block_nvfp4 *)(w + r * stride) + i;
                const __m128i q8 = _mm_loadl_epi64((const __m128i *)(b->qs + 8 * s));
                const __m128i idx = _mm_unpacklo_epi64(_mm_and_si128(q8, m),
                                                       _mm_and_si128(_mm_srli_epi16(q8, 4), m));
                qmm_gemv_fma16(&acc[r], nr, lookup16(cb, idx, ds[r][s]), x, ldx,
                               QK_NVFP4 * i + 16 * s);
            }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_NVFP4);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_DEFINE_ROW_FN(row_iq4_nl, iq4_nl_body, 32)
QMM_GEMV_DEFINE_ROW_FN(row_iq4_xs, iq4_xs_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_mxfp4, mxfp4_body, 32)
QMM_GEMV_DEFINE_ROW_FN(row_nvfp4, nvfp4_body, QK_NVFP4)

qmm_gemv_row_fn qmm_gemv_avx2_codebook_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_IQ4_NL: return row_iq4_nl;
    case QMM_TYPE_IQ4_XS: return row_iq4_xs;
    case QMM_TYPE_MXFP4: return row_mxfp4;
    case QMM_TYPE_NVFP4: return row_nvfp4;
    default: return NULL;
    }
}
