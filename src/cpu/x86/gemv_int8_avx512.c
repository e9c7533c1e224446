/*
 * gemv_int8_avx512.c — the int8 strategy with AVX-512-VNNI on the native GGUF blocks of every
 * quantized weight type (q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K; no
 * repacked copy; the 4-bit codebook types are forwarded to
 * gemv_int8_codebook_avx512.c). Meant for decode (n <= 8); any n runs in groups of up to 8 X
 * rows.
 *
 * X is quantized per call with int8_amx's function (qmm_x86_int8_quantize_row: per 32-element
 * block c, dx = max|x| / 127, q = round-to-nearest-even(x / dx)) into a scratch copy padded
 * with zero blocks to a multiple of 512 elements. A W row is walked in chunks of 512 elements
 * (16 blocks of 32, or two super-blocks of 256): the integer quants of a chunk are expanded to
 * unsigned bytes in 8 zmm registers wv[0..7], in an order that is cheap to decode from the
 * type's layout (per type below), X is stored in the same order, and per X row
 *     r[u] = VPDPBUSD(VPDPBUSD(0, wv[2u], x), wv[2u + 1], x')    u = 0..3
 * (wv[2u] and wv[2u + 1] hold the same sub-blocks in the same int32 lanes, so one chain per
 * pair); a fixed tree of permutes and adds (pair_sums) turns the 4 registers into the exact
 * int32 dot of every sub-block: one vector of 16 lanes for 32-element sub-blocks, two for
 * 16-element ones (q2_K, q3_K, q6_K). Lane order: LANE_SUB below, computed from the decode
 * order (elem()) by following the tree. Then per X row, lane by lane:
 *     offset types (q4_0 8, q5_0 16, q3_K 4, q6_K 32): isum -= offset * sum(q_x)  (exact int);
 *     acc = fma((float)isum, d_w * dx, acc)         d_w = the float the dequantizer multiplies
 *                                                   by (d, d * sc);
 *     min types (q4_1, q5_1 m; q2_K, q4_K, q5_K -(dmin * mn)): acc = fma(s, m_w, acc) with
 *                                                   s = dx * sum(q_x) over the sub-block;
 * with one 16-lane f32 accumulator per X row (for 16-element sub-blocks: the first 16
 * sub-blocks, then the next 16, then the min terms in the same order), reduced once at the
 * row's end by _mm512_reduce_add_ps. The order depends only on k (not on n, the thread or the
 * task); it differs from int8_amx's, so the two paths agree within the int8 bound, not bit
 * for bit.
 * Signs for VPDPBUSD (first operand unsigned): the W quants are the unsigned side (0..63),
 * except q8_0, where X is the unsigned side as x + 128 (1..255; x is never -128) and the
 * weights stay signed, so -128 needs no negation; its lanes start from -128 * sum(w)
 * (VPDPBUSD of the bytes 128 with w), so they end at sum(x w). int32 cannot overflow: a lane
 * sums 8 products of at most 255 * 128. VPDPBUSD does not saturate.
 * Memory-level parallelism (decode, n <= 2 per pass): 4 consecutive W rows are walked side by
 * side, chunk by chunk (4 read streams per core), and each chunk of the next 4 rows is
 * prefetched (T0) as the same chunk of this group is read; rows are still computed one at a
 * time in the order above, so grouping changes no bit.
 * Threads: tasks of consecutive W rows, schedule(dynamic): 64 rows when a pass takes more
 * than 2 X rows (compute-bound; small tasks balance the threads), otherwise m / (4 threads)
 * rows clamped to 64..1024 (memory-bound: long tasks keep the streams and the prefetch
 * running across fewer task starts). Each output belongs to one task, so the schedule
 * changes no bit. Format source: ggml-common.h / ggml-quants.c (block structs,
 * dequantize_row_*), as restated in src/formats/quants_*.c.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/gemv_int8_common.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"

#define CHUNK QMM_I8_CHUNK /* elements per chunk (8 zmm of W bytes) */
#define NMAX QMM_I8_NMAX
#define LANES QMM_I8_LANES
#define GROUP QMM_I8_GROUP

#define k_quant qmm_i8_k_quant
#define sub16 qmm_i8_sub16

bool qmm_x86_gemv_int8_avx512_has_type(qmm_type type) {
    switch (type) {
    QMM_I8_INTEGER_TYPES(QMM_I8_CASE, )
        return true;
    default: /* the codebook types: gemv_int8_codebook_avx512.c */
        return qmm_x86_gemv_int8_codebook_has_type(type);
    }
}

