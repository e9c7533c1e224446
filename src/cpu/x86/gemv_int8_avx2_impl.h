/*
 * gemv_int8_avx2_impl.h — the int8 strategy's gemv on native GGUF blocks with 256-bit integer
 * dot products, for every type of the AVX-512 int8 gemv (q4_0, q4_1, q5_0, q5_1, q8_0, q2_K,
 * q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4, nvfp4). Included twice:
 *   gemv_int8_avx2.c     QMM_I8_AVXVNNI 0: vpmaddubsw + vpmaddwd (AVX2: Haswell, Zen 1-4);
 *   gemv_int8_avxvnni.c  QMM_I8_AVXVNNI 1: vpdpbusd on ymm (AVX-VNNI: Alder Lake+, Zen 5).
 * Both compute the same exact int32 sub-block dots, so they give the same bits.
 *
 * The structure is gemv_int8_common.h's (read it first): X quantized per call
 * (qmm_x86_int8_quantize_row_avx2, the AVX-512 rule bit for bit), permuted into this file's
 * register order, W walked in chunks of 512 elements. A chunk is two halves of 256 elements
 * (8 blocks of 32, 4 nvfp4 blocks, or one super-block); a half's integer quants are decoded
 * into 8 ymm registers wv[0..7] and dotted with the 8 matching 32-byte pieces of X:
 *   32-element sub-blocks: 4 pairs (wv[2p], wv[2p+1]); both hold the same two sub-blocks P[p]
 *     (A in bytes 0..15, B in 16..31; wv[2p] their elements 0..15, wv[2p+1] 16..31), so
 *     r[p] = dot(wv[2p], x) + dot(wv[2p+1], x') holds A's partial sums in int32 lanes 0..3 and
 *     B's in 4..7; hadd(hadd(r0, r1), hadd(r2, r3)) gives lane i = A of pair i, lane 4 + i = B;
 *   16-element sub-blocks: 4 pairs too, each of four sub-blocks S[p] = A, B, C, D: wv[2p] holds
 *     elements 0..7 of A, B (bytes 0..15) and of C, D (16..31), wv[2p+1] their elements 8..15,
 *     so r[p] has int32 lanes A A B B C C D D; hadd(r0, r1) gives lanes 0..7 =
 *     A0 B0 A1 B1 C0 D0 C1 D1, hadd(r2, r3) lanes 8..15 likewise.
 * The pairs of each type (below) are chosen so that each group of 8 lanes holds the sub-blocks
 * of the same 8 lanes of the AVX-512 kernel (the canonical lanes, gemv_int8_common.h: natural
 * for the legacy, codebook and q6_K types, 0 2 1 3 4 6 5 7 per super-block for q4_K/q5_K,
 * 0 1 8 9 2 3 10 11 4 5 12 13 6 7 14 15 for q2_K/q3_K), in an order of its own for q4_K, q5_K,
 * q2_K, q3_K and q6_K (a permutation undone once per output, lane_out, before the final sum);
 * the float part repeats the AVX-512 operations lane by lane, its 16-lane accumulator being two
 * ymm (lanes 0..7, 8..15): per chunk, lane l of
 *   32-element sub-blocks: half h's 8 lanes are lanes 8h..8h+7:
 *       acc = fma((float)isum, d_w * dx, acc), then for min types acc = fma(s, m_w, acc);
 *       codebook types: acc = fma((float)isum * dx, d_w, acc);
 *   16-element sub-blocks: half h (super-block h, or nvfp4 blocks 4h..4h+3) gives all 16
 *       lanes, into the same accumulator: half 0, then half 1, then (q2_K) the min terms of
 *       half 0, then of half 1;
 * and at the row's end the tree of _mm512_reduce_add_ps ((hi + lo) per 256, per 128, then
 * lanes (0, 2), (1, 3), then 0 + 1). So this kernel gives qmm_x86_gemv_int8_avx512's bits.
 * Integer dots (exact): the W quants are the unsigned operand (0..63; mxfp4 and nvfp4 the
 * codebook value + 16, 4..28) against signed X, except q8_0, iq4_nl and iq4_xs, whose signed
 * values enter as |w| (0..128) against sign(x, w) (x negated where w < 0, zero where w = 0;
 * |x| <= 127, so never overflowing, and q8_0's -128 becomes the unsigned 128: CASES C).
 * vpmaddubsw adds two products into int16: at most 2 * 63 * 127 = 16002 for the unsigned
 * operands, so the two registers of a pair are added in int16 (32004) before vpmaddwd; q8_0,
 * iq4_nl and iq4_xs reach 2 * 128 * 127 = 32512 per vpmaddubsw and widen each separately.
 * vpdpbusd (AVX-VNNI) adds 4 products into int32.
 * Offset types subtract offset * sum(q_x) in int32 (q4_0 8, q5_0 16, q3_K 4, q6_K 32,
 * mxfp4 and nvfp4 16).
 * Tails: a half past the row's end is skipped (the AVX-512 kernel adds exact zeros there); a
 * half holding fewer blocks is decoded from a zeroed copy of its blocks (never reading past
 * the row). Rows, prefetch and threads: gemv_int8_common.h. Format source: ggml-common.h /
 * ggml-quants.c (block structs, dequantize_row_*), as restated in src/formats.
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu/x86/gemv_int8_common.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"
#include "formats/codec_fp4.h"
#include "formats/codec_iq4.h"

#ifndef QMM_I8_AVXVNNI
#error "define QMM_I8_AVXVNNI (0 or 1) before including gemv_int8_avx2_impl.h"
#endif

#define I8_INLINE static inline __attribute__((always_inline))
#define HALF 256 /* elements per half chunk (8 ymm of W bytes) */

/* ---------------------------------------------------------------------------------------
 * Register order
 * ------------------------------------------------------------------------------------- */

