/*
 * gemm_int8_avx2_impl.h — the register-blocked kernel of the AVX2 int8 GEMM
 * (gemm_int8_avx2.h), written once and compiled twice: by gemm_int8_avx2.c with QMM_X8_VNNI 0
 * (vpmaddubsw + vpmaddwd) and by gemm_int8_avxvnni.c with QMM_X8_VNNI 1 (vpdpbusd / vpdpwssd on
 * ymm). Only the integer dot of one block (dot32, dot16) differs between the two; both give
 * the exact int32 sums, and the float part after it is the same code, so both give the same
 * bits. Include only from a file built with the AVX2 flags (and -mavxvnni for the VNNI one),
 * after defining QMM_X8_VNNI and QMM_X8_TASK (the name of the exported task function).
 *
 * One call of tile() computes 4 X rows (a "quad", rows 4q..4q+3 of the quantized X; only the
 * first 1 or 2 when the rest are padding) x 8 W rows (group g): one f32 accumulator of 8 lanes
 * per X row (lane r = W row 8g + r). For block c = 0..k/32-1 in
 * order: the 4 x 8 exact int32 block dots ia[j] (int32 lane r), then
 *     acc[j] = fma((float)ia[j], d_w * dx_j, acc[j])          (d_w: 8 lanes, dx_j broadcast)
 *     min types:  acc[j] = fma(s_j, mn_w, acc[j])
 *     q2_K:       acc[j] = fma((float)(m0 * sum0_j + m1 * sum1_j), -dmin * dx_j, acc[j]).
 *
 * The W quant vectors wv[v] (int32 lane r = u[r][4v..4v+3]) come from the record as bytes or,
 * for nibble records, as the low and high nibbles of byte vector v / 2 (vpand, vpsrlw + vpand;
 * the codebook types then look the index up in a 16-byte table with vpshufb). The integer dot
 * of a 32-element block, per X row j and W row r, with xb[j][v] = q_x[j][4v..4v+3] broadcast:
 *   VNNI:    ia = -offset * sum(q_x) + sum_v vpdpbusd(wv[v], xb[j][v])   (u8 x s8, no saturation)
 *   AVX2, 4-bit u (0..15): a16 = sum over the 8 v of vpmaddubsw(wv[v], xb) in int16 (each term
 *            at most 2 * 15 * 127 = 3810 in magnitude: 8 of them 30480 < 32768), then
 *            ia = -offset * sum(q_x) + vpmaddwd(a16, 1);
 *   AVX2, 5-bit u (0..31, and mxfp4's 0..24): the same in two halves of 4 v (4 * 7874 = 31496);
 *   AVX2, 8-bit (q8_0, iq4_nl, iq4_xs: u = q + 128): the signed q = u ^ 0x80 (the codebook types:
 *            the table of signed values) with the sign trick, vpmaddubsw(|q|, sign(xb, q)) per v
 *            (|q| <= 128 and |x| <= 127: at most 2 * 128 * 127 = 32512, so q = -128 is exact;
 *            CASES C), vpmaddwd by 1, summed in int32 (no offset: these are the signed values).
 * 16-element sub-blocks (q2_K, q3_K, q6_K): vpmaddubsw sums of 2 (q6_K, u <= 63: 2 * 16002) or
 * 4 (q2_K, q3_K) vectors in int16, multiplied by the sub-block's integer scale and added into
 * int32 by vpmaddwd (VNNI: vpdpwssd), starting from -offset * (sc0 * sum0 + sc1 * sum1) (one
 * vpmaddwd of the (-offset sc0, -offset sc1) pairs, made from (sc0, sc1) by a shift, with the X
 * sub-block sums (sum0, sum1)). Every int32 stays below 2^26 in magnitude (q6_K: 2 * 16 * 63 *
 * 127 * 128 plus the offset term), and the true block sum (the dot of the signed quants) below
 * 2^24, so (float)ia is exact.
 */
#ifndef QMM_X8_VNNI
#error "define QMM_X8_VNNI (0 or 1) before including gemm_int8_avx2_impl.h"
#endif

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu/x86/gemm_int8_avx2.h"
#include "cpu/x86/gemm_int8_avx2_layout.h"

#define X8_INLINE static inline __attribute__((always_inline))
#ifndef X8_PF
#define X8_PF 8
#endif