/*
 * Where this kernel beats the AMX-INT8 tiles, per type with tiles: AMX reads its int8 copy
 * (1.125 bytes per weight) at the memory rate for any n, so this kernel wins while its time
 * stays under that (the commands and numbers: bench/results/cpu-spr-crossovers.md). Types
 * without int8 tiles (q2_K, q3_K, q6_K: no AMX kernel) run this kernel for every n.
 */
int64_t qmm_x86_gemv_int8_avx512_max_n(qmm_type type) {
    switch (type) {
    case QMM_TYPE_Q4_0: case QMM_TYPE_Q4_1: return 8;
    case QMM_TYPE_Q4_K: case QMM_TYPE_Q5_0: case QMM_TYPE_Q5_1: case QMM_TYPE_Q5_K: return 6;
    case QMM_TYPE_Q8_0: return 1;
    default:
        if (qmm_x86_gemv_int8_codebook_has_type(type)) return qmm_x86_gemv_int8_codebook_max_n(type);
        return qmm_x86_gemv_int8_avx512_has_type(type) ? INT64_MAX : 0;
    }
}

/* ---------------------------------------------------------------------------------------
 * Decode order: element (0..511 of the chunk) in byte b (0..63) of register v (0..7).
 * The SIMD decoders below produce exactly this; X is permuted by it.
 * ------------------------------------------------------------------------------------- */

/* q4_K / q5_K: one 64-byte qs load p of super-block h holds sub-blocks 4p..4p+3; the low
 * nibbles are sub-blocks 4p, 4p+2, the high 4p+1, 4p+3; elements 0..15 of each ("a") go to
 * register A = 4h + 2p, elements 16..31 ("b") to B = A + 1, 128-bit lane t holding sub-block
 * 4p + K4_SUB[t]. */
static const int K4_SUB[4] = {0, 2, 1, 3};

static int elem(qmm_type type, int v, int b) {
    if (!k_quant(type)) { /* blocks 4u..4u+3 side by side: v even elements 0..15, odd 16..31 */
        const int u = v / 2, e = b / 16, l = b % 16;
        return 32 * (4 * u + e) + 16 * (v % 2) + l;
    }
    const int h = v / 4;
    if (type == QMM_TYPE_Q4_K || type == QMM_TYPE_Q5_K) {
        const int p = (v / 2) % 2, t = b / 16, l = b % 16;
        return 256 * h + 32 * (4 * p + K4_SUB[t]) + 16 * (v % 2) + l;
    }
    /* q2_K, q3_K, q6_K: two source registers R0, R1 per pair; the pair's A register takes the
     * even 8-byte words of R0 then R1, B the odd ones (vpermt2q). */
    const int i = b / 8, o = b % 8, src = i / 4, j = 8 * (2 * (i % 4) + v % 2) + o;
    if (type == QMM_TYPE_Q6_K) {
        /* pair = half hf of the super-block: R0 = low nibbles (element 128hf + j), R1 = high
         * nibbles (128hf + 64 + j) of the 64 ql bytes */
        const int hf = (v / 2) % 2;
        return 256 * h + 128 * hf + 64 * src + j;
    }
    /* q2_K / q3_K: R_s = bit pair s of the 64 qs bytes (byte j: element 128(j/32) + 32s +
     * j%32); pair p holds R_2p, R_2p+1 */
    const int p = (v / 2) % 2, s = 2 * p + src;
    return 256 * h + 128 * (j / 32) + 32 * s + j % 32;
}

/* The X layout (gemv_int8_common.h): runs from elem(), and the sub-block of each result lane,
 * found by following the reduction tree. */