/* vpmaddubsw: q8_0, iq4_nl and iq4_xs enter as signed W values (the |w|, sign(x, w) dot).
 * vpdpbusd never saturates, so there iq4_nl and iq4_xs are the codebook value + 128 (offset
 * 128) and q8_0 multiplies x + 128 (stored so) by the signed w, from -128 sum(w). */
static bool signed_w(qmm_type t) {
    return !QMM_I8_AVXVNNI &&
           (t == QMM_TYPE_Q8_0 || t == QMM_TYPE_IQ4_NL || t == QMM_TYPE_IQ4_XS);
}

static bool iq4(qmm_type t) { return t == QMM_TYPE_IQ4_NL || t == QMM_TYPE_IQ4_XS; }

/* mxfp4, nvfp4: the codebook value + 16 (4..28) as the unsigned quant, offset 16. */
static bool fp4(qmm_type t) { return t == QMM_TYPE_MXFP4 || t == QMM_TYPE_NVFP4; }

/* log2 of the offset subtracted from the unsigned quant (0: none). */
static int off_shift(qmm_type t) {
    return fp4(t) ? 4 : QMM_I8_AVXVNNI && iq4(t) ? 7 : qmm_i8_offset_shift(t);
}

/* The iq4 codebook as the vpshufb table: signed, or + 128 (unsigned) for vpdpbusd. */
static inline __m256i iq4_table(void) {
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qmm_iq4_values));
    return QMM_I8_AVXVNNI ? _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80)) : v;
}

/* 32-element sub-blocks: the two sub-blocks (of the half) of pair p. */
static const uint8_t PAIRS_NAT32[4][2] = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
/* 16-element sub-blocks: the four sub-blocks A, B, C, D of pair p. */
static const uint8_t SUBS_Q6[4][4] = {{0, 4, 1, 5}, {2, 6, 3, 7}, {8, 12, 9, 13}, {10, 14, 11, 15}};
static const uint8_t SUBS_K2[4][4] = {{0, 2, 1, 3}, {8, 10, 9, 11}, {4, 6, 5, 7}, {12, 14, 13, 15}};
static const uint8_t SUBS_NV[4][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}};

static const uint8_t (*pairs32(qmm_type t))[2] {
    (void)t; /* every type: lanes in natural order (q4_K, q5_K: lane_out reorders them) */
    return PAIRS_NAT32;
}

static const uint8_t (*subs16(qmm_type t))[4] {
    return t == QMM_TYPE_Q6_K ? SUBS_Q6 : t == QMM_TYPE_NVFP4 ? SUBS_NV : SUBS_K2;
}

/* Chunk element in byte b (0..31) of ymm register v (0..15: half v / 8, register v % 8). */
static int elem(qmm_type t, int v, int b) {
    const int h = v / 8, r = v % 8, side = b / 16;
    if (qmm_i8_sub16(t)) { /* bytes 0..7 / 8..15 of a side: A / B (side 0), C / D (side 1) */
        const int sub = subs16(t)[r / 2][2 * side + (b % 16) / 8];
        return HALF * h + 16 * sub + 8 * (r % 2) + b % 8;
    }
    return HALF * h + 32 * pairs32(t)[r / 2][side] + 16 * (r % 2) + b % 16;
}

static void layout_make(qmm_type t, qmm_i8_layout *lo) {
    const bool two = qmm_i8_sub16(t);
    lo->sub_size = two ? 16 : 32;
    lo->lanes = two ? 32 : 16;
    lo->flip = QMM_I8_AVXVNNI && t == QMM_TYPE_Q8_0 ? 0x80 : 0; /* x + 128 */
    (void)qmm_i8_layout_runs(lo, 32, elem, t); /* every order here moves runs of 8 */
    for (int l = 0; l < QMM_I8_LANES; l++) lo->lane_sub[l] = 0;
    for (int h = 0; h < 2; h++) {
        if (two) /* lane 8q + i of half h: pair 2q + (i % 4) / 2, slot i % 2 + 2 (i / 4) */
            for (int l = 0; l < 16; l++) {
                const int i = l % 8;
                lo->lane_sub[16 * h + l] =
                    16 * h + subs16(t)[2 * (l / 8) + (i % 4) / 2][i % 2 + 2 * (i / 4)];
            }
        else /* lanes 8h + i: pair i % 4, side i / 4 */
            for (int l = 0; l < 8; l++) lo->lane_sub[8 * h + l] = 8 * h + pairs32(t)[l % 4][l / 4];
    }
    (void)qmm_i8_layout_out(lo, t); /* every group of 8 holds its canonical sub-blocks */
}

/* ---------------------------------------------------------------------------------------
 * Integer dots
 * ------------------------------------------------------------------------------------- */

/* int32 lane i = sum of the 4 products u[4i..4i+3] * s[4i..4i+3] (u unsigned, s signed). */
I8_INLINE __m256i dot1(__m256i u, __m256i s) {
#if QMM_I8_AVXVNNI
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

/* dot1(u0, s0) + dot1(u1, s1); `small`: every int16 pair sum of both fits (|u| <= 63). */
I8_INLINE __m256i dot2(__m256i u0, __m256i s0, __m256i u1, __m256i s1, bool small) {
#if QMM_I8_AVXVNNI
    (void)small;
    return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u0, s0), u1, s1);
#else
    const __m256i one = _mm256_set1_epi16(1);
    if (small)
        return _mm256_madd_epi16(
            _mm256_add_epi16(_mm256_maddubs_epi16(u0, s0), _mm256_maddubs_epi16(u1, s1)), one);
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u0, s0), one),
                            _mm256_madd_epi16(_mm256_maddubs_epi16(u1, s1), one));
#endif
}

/* Every int16 sum of two vpmaddubsw fits (|u| <= 64): the two registers of a pair are added
 * before vpmaddwd. */