/* A broadcast of the int32 (or float) at p (vpbroadcastd from memory). */
X8_INLINE __m256i x8_bcast_i(const unsigned char *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
X8_INLINE __m256 x8_bcast_f(const unsigned char *p) {
    float v;
    memcpy(&v, p, 4);
    return _mm256_set1_ps(v);
}
X8_INLINE __m256i x8_load(const unsigned char *p) { return _mm256_load_si256((const __m256i *)p); }

/* The quant vectors 2p and 2p + 1 of a record as unsigned bytes u: bytes, or the two nibbles
 * of byte vector p (through the codebook table tbl, both 128-bit halves holding the 16
 * entries, for the index types). */
X8_INLINE void wpair(const unsigned char *wr, int p, const bool nib, const bool lut, __m256i tbl,
                     __m256i w[2]) {
    if (!nib) {
        w[0] = x8_load(wr + 64 * p);
        w[1] = x8_load(wr + 64 * p + 32);
        return;
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F), b = x8_load(wr + 32 * p);
    w[0] = _mm256_and_si256(b, m4);
    w[1] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
    if (lut) {
        w[0] = _mm256_shuffle_epi8(tbl, w[0]);
        w[1] = _mm256_shuffle_epi8(tbl, w[1]);
    }
}

/* The X quants of row j, vector v of block record xr (4 bytes, broadcast). */
#define XB(j, v) x8_bcast_i(xr + 32 * (j) + 4 * (v))

/* ia[j] = the exact block dot of X row j with the 8 W rows (32-element blocks). For the
 * 8-bit kinds without VNNI, tbl is the codebook as signed values (the u table ^ 0x80). */
X8_INLINE void dot32(const unsigned char *wr, const unsigned char *xr, const qmm_x8_kind kind,
                     const bool nib, const bool lut, __m256i tbl, const int nx, __m256i ia[4]) {
#if QMM_X8_VNNI
    (void)kind;
    /* two vpdpbusd chains per X row (even and odd v), 4 deep instead of 8 */
    __m256i ib[4];
    for (int j = 0; j < nx; j++) {
        ia[j] = x8_bcast_i(xr + QMM_X8_XR_OFF + 4 * j);
        ib[j] = _mm256_setzero_si256();
    }
    for (int p = 0; p < 4; p++) {
        __m256i w[2];
        wpair(wr, p, nib, lut, tbl, w);
        for (int j = 0; j < nx; j++) {
            ia[j] = _mm256_dpbusd_avx_epi32(ia[j], w[0], XB(j, 2 * p));
            ib[j] = _mm256_dpbusd_avx_epi32(ib[j], w[1], XB(j, 2 * p + 1));
        }
    }
    for (int j = 0; j < nx; j++) ia[j] = _mm256_add_epi32(ia[j], ib[j]);
#else
    const __m256i ones = _mm256_set1_epi16(1);
    if (kind == QMM_X8_K32_U8) {
        const __m256i flip = _mm256_set1_epi8((char)0x80);
        for (int j = 0; j < nx; j++) ia[j] = _mm256_setzero_si256();
        for (int p = 0; p < 4; p++) {
            __m256i w[2];
            wpair(wr, p, nib, lut, tbl, w); /* with lut: already the signed values */
            for (int h = 0; h < 2; h++) {
                const __m256i q = lut ? w[h] : _mm256_xor_si256(w[h], flip);
                const __m256i aq = _mm256_abs_epi8(q);
                for (int j = 0; j < nx; j++) {
                    const __m256i xs = _mm256_sign_epi8(XB(j, 2 * p + h), q);
                    ia[j] = _mm256_add_epi32(ia[j], _mm256_madd_epi16(_mm256_maddubs_epi16(aq, xs), ones));
                }
            }
        }
        return;
    }
    /* 4-bit quants: one int16 chain of 8 vectors (4 pairs); 5-bit: two of 4 */
    const int pairs = kind == QMM_X8_K32_U4 ? 4 : 2;
    for (int j = 0; j < nx; j++) ia[j] = x8_bcast_i(xr + QMM_X8_XR_OFF + 4 * j);
    for (int p0 = 0; p0 < 4; p0 += pairs) {
        __m256i a16[4];
        for (int j = 0; j < nx; j++) a16[j] = _mm256_setzero_si256();
        for (int p = p0; p < p0 + pairs; p++) {
            __m256i w[2];
            wpair(wr, p, nib, lut, tbl, w);
            for (int j = 0; j < nx; j++) {
                a16[j] = _mm256_add_epi16(a16[j], _mm256_maddubs_epi16(w[0], XB(j, 2 * p)));
                a16[j] = _mm256_add_epi16(a16[j], _mm256_maddubs_epi16(w[1], XB(j, 2 * p + 1)));
            }
        }
        for (int j = 0; j < nx; j++) ia[j] = _mm256_add_epi32(ia[j], _mm256_madd_epi16(a16[j], ones));
    }
#endif
}

/* The same for 16-element sub-blocks with integer scales (sub-block h = vectors 4h..4h+3,
 * pairs 2h, 2h + 1); pairs: vector pairs per int16 chain (1 for q6_K, 2 for q2_K, q3_K). */
X8_INLINE void dot16(const unsigned char *wr, const unsigned char *meta, const unsigned char *xr,
                     const bool nib, const int pairs, const int offset_log2, const int nx,
                     __m256i ia[4]) {
    const __m256i sc01 = x8_load(meta + QMM_X8_REC_SC);
    if (offset_log2 > 0) { /* -offset * (sc0 * sum0 + sc1 * sum1) */
        const __m256i noff = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc01, offset_log2));
        for (int j = 0; j < nx; j++) ia[j] = _mm256_madd_epi16(noff, x8_bcast_i(xr + QMM_X8_XR_SX + 4 * j));
    } else {
        for (int j = 0; j < nx; j++) ia[j] = _mm256_setzero_si256();
    }
    for (int h = 0; h < 2; h++) {
        /* (sc_h, sc_h) in every int32 lane (vpshufb indexes bytes of each 128-bit half) */
        const __m256i dup = h == 0 ? _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13,
                                                      0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13)
                                   : _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15,
                                                      2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15);
        const __m256i sc = _mm256_shuffle_epi8(sc01, dup);
        for (int p0 = 2 * h; p0 < 2 * h + 2; p0 += pairs) {
            __m256i a16[4];
            for (int j = 0; j < nx; j++) a16[j] = _mm256_setzero_si256();
            for (int p = p0; p < p0 + pairs; p++) {
                __m256i w[2];
                wpair(wr, p, nib, false, _mm256_setzero_si256(), w);
                for (int j = 0; j < nx; j++) {
                    a16[j] = _mm256_add_epi16(a16[j], _mm256_maddubs_epi16(w[0], XB(j, 2 * p)));
                    a16[j] = _mm256_add_epi16(a16[j], _mm256_maddubs_epi16(w[1], XB(j, 2 * p + 1)));
                }
            }
            for (int j = 0; j < nx; j++)
#if QMM_X8_VNNI
                ia[j] = _mm256_dpwssd_avx_epi32(ia[j], a16[j], sc);
#else
                ia[j] = _mm256_add_epi32(ia[j], _mm256_madd_epi16(a16[j], sc));
#endif
        }
    }
}
#undef XB