static void layout_make(qmm_type type, qmm_i8_layout *lo) {
    lo->sub_size = sub16(type) ? 16 : 32;
    lo->flip = type == QMM_TYPE_Q8_0 ? 0x80 : 0; /* q8_0: x + 128 as the unsigned side */
    (void)qmm_i8_layout_runs(lo, 64, elem, type); /* every order here moves runs of 8 or 16 */
    int r[4][16]; /* sub-block of each int32 lane of r[u] (bytes 4L..4L+3 of wv[2u], wv[2u+1]) */
    for (int u = 0; u < 4; u++)
        for (int l = 0; l < 16; l++) r[u][l] = elem(type, 2 * u, 4 * l) / lo->sub_size;
    /* pair_sums(a, b) lane i = (a:b)[2i] + (a:b)[2i + 1] */
    int a[2][16];
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < 16; i++)
            a[g][i] = i < 8 ? r[2 * g][2 * i] : r[2 * g + 1][2 * (i - 8)];
    if (sub16(type)) {
        lo->lanes = 32;
        for (int i = 0; i < 32; i++) lo->lane_sub[i] = a[i / 16][i % 16];
    } else {
        lo->lanes = 16;
        for (int i = 0; i < 8; i++) {
            lo->lane_sub[i] = a[0][2 * i];
            lo->lane_sub[8 + i] = a[1][2 * i];
        }
        for (int i = 16; i < 32; i++) lo->lane_sub[i] = 0;
    }
    for (int L = 0; L < 16; L++) lo->lane_out[L] = L; /* its lanes are the canonical ones */
}

size_t qmm_x86_gemv_int8_avx512_scratch(int64_t n, int64_t k) { return qmm_i8_scratch(n, k); }


/* ---------------------------------------------------------------------------------------
 * W decoders: chunk ch of a row into wv[8] (bytes in elem() order; parts beyond the row's
 * end are zero) and the natural-order float scales dw[0..1] / mins mw[0..1] (sub-block i of
 * the chunk in lane i % 16 of vector i / 16; zero beyond the row's end); q2_K and q3_K give
 * them in result-lane order instead (a byte shuffle of the scales before widening).
 * ------------------------------------------------------------------------------------- */

/* The 8 six-bit scales (bytes of *sc8, sub-block order) and 8 mins (*mn8) of a q4_K / q5_K
 * super-block from its 12 packed bytes, four at a time in 32-bit words (the layout of
 * qmm_kq_get_scale_min_k4: bytes 0..3 scales 0..3, bytes 4..7 mins 0..3, low 6 bits; bytes
 * 8..11 the low 4 bits of scales (low nibble) and mins (high nibble) 4..7, whose top 2 bits
 * are the top 2 bits of bytes 0..3 / 4..7). */
static inline void k4_scales_mins(const uint8_t *p, uint64_t *sc8, uint64_t *mn8) {
    uint32_t a, b, c;
    memcpy(&a, p, 4);
    memcpy(&b, p + 4, 4);
    memcpy(&c, p + 8, 4);
    const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | (((a >> 6) & 0x03030303u) << 4);
    const uint32_t mn_hi = ((c >> 4) & 0x0F0F0F0Fu) | (((b >> 6) & 0x03030303u) << 4);
    *sc8 = (a & 0x3F3F3F3Fu) | (uint64_t)sc_hi << 32;
    *mn8 = (b & 0x3F3F3F3Fu) | (uint64_t)mn_hi << 32;
}

/* The two f16 values of the 32 bits at p (d, then dmin), exactly (vcvtph2ps). */
static inline __m128 f16_pair(const void *p) {
    uint32_t bits;
    memcpy(&bits, p, sizeof bits);
    return _mm_cvtph_ps(_mm_cvtsi32_si128((int)bits));
}

static inline float f16_one(const void *p) {
    uint16_t bits;
    memcpy(&bits, p, sizeof bits);
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits)));
}