static bool small_w(qmm_type t) {
    return t != QMM_TYPE_Q8_0 && t != QMM_TYPE_IQ4_NL && t != QMM_TYPE_IQ4_XS;
}

/* The 8 or 16 exact sub-block dots of one half against the X bytes at xq (8 x 32 bytes):
 * is[0] (and is[1] for 16-element sub-blocks), in the layout's lane order. wa: the unsigned
 * operands (|w| for signed types), ws: the signed W (signed types only, for the sign). */
I8_INLINE void half_dots(qmm_type t, const __m256i wa[8], const __m256i ws[8],
                         const __m256i init[4], const int8_t *xq, __m256i is[2]) {
    const bool sg = signed_w(t);
    __m256i xv[8];
    for (int v = 0; v < 8; v++) {
        xv[v] = _mm256_loadu_si256((const __m256i *)(xq + 32 * v));
        if (sg) xv[v] = _mm256_sign_epi8(xv[v], ws[v]);
    }
    __m256i r[4];
#if QMM_I8_AVXVNNI
    if (t == QMM_TYPE_Q8_0) /* (x + 128) w from -128 sum(w): x w */
        for (int p = 0; p < 4; p++)
            r[p] = _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(init[p], xv[2 * p], ws[2 * p]),
                                           xv[2 * p + 1], ws[2 * p + 1]);
    else
#else
    (void)init;
#endif
    for (int p = 0; p < 4; p++)
        r[p] = dot2(wa[2 * p], xv[2 * p], wa[2 * p + 1], xv[2 * p + 1], small_w(t));
    if (qmm_i8_sub16(t)) {
        is[0] = _mm256_hadd_epi32(r[0], r[1]);
        is[1] = _mm256_hadd_epi32(r[2], r[3]);
    } else {
        is[0] = _mm256_hadd_epi32(_mm256_hadd_epi32(r[0], r[1]), _mm256_hadd_epi32(r[2], r[3]));
    }
}

/* ---------------------------------------------------------------------------------------
 * W decoders: one half (256 elements) into wv[8] (elem() order) and the float scales of its
 * sub-blocks in result-lane order (dw[0] lanes 0..7, dw[1] lanes 8..15 for 16-element
 * sub-blocks), mins likewise (types with a min). Each value is the float the AVX-512 kernel
 * forms for that lane (d, d * sc, -dmin * mn, ...: the dequantizer's operands).
 * ------------------------------------------------------------------------------------- */

static inline uint16_t ld16(const unsigned char *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t ld32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 16 bytes at lo into bytes 0..15, 16 bytes at hi into 16..31. */
I8_INLINE __m256i load2(const unsigned char *lo, const unsigned char *hi) {
    return _mm256_loadu2_m128i((const __m128i *)hi, (const __m128i *)lo);
}

/* 16 bytes at p into both halves. */
I8_INLINE __m256i bcast16(const unsigned char *p) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
}

/* The E2M1 codebook (twice the values, -12..12) plus 16, as the vpshufb table. */
I8_INLINE __m256i fp4_table(void) {
    return _mm256_add_epi8(bcast16((const unsigned char *)qmm_kvalues_e2m1), _mm256_set1_epi8(16));
}

/* The f16 at offset `at` of 8 blocks `bs` bytes apart, as floats (exact). */
I8_INLINE __m256 f16x8(const unsigned char *p, size_t bs, size_t at) {
    __m128i h = _mm_cvtsi32_si128(ld16(p + at));
    h = _mm_insert_epi16(h, ld16(p + bs + at), 1);
    h = _mm_insert_epi16(h, ld16(p + 2 * bs + at), 2);
    h = _mm_insert_epi16(h, ld16(p + 3 * bs + at), 3);
    h = _mm_insert_epi16(h, ld16(p + 4 * bs + at), 4);
    h = _mm_insert_epi16(h, ld16(p + 5 * bs + at), 5);
    h = _mm_insert_epi16(h, ld16(p + 6 * bs + at), 6);
    h = _mm_insert_epi16(h, ld16(p + 7 * bs + at), 7);
    return _mm256_cvtph_ps(h);
}

/* The 32-bit words wa (bytes 0..15) and wb (bytes 16..31) as bytes of 16: byte i of half s is
 * 0x10 where bit i (lo) or bit 16 + i (hi) of its word is set. */
I8_INLINE void bits_to_16s(uint32_t wa, uint32_t wb, __m256i *lo, __m256i *hi) {
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_cvtsi32_si128((int)wa)),
                                              _mm_cvtsi32_si128((int)wb), 1);
    const __m256i bit = _mm256_set1_epi64x(0x7FBFDFEFF7FBFDFELL), ones = _mm256_set1_epi64x(-1);
    const __m256i b16 = _mm256_set1_epi8(16);
    const __m256i sl = _mm256_setr_epi64x(0, 0x0101010101010101LL, 0, 0x0101010101010101LL);
    const __m256i sh = _mm256_setr_epi64x(0x0202020202020202LL, 0x0303030303030303LL,
                                          0x0202020202020202LL, 0x0303030303030303LL);
    *lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_or_si256(_mm256_shuffle_epi8(v, sl), bit), ones), b16);
    *hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_or_si256(_mm256_shuffle_epi8(v, sh), bit), ones), b16);
}

/* 0x10 or 0x04 (`val`) in each byte where (h & m) == m. */
I8_INLINE __m256i bit_select(__m256i h, __m256i m, __m256i val) {
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(h, m), m), val);
}

/* Two bytes per 128-bit half: mask a (bytes 0..15) and b (16..31). */
I8_INLINE __m256i mask2(int a, int b) {
    return _mm256_setr_m128i(_mm_set1_epi8((char)a), _mm_set1_epi8((char)b));
}

