/*
 * gemv_kquants_avx2.c — AVX2 gemv row kernels for the 256-element super-block types q2_K,
 * q3_K, q4_K, q5_K and q6_K (contract and summation order: gemv_common.h, accumulators:
 * gemv_avx2_impl.h; bit layouts: docs/FORMATS.md and src/formats/quants_k.c); the port of
 * gemv_kquants_avx512.c.
 *
 * Staged decoding: a super-block's integer quants are assembled with 32-byte-wide byte
 * operations into an int8 buffer of 256 (in L1); its sub-block scales (and mins) are
 * computed as floats with the scalar code's products (d * sc, dmin * m). Each group of 16
 * elements is then converted and scaled with the float operations of the scalar to_float
 * and of the AVX-512 tables: (float)q * dl (q2_K, q4_K, q5_K: minus ml after the product;
 * q3_K, q6_K: q already signed). Every decoded value is bit-identical to to_float's.
 */
#include "cpu/x86/gemv_avx2_impl.h"

#include "core/types.h"

#define BODY_ARGS                                                                         \
    const unsigned char *w, size_t stride, int R, int64_t k, const float *x, int64_t ldx,   \
        int nr, qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1

/* The 16 staged quants q[0..16) of elements p..p+15: (float)q * dl, minus ml if with_min,
 * multiplied into every X row. */
QMM_GEMV_INLINE void fma_staged(qmm_gemv_acc *acc, int nr, const int8_t *q, float dl, float ml,
                                int with_min, const float *x, int64_t ldx, int64_t p) {
    qmm_v16 v = qmm_gemv_scale(qmm_gemv_i8x16(q), _mm256_set1_ps(dl));
    if (with_min) {
        const __m256 m = _mm256_set1_ps(ml);
        v.lo = _mm256_sub_ps(v.lo, m);
        v.hi = _mm256_sub_ps(v.hi, m);
    }
    qmm_gemv_fma16(acc, nr, v, x, ldx, p);
}

/* (v >> s) & mask on every byte (s <= 7). */
QMM_GEMV_INLINE __m256i bits8(__m256i v, int s, int mask) {
    return _mm256_and_si256(_mm256_srli_epi16(v, s), _mm256_set1_epi8((char)mask));
}

/* The staging of one super-block for each kind: q[256] and the 16 (scale, min) per 16
 * elements. */
enum kq { KQ_Q2, KQ_Q3, KQ_Q4, KQ_Q5, KQ_Q6 };

/* q2_K: y = d*sc*q - dmin*mn per 16 elements; element 128h + 32p + l (l < 32) is bit pair p
 * of qs[32h + l]. */
QMM_GEMV_INLINE void q2_K_stage(const unsigned char *blk, int8_t q[QK_K], float dl[16], float ml[16]) {
    const block_q2_K *b = (const block_q2_K *)blk;
    const float d = qmm_gemv_half(&b->d), dmin = qmm_gemv_half(&b->dmin);
    for (int s = 0; s < 16; s++) {
        dl[s] = d * (float)(b->scales[s] & 0xF);
        ml[s] = dmin * (float)(b->scales[s] >> 4);
    }
    for (int h = 0; h < 2; h++) {
        const __m256i qs = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * h));
        for (int p = 0; p < 4; p++)
            _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * p), bits8(qs, 2 * p, 3));
    }
}

/* q3_K: y = d*(sc-32)*(q - (hbit ? 0 : 4)); element 128h + 32p + l: bit pair p of
 * qs[32h + l], high bit 4h + p of hmask[l]; scales as quants_k.c's q3_K_scale. */
QMM_GEMV_INLINE void q3_K_stage(const unsigned char *blk, int8_t q[QK_K], float dl[16]) {
    const block_q3_K *b = (const block_q3_K *)blk;
    const float d = qmm_gemv_half(&b->d);
    uint32_t x0, x1, x2;
    memcpy(&x0, b->scales, 4);
    memcpy(&x1, b->scales + 4, 4);
    memcpy(&x2, b->scales + 8, 4);
    const uint32_t m4 = 0x0F0F0F0Fu, m2 = 0x03030303u;
    const uint32_t sv[4] = {(x0 & m4) | ((x2 & m2) << 4), (x1 & m4) | (((x2 >> 2) & m2) << 4),
                            ((x0 >> 4) & m4) | (((x2 >> 4) & m2) << 4),
                            ((x1 >> 4) & m4) | (((x2 >> 6) & m2) << 4)};
    for (int s = 0; s < 16; s++) dl[s] = d * (float)((int)((sv[s / 4] >> (8 * (s % 4))) & 0xFF) - 32);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)b->hmask);
    const __m256i four = _mm256_set1_epi8(4), zero = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        const __m256i qs = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * h));
        for (int p = 0; p < 4; p++) {
            const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * h + p)));
            const __m256i unset = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), zero);
            _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * p),
                                _mm256_sub_epi8(bits8(qs, 2 * p, 3), _mm256_and_si256(unset, four)));
        }
    }
}

/* q4_K (with_qh = 0) and q5_K (with_qh = 1): y = d*sc*q - dmin*m per 32 elements; byte
 * qs[32c + l] holds element 64c + l (low nibble) and 64c + 32 + l (high nibble); q5_K's bit 4
 * of those is bit 2c / 2c + 1 of qh[l]. dl, ml per 16 elements (each sub-block's twice). */