/* q4_0, q4_1, q5_0, q5_1, q8_0: nb (1..16) blocks of the chunk. */
static inline __attribute__((always_inline)) void decode_legacy(
    qmm_type type, const unsigned char *b0, int nb, __m512i wv[8], __m512 dw[2], __m512 mw[2]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const size_t bs = qmm_i8_block_bytes(type);
    const size_t qs_at = type == QMM_TYPE_Q4_0   ? offsetof(block_q4_0, qs)
                         : type == QMM_TYPE_Q4_1 ? offsetof(block_q4_1, qs)
                         : type == QMM_TYPE_Q5_0 ? offsetof(block_q5_0, qs)
                         : type == QMM_TYPE_Q5_1 ? offsetof(block_q5_1, qs)
                                                 : offsetof(block_q8_0, qs);
    const bool has_min = type == QMM_TYPE_Q4_1 || type == QMM_TYPE_Q5_1;
    const bool five = type == QMM_TYPE_Q5_0 || type == QMM_TYPE_Q5_1;
    const __mmask16 valid = nb >= 16 ? 0xFFFF : (__mmask16)((1u << nb) - 1);
    /* d (and m) of each block: one 4-byte gather per block */
    const __m512i offs = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)bs));
    const __m512i dbits = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs, b0, 1);
    dw[0] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dbits));
    dw[1] = mw[1] = _mm512_setzero_ps();
    mw[0] = has_min ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dbits, 16)))
                    : _mm512_setzero_ps();
    uint64_t hlo[4] = {0, 0, 0, 0}, hhi[4] = {0, 0, 0, 0};
    if (five) { /* bit l of qh -> element l (low register), bit 16 + l -> element 16 + l */
        const size_t qh_at = type == QMM_TYPE_Q5_0 ? offsetof(block_q5_0, qh)
                                                   : offsetof(block_q5_1, qh);
        const __m512i qh = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs,
                                                       b0 + qh_at, 1);
        _mm256_storeu_si256((__m256i *)hlo, _mm512_cvtepi32_epi16(qh));
        _mm256_storeu_si256((__m256i *)hhi, _mm512_cvtepi32_epi16(_mm512_srli_epi32(qh, 16)));
    }
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) {
        const unsigned char *pa = b0 + (size_t)(4 * u) * bs + qs_at;
        if (4 * u >= nb) {
            wv[2 * u] = wv[2 * u + 1] = _mm512_setzero_si512();
        } else if (type != QMM_TYPE_Q8_0) {
            /* the 16 qs bytes of blocks 4u..4u+3 side by side: low nibbles = elements 0..15,
             * high nibbles = 16..31 */
            __m128i qs[4];
            for (int e = 0; e < 4; e++)
                qs[e] = 4 * u + e < nb
                            ? _mm_loadu_si128((const __m128i *)(pa + (size_t)e * bs))
                            : _mm_setzero_si128();
            const __m256i y0 = _mm256_inserti128_si256(_mm256_castsi128_si256(qs[0]), qs[1], 1);
            const __m256i y1 = _mm256_inserti128_si256(_mm256_castsi128_si256(qs[2]), qs[3], 1);
            const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(y0), y1, 1);
            wv[2 * u] = _mm512_and_si512(z, low4);
            wv[2 * u + 1] = _mm512_and_si512(_mm512_srli_epi16(z, 4), low4);
            if (five) {
                const __m512i b16 = _mm512_set1_epi8(16);
                wv[2 * u] = _mm512_mask_add_epi8(wv[2 * u], _cvtu64_mask64(hlo[u]), wv[2 * u], b16);
                wv[2 * u + 1] = _mm512_mask_add_epi8(wv[2 * u + 1], _cvtu64_mask64(hhi[u]),
                                                     wv[2 * u + 1], b16);
            }
        } else { /* q8_0: bytes 0..15 of each block, then 16..31 */
            __m128i lo[4], hi[4];
            for (int e = 0; e < 4; e++) {
                const unsigned char *qs = pa + (size_t)e * bs;
                lo[e] = 4 * u + e < nb ? _mm_loadu_si128((const __m128i *)qs) : _mm_setzero_si128();
                hi[e] = 4 * u + e < nb ? _mm_loadu_si128((const __m128i *)(qs + 16))
                                       : _mm_setzero_si128();
            }
            wv[2 * u] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(lo[1], lo[0])),
                                           _mm256_set_m128i(lo[3], lo[2]), 1);
            wv[2 * u + 1] = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_set_m128i(hi[1], hi[0])),
                _mm256_set_m128i(hi[3], hi[2]), 1);
        }
    }
}