/* The bytes of lane order for a 16-byte table of per-sub-block values (16-element sub-blocks:
 * lane l = sub-block lane_sub[l] of the half; 32-element: 8 lanes, and bytes 8..15 the same
 * order for a second table of 8 in bytes 8..15). */
I8_INLINE __m128i sc_order(const int32_t *lane_sub, bool two) {
    int8_t b[16];
    for (int l = 0; l < 16; l++) b[l] = (int8_t)(two ? lane_sub[l] : lane_sub[l % 8] + 8 * (l / 8));
    return _mm_loadu_si128((const __m128i *)b);
}

/* q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, mxfp4: 8 blocks at p. */
I8_INLINE void decode_legacy(qmm_type t, const unsigned char *p, __m256i ws[8], __m256 *dw,
                             __m256 *mw) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const size_t bs = qmm_i8_block_bytes(t);
    const size_t qs_at = t == QMM_TYPE_Q4_0   ? offsetof(block_q4_0, qs)
                         : t == QMM_TYPE_Q4_1 ? offsetof(block_q4_1, qs)
                         : t == QMM_TYPE_Q5_0 ? offsetof(block_q5_0, qs)
                         : t == QMM_TYPE_Q5_1 ? offsetof(block_q5_1, qs)
                         : t == QMM_TYPE_Q8_0 ? offsetof(block_q8_0, qs)
                         : t == QMM_TYPE_IQ4_NL ? offsetof(block_iq4_nl, qs)
                                                : offsetof(block_mxfp4, qs);
    const bool five = t == QMM_TYPE_Q5_0 || t == QMM_TYPE_Q5_1;
    const size_t qh_at = t == QMM_TYPE_Q5_0 ? offsetof(block_q5_0, qh) : offsetof(block_q5_1, qh);
    __m256i tbl = _mm256_setzero_si256();
    if (t == QMM_TYPE_IQ4_NL) tbl = iq4_table();
    if (t == QMM_TYPE_MXFP4) tbl = fp4_table();
    for (int i = 0; i < 4; i++) {
        const unsigned char *a = p + (size_t)i * bs, *b = p + (size_t)(4 + i) * bs;
        if (t == QMM_TYPE_Q8_0) {
            ws[2 * i] = load2(a + qs_at, b + qs_at);
            ws[2 * i + 1] = load2(a + qs_at + 16, b + qs_at + 16);
            continue;
        }
        const __m256i z = load2(a + qs_at, b + qs_at);
        __m256i lo = _mm256_and_si256(z, low4), hi = _mm256_and_si256(_mm256_srli_epi16(z, 4), low4);
        if (five) { /* bit l of qh -> element l: bits 0..15 with the low nibbles, 16..31 high */
            __m256i hl, hh;
            bits_to_16s(ld32(a + qh_at), ld32(b + qh_at), &hl, &hh);
            lo = _mm256_or_si256(lo, hl);
            hi = _mm256_or_si256(hi, hh);
        }
        if (qmm_i8_codebook(t)) {
            lo = _mm256_shuffle_epi8(tbl, lo);
            hi = _mm256_shuffle_epi8(tbl, hi);
        }
        ws[2 * i] = lo;
        ws[2 * i + 1] = hi;
    }
    if (t == QMM_TYPE_MXFP4) { /* E8M0 e: 2^(e - 128), the bits (e - 1) << 23, or 0x00200000 << e */
        __m128i eb = _mm_cvtsi32_si128(p[0]);
        eb = _mm_insert_epi8(eb, p[bs], 1);
        eb = _mm_insert_epi8(eb, p[2 * bs], 2);
        eb = _mm_insert_epi8(eb, p[3 * bs], 3);
        eb = _mm_insert_epi8(eb, p[4 * bs], 4);
        eb = _mm_insert_epi8(eb, p[5 * bs], 5);
        eb = _mm_insert_epi8(eb, p[6 * bs], 6);
        eb = _mm_insert_epi8(eb, p[7 * bs], 7);
        const __m256i e = _mm256_cvtepu8_epi32(eb);
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        *dw = _mm256_castsi256_ps(
            _mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
    } else {
        *dw = f16x8(p, bs, 0); /* d: the first field of each block */
    }
    if (t == QMM_TYPE_Q4_1 || t == QMM_TYPE_Q5_1) *mw = f16x8(p, bs, 2); /* m */
}

/* iq4_xs: one super-block. Sub-block ib's scale d * (ls - 32), ls = the nibble ib of
 * scales_l (byte ib / 2, low nibble first) | bits 2ib..2ib+1 of scales_h << 4. */
I8_INLINE void decode_xs(const unsigned char *blk, __m256i ws[8], __m256 *dw) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i tbl = iq4_table();
    const unsigned char *qs = blk + offsetof(block_iq4_xs, qs);
    for (int i = 0; i < 4; i++) {
        const __m256i z = load2(qs + 16 * i, qs + 16 * (4 + i));
        ws[2 * i] = _mm256_shuffle_epi8(tbl, _mm256_and_si256(z, low4));
        ws[2 * i + 1] = _mm256_shuffle_epi8(tbl, _mm256_and_si256(_mm256_srli_epi16(z, 4), low4));
    }
    const __m256i ib = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i L = _mm256_set1_epi32((int)ld32(blk + offsetof(block_iq4_xs, scales_l)));
    const __m256i H = _mm256_set1_epi32((int)ld16(blk + offsetof(block_iq4_xs, scales_h)));
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(L, _mm256_slli_epi32(ib, 2)),
                                        _mm256_set1_epi32(15));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(H, _mm256_slli_epi32(ib, 1)),
                                        _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)),
                                        _mm256_set1_epi32(32));
    *dw = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(ld16(blk + offsetof(block_iq4_xs, d)))),
                        _mm256_cvtepi32_ps(ls));
}