/*
 * One nx x 8 output tile (nx = 1, 2 or 4 X rows of a quad, a constant after inlining): quad
 * xq (its kc records), group record stream wg; writes rows [0, rows) (rows <= nx) x columns
 * [0, cols) of the tile at y (row stride ldy). Each output's operations are those of its own
 * X row and W row only, so nx (how many of the quad's rows are computed) changes no bit; a
 * quad of 1 or 2 live rows (n = 1, 2, or the last quad of n % 4 = 1, 2) skips the padding.
 * k16_pairs = 0: a 32-element-block type of `kind`; else a K16 type (int16 chain length in
 * vector pairs, offset = 2^offset_log2 or none).
 */
X8_INLINE void tile(const unsigned char *wg, size_t rb, size_t qb, const unsigned char *xq,
                    int64_t kc, const qmm_x8_kind kind, const bool nib, const bool lut,
                    __m256i tbl, const bool has_min, const int k16_pairs, const int offset_log2,
                    const bool q2k, const int nx, float *y, int64_t ldy, int rows, int cols) {
    __m256 acc[4];
    for (int j = 0; j < nx; j++) acc[j] = _mm256_setzero_ps();
    for (int64_t c = 0; c < kc; c++) {
        const unsigned char *wr = wg + (size_t)c * rb, *meta = wr + qb;
        if (nx == 1) /* decode sizes: W streams from memory; ask for it PF records ahead */
            for (size_t o = 0; o < rb; o += 64) _mm_prefetch((const char *)(wr + X8_PF * rb + o), _MM_HINT_T0);
        const unsigned char *xr = xq + (size_t)c * QMM_X8_XREC;
        __m256i ia[4];
        if (k16_pairs == 0) dot32(wr, xr, kind, nib, lut, tbl, nx, ia);
        else dot16(wr, meta, xr, nib, k16_pairs, offset_log2, nx, ia);
        const __m256 dw = _mm256_load_ps((const float *)(meta + QMM_X8_REC_D));
        for (int j = 0; j < nx; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[j]),
                                     _mm256_mul_ps(dw, x8_bcast_f(xr + QMM_X8_XR_DX + 4 * j)), acc[j]);
        if (has_min) {
            const __m256 mn = _mm256_load_ps((const float *)(meta + QMM_X8_REC_MN));
            for (int j = 0; j < nx; j++)
                acc[j] = _mm256_fmadd_ps(x8_bcast_f(xr + QMM_X8_XR_S + 4 * j), mn, acc[j]);
        }
        if (q2k) {
            const __m256i m01 = x8_load(meta + QMM_X8_REC_M01);
            const __m256 nd = _mm256_load_ps((const float *)(meta + QMM_X8_REC_NDMIN));
            for (int j = 0; j < nx; j++) {
                const __m256i im = _mm256_madd_epi16(m01, x8_bcast_i(xr + QMM_X8_XR_SX + 4 * j));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(im),
                                         _mm256_mul_ps(nd, x8_bcast_f(xr + QMM_X8_XR_DX + 4 * j)),
                                         acc[j]);
            }
        }
    }
    if (cols == QMM_X8_ROWS) {
        for (int j = 0; j < nx; j++)
            if (j < rows) _mm256_storeu_ps(y + j * ldy, acc[j]);
    } else {
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (int j = 0; j < nx; j++)
            if (j < rows) _mm256_maskstore_ps(y + j * ldy, mask, acc[j]);
    }
}