/* q4_K / q5_K: nsb (1..2) super-blocks at sb0. */
static inline __attribute__((always_inline)) void decode_k4(
    qmm_type type, const unsigned char *sb0, int nsb, __m512i wv[8], __m512 dw[2], __m512 mw[2]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), b16 = _mm512_set1_epi8(16);
    const size_t bs = type == QMM_TYPE_Q4_K ? sizeof(block_q4_K) : sizeof(block_q5_K);
    uint64_t sc8[2] = {0, 0}, mn8[2] = {0, 0};
    float dd[2] = {0.0f, 0.0f}, dmin[2] = {0.0f, 0.0f};
    for (int h = 0; h < 2; h++) {
        if (h >= nsb) {
            for (int g = 0; g < 4; g++) wv[4 * h + g] = _mm512_setzero_si512();
            continue;
        }
        const unsigned char *blk = sb0 + (size_t)h * bs;
        const __m128 f = f16_pair(blk); /* d, dmin */
        dd[h] = _mm_cvtss_f32(f);
        dmin[h] = _mm_cvtss_f32(_mm_movehdup_ps(f));
        const unsigned char *qs, *qh = NULL;
        if (type == QMM_TYPE_Q4_K) {
            k4_scales_mins(((const block_q4_K *)blk)->scales, &sc8[h], &mn8[h]);
            qs = ((const block_q4_K *)blk)->qs;
        } else {
            k4_scales_mins(((const block_q5_K *)blk)->scales, &sc8[h], &mn8[h]);
            qs = ((const block_q5_K *)blk)->qs;
            qh = ((const block_q5_K *)blk)->qh;
        }
        for (int p = 0; p < 2; p++) {
            const __m512i z = _mm512_loadu_si512(qs + 64 * p);
            const __m512i lo = _mm512_and_si512(z, low4);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), low4);
            __m512i a = _mm512_shuffle_i64x2(lo, hi, 0x88); /* lanes lo.0 lo.2 hi.0 hi.2 */
            __m512i b = _mm512_shuffle_i64x2(lo, hi, 0xDD); /* lanes lo.1 lo.3 hi.1 hi.3 */
            if (type == QMM_TYPE_Q5_K) { /* bit S of qh[l] is bit 4 of sub-block S element l */
                const __m512i qa = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)qh));
                const __m512i qb =
                    _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(qh + 16)));
                const int s0 = 4 * p;
                const __m512i sel = _mm512_set_epi64(
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[3])),
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[3])),
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[2])),
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[2])),
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[1])),
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[1])),
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[0])),
                    (long long)(0x0101010101010101ULL << (s0 + K4_SUB[0])));
                a = _mm512_mask_add_epi8(a, _mm512_test_epi8_mask(qa, sel), a, b16);
                b = _mm512_mask_add_epi8(b, _mm512_test_epi8_mask(qb, sel), b, b16);
            }
            wv[4 * h + 2 * p] = a;
            wv[4 * h + 2 * p + 1] = b;
        }
    }
    /* d * sc and -(dmin * mn) per sub-block, as the dequantizer's floats */
    const __m128i sc = _mm_set_epi64x((long long)sc8[1], (long long)sc8[0]);
    const __m128i mn = _mm_set_epi64x((long long)mn8[1], (long long)mn8[0]);
    dw[0] = _mm512_mul_ps(
        _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(dd[0]), _mm512_set1_ps(dd[1])),
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)));
    mw[0] = _mm512_mul_ps(
        _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(-dmin[0]), _mm512_set1_ps(-dmin[1])),
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mn)));
    dw[1] = mw[1] = _mm512_setzero_ps();
}

/* q3_K 6-bit scales minus 32 of the 16 sub-blocks, as int8 (q3_K_scale in quants_k.c: low 4
 * bits in the low (j < 8) or high (j >= 8) nibble of byte j % 8, top 2 bits in bit pair j / 4
 * of byte 8 + j % 4). */
static inline __m128i q3_scales(const uint8_t *p) {
    uint64_t a;
    uint32_t c;
    memcpy(&a, p, 8);
    memcpy(&c, p + 8, 4);
    const __m128i v = _mm_set1_epi64x((long long)a);
    const __m128i lo = _mm_and_si128(_mm_blend_epi16(v, _mm_srli_epi16(v, 4), 0xF0),
                                     _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)c),
                                                    _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(0x03));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* q2_K, q3_K: the 2-bit quants of the 64 qs bytes z of a super-block straight into the four
 * registers of elem()'s order: register 2p takes the even qwords of z (twice: bit pair 2p in
 * the low four qwords, 2p + 1 in the high four), register 2p + 1 the odd ones (one qword
 * permute and one variable shift each, instead of four shifts and four two-source permutes). */
static inline __attribute__((always_inline)) void pairs_2bit(__m512i z, __m512i three,
                                                             __m512i out[4]) {
    const __m512i ze = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 0, 2, 4, 6), z);
    const __m512i zo = _mm512_permutexvar_epi64(_mm512_setr_epi64(1, 3, 5, 7, 1, 3, 5, 7), z);
    const __m512i s01 = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
    const __m512i s23 = _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6);
    out[0] = _mm512_and_si512(_mm512_srlv_epi64(ze, s01), three);
    out[1] = _mm512_and_si512(_mm512_srlv_epi64(zo, s01), three);
    out[2] = _mm512_and_si512(_mm512_srlv_epi64(ze, s23), three);
    out[3] = _mm512_and_si512(_mm512_srlv_epi64(zo, s23), three);
}