/* The 8 six-bit scales (sub-block order, bytes 0..7) and 8 mins (bytes 8..15) of a q4_K / q5_K
 * super-block from its 12 packed bytes (qmm_kq_get_scale_min_k4's layout, as words a, b, c:
 * scales 0..3 = a & 0x3F.., mins 0..3 = b & 0x3F.., scales 4..7 = (c & 0x0F..) | (a >> 6) << 4,
 * mins 4..7 = (c >> 4 & 0x0F..) | (b >> 6) << 4), four at a time in 32-bit lanes. */
static inline __m128i k4_scales_mins(const uint8_t *p) {
    const __m128i v = _mm_loadu_si128((const __m128i *)p); /* lane 3: not scales, unused */
    const __m128i lo6 = _mm_and_si128(v, _mm_set1_epi8(0x3F)); /* lanes: sc 0..3, mn 0..3 */
    const __m128i c = _mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 2, 2)),
                                     _mm_setr_epi32(0, 4, 0, 0));
    const __m128i hi = _mm_or_si128(_mm_and_si128(c, _mm_set1_epi8(0x0F)),
                                    _mm_slli_epi32(_mm_and_si128(_mm_srli_epi32(v, 6),
                                                                 _mm_set1_epi8(0x03)), 4));
    return _mm_unpacklo_epi32(lo6, hi); /* sc 0..3, sc 4..7, mn 0..3, mn 4..7 */
}

/* q4_K / q5_K: one super-block; pairs (p, p + 4), lanes in natural order. */
I8_INLINE void decode_k4(qmm_type t, const unsigned char *blk, __m128i order, __m256i wv[8],
                         __m256 *dw, __m256 *mw) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const unsigned char *qs, *qh = NULL, *scales;
    if (t == QMM_TYPE_Q4_K) {
        qs = blk + offsetof(block_q4_K, qs);
        scales = blk + offsetof(block_q4_K, scales);
    } else {
        qs = blk + offsetof(block_q5_K, qs);
        qh = blk + offsetof(block_q5_K, qh);
        scales = blk + offsetof(block_q5_K, scales);
    }
    /* Lq: qs bytes 16q..16q+15 (sub-blocks 2(q/2), +1 elements 16(q%2)..) next to 64 further
     * (sub-blocks + 4) */
    __m256i L[4];
    for (int q = 0; q < 4; q++) L[q] = load2(qs + 16 * q, qs + 64 + 16 * q);
    for (int p = 0; p < 4; p++) { /* sub-blocks p, p + 4: nibble p % 2 of L[2 (p / 2)], L[.. + 1] */
        const __m256i a = L[2 * (p / 2)], b = L[2 * (p / 2) + 1];
        wv[2 * p] = p % 2 ? _mm256_and_si256(_mm256_srli_epi16(a, 4), low4) : _mm256_and_si256(a, low4);
        wv[2 * p + 1] = p % 2 ? _mm256_and_si256(_mm256_srli_epi16(b, 4), low4) : _mm256_and_si256(b, low4);
    }
    if (t == QMM_TYPE_Q5_K) { /* bit S of qh[l] is bit 4 of sub-block S element l */
        const __m256i h0 = bcast16(qh), h1 = bcast16(qh + 16), b16 = _mm256_set1_epi8(16);
        for (int p = 0; p < 4; p++) {
            const __m256i m = mask2(1 << p, 1 << (p + 4));
            wv[2 * p] = _mm256_or_si256(wv[2 * p], bit_select(h0, m, b16));
            wv[2 * p + 1] = _mm256_or_si256(wv[2 * p + 1], bit_select(h1, m, b16));
        }
    }
    (void)order; /* natural lanes: the scales as they come */
    const __m128i sm = k4_scales_mins(scales);
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld32(blk))); /* d, dmin */
    *dw = _mm256_mul_ps(_mm256_set1_ps(_mm_cvtss_f32(f)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)));
    *mw = _mm256_mul_ps(_mm256_set1_ps(-_mm_cvtss_f32(_mm_movehdup_ps(f))),
                        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))));
}

/* q3_K 6-bit scales minus 32 of the 16 sub-blocks, as int8 (as gemv_int8_avx512.c). */
static inline __m128i q3_scales(const uint8_t *p) {
    uint64_t a;
    memcpy(&a, p, 8);
    const uint32_t c = ld32(p + 8);
    const __m128i v = _mm_set1_epi64x((long long)a);
    const __m128i lo = _mm_and_si128(_mm_blend_epi16(v, _mm_srli_epi16(v, 4), 0xF0),
                                     _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)c),
                                                    _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(0x03));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* 16 per-sub-block bytes (already in lane order) widened to two vectors of 8 lanes. */
I8_INLINE void widen16(__m128i b, bool sgn, __m256i out[2]) {
    if (sgn) {
        out[0] = _mm256_cvtepi8_epi32(b);
        out[1] = _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8));
    } else {
        out[0] = _mm256_cvtepu8_epi32(b);
        out[1] = _mm256_cvtepu8_epi32(_mm_srli_si128(b, 8));
    }
}

/* The pair (wv[0], wv[1]) of registers a = [A | C], b = [B | D] (16 elements each): elements
 * 0..7 of A, B | C, D, then 8..15. */
I8_INLINE void pair16(__m256i a, __m256i b, __m256i out[2]) {
    out[0] = _mm256_unpacklo_epi64(a, b);
    out[1] = _mm256_unpackhi_epi64(a, b);
}