/* The tiles of groups [g0, g1) x quads [q0, q1), group-major (a group's records stay in L1
 * while the quads pass), one instantiation of tile() per type class. */
#define X8_TASK_BODY(KIND, NIB, LUT, MIN, PAIRS, OFFLOG2, Q2K)                                 \
    for (int64_t g = g0; g < g1; g++) {                                                        \
        const unsigned char *wg = w->data + (size_t)g * (size_t)kc * rb;                       \
        const int64_t i0 = g * QMM_X8_ROWS;                                                    \
        const int cols = (int)(w->m - i0 < QMM_X8_ROWS ? w->m - i0 : QMM_X8_ROWS);            \
        for (int64_t q = q0; q < q1; q++) {                                                    \
            const int64_t j0 = q * QMM_X8_XROWS;                                               \
            const int rows = (int)(n - j0 < QMM_X8_XROWS ? n - j0 : QMM_X8_XROWS);            \
            const unsigned char *xqq = xq + (size_t)q * (size_t)kc * QMM_X8_XREC;             \
            float *yt = y + j0 * ldy + i0;                                                     \
            if (rows == 1)                                                                     \
                tile(wg, rb, qb, xqq, kc, KIND, NIB, LUT, tbl, MIN, PAIRS, OFFLOG2, Q2K, 1, yt, \
                     ldy, rows, cols);                                                         \
            else if (rows == 2)                                                                \
                tile(wg, rb, qb, xqq, kc, KIND, NIB, LUT, tbl, MIN, PAIRS, OFFLOG2, Q2K, 2, yt, \
                     ldy, rows, cols);                                                         \
            else                                                                               \
                tile(wg, rb, qb, xqq, kc, KIND, NIB, LUT, tbl, MIN, PAIRS, OFFLOG2, Q2K, 4, yt, \
                     ldy, rows, cols);                                                         \
        }                                                                                      \
    }

void QMM_X8_TASK(const qmm_x86_int8_x8 *w, const unsigned char *xq, int64_t n, int64_t g0,
                 int64_t g1, int64_t q0, int64_t q1, float *y, int64_t ldy) {
    const int64_t kc = w->k / 32;
    const size_t rb = w->rec_bytes, qb = w->qbytes;
    __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)w->lut));
#if !QMM_X8_VNNI
    if (w->kind == QMM_X8_K32_U8) tbl = _mm256_xor_si256(tbl, _mm256_set1_epi8((char)0x80));
#endif
    switch (w->kind) {
    case QMM_X8_K32_U4: /* q4_0, q4_1, q4_K: nibbles */
        if (w->has_min) X8_TASK_BODY(QMM_X8_K32_U4, true, false, true, 0, 0, false)
        else X8_TASK_BODY(QMM_X8_K32_U4, true, false, false, 0, 0, false)
        break;
    case QMM_X8_K32_U5: /* q5_0, q5_1, q5_K: bytes; mxfp4: codebook nibbles */
        if (w->has_lut) X8_TASK_BODY(QMM_X8_K32_U5, true, true, false, 0, 0, false)
        else if (w->has_min) X8_TASK_BODY(QMM_X8_K32_U5, false, false, true, 0, 0, false)
        else X8_TASK_BODY(QMM_X8_K32_U5, false, false, false, 0, 0, false)
        break;
    case QMM_X8_K32_U8: /* q8_0: bytes; iq4_nl, iq4_xs: codebook nibbles */
        if (w->has_lut) X8_TASK_BODY(QMM_X8_K32_U8, true, true, false, 0, 0, false)
        else X8_TASK_BODY(QMM_X8_K32_U8, false, false, false, 0, 0, false)
        break;
    case QMM_X8_K16:
        if (w->type == QMM_TYPE_Q6_K) X8_TASK_BODY(QMM_X8_K16, false, false, false, 1, 5, false)
        else if (w->type == QMM_TYPE_Q3_K) X8_TASK_BODY(QMM_X8_K16, true, false, false, 2, 2, false)
        else X8_TASK_BODY(QMM_X8_K16, true, false, false, 2, 0, true)
        break;
    }
}
#undef X8_TASK_BODY