QMM_GEMV_INLINE void q45_K_stage(const unsigned char *blk, int with_qh, int8_t q[QK_K],
                                 float dl[16], float ml[16]) {
    const float d = qmm_gemv_half(blk), dmin = qmm_gemv_half(blk + 2);
    uint32_t x0, x1, x2;
    memcpy(&x0, blk + 4, 4);
    memcpy(&x1, blk + 8, 4);
    memcpy(&x2, blk + 12, 4);
    const uint32_t sc[2] = {x0 & 0x3F3F3F3Fu, (x2 & 0x0F0F0F0Fu) | ((x0 >> 2) & 0x30303030u)};
    const uint32_t mn[2] = {x1 & 0x3F3F3F3Fu, ((x2 >> 4) & 0x0F0F0F0Fu) | ((x1 >> 2) & 0x30303030u)};
    for (int s = 0; s < 8; s++) {
        dl[2 * s] = dl[2 * s + 1] = d * (float)((sc[s / 4] >> (8 * (s % 4))) & 0xFF);
        ml[2 * s] = ml[2 * s + 1] = dmin * (float)((mn[s / 4] >> (8 * (s % 4))) & 0xFF);
    }
    const uint8_t *qhp = blk + 4 + K_SCALE_SIZE;
    const uint8_t *qsp = with_qh ? qhp + QK_K / 8 : qhp;
    const __m256i qh = with_qh ? _mm256_loadu_si256((const __m256i *)qhp) : _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        const __m256i qs = _mm256_loadu_si256((const __m256i *)(qsp + 32 * c));
        for (int s = 0; s < 2; s++) {
            __m256i v = bits8(qs, 4 * s, 0x0F);
            if (with_qh) v = _mm256_or_si256(v, _mm256_slli_epi16(bits8(qh, 2 * c + s, 1), 4));
            _mm256_storeu_si256((__m256i *)(q + 64 * c + 32 * s), v);
        }
    }
}

/* q6_K: y = d*sc*(q-32); element 128h + 32p + l: low nibble of ql[64h + 32(p&1) + l] (high
 * nibble for p >= 2), bit pair p of qh[32h + l], scale scales[(128h + 32p + l) / 16]. */
QMM_GEMV_INLINE void q6_K_stage(const unsigned char *blk, int8_t q[QK_K], float dl[16]) {
    const block_q6_K *b = (const block_q6_K *)blk;
    const float d = qmm_gemv_half(&b->d);
    for (int s = 0; s < 16; s++) dl[s] = d * (float)b->scales[s];
    const __m256i m32 = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++) {
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
        for (int p = 0; p < 4; p++) {
            const __m256i ql = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32 * (p & 1)));
            const __m256i v = _mm256_or_si256(bits8(ql, p >= 2 ? 4 : 0, 0x0F),
                                              _mm256_slli_epi16(bits8(qh, 2 * p, 3), 4));
            _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * p), _mm256_sub_epi8(v, m32));
        }
    }
}

QMM_GEMV_INLINE void kq_body(BODY_ARGS, enum kq kind) {
    const size_t bsz = kind == KQ_Q2 ? sizeof(block_q2_K) : kind == KQ_Q3 ? sizeof(block_q3_K)
                     : kind == KQ_Q4 ? sizeof(block_q4_K) : kind == KQ_Q5 ? sizeof(block_q5_K)
                                                           : sizeof(block_q6_K);
    const int with_min = kind == KQ_Q2 || kind == KQ_Q4 || kind == KQ_Q5;
    qmm_gemv_acc acc[2];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    for (int64_t i = ib0; i < ib1; i++) {
        _Alignas(32) int8_t q[2][QK_K];
        float dl[2][16], ml[2][16] = {{0}};
        for (int r = 0; r < R; r++) {
            const unsigned char *blk = w + r * stride + i * bsz;
            qmm_gemv_prefetch(blk, bsz, ahead);
            switch (kind) {
            case KQ_Q2: q2_K_stage(blk, q[r], dl[r], ml[r]); break;
            case KQ_Q3: q3_K_stage(blk, q[r], dl[r]); break;
            case KQ_Q4: q45_K_stage(blk, 0, q[r], dl[r], ml[r]); break;
            case KQ_Q5: q45_K_stage(blk, 1, q[r], dl[r], ml[r]); break;
            default: q6_K_stage(blk, q[r], dl[r]); break;
            }
        }
        for (int c = 0; c < 16; c++)
            for (int r = 0; r < R; r++)
                fma_staged(&acc[r], nr, q[r] + 16 * c, dl[r][c], ml[r][c], with_min, x, ldx,
                           QK_K * i + 16 * c);
        qmm_gemv_panel_end(acc, dacc, R, nr, i + 1, QK_K);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void q2_K_body(BODY_ARGS) { kq_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KQ_Q2); }
QMM_GEMV_INLINE void q3_K_body(BODY_ARGS) { kq_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KQ_Q3); }
QMM_GEMV_INLINE void q4_K_body(BODY_ARGS) { kq_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KQ_Q4); }
QMM_GEMV_INLINE void q5_K_body(BODY_ARGS) { kq_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KQ_Q5); }
QMM_GEMV_INLINE void q6_K_body(BODY_ARGS) { kq_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KQ_Q6); }

QMM_GEMV_DEFINE_ROW_FN(row_q2_K, q2_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q3_K, q3_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q4_K, q4_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q5_K, q5_K_body, QK_K)
QMM_GEMV_DEFINE_ROW_FN(row_q6_K, q6_K_body, QK_K)

qmm_gemv_row_fn qmm_gemv_avx2_kquant_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_Q2_K: return row_q2_K;
    case QMM_TYPE_Q3_K: return row_q3_K;
    case QMM_TYPE_Q4_K: return row_q4_K;
    case QMM_TYPE_Q5_K: return row_q5_K;
    case QMM_TYPE_Q6_K: return row_q6_K;
    default: return NULL;
    }
}