/* q2_K, q3_K, q6_K: one super-block (pairs subs16()). */
I8_INLINE void decode_k16(qmm_type t, const unsigned char *blk, __m128i order, __m256i wv[8],
                          __m256 dw[2], __m256 mw[2]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), three = _mm256_set1_epi8(3);
    __m256i sc[2];
    if (t == QMM_TYPE_Q6_K) {
        /* half hf (128 elements), quarter g (sub-blocks 8hf + 2g, +1): ql[64hf + 32(g % 2) + l]
         * nibble g / 2, qh[32hf + l] bits 2g, 2g + 1 */
        const unsigned char *ql = blk + offsetof(block_q6_K, ql), *qh = blk + offsetof(block_q6_K, qh);
        const __m256i c30 = _mm256_set1_epi8(0x30);
        for (int hf = 0; hf < 2; hf++) {
            const __m256i z0 = _mm256_loadu_si256((const __m256i *)(ql + 64 * hf));
            const __m256i z1 = _mm256_loadu_si256((const __m256i *)(ql + 64 * hf + 32));
            const __m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * hf));
            const __m256i q0 = _mm256_or_si256(_mm256_and_si256(z0, low4),
                                               _mm256_and_si256(_mm256_slli_epi16(h, 4), c30));
            const __m256i q1 = _mm256_or_si256(_mm256_and_si256(z1, low4),
                                               _mm256_and_si256(_mm256_slli_epi16(h, 2), c30));
            const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(z0, 4), low4),
                                               _mm256_and_si256(h, c30));
            const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(z1, 4), low4),
                                               _mm256_and_si256(_mm256_srli_epi16(h, 2), c30));
            pair16(q0, q2, &wv[4 * hf]);     /* sub-blocks 8hf + (0, 4, 1, 5) */
            pair16(q1, q3, &wv[4 * hf + 2]); /* 8hf + (2, 6, 3, 7) */
        }
        widen16(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blk + offsetof(block_q6_K, scales))),
                                 order), true, sc);
        const float d = _cvtsh_ss(ld16(blk + offsetof(block_q6_K, d)));
        for (int i = 0; i < 2; i++)
            dw[i] = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sc[i]));
        return;
    }
    /* q2_K / q3_K: sub-block 8c + 2s + l / 16 is bit pair s of qs[32c + l] (l = 0..31):
     * V(c, s) = [8c + 2s | 8c + 2s + 1] */
    const unsigned char *qs = t == QMM_TYPE_Q2_K ? blk + offsetof(block_q2_K, qs)
                                                 : blk + offsetof(block_q3_K, qs);
    __m256i V[2][4];
    for (int c = 0; c < 2; c++) {
        const __m256i z = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        V[c][0] = _mm256_and_si256(z, three);
        V[c][1] = _mm256_and_si256(_mm256_srli_epi16(z, 2), three);
        V[c][2] = _mm256_and_si256(_mm256_srli_epi16(z, 4), three);
        V[c][3] = _mm256_and_si256(_mm256_srli_epi16(z, 6), three);
    }
    if (t == QMM_TYPE_Q3_K) { /* + 4 where bit 4c + s of hmask[l] */
        const __m256i h = _mm256_loadu_si256((const __m256i *)(blk + offsetof(block_q3_K, hmask)));
        const __m256i b4 = _mm256_set1_epi8(4);
        const __m256i hs[8] = {_mm256_slli_epi16(h, 2), _mm256_slli_epi16(h, 1), h,
                               _mm256_srli_epi16(h, 1), _mm256_srli_epi16(h, 2),
                               _mm256_srli_epi16(h, 3), _mm256_srli_epi16(h, 4),
                               _mm256_srli_epi16(h, 5)}; /* bit b at bit 2 */
        for (int c = 0; c < 2; c++)
            for (int s2 = 0; s2 < 4; s2++)
                V[c][s2] = _mm256_or_si256(V[c][s2], _mm256_and_si256(hs[4 * c + s2], b4));
    }
    pair16(V[0][0], V[0][1], &wv[0]); /* sub-blocks 0, 2, 1, 3 */
    pair16(V[1][0], V[1][1], &wv[2]); /* 8, 10, 9, 11 */
    pair16(V[0][2], V[0][3], &wv[4]); /* 4, 6, 5, 7 */
    pair16(V[1][2], V[1][3], &wv[6]); /* 12, 14, 13, 15 */
    if (t == QMM_TYPE_Q2_K) {
        const block_q2_K *b = (const block_q2_K *)blk;
        const __m128i s = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)b->scales), order);
        widen16(_mm_and_si128(s, _mm_set1_epi8(15)), false, sc);
        __m256i mn[2];
        widen16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(15)), false, mn);
        const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)ld32(blk + offsetof(block_q2_K, d))));
        for (int i = 0; i < 2; i++) {
            dw[i] = _mm256_mul_ps(_mm256_set1_ps(_mm_cvtss_f32(f)), _mm256_cvtepi32_ps(sc[i]));
            mw[i] = _mm256_mul_ps(_mm256_set1_ps(-_mm_cvtss_f32(_mm_movehdup_ps(f))),
                                  _mm256_cvtepi32_ps(mn[i]));
        }
        return;
    }
    widen16(_mm_shuffle_epi8(q3_scales(blk + offsetof(block_q3_K, scales)), order), true, sc);
    const float d = _cvtsh_ss(ld16(blk + offsetof(block_q3_K, d)));
    for (int i = 0; i < 2; i++) dw[i] = _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sc[i]));
}

/* UE4M3 bytes (one per int32 lane) to ue4m3(x) / 2 (as gemv_int8_codebook_avx512.c): E =
 * bits 3..6, M = bits 0..2; E > 0: the float bits (E + 119) << 23 | M << 20; E = 0: M 2^-10;
 * the byte 0x7F: 0. */
I8_INLINE __m256 ue4m3_half(__m256i x) {
    const __m256i e = _mm256_and_si256(_mm256_srli_epi32(x, 3), _mm256_set1_epi32(15));
    const __m256i m = _mm256_and_si256(x, _mm256_set1_epi32(7));
    const __m256i normal = _mm256_or_si256(
        _mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(119)), 23), _mm256_slli_epi32(m, 20));
    const __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(0x1p-10f));
    const __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(normal), sub,
                                      _mm256_castsi256_ps(_mm256_cmpeq_epi32(e, _mm256_setzero_si256())));
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, _mm256_set1_epi32(0x7F))), v);
}

