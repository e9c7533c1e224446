/*
 * gemv_legacy_avx512.c — AVX-512 gemv row kernels for the 32-element block types q4_0, q4_1,
 * q5_0, q5_1 and q8_0 (contract and summation order: gemv_avx512_impl.h).
 *
 * Decoding in registers: for the 4- and 5-bit types each block gets a table of its 16 or 32
 * possible values, computed with the same float operations as the scalar to_float
 * ((q - 8) * d, q * d + m, ...), and the quants index it (vpermps / vpermt2ps); q8_0 converts
 * the int8 quants and multiplies by d. Every decoded value equals to_float's bit for bit.
 */
#include "cpu/x86/gemv_avx512_impl.h"

#include <stddef.h>

#include "core/types.h"

/* 0, 1, ..., 15 as floats plus `off`. */
QMM_GEMV_INLINE __m512 ramp16(float off) {
    return _mm512_add_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_ps(off));
}

#define BODY_ARGS                                                                         \
    const unsigned char *w, size_t stride, int R, int64_t k, const float *x, int64_t ldx,   \
        int nr, qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1

/* The f16 fields at byte `off` of up to 16 blocks from block i (before block nb) of each of
 * the R rows. */
QMM_GEMV_INLINE void block_halves(const unsigned char *w, size_t stride, int R, size_t bsz,
                                  size_t off, int64_t i, int64_t nb, float out[][16]) {
    const int cnt = nb - i < 16 ? (int)(nb - i) : 16;
    for (int r = 0; r < R; r++) qmm_gemv_halves(w + r * stride + i * bsz + off, bsz, cnt, out[r]);
}

/* q4_0 (value (q - 8) * d) and q4_1 (q * d + m): low nibbles are elements 0..15, high
 * nibbles 16..31; a 16-entry table per block. */
QMM_GEMV_INLINE void q4_body(BODY_ARGS, int with_min) {
    const size_t bsz = with_min ? sizeof(block_q4_1) : sizeof(block_q4_0);
    const size_t qs_off = with_min ? offsetof(block_q4_1, qs) : offsetof(block_q4_0, qs);
    const __m512 base = ramp16(with_min ? 0.0f : -8.0f);
    float d[4][16], mn[4][16];
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        if (i % 16 == 0) {
            block_halves(w, stride, R, bsz, 0, i, ib1, d);
            if (with_min) block_halves(w, stride, R, bsz, 2, i, ib1, mn);
        }
        for (int r = 0; r < R; r++) {
            if (i % 2 == 0) qmm_gemv_prefetch(w + r * stride + i * bsz, 1, ahead);
            __m512 tab = _mm512_mul_ps(base, _mm512_set1_ps(d[r][i % 16]));
            if (with_min) tab = _mm512_add_ps(tab, _mm512_set1_ps(mn[r][i % 16]));
            const __m512i q = qmm_gemv_u8x16(w + r * stride + i * bsz + qs_off);
            qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(q, tab), x, ldx, 32 * i);
            qmm_gemv_fma16(&acc[r], nr, _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), tab), x,
                           ldx, 32 * i + 16);
        }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, 32);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void q4_0_body(BODY_ARGS) { q4_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 0); }
QMM_GEMV_INLINE void q4_1_body(BODY_ARGS) { q4_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 1); }

/* The 5-bit index of 16 elements: nibble (bits 0..3 of nib) | bit 4 where `hbits` is set. */
QMM_GEMV_INLINE __m512i q5_index(__m512i nib, __mmask16 hbits) {
    const __m512i lo = _mm512_and_si512(nib, _mm512_set1_epi32(0x0F));
    return _mm512_mask_or_epi32(lo, hbits, lo, _mm512_set1_epi32(0x10));
}

