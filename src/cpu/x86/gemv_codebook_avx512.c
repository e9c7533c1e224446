/*
 * gemv_codebook_avx512.c — AVX-512 gemv row kernels (f32 class) for the codebook types
 * iq4_nl, iq4_xs, mxfp4 and nvfp4 (contract and summation order: gemv_avx512_impl.h).
 *
 * Each (sub-)block gets a table of its 16 possible values, codebook[i] * scale with the float
 * product the dequantizer forms (iq4_nl: d * values[q]; iq4_xs: (d * (ls - 32)) * values[q];
 * mxfp4: kvalues[q] * 2^(e - 128); nvfp4: kvalues[q] * ue4m3(d[s]) / 2; codebooks
 * qmm_iq4_values and qmm_kvalues_e2m1, scale decoders of codec_fp4.h), and the nibbles index
 * it (vpermps uses the low 4 bits of each lane), so every decoded value equals to_float's bit
 * for bit. Nibble order: iq4_nl,
 * mxfp4 and each 32-element sub-block of iq4_xs as q4_0 (qs[j] low = element j, high = j + 16);
 * nvfp4 sub-block s: qs[8s + i] low = element 16s + i, high = 16s + 8 + i.
 * Format source: ggml-common.h / ggml-quants.c / ggml-impl.h and gguf.quants.
 */
#include "cpu/x86/gemv_avx512_impl.h"

#include <stddef.h>

#include "core/types.h"
#include "formats/codec_fp4.h"
#include "formats/codec_iq4.h"

#define BODY_ARGS                                                                         \
    const unsigned char *w, size_t stride, int R, int64_t k, const float *x, int64_t ldx,   \
        int nr, qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1

/* The 16 codebook values as floats (exact). */
QMM_GEMV_INLINE __m512 codebook_f32(const int8_t *cb) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)cb)));
}

/* iq4_nl (f16 d) and mxfp4 (E8M0 e): 32-element blocks, 16 bytes of nibbles. */
QMM_GEMV_INLINE void cb32_body(BODY_ARGS, int fp4) {
    const size_t bsz = fp4 ? sizeof(block_mxfp4) : sizeof(block_iq4_nl);
    const size_t qs_off = fp4 ? offsetof(block_mxfp4, qs) : offsetof(block_iq4_nl, qs);
    const __m512 cb = codebook_f32(fp4 ? qmm_kvalues_e2m1 : qmm_iq4_values);
    float d[4][16];
    qmm_gemv_acc acc[4];
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
            const __m512 tab = _mm512_mul_ps(cb, _mm512_set1_ps(d[r][i % 16]));
            const __m512i q = qmm_gemv_u8x16(w + r * stride + i * bsz + qs_off);
            qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(q, tab), x, ldx, 32 * i);
            qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), tab), x,
                           ldx, 32 * i + 16);
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
    const __m512 cb = codebook_f32(qmm_iq4_values);
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float dl[4][8];
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
                const __m512 tab = _mm512_mul_ps(cb, _mm512_set1_ps(dl[r][ib]));
                const __m512i q = qmm_gemv_u8x16(b->qs + 16 * ib);
                qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(q, tab), x, ldx,
                               QK_K * i + 32 * ib);
                qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), tab),
                               x, ldx, QK_K * i + 32 * ib + 16);
            }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_K);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

/* nvfp4: 64-element blocks, 4 UE4M3 sub-block scales, then 8 bytes of nibbles per sub-block:
 * the 8 bytes twice, shifted by 0 (lanes 0..7) and 4 (lanes 8..15), index the table. */
QMM_GEMV_INLINE void nvfp4_body(BODY_ARGS) {
    const __m512 cb = codebook_f32(qmm_kvalues_e2m1);
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4);
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float ds[4][4];
        for (int r = 0; r < R; r++) {
            const block_nvfp4 *b = (const block_nvfp4 *)(w + r * stride) + i;
            if (i % 2 == 0) qmm_gemv_prefetch((const unsigned char *)b, 1, ahead);
            for (int s = 0; s < 4; s++) ds[r][s] = qmm_ue4m3_to_fp32(b->d[s]);
        }
        for (int s = 0; s < 4; s++)
            for (int r = 0; r < R; r++) {
                const block_nvfp4 *b = (const block_nvfp4 *)(w + r * stride) + i;
                uint64_t q8;
                memcpy(&q8, b->qs + 8 * s, sizeof q8);
                const __m512i q = _mm512_srlv_epi32(
                    _mm512_cvtepu8_epi32(_mm_set1_epi64x((long long)q8)), shift);
                const __m512 tab = _mm512_mul_ps(cb, _mm512_set1_ps(ds[r][s]));
                qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(q, tab), x, ldx,
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

qmm_gemv_row_fn qmm_gemv_codebook_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_IQ4_NL: return row_iq4_nl;
    case QMM_TYPE_IQ4_XS: return row_iq4_xs;
    case QMM_TYPE_MXFP4: return row_mxfp4;
    case QMM_TYPE_NVFP4: return row_nvfp4;
    default: return NULL;
    }
}
