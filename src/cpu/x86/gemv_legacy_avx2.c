/*
 * gemv_legacy_avx2.c — AVX2 gemv row kernels for the 32-element block types q4_0, q4_1,
 * q5_0, q5_1 and q8_0 (contract and summation order: gemv_common.h, accumulators:
 * gemv_avx2_impl.h); the port of gemv_legacy_avx512.c.
 *
 * Decoding in registers: the quant is converted to float and scaled with the float
 * operations of the scalar to_float ((q - 8) * d, q * d + m, (q - 16) * d, q * d) — the same
 * per-lane values as the AVX-512 tables, which hold those products. Every decoded value
 * equals to_float's bit for bit.
 */
#include "cpu/x86/gemv_avx2_impl.h"

#include <stddef.h>

#include "core/types.h"

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

/* (float)(q + off) * d (+ m when with_min), lane by lane: the table entry of the AVX-512
 * kernel for index q. */
QMM_GEMV_INLINE qmm_v16 decode(qmm_i16 q, int off, __m256 d, __m256 m, int with_min) {
    const __m256i o = _mm256_set1_epi32(off);
    qmm_v16 v = qmm_gemv_scale((qmm_i16){_mm256_add_epi32(q.lo, o), _mm256_add_epi32(q.hi, o)}, d);
    if (with_min) {
        v.lo = _mm256_add_ps(v.lo, m);
        v.hi = _mm256_add_ps(v.hi, m);
    }
    return v;
}

QMM_GEMV_INLINE qmm_i16 and16(qmm_i16 q, int mask) {
    const __m256i mk = _mm256_set1_epi32(mask);
    return (qmm_i16){_mm256_and_si256(q.lo, mk), _mm256_and_si256(q.hi, mk)};
}

QMM_GEMV_INLINE qmm_i16 srl16(qmm_i16 q, int s) {
    return (qmm_i16){_mm256_srli_epi32(q.lo, s), _mm256_srli_epi32(q.hi, s)};
}

/* Bit 4 of element e's index: bit e of qh (e = base + lane), moved to bit 4. */
QMM_GEMV_INLINE qmm_i16 qh_bits(uint32_t qh, int base) {
    const __m256i v = _mm256_set1_epi32((int)qh), one = _mm256_set1_epi32(0x10);
    const __m256i s0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i slo = _mm256_add_epi32(s0, _mm256_set1_epi32(base));
    const __m256i shi = _mm256_add_epi32(s0, _mm256_set1_epi32(base + 8));
    return (qmm_i16){_mm256_and_si256(_mm256_slli_epi32(_mm256_srlv_epi32(v, slo), 4), one),
                     _mm256_and_si256(_mm256_slli_epi32(_mm256_srlv_epi32(v, shi), 4), one)};
}

QMM_GEMV_INLINE qmm_i16 or16(qmm_i16 a, qmm_i16 b) {
    return (qmm_i16){_mm256_or_si256(a.lo, b.lo), _mm256_or_si256(a.hi, b.hi)};
}

/* q4_0 ((q - 8) * d), q4_1 (q * d + m), q5_0 ((q - 16) * d), q5_1 (q * d + m): low nibbles
 * are elements 0..15, high nibbles 16..31; q5's bit 4 of element e is bit e of qh. */
QMM_GEMV_INLINE void q45_body(BODY_ARGS, int five, int with_min) {
    const size_t bsz = five ? (with_min ? sizeof(block_q5_1) : sizeof(block_q5_0))
                            : (with_min ? sizeof(block_q4_1) : sizeof(block_q4_0));
    const size_t qs_off = five ? (with_min ? offsetof(block_q5_1, qs) : offsetof(block_q5_0, qs))
                               : (with_min ? offsetof(block_q4_1, qs) : offsetof(block_q4_0, qs));
    const size_t qh_off = with_min ? offsetof(block_q5_1, qh) : offsetof(block_q5_0, qh);
    const int off = with_min ? 0 : five ? -16 : -8;
    float dv[2][16], mv[2][16];
    qmm_gemv_acc acc[2];
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
            const __m256 d = _mm256_set1_ps(dv[r][i % 16]);
            const __m256 m = with_min ? _mm256_set1_ps(mv[r][i % 16]) : _mm256_setzero_ps();
            const qmm_i16 q = qmm_gemv_u8x16(blk + qs_off);
            qmm_i16 q0 = and16(q, 0x0F), q1 = srl16(q, 4);
            if (five) {
                uint32_t qh;
                memcpy(&qh, blk + qh_off, sizeof qh);
                q0 = or16(q0, qh_bits(qh, 0));
                q1 = or16(q1, qh_bits(qh, 16));
            }
            qmm_gemv_fma16(&acc[r], nr, decode(q0, off, d, m, with_min), x, ldx, 32 * i);
            qmm_gemv_fma16(&acc[r], nr, decode(q1, off, d, m, with_min), x, ldx, 32 * i + 16);
        }
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, 32);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void q4_0_body(BODY_ARGS) { q45_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 0, 0); }
QMM_GEMV_INLINE void q4_1_body(BODY_ARGS) { q45_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 0, 1); }
QMM_GEMV_INLINE void q5_0_body(BODY_ARGS) { q45_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 1, 0); }
QMM_GEMV_INLINE void q5_1_body(BODY_ARGS) { q45_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, 1, 1); }

/* q8_0: value q * d. */
QMM_GEMV_INLINE void q8_0_body(BODY_ARGS) {
    float dv[2][16];
    qmm_gemv_acc acc[2];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        if (i % 16 == 0) block_halves(w, stride, R, sizeof(block_q8_0), 0, i, ib1, dv);
        for (int r = 0; r < R; r++) {
            const block_q8_0 *b = (const block_q8_0 *)(w + r * stride) + i;
            if (i % 2 == 0) qmm_gemv_prefetch((const unsigned char *)b, 1, ahead);
            const __m256 d = _mm256_set1_ps(dv[r][i % 16]);
            for (int h = 0; h < 2; h++)
                qmm_gemv_fma16(&acc[r], nr, qmm_gemv_scale(qmm_gemv_i8x16(b->qs + 16 * h), d), x,
                               ldx, 32 * i + 16 * h);
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

qmm_gemv_row_fn qmm_gemv_avx2_legacy_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_Q4_0: return row_q4_0;
    case QMM_TYPE_Q4_1: return row_q4_1;
    case QMM_TYPE_Q5_0: return row_q5_0;
    case QMM_TYPE_Q5_1: return row_q5_1;
    case QMM_TYPE_Q8_0: return row_q8_0;
    default: return NULL;
    }
}