/* q2_K, q3_K, q6_K: nsb (1..2) super-blocks at sb0. */
static inline __attribute__((always_inline)) void decode_k16(
    qmm_type type, const unsigned char *sb0, int nsb, __m128i sc_order, __m512i wv[8],
    __m512 dw[2], __m512 mw[2]) {
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i low4 = _mm512_set1_epi8(0x0F), three = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        dw[h] = mw[h] = _mm512_setzero_ps();
        if (h >= nsb) {
            for (int g = 0; g < 4; g++) wv[4 * h + g] = _mm512_setzero_si512();
            continue;
        }
        __m512i R[4];
        if (type == QMM_TYPE_Q6_K) {
            const block_q6_K *blk = (const block_q6_K *)(sb0 + (size_t)h * sizeof(block_q6_K));
            const __m512i c30 = _mm512_set1_epi8(0x30);
            const __m512i sl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
            const __m512i sr = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
            for (int hf = 0; hf < 2; hf++) {
                const __m512i z = _mm512_loadu_si512(blk->ql + 64 * hf);
                const __m512i qh = _mm512_broadcast_i64x4(
                    _mm256_loadu_si256((const __m256i *)(blk->qh + 32 * hf)));
                /* bytes 0..31: bit pair 0 (low) / 2 (high) of qh[l]; bytes 32..63: 1 / 3 */
                R[2 * hf] = _mm512_or_si512(_mm512_and_si512(z, low4),
                                            _mm512_and_si512(_mm512_sllv_epi16(qh, sl), c30));
                R[2 * hf + 1] = _mm512_or_si512(
                    _mm512_and_si512(_mm512_srli_epi16(z, 4), low4),
                    _mm512_and_si512(_mm512_srlv_epi16(qh, sr), c30));
            }
            dw[h] = _mm512_mul_ps(
                _mm512_set1_ps(f16_one(&blk->d)),
                _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                    _mm_loadu_si128((const __m128i *)blk->scales))));
        } else if (type == QMM_TYPE_Q2_K) {
            const block_q2_K *blk = (const block_q2_K *)(sb0 + (size_t)h * sizeof(block_q2_K));
            const __m512i z = _mm512_loadu_si512(blk->qs);
            pairs_2bit(z, three, &wv[4 * h]);
            const __m512i sc = _mm512_cvtepu8_epi32(
                _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)blk->scales), sc_order));
            const __m128 f = f16_pair(&blk->d); /* d, dmin */
            dw[h] = _mm512_mul_ps(_mm512_set1_ps(_mm_cvtss_f32(f)),
                                  _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))));
            mw[h] = _mm512_mul_ps(_mm512_set1_ps(-_mm_cvtss_f32(_mm_movehdup_ps(f))),
                                  _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
        } else { /* q3_K: low 2 bits as q2_K, plus 4 where bit 4(j/32) + s of hmask[j%32] */
            const block_q3_K *blk = (const block_q3_K *)(sb0 + (size_t)h * sizeof(block_q3_K));
            const __m512i z = _mm512_loadu_si512(blk->qs);
            pairs_2bit(z, three, &wv[4 * h]);
            /* hmask qwords in the same order: byte j (0..63) of a qs qword pair p goes with
             * hmask[j % 32], bit 4(j / 32) + s; hmask qwords 0, 2 (even qs qwords) and 1, 3
             * (odd), the wanted bit rotated to bit 2 of its byte, merged above bits 0..1 */
            const __m512i hm =
                _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)blk->hmask));
            const __m512i hm_a =
                _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 0, 2, 0, 2, 0, 2), hm);
            const __m512i hm_b =
                _mm512_permutexvar_epi64(_mm512_setr_epi64(1, 3, 1, 3, 1, 3, 1, 3), hm);
            /* qword i of pair p: s = 2p + i / 4, bit b = s + 4 (i % 4 >= 2); rotate left 2 - b;
             * ternary 0xD8: bit 2 of each byte from the rotated hmask, the rest from the quant */
            const __m512i rot[2] = {_mm512_setr_epi64(2, 2, 62, 62, 1, 1, 61, 61),
                                    _mm512_setr_epi64(0, 0, 60, 60, 63, 63, 59, 59)};
            const __m512i bit2 = _mm512_set1_epi8(4);
            for (int p = 0; p < 2; p++) {
                __m512i *v = &wv[4 * h + 2 * p];
                v[0] = _mm512_ternarylogic_epi32(v[0], _mm512_rolv_epi64(hm_a, rot[p]), bit2, 0xD8);
                v[1] = _mm512_ternarylogic_epi32(v[1], _mm512_rolv_epi64(hm_b, rot[p]), bit2, 0xD8);
            }
            dw[h] = _mm512_mul_ps(_mm512_set1_ps(f16_one(&blk->d)),
                                  _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                      _mm_shuffle_epi8(q3_scales(blk->scales), sc_order))));
        }
        if (type == QMM_TYPE_Q6_K)
            for (int p = 0; p < 2; p++) {
                wv[4 * h + 2 * p] = _mm512_permutex2var_epi64(R[2 * p], even, R[2 * p + 1]);
                wv[4 * h + 2 * p + 1] = _mm512_permutex2var_epi64(R[2 * p], odd, R[2 * p + 1]);
            }
    }
}

