/*
 * gemv_kquants_avx512.c — AVX-512 gemv row kernels for the 256-element super-block types
 * q2_K, q3_K, q4_K, q5_K and q6_K (contract and summation order: gemv_avx512_impl.h; bit
 * layouts: docs/FORMATS.md and src/formats/quants_k.c).
 *
 * Decoding in registers, with the float operations of the scalar to_float so that every
 * decoded value is bit-identical:
 *   - q2_K, q3_K (scale per 16 elements), q4_K, q5_K (scale per 32): a table of the values
 *     of the sub-block (d*sc*q - dmin*m, ...) indexed by the quant bits (vpermps, vpermt2ps);
 *     the 2- and 3-bit tables repeat every 4 / 8 entries so that higher index bits need no
 *     masking;
 *   - q6_K: the 6-bit quant is assembled in a dword, converted, and scaled with one FMA
 *     (q * ds - 32 * ds, the exact value (q - 32) * ds rounded once, as the scalar code).
 */
#include "cpu/x86/gemv_avx512_impl.h"

#include "core/types.h"
#include "formats/kquant_search.h"

/* Move bit `from` of every dword to bit `to` (other bits move along; callers mask). */
QMM_GEMV_INLINE __m512i bit_to(__m512i v, int from, int to) {
    if (from == to) return v;
    return from < to ? _mm512_slli_epi32(v, (unsigned)(to - from))
                     : _mm512_srli_epi32(v, (unsigned)(from - to));
}

/* (a & c) | (b & ~c) */
QMM_GEMV_INLINE __m512i select_bits(__m512i a, __m512i b, int c) {
    return _mm512_ternarylogic_epi32(a, b, _mm512_set1_epi32(c), 0xE4);
}

#define BODY_ARGS                                                                         \
    const unsigned char *w, size_t stride, int R, int64_t k, const float *x, int64_t ldx,   \
        int nr, qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1

/* q2_K: y = d*sc*q - dmin*mn per 16 elements; element 128h + 32p + 16half + l is bit pair p
 * of qs[32h + 16half + l]. */
QMM_GEMV_INLINE void q2_K_body(BODY_ARGS) {
    const __m512 base = _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float dl[4][16], ml[4][16];
        for (int r = 0; r < R; r++) {
            const block_q2_K *b = (const block_q2_K *)(w + r * stride) + i;
            qmm_gemv_prefetch((const unsigned char *)b, sizeof *b, ahead);
            const __m512i sc = qmm_gemv_u8x16(b->scales);
            _mm512_storeu_ps(dl[r], _mm512_mul_ps(_mm512_set1_ps(qmm_gemv_half(&b->d)),
                _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(0xF)))));
            _mm512_storeu_ps(ml[r], _mm512_mul_ps(_mm512_set1_ps(qmm_gemv_half(&b->dmin)),
                _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4))));
        }
        for (int h = 0; h < 2; h++)
            for (int r = 0; r < R; r++) {
                const block_q2_K *b = (const block_q2_K *)(w + r * stride) + i;
                const __m512i q[2] = {qmm_gemv_u8x16(b->qs + 32 * h),
                                      qmm_gemv_u8x16(b->qs + 32 * h + 16)};
                for (int p = 0; p < 4; p++)
                    for (int half = 0; half < 2; half++) {
                        const int is = 8 * h + 2 * p + half;
                        const __m512 tab = _mm512_sub_ps(
                            _mm512_mul_ps(_mm512_set1_ps(dl[r][is]), base), _mm512_set1_ps(ml[r][is]));
                        const __m512i idx = _mm512_srli_epi32(q[half], (unsigned)(2 * p));
                        qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(idx, tab), x, ldx,
                                       QK_K * i + 128 * h + 32 * p + 16 * half);
                    }
            }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_K);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

/* The 16 signed scales (-32..31) of a q3_K super-block: sub-block j has its low 4 bits in
 * the low (j < 8) or high (j >= 8) nibble of byte j % 8 and its top 2 bits in bit pair j / 4
 * of byte 8 + j % 4 (quants_k.c, q3_K_scale); four scales per 32-bit operation. */
QMM_GEMV_INLINE __m512i q3_K_scales(const uint8_t *s) {
    uint32_t x0, x1, x2;
    memcpy(&x0, s, 4);
    memcpy(&x1, s + 4, 4);
    memcpy(&x2, s + 8, 4);
    const uint32_t m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
    const uint32_t s0 = (x0 & m4) | ((x2 & m2) << 4);
    const uint32_t s1 = (x1 & m4) | (((x2 >> 2) & m2) << 4);
    const uint32_t s2 = ((x0 >> 4) & m4) | (((x2 >> 4) & m2) << 4);
    const uint32_t s3 = ((x1 >> 4) & m4) | (((x2 >> 6) & m2) << 4);
    return _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_setr_epi32((int)s0, (int)s1, (int)s2, (int)s3)),
                            _mm512_set1_epi32(32));
}