/* q5_0 (value (q - 16) * d) and q5_1 (q * d + m): a 32-entry table per block (vpermt2ps). */
QMM_GEMV_INLINE void q5_body(BODY_ARGS, int with_min) {
    const size_t bsz = with_min ? sizeof(block_q5_1) : sizeof(block_q5_0);
    const size_t qh_off = with_min ? offsetof(block_q5_1, qh) : offsetof(block_q5_0, qh);
    const size_t qs_off = with_min ? offsetof(block_q5_1, qs) : offsetof(block_q5_0, qs);
    const __m512 base_lo = ramp16(with_min ? 0.0f : -16.0f);
    const __m512 base_hi = ramp16(with_min ? 16.0f : 0.0f);
    float dv[4][16], mv[4][16];
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        if (i % 16 == 0) {
            block_halves(w, stride, R, bsz, 0, i, ib1, dv);
            if (with_min) block_halves(w, stride, R, bsz, 2, i, ib1, mv);
        }
        for (int r = 0; r < R; r++) {
            const unsigned char *blk = w + r * stride + i * bsz;
            if (i % 2 == 0) qmm_gemv_prefetch(blk, 1, ahead);
            const __m512 d = _mm512_set1_ps(dv[r][i % 16]);
            __m512 tlo = _mm512_mul_ps(base_lo, d), thi = _mm512_mul_ps(base_hi, d);
            if (with_min) {
                const __m512 m = _mm512_set1_ps(mv[r][i % 16]);
                tlo = _mm512_add_ps(tlo, m);
                thi = _mm512_add_ps(thi, m);
            }
            uint32_t qh;
            memcpy(&qh, blk + qh_off, sizeof qh);
            const __m512i q = qmm_gemv_u8x16(blk + qs_off);
            const __m512i i0 = q5_index(q, (__mmask16)(qh & 0xFFFF));
            const __m512i i1 = q5_index(_mm512_srli_epi32(q, 4), (__mmask16)(qh >> 16));
            qmm_gemv_fma16(&acc[r], nr, _mm512_permutex2var_ps(tlo, i0, thi), x, ldx, 32 * i);
            qmm_gemv_fma16(&acc[r], nr, _mm512_permutex2var_ps(tlo, i1, thi), x, ldx, 32 * i + 16);
        }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, 32);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void q5_0_body(BODY_ARGS) { q5_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 0); }
QMM_GEMV_INLINE void q5_1_body(BODY_ARGS) { q5_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 1); }

/* q8_0: value q * d. */
QMM_GEMV_INLINE void q8_0_body(BODY_ARGS) {
    float dv[4][16];
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        if (i % 16 == 0) block_halves(w, stride, R, sizeof(block_q8_0), 0, i, ib1, dv);
        for (int r = 0; r < R; r++) {
            const block_q8_0 *b = (const block_q8_0 *)(w + r * stride) + i;
            if (i % 2 == 0) qmm_gemv_prefetch((const unsigned char *)b, 1, ahead);
            const __m512 d = _mm512_set1_ps(dv[r][i % 16]);
            for (int h = 0; h < 2; h++) {
                const __m512i q =
                    _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + 16 * h)));
                qmm_gemv_fma16(&acc[r], nr, _mm512_mul_ps(_mm512_cvtepi32_ps(q), d), x, ldx,
                               32 * i + 16 * h);
            }
        }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, 32);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_DEFINE_ROW_FN(row_q4_0, q4_0_body, 32)
QMM_GEMV_DEFINE_ROW_FN(row_q4_1, q4_1_body, 32)
QMM_GEMV_DEFINE_ROW_FN(row_q5_0, q5_0_body, 32)
QMM_GEMV_DEFINE_ROW_FN(row_q5_1, q5_1_body, 32)
QMM_GEMV_DEFINE_ROW_FN(row_q8_0, q8_0_body, 32)

qmm_gemv_row_fn qmm_gemv_legacy_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_Q4_0: return row_q4_0;
    case QMM_TYPE_Q4_1: return row_q4_1;
    case QMM_TYPE_Q5_0: return row_q5_0;
    case QMM_TYPE_Q5_1: return row_q5_1;
    case QMM_TYPE_Q8_0: return row_q8_0;
    default: return NULL;
    }
}