/* ---------------------------------------------------------------------------------------
 * Row kernel
 * ------------------------------------------------------------------------------------- */

/* t lane i = (a:b)[2i] + (a:b)[2i+1]: adjacent lanes of the 32 lanes of a then b summed. */
static inline __m512i pair_sums(__m512i a, __m512i b, __m512i even, __m512i odd) {
    return _mm512_add_epi32(_mm512_permutex2var_epi32(a, even, b),
                            _mm512_permutex2var_epi32(a, odd, b));
}

#define offset_shift qmm_i8_offset_shift
#define has_min qmm_i8_has_min

/* R (1..GROUP) consecutive W rows (row r at w + r * row_stride) against n (<= NMAX) X rows:
 * y[j * ldy + r]. The rows are walked side by side chunk by chunk, each with its own
 * accumulators (R * n <= 8 keeps them in registers), so a row's arithmetic is the same for
 * any R. prefetch_off != 0: each chunk read is prefetched that many bytes further on too.
 * lay->lane_sub: the natural sub-block of each result lane (idx0: vector 0, idx1: vector 1),
 * for the scale permutes. */
static inline __attribute__((always_inline)) void row_kernel(
    qmm_type type, const unsigned char *w, size_t row_stride, int R, size_t prefetch_off,
    int64_t k, int64_t n, const qmm_i8_xrow *xr, const qmm_i8_layout *lay, float *y,
    int64_t ldy) {
    const __m512i idx0 = _mm512_loadu_si512(lay->lane_sub);
    const __m512i idx1 = _mm512_loadu_si512(lay->lane_sub + 16);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const bool kq = k_quant(type), two = sub16(type), mins = has_min(type);
    const int shift = offset_shift(type);
    const int64_t chunks = (k + CHUNK - 1) / CHUNK;
    /* 16-element sub-blocks: lanes 0..15 hold those of the chunk's first super-block, so the
     * bytes of idx0 order a super-block's 16 scales as its lanes */
    const __m128i sc_order = _mm512_cvtepi32_epi8(idx0);
    const size_t chunk_bytes = qmm_i8_chunk_bytes(type);
    __m512 accs[GROUP][NMAX];
    for (int r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++) accs[r][j] = _mm512_setzero_ps();
    for (int64_t ch = 0; ch < chunks; ch++)
    for (int r = 0; r < R; r++) {
        const unsigned char *row = w + (size_t)r * row_stride;
        __m512 *acc = accs[r];
        qmm_i8_prefetch(row + ch * chunk_bytes, chunk_bytes, prefetch_off);
        const int64_t left = k - ch * CHUNK; /* elements of the row from this chunk on */
        const unsigned char *c0 = row + (size_t)ch * chunk_bytes;
        __m512i wv[8], init[4];
        __m512 dn[2], mn[2], dw[2], mw[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
        if (!kq)
            decode_legacy(type, c0, left >= CHUNK ? 16 : (int)(left / 32), wv, dn, mn);
        else if (type == QMM_TYPE_Q4_K || type == QMM_TYPE_Q5_K)
            decode_k4(type, c0, left >= CHUNK ? 2 : 1, wv, dn, mn);
        else
            decode_k16(type, c0, left >= CHUNK ? 2 : 1, sc_order, wv, dn, mn);
        /* natural sub-block order -> lane order (q2_K, q3_K: decoded in lane order) */
        if (type == QMM_TYPE_Q2_K || type == QMM_TYPE_Q3_K) {
            dw[0] = dn[0];
            dw[1] = dn[1];
            mw[0] = mn[0];
            mw[1] = mn[1];
        } else if (two) {
            dw[0] = _mm512_permutex2var_ps(dn[0], idx0, dn[1]);
            dw[1] = _mm512_permutex2var_ps(dn[0], idx1, dn[1]);
            if (mins) {
                mw[0] = _mm512_permutex2var_ps(mn[0], idx0, mn[1]);
                mw[1] = _mm512_permutex2var_ps(mn[0], idx1, mn[1]);
            }
        } else {
            dw[0] = _mm512_permutexvar_ps(idx0, dn[0]);
            if (mins) mw[0] = _mm512_permutexvar_ps(idx0, mn[0]);
        }
        if (type == QMM_TYPE_Q8_0) {
            const __m512i b128 = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++)
                init[u] = _mm512_sub_epi32(
                    _mm512_setzero_si512(),
                    _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), b128,
                                                            wv[2 * u]),
                                        b128, wv[2 * u + 1]));
        }
        for (int64_t j = 0; j < n; j++) {
            const int8_t *xq = xr[j].q + ch * CHUNK;
            const int64_t lo = ch * LANES;
            __m512i r[4];
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) {
                const __m512i xa = _mm512_loadu_si512(xq + 128 * u);
                const __m512i xb = _mm512_loadu_si512(xq + 128 * u + 64);
                if (type == QMM_TYPE_Q8_0)
                    r[u] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(init[u], xa, wv[2 * u]), xb,
                                               wv[2 * u + 1]);
                else
                    r[u] = _mm512_dpbusd_epi32(
                        _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[2 * u], xa),
                        wv[2 * u + 1], xb);
            }
            __m512i is0 = pair_sums(r[0], r[1], even, odd), is1 = pair_sums(r[2], r[3], even, odd);
            if (!two) is0 = pair_sums(is0, is1, even, odd);
            if (shift != 0) {
                is0 = _mm512_sub_epi32(
                    is0, _mm512_slli_epi32(_mm512_loadu_si512(xr[j].sum + lo), shift));
                if (two)
                    is1 = _mm512_sub_epi32(
                        is1, _mm512_slli_epi32(_mm512_loadu_si512(xr[j].sum + lo + 16), shift));
            }
            __m512 a = acc[j];
            a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is0),
                                _mm512_mul_ps(dw[0], _mm512_loadu_ps(xr[j].dx + lo)), a);
            if (two)
                a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is1),
                                    _mm512_mul_ps(dw[1], _mm512_loadu_ps(xr[j].dx + lo + 16)), a);
            if (mins) {
                a = _mm512_fmadd_ps(_mm512_loadu_ps(xr[j].s + lo), mw[0], a);
                if (two) a = _mm512_fmadd_ps(_mm512_loadu_ps(xr[j].s + lo + 16), mw[1], a);
            }
            acc[j] = a;
        }
    }
    for (int r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++) y[j * ldy + r] = _mm512_reduce_add_ps(accs[r][j]);
}