/* nvfp4: 4 blocks at p; pair 2j + q (SUBS_NV): qs bytes 16q..16q+15 of blocks 2j, 2j + 1, whose
 * low nibbles are elements 0..7 of sub-blocks 2q, 2q + 1 and the high nibbles 8..15. */
I8_INLINE void decode_nv(const unsigned char *p, __m128i order, __m256i ws[8], __m256 dw[2]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i tbl = fp4_table();
    const size_t bs = sizeof(block_nvfp4), qs_at = offsetof(block_nvfp4, qs);
    for (int j = 0; j < 2; j++)
        for (int q = 0; q < 2; q++) {
            const unsigned char *b0 = p + (size_t)(2 * j) * bs + qs_at + 16 * q;
            const __m256i z = load2(b0, b0 + bs);
            ws[4 * j + 2 * q] = _mm256_shuffle_epi8(tbl, _mm256_and_si256(z, low4));
            ws[4 * j + 2 * q + 1] =
                _mm256_shuffle_epi8(tbl, _mm256_and_si256(_mm256_srli_epi16(z, 4), low4));
        }
    const __m128i d = _mm_shuffle_epi8(_mm_setr_epi32((int)ld32(p), (int)ld32(p + bs),
                                                      (int)ld32(p + 2 * bs), (int)ld32(p + 3 * bs)),
                                       order);
    dw[0] = ue4m3_half(_mm256_cvtepu8_epi32(d));
    dw[1] = ue4m3_half(_mm256_cvtepu8_epi32(_mm_srli_si128(d, 8)));
}

/* ---------------------------------------------------------------------------------------
 * Row kernel
 * ------------------------------------------------------------------------------------- */

/* _mm512_reduce_add_ps's tree on the 16 lanes lo (0..7), hi (8..15). */
I8_INLINE float reduce16(__m256 lo, __m256 hi) {
    const __m256 t3 = _mm256_add_ps(hi, lo);
    const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
    const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(t8) + _mm_cvtss_f32(_mm_shuffle_ps(t8, t8, 1));
}

/* Elements of the last block-aligned stretch: blocks of the half present (1..full). */
static int half_blocks(qmm_type t, int64_t left) {
    const int be = qmm_i8_block_elems(t), full = HALF / be;
    const int64_t nb = left / be;
    return nb >= full ? full : (int)nb;
}

/* One half (hh) of chunk ch of one W row at hp (whole blocks; zero blocks past the row's end
 * in a tail copy) against n X rows: the accumulators acc[j][0..1]; q2_K's min scales of the
 * half go to mw_keep (applied after both halves). */
I8_INLINE void half_step(qmm_type t, const unsigned char *hp, int hh, int64_t ch, int64_t n,
                         const qmm_i8_xrow *xr, __m128i order, __m256 (*acc)[2],
                         __m256 mw_keep[2]) {
    const bool two = qmm_i8_sub16(t), mins = qmm_i8_has_min(t), sg = signed_w(t);
    const bool cb = qmm_i8_codebook(t);
    const int shift = off_shift(t);
    __m256i ws[8], wa[8];
    __m256 dw[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m256 mw[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    if (t == QMM_TYPE_Q4_K || t == QMM_TYPE_Q5_K) decode_k4(t, hp, order, ws, &dw[0], &mw[0]);
    else if (qmm_i8_k_quant(t)) decode_k16(t, hp, order, ws, dw, mw);
    else if (t == QMM_TYPE_IQ4_XS) decode_xs(hp, ws, &dw[0]);
    else if (t == QMM_TYPE_NVFP4) decode_nv(hp, order, ws, dw);
    else decode_legacy(t, hp, ws, &dw[0], &mw[0]);
    for (int v = 0; v < 8; v++) wa[v] = sg ? _mm256_abs_epi8(ws[v]) : ws[v];
    __m256i init[4]; /* q8_0 on vpdpbusd: -128 sum(w) per int32 lane of each pair */
    for (int p = 0; p < 4; p++) init[p] = _mm256_setzero_si256();
#if QMM_I8_AVXVNNI
    if (t == QMM_TYPE_Q8_0) {
        const __m256i b128 = _mm256_set1_epi8((char)0x80), z = _mm256_setzero_si256();
        for (int p = 0; p < 4; p++)
            init[p] = _mm256_sub_epi32(
                z, _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(z, b128, ws[2 * p]), b128,
                                           ws[2 * p + 1]));
    }
#endif
    if (two && mins) {
        mw_keep[0] = mw[0];
        mw_keep[1] = mw[1];
    }
    for (int64_t j = 0; j < n; j++) {
        const int8_t *xq = xr[j].q + ch * QMM_I8_CHUNK + hh * HALF;
        __m256i is[2];
        half_dots(t, wa, ws, init, xq, is);
        __m256 *a = acc[j];
        if (!two) { /* lanes 8hh..8hh+7 */
            const int64_t lb = ch * QMM_I8_LANES + 8 * hh;
            if (shift != 0)
                is[0] = _mm256_sub_epi32(
                    is[0], _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(xr[j].sum + lb)), shift));
            const __m256 dxv = _mm256_loadu_ps(xr[j].dx + lb);
            __m256 v = a[hh];
            if (cb)
                v = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(is[0]), dxv), dw[0], v);
            else
                v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[0]), _mm256_mul_ps(dw[0], dxv), v);
            if (mins) v = _mm256_fmadd_ps(_mm256_loadu_ps(xr[j].s + lb), mw[0], v);
            a[hh] = v;
        } else { /* all 16 lanes, the sub-blocks of half hh */
            const int64_t lb = ch * QMM_I8_LANES + 16 * hh;
            for (int i = 0; i < 2; i++) {
                if (shift != 0)
                    is[i] = _mm256_sub_epi32(
                        is[i], _mm256_slli_epi32(
                                   _mm256_loadu_si256((const __m256i *)(xr[j].sum + lb + 8 * i)), shift));
                const __m256 dxv = _mm256_loadu_ps(xr[j].dx + lb + 8 * i);
                if (cb)
                    a[i] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(is[i]), dxv), dw[i], a[i]);
                else
                    a[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[i]), _mm256_mul_ps(dw[i], dxv), a[i]);
            }
        }
    }
}