/* q3_K: y = d*(sc-32)*(q - (hbit ? 0 : 4)); element 128h + 32p + l: bit pair p of
 * qs[32h + l], high bit 4h + p of hmask[l]. Staged: 64 elements (p, p + 1) per byte op. */
QMM_GEMV_INLINE void q3_K_stage(const block_q3_K *b, int8_t q[QK_K]) {
    const __m512i three = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    const __m512i hm = qmm_gemv_bcast32(b->hmask);
    for (int h = 0; h < 2; h++) {
        const __m512i qs = qmm_gemv_bcast32(b->qs + 32 * h);
        for (int pp = 0; pp < 2; pp++) { /* p = 2pp (low 32 bytes), 2pp + 1 (high 32) */
            const int p = 2 * pp;
            const __m512i v = _mm512_and_si512(
                _mm512_srlv_epi16(qs, qmm_gemv_halves16((short)(2 * p), (short)(2 * p + 2))), three);
            const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (4 * h + p))),
                                                   _mm256_set1_epi8((char)(1 << (4 * h + p + 1))), 1);
            const __mmask64 set = _mm512_test_epi8_mask(hm, bit);
            _mm512_storeu_si512(q + 128 * h + 64 * pp, _mm512_mask_sub_epi8(v, ~set, v, four));
        }
    }
}

QMM_GEMV_INLINE void q3_K_body(BODY_ARGS) {
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float dl[4][16];
        int8_t q[4][QK_K];
        for (int r = 0; r < R; r++) {
            const block_q3_K *b = (const block_q3_K *)(w + r * stride) + i;
            qmm_gemv_prefetch((const unsigned char *)b, sizeof *b, ahead);
            _mm512_storeu_ps(dl[r], _mm512_mul_ps(_mm512_set1_ps(qmm_gemv_half(&b->d)),
                                                  _mm512_cvtepi32_ps(q3_K_scales(b->scales))));
            q3_K_stage(b, q[r]);
        }
        for (int c = 0; c < 16; c++)
            for (int r = 0; r < R; r++)
                qmm_gemv_fma_staged(&acc[r], nr, q[r], dl[r], c, x, ldx, QK_K * i + 16 * c);
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_K);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

/* q4_K (with_qh = 0) and q5_K (with_qh = 1): y = d*sc*q - dmin*m per 32 elements; byte
 * qs[32c + l] holds element 64c + l (low nibble) and 64c + 32 + l (high nibble); q5_K's bit 4
 * of those is bit 2c / 2c + 1 of qh[l]. Scales and mins of a super-block are converted in one
 * vector (dl, ml) and broadcast from memory. */
QMM_GEMV_INLINE void q45_K_body(BODY_ARGS, int with_qh) {
    const size_t bsz = with_qh ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const __m512 base_lo = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 base_hi = _mm512_add_ps(base_lo, _mm512_set1_ps(16.0f));
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float dl[4][16], ml[4][16];
        for (int r = 0; r < R; r++) {
            const unsigned char *blk = w + r * stride + i * bsz;
            qmm_gemv_prefetch(blk, bsz, ahead);
            /* the 8 6-bit scales and mins (get_scale_min_k4) four bytes at a time */
            uint32_t x0, x1, x2;
            memcpy(&x0, blk + 4, 4);
            memcpy(&x1, blk + 8, 4);
            memcpy(&x2, blk + 12, 4);
            const uint32_t sc_lo = x0 & 0x3F3F3F3Fu, mn_lo = x1 & 0x3F3F3F3Fu;
            const uint32_t sc_hi = (x2 & 0x0F0F0F0Fu) | ((x0 >> 2) & 0x30303030u);
            const uint32_t mn_hi = ((x2 >> 4) & 0x0F0F0F0Fu) | ((x1 >> 2) & 0x30303030u);
            const __m512i sm = _mm512_cvtepu8_epi32(_mm_setr_epi32((int)sc_lo, (int)sc_hi,
                                                                   (int)mn_lo, (int)mn_hi));
            const __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(qmm_gemv_half(blk)),
                                                 _mm256_set1_ps(qmm_gemv_half(blk + 2)), 1);
            float both[16];
            _mm512_storeu_ps(both, _mm512_mul_ps(dd, _mm512_cvtepi32_ps(sm)));
            memcpy(dl[r], both, 8 * sizeof(float));
            memcpy(ml[r], both + 8, 8 * sizeof(float));
        }
        for (int c = 0; c < 4; c++)
            for (int r = 0; r < R; r++) {
                const unsigned char *blk = w + r * stride + i * bsz;
                const uint8_t *qhp = blk + 4 + K_SCALE_SIZE;
                const uint8_t *qs = with_qh ? qhp + QK_K / 8 : qhp;
                __m512 tlo[2], thi[2];
                for (int s = 0; s < 2; s++) {
                    const __m512 d1 = _mm512_set1_ps(dl[r][2 * c + s]);
                    const __m512 m1 = _mm512_set1_ps(ml[r][2 * c + s]);
                    tlo[s] = _mm512_sub_ps(_mm512_mul_ps(d1, base_lo), m1);
                    thi[s] = with_qh ? _mm512_sub_ps(_mm512_mul_ps(d1, base_hi), m1) : tlo[s];
                }
                const __m512i q[2] = {qmm_gemv_u8x16(qs + 32 * c), qmm_gemv_u8x16(qs + 32 * c + 16)};
                for (int s = 0; s < 2; s++)     /* low nibbles, then high nibbles */
                    for (int half = 0; half < 2; half++) {
                        const __m512i nib = s ? _mm512_srli_epi32(q[half], 4) : q[half];
                        __m512 wv;
                        if (with_qh) {
                            const __m512i qh = qmm_gemv_u8x16(qhp + 16 * half);
                            const __m512i idx = select_bits(nib, bit_to(qh, 2 * c + s, 4), 0x0F);
                            wv = _mm512_permutex2var_ps(tlo[s], idx, thi[s]);
                        } else {
                            wv = _mm512_permutexvar_ps(nib, tlo[s]);
                        }
                        qmm_gemv_fma16(&acc[r], nr, wv, x, ldx,
                                       QK_K * i + 64 * c + 32 * s + 16 * half);
                    }
            }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_K);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void q4_K_body(BODY_ARGS) { q45_K_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 0); }