/* One instance per type (gemv_int8_common.h's row walk); the codebook types are
 * gemv_int8_codebook_avx512.c's. */
#define ROWS(p, E, nm) QMM_I8_DEFINE_ROWS(p##_##nm, row_kernel, QMM_TYPE_##E)
QMM_I8_INTEGER_TYPES(ROWS, rows)
#undef ROWS

static qmm_i8_rows_fn rows_for(qmm_type type) {
    switch (type) {
    QMM_I8_INTEGER_TYPES(QMM_I8_CASE_RETURN, rows)
    default: return NULL;
    }
}

static bool has_rows(qmm_type type) { return rows_for(type) != NULL; }
QMM_I8_LAYOUT_CACHE(layout_for, layout_make, has_rows)

void qmm_x86_gemv_int8_avx512(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                              size_t row_stride, int64_t n, const float *x, int64_t ldx,
                              float *y, int64_t ldy, void *scratch, int n_threads) {
    if (qmm_x86_gemv_int8_codebook_has_type(type)) {
        qmm_x86_gemv_int8_codebook(type, m, k, w, row_stride, n, x, ldx, y, ldy, scratch,
                                   n_threads);
        return;
    }
    const qmm_i8_rows_fn fn = rows_for(type);
    if (fn == NULL) return;
    qmm_i8_drive(fn, layout_for(type), qmm_x86_int8_quantize_row, m, k, w, row_stride, n, x,
                 ldx, y, ldy, scratch, n_threads);
}