/* R (1..QMM_I8_GROUP) consecutive W rows against n (<= QMM_I8_NMAX) X rows: y[j * ldy + r]
 * (gemv_int8_common.h's ROW_KERNEL). Whole chunks take both halves straight; the row's last
 * chunk, if shorter, its halves one by one, a half past the end skipped, a short one from a
 * zeroed copy of its blocks. */
I8_INLINE void row_kernel(qmm_type t, const unsigned char *w, size_t row_stride, int R,
                          size_t prefetch_off, int64_t k, int64_t n, const qmm_i8_xrow *xr,
                          const qmm_i8_layout *lay, float *y, int64_t ldy) {
    const bool two = qmm_i8_sub16(t), mins = qmm_i8_has_min(t);
    const int64_t chunks = (k + QMM_I8_CHUNK - 1) / QMM_I8_CHUNK, whole = k / QMM_I8_CHUNK;
    const size_t cbytes = qmm_i8_chunk_bytes(t), hbytes = cbytes / 2;
    const __m128i order = sc_order(lay->lane_sub, two);
    __m256 accs[QMM_I8_GROUP][QMM_I8_NMAX][2];
    for (int r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++) accs[r][j][0] = accs[r][j][1] = _mm256_setzero_ps();
    for (int64_t ch = 0; ch < chunks; ch++)
        for (int r = 0; r < R; r++) {
            const unsigned char *cp = w + (size_t)r * row_stride + (size_t)ch * cbytes;
            qmm_i8_prefetch(cp, cbytes, prefetch_off);
            __m256 mw_keep[2][2]; /* q2_K: the min scales of both halves, applied after them */
            int halves = 2;
            if (ch < whole) {
                half_step(t, cp, 0, ch, n, xr, order, accs[r], mw_keep[0]);
                half_step(t, cp + hbytes, 1, ch, n, xr, order, accs[r], mw_keep[1]);
            } else {
                halves = 0;
                for (int hh = 0; hh < 2; hh++) {
                    const int64_t left = k - ch * QMM_I8_CHUNK - hh * HALF;
                    if (left <= 0) break;
                    halves++;
                    const unsigned char *hp = cp + hh * hbytes;
                    const int nb = half_blocks(t, left), full = HALF / qmm_i8_block_elems(t);
                    unsigned char tail[8 * sizeof(block_q8_0)]; /* the largest half */
                    if (nb < full) { /* the row's last blocks, zero blocks after them */
                        memset(tail, 0, sizeof tail);
                        memcpy(tail, hp, (size_t)nb * qmm_i8_block_bytes(t));
                        hp = tail;
                    }
                    half_step(t, hp, hh, ch, n, xr, order, accs[r], mw_keep[hh]);
                }
            }
            if (two && mins) /* q2_K: s * m_w of half 0, then of half 1 */
                for (int64_t j = 0; j < n; j++)
                    for (int hh = 0; hh < halves; hh++)
                        for (int i = 0; i < 2; i++) {
                            const int64_t lb = ch * QMM_I8_LANES + 16 * hh + 8 * i;
                            accs[r][j][i] = _mm256_fmadd_ps(_mm256_loadu_ps(xr[j].s + lb),
                                                            mw_keep[hh][i], accs[r][j][i]);
                        }
        }
    /* the accumulator lanes back in the canonical order, then the AVX-512 kernel's final sum */
    const __m256i out0 = _mm256_loadu_si256((const __m256i *)lay->lane_out);
    const __m256i out1 = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(lay->lane_out + 8)),
                                          _mm256_set1_epi32(8));
    for (int r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++)
            y[j * ldy + r] = reduce16(_mm256_permutevar8x32_ps(accs[r][j][0], out0),
                                      _mm256_permutevar8x32_ps(accs[r][j][1], out1));
}

/* One instance per type (gemv_int8_common.h's row walk). */
#define ROWS(p, E, nm) QMM_I8_DEFINE_ROWS(p##_##nm, row_kernel, QMM_TYPE_##E)
QMM_I8_TYPES(ROWS, rows)
#undef ROWS

static qmm_i8_rows_fn rows_for(qmm_type t) {
    switch (t) {
    QMM_I8_TYPES(QMM_I8_CASE_RETURN, rows)
    default: return NULL;
    }
}

static bool has_rows(qmm_type t) { return rows_for(t) != NULL; }
QMM_I8_LAYOUT_CACHE(layout_for, layout_make, has_rows)

#if QMM_I8_AVXVNNI
void qmm_x86_gemv_int8_avxvnni(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                               size_t row_stride, int64_t n, const float *x, int64_t ldx,
                               float *y, int64_t ldy, void *scratch, int n_threads)
#else
void qmm_x86_gemv_int8_avx2(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                            size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                            int64_t ldy, void *scratch, int n_threads)
#endif
{
    const qmm_i8_rows_fn fn = rows_for(type);
    if (fn == NULL) return;
    qmm_i8_drive(fn, layout_for(type), qmm_x86_int8_quantize_row_avx2, m, k, w, row_stride, n,
                 x, ldx, y, ldy, scratch, n_threads);
}