QMM_GEMV_INLINE void q5_K_body(BODY_ARGS) { q45_K_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 1); }

/* q6_K: y = d*sc*(q-32); element 128h + 32p + l: low nibble of ql[64h + 32(p&1) + l] (high
 * nibble for p >= 2), bit pair p of qh[32h + l], scale scales[(128h + 32p + l) / 16].
 * Staged: the 64 elements of p = 0, 1 (and of p = 2, 3) are one 64-byte op each. */
QMM_GEMV_INLINE void q6_K_stage(const block_q6_K *b, int8_t q[QK_K]) {
    const __m512i lo4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    const __m512i m32 = _mm512_set1_epi8(32);
    for (int h = 0; h < 2; h++) {
        const __m512i ql = _mm512_loadu_si512(b->ql + 64 * h);
        const __m512i qh = qmm_gemv_bcast32(b->qh + 32 * h);
        /* p = 0, 1: bits 0-1 / 2-3 of qh to bits 4-5 */
        const __m512i h01 = _mm512_and_si512(_mm512_sllv_epi16(qh, qmm_gemv_halves16(4, 2)), bits45);
        const __m512i v01 = _mm512_ternarylogic_epi32(ql, lo4, h01, 0xEA); /* (ql & lo4) | h01 */
        _mm512_storeu_si512(q + 128 * h, _mm512_sub_epi8(v01, m32));
        /* p = 2, 3: bits 4-5 / 6-7 of qh to bits 4-5, high nibbles of ql */
        const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi16(qh, qmm_gemv_halves16(0, 2)), bits45);
        const __m512i v23 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), lo4, h23, 0xEA);
        _mm512_storeu_si512(q + 128 * h + 64, _mm512_sub_epi8(v23, m32));
    }
}

QMM_GEMV_INLINE void q6_K_body(BODY_ARGS) {
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        float ds[4][16];
        int8_t q[4][QK_K];
        for (int r = 0; r < R; r++) {
            const block_q6_K *b = (const block_q6_K *)(w + r * stride) + i;
            qmm_gemv_prefetch((const unsigned char *)b, sizeof *b, ahead);
            _mm512_storeu_ps(ds[r], _mm512_mul_ps(_mm512_set1_ps(qmm_gemv_half(&b->d)),
                _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)b->scales)))));
            q6_K_stage(b, q[r]);
        }
        for (int c = 0; c < 16; c++)
            for (int r = 0; r < R; r++)
                qmm_gemv_fma_staged(&acc[r], nr, q[r], ds[r], c, x, ldx, QK_K * i + 16 * c);
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_K);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_DEFINE_ROW_FN(row_q2_K, q2_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q3_K, q3_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q4_K, q4_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q5_K, q5_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q6_K, q6_K_body, QK_K)

qmm_gemv_row_fn qmm_gemv_kquant_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_Q2_K: return row_q2_K;
    case QMM_TYPE_Q3_K: return row_q3_K;
    case QMM_TYPE_Q4_K: return row_q4_K;
    case QMM_TYPE_Q5_K: return row_q5_K;
    case QMM_TYPE_Q6_K: return row_q6_K;
    default: return NULL;
    }
}
