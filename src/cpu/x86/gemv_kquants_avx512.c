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
        int nr, float *y, int64_t ldy

/* q2_K: y = d*sc*q - dmin*mn per 16 elements; element 128h + 32p + 16half + l is bit pair p
 * of qs[32h + 16half + l]. */
QMM_GEMV_INLINE void q2_K_body(BODY_ARGS) {
    const __m512 base = _mm512_setr_ps(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = 0; i < k / QK_K; i++) {
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
    }
    qmm_gemv_store(acc, R, nr, y, ldy);
}

/* The signed scale (-32..31) of q3_K sub-block j (layout: quants_k.c, q3_K_scale). */
static inline int q3_K_scale(const uint8_t *s, int j) {
    const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

/* q3_K: y = d*(sc-32)*(q - (hbit ? 0 : 4)); element 128h + 32p + l: bit pair p of
 * qs[32h + l], high bit 4h + p of hmask[l]. Table index: q | hbit << 2 (period 8). */
QMM_GEMV_INLINE void q3_K_body(BODY_ARGS) {
    const __m512 base = _mm512_setr_ps(-4, -3, -2, -1, 0, 1, 2, 3, -4, -3, -2, -1, 0, 1, 2, 3);
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = 0; i < k / QK_K; i++) {
        float dl[4][16];
        for (int r = 0; r < R; r++) {
            const block_q3_K *b = (const block_q3_K *)(w + r * stride) + i;
            qmm_gemv_prefetch((const unsigned char *)b, sizeof *b, ahead);
            int32_t s[16];
            for (int j = 0; j < 16; j++) s[j] = q3_K_scale(b->scales, j);
            _mm512_storeu_ps(dl[r], _mm512_mul_ps(_mm512_set1_ps(qmm_gemv_half(&b->d)),
                                                  _mm512_cvtepi32_ps(_mm512_loadu_si512(s))));
        }
        for (int h = 0; h < 2; h++)
            for (int r = 0; r < R; r++) {
                const block_q3_K *b = (const block_q3_K *)(w + r * stride) + i;
                const __m512i hm[2] = {qmm_gemv_u8x16(b->hmask), qmm_gemv_u8x16(b->hmask + 16)};
                const __m512i q[2] = {qmm_gemv_u8x16(b->qs + 32 * h),
                                      qmm_gemv_u8x16(b->qs + 32 * h + 16)};
                for (int p = 0; p < 4; p++)
                    for (int half = 0; half < 2; half++) {
                        const int is = 8 * h + 2 * p + half;
                        const __m512 tab = _mm512_mul_ps(_mm512_set1_ps(dl[r][is]), base);
                        const __m512i idx =
                            select_bits(_mm512_srli_epi32(q[half], (unsigned)(2 * p)),
                                        bit_to(hm[half], 4 * h + p, 2), 3);
                        qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(idx, tab), x, ldx,
                                       QK_K * i + 128 * h + 32 * p + 16 * half);
                    }
            }
    }
    qmm_gemv_store(acc, R, nr, y, ldy);
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
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = 0; i < k / QK_K; i++) {
        float dl[4][16], ml[4][16];
        for (int r = 0; r < R; r++) {
            const unsigned char *blk = w + r * stride + i * bsz;
            qmm_gemv_prefetch(blk, bsz, ahead);
            int32_t sc[16], mn[16];
            for (int j = 0; j < 8; j++) {
                uint8_t a, m;
                qmm_kq_get_scale_min_k4(j, blk + 4, &a, &m);
                sc[j] = a;
                mn[j] = m;
            }
            _mm256_storeu_ps(dl[r], _mm256_mul_ps(_mm256_set1_ps(qmm_gemv_half(blk)),
                _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)sc))));
            _mm256_storeu_ps(ml[r], _mm256_mul_ps(_mm256_set1_ps(qmm_gemv_half(blk + 2)),
                _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)mn))));
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
    }
    qmm_gemv_store(acc, R, nr, y, ldy);
}

QMM_GEMV_INLINE void q4_K_body(BODY_ARGS) { q45_K_body(w, stride, R, k, x, ldx, nr, y, ldy, 0); }
QMM_GEMV_INLINE void q5_K_body(BODY_ARGS) { q45_K_body(w, stride, R, k, x, ldx, nr, y, ldy, 1); }

/* q6_K: y = d*sc*(q-32); element 128h + 32p + 16half + l: low nibble of
 * ql[64h + 32(p&1) + 16half + l] (high nibble for p >= 2), bit pair p of qh[32h + 16half + l],
 * scale scales[8h + 2p + half]. The quant is assembled in a dword and scaled with one FMA,
 * q * ds - 32 * ds: the exact (q - 32) * ds rounded once, as the scalar code. */
QMM_GEMV_INLINE void q6_K_body(BODY_ARGS) {
    const __m512i six = _mm512_set1_epi32(0x3F);
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = 0; i < k / QK_K; i++) {
        float ds[4][16];
        for (int r = 0; r < R; r++) {
            const block_q6_K *b = (const block_q6_K *)(w + r * stride) + i;
            qmm_gemv_prefetch((const unsigned char *)b, sizeof *b, ahead);
            _mm512_storeu_ps(ds[r], _mm512_mul_ps(_mm512_set1_ps(qmm_gemv_half(&b->d)),
                _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)b->scales)))));
        }
        for (int h = 0; h < 2; h++)
            for (int r = 0; r < R; r++) {
                const block_q6_K *b = (const block_q6_K *)(w + r * stride) + i;
                for (int p = 0; p < 4; p++)
                    for (int half = 0; half < 2; half++) {
                        const int is = 8 * h + 2 * p + half;
                        __m512i lo = qmm_gemv_u8x16(b->ql + 64 * h + 32 * (p & 1) + 16 * half);
                        if (p >= 2) lo = _mm512_srli_epi32(lo, 4);
                        const __m512i qh = qmm_gemv_u8x16(b->qh + 32 * h + 16 * half);
                        const __m512i q = _mm512_and_si512(
                            select_bits(lo, bit_to(qh, 2 * p, 4), 0x0F), six);
                        const __m512 dsv = _mm512_set1_ps(ds[r][is]);
                        const __m512 wv = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), dsv,
                            _mm512_mul_ps(dsv, _mm512_set1_ps(-32.0f)));
                        qmm_gemv_fma16(&acc[r], nr, wv, x, ldx,
                                       QK_K * i + 128 * h + 32 * p + 16 * half);
                    }
            }
    }
    qmm_gemv_store(acc, R, nr, y, ldy);
}

QMM_GEMV_DEFINE_ROW_FN(row_q2_K, q2_K_body)
QMM_GEMV_DEFINE_ROW_FN(row_q3_K, q3_K_body)
QMM_GEMV_DEFINE_ROW_FN(row_q4_K, q4_K_body)
QMM_GEMV_DEFINE_ROW_FN(row_q5_K, q5_K_body)
QMM_GEMV_DEFINE_ROW_FN(row_q6_K, q6_K_body)

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
