/*
 * gemv_int8_codebook_avx512.c — the int8 strategy with AVX-512-VNNI on the native GGUF blocks
 * of the codebook types: iq4_nl, iq4_xs, mxfp4 and nvfp4 (no repacked copy). Each maps a
 * 4-bit index through a 16-entry int8 codebook (iq4_nl, iq4_xs: qmm_iq4_values, -127..113;
 * mxfp4, nvfp4: qmm_kvalues_e2m1, twice the E2M1 values, -12..12) and scales it per sub-block:
 *     iq4_nl  32-element blocks, f16 d;                  value = d * values[q]
 *     iq4_xs  256-element super-blocks, sub-blocks of 32, d * (ls - 32);  value as iq4_nl
 *     mxfp4   32-element blocks, E8M0 e: 2^(e - 128) (ggml_e8m0_to_fp32_half, 0 and 1 give
 *             the subnormals 2^-128, 2^-127);         value = kvalues[q] * 2^(e - 128)
 *     nvfp4   64-element blocks of 4 sub-blocks of 16, UE4M3 d[s] (bit 7 ignored, 0x7F -> 0)
 *             times 0.5;                              value = kvalues[q] * ue4m3(d[s]) / 2
 * Nibble order: iq4_nl, mxfp4 and each 32-element sub-block of iq4_xs as q4_0 (qs[j] low
 * nibble = element j, high = j + 16); nvfp4 sub-block s: qs[8s + i] low = element 16s + i,
 * high = 16s + 8 + i. Meant for decode (n <= 8); any n runs in groups of up to 8 X rows.
 *
 * The same structure as gemv_int8_avx512.c (read its comment first), specialised to these
 * types: X is quantized per call with qmm_x86_int8_quantize_row (per 32-element block dx =
 * max|x| / 127, q = round-to-nearest-even(x / dx)), permuted into the byte order of the W
 * registers (below) in a scratch copy padded with zero blocks to a multiple of 512 elements,
 * with per 512-element chunk and result lane: dx of the lane's sub-block and 128 * sum(q_x)
 * over it. A W row is walked in chunks of 512 elements: the nibbles go through one vpshufb
 * with the codebook plus 128 (bytes 1..241 for iq4, 116..140 for fp4: the unsigned operand of
 * VPDPBUSD) into 8 zmm registers wv[0..7], in 4 pairs holding the same sub-blocks in the same
 * int32 lanes; per X row
 *     r[u] = VPDPBUSD(VPDPBUSD(0, wv[2u], x), wv[2u + 1], x')    u = 0..3
 * and the fixed tree pair_sums gives the exact int32 dot per sub-block in natural order (one
 * vector of 16 sub-blocks of 32, or two of 16 sub-blocks of 16 for nvfp4), then
 *     isum -= 128 * sum(q_x)                         (exact: the codebook value is u - 128)
 *     acc = fma((float)isum * dx, d_w, acc)          d_w = the float the dequantizer scales by
 * (isum * dx first: mxfp4's d_w reaches 2^-128, and d_w * dx would be subnormal, while
 * isum * dx * d_w is normal wherever the output is)
 * into one 16-lane f32 accumulator per X row, reduced once at the row's end by
 * _mm512_reduce_add_ps. The order depends only on k (not on n, the thread or the task).
 * int32 cannot overflow: a lane sums 8 products of at most 241 * 127.
 * Register order (elem()): pair u = registers 2u (first) and 2u + 1 (second);
 *   32-element sub-blocks: the 16 qs bytes of sub-blocks 4u..4u+3 side by side, low nibbles
 *     (elements 0..15) in the first, high nibbles (16..31) in the second;
 *   nvfp4: the 32 qs bytes of blocks 2u, 2u + 1, low nibbles in the first, high in the second.
 * Memory-level parallelism and threads as gemv_int8_avx512.c: for n <= 2 per pass 4 W rows are
 * walked side by side and the next 4 prefetched; tasks of consecutive W rows, dynamic
 * schedule; each output belongs to one task. Format source: ggml-common.h / ggml-quants.c /
 * ggml-impl.h (block structs, dequantize_row_*, ggml_e8m0_to_fp32_half, ggml_ue4m3_to_fp32)
 * and gguf.quants (IQ4_NL, IQ4_XS, MXFP4, NVFP4).
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/gemv_int8_common.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"
#include "formats/codec_fp4.h"
#include "formats/codec_iq4.h"

#define CHUNK QMM_I8_CHUNK /* elements per chunk (8 zmm of W bytes) */
#define NMAX QMM_I8_NMAX
#define LANES QMM_I8_LANES
#define GROUP QMM_I8_GROUP

/* The kernels of this file, one per type (CB_<ENUM>: the list of cpu/int8_types.h). */
#define KIND(p, E, nm) CB_##E,
typedef enum cb_kind { CB_NONE = -1, QMM_I8_CODEBOOK_TYPES(KIND, ) } cb_kind;
#undef KIND

static cb_kind kind_of(qmm_type type) {
#define KIND(p, E, nm) case QMM_TYPE_##E: return CB_##E;
    switch (type) {
    QMM_I8_CODEBOOK_TYPES(KIND, )
    default: return CB_NONE;
    }
#undef KIND
}

/* The type of a kind (CB_NONE: the callers return before, qmm_x86_gemv_int8_codebook_has_type). */
static qmm_type type_of(cb_kind kd) {
#define TYPE(p, E, nm) case CB_##E: return QMM_TYPE_##E;
    switch (kd) {
    QMM_I8_CODEBOOK_TYPES(TYPE, )
    default: return QMM_TYPE_COUNT;
    }
#undef TYPE
}

bool qmm_x86_gemv_int8_codebook_has_type(qmm_type type) { return kind_of(type) != CB_NONE; }

/* Sub-blocks of 16 elements (two lane vectors per chunk) or of 32 (one). */
static bool sub16(cb_kind kd) { return qmm_i8_sub16(type_of(kd)); }

/* Bytes of W per 512-element chunk. */
static size_t chunk_bytes(cb_kind kd) { return qmm_i8_chunk_bytes(type_of(kd)); }

/* ---------------------------------------------------------------------------------------
 * X layout (gemv_int8_common.h): the register order below; result lanes in natural sub-block
 * order. The lanes' sums enter as 128 * sum(q) (exact: the codebook value is u - 128).
 * ------------------------------------------------------------------------------------- */

/* Chunk element in byte b of register v (v = 2u first, 2u + 1 second register of pair u). */
static int elem(qmm_type type, int v, int b) {
    const int u = v / 2;
    if (type == QMM_TYPE_NVFP4) /* blocks 2u, 2u + 1: qs byte i low (first) / high (second) */
        return 128 * u + 16 * (b / 8) + 8 * (v % 2) + b % 8;
    return 32 * (4 * u + b / 16) + 16 * (v % 2) + b % 16; /* sub-blocks 4u..4u+3 side by side */
}

static void layout_make(qmm_type type, qmm_i8_layout *lo) {
    lo->sub_size = qmm_i8_sub16(type) ? 16 : 32;
    lo->lanes = CHUNK / lo->sub_size;
    lo->flip = 0;
    for (int l = 0; l < LANES; l++) lo->lane_sub[l] = l < lo->lanes ? l : 0;
    for (int L = 0; L < 16; L++) lo->lane_out[L] = L;
    (void)qmm_i8_layout_runs(lo, 64, elem, type);
}

size_t qmm_x86_gemv_int8_codebook_scratch(int64_t n, int64_t k) { return qmm_i8_scratch(n, k); }


/* ---------------------------------------------------------------------------------------
 * W decoders: chunk of a row into wv[8] (codebook value + 128 as unsigned bytes, elem() order;
 * bytes beyond the row's end are nibble 0 through the table, which meet the zero quants of the
 * padded X) and the float scales of its sub-blocks in natural order (sub-block i in lane
 * i % 16 of dw[i / 16]; zero beyond the row's end).
 * ------------------------------------------------------------------------------------- */

/* The codebook plus 128 in every 128-bit lane (the vpshufb table). */
static inline __m512i codebook_u8(cb_kind kd) {
    const int8_t *cb = kd == CB_IQ4_NL || kd == CB_IQ4_XS ? qmm_iq4_values : qmm_kvalues_e2m1;
    return _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)cb)),
                            _mm512_set1_epi8((char)0x80));
}

/* 64 bytes of nibbles z: low nibbles and high nibbles through the table. */
static inline __attribute__((always_inline)) void nibbles(__m512i z, __m512i tbl, __m512i *lo,
                                                          __m512i *hi) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    *lo = _mm512_shuffle_epi8(tbl, _mm512_and_si512(z, low4));
    *hi = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(z, 4), low4));
}

/* E8M0 bytes (low byte of each int32 lane) to 2^(e - 128) (ggml_e8m0_to_fp32_half): the bits
 * (e - 1) << 23, or 0x00200000 << e for e < 2. */
static inline __m512 e8m0_half(__m512i e) {
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    return _mm512_castsi512_ps(
        _mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, sub));
}

/* UE4M3 bytes (one per int32 lane, 0..255) to ue4m3(x) / 2 (ggml_ue4m3_to_fp32): exponent
 * field E = bits 3..6, mantissa M = bits 0..2, bit 7 ignored; E > 0: (1 + M/8) 2^(E-7) / 2,
 * i.e. the float bits (E + 119) << 23 | M << 20; E = 0: M 2^-10; the bytes 0x00 and 0x7F: 0. */
static inline __m512 ue4m3_half(__m512i x) {
    const __m512i e = _mm512_and_si512(_mm512_srli_epi32(x, 3), _mm512_set1_epi32(15));
    const __m512i m = _mm512_and_si512(x, _mm512_set1_epi32(7));
    const __m512i normal = _mm512_or_si512(
        _mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(119)), 23), _mm512_slli_epi32(m, 20));
    const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(0x1p-10f));
    const __m512 v = _mm512_mask_blend_ps(_mm512_test_epi32_mask(e, e), sub,
                                          _mm512_castsi512_ps(normal));
    return _mm512_maskz_mov_ps(_mm512_cmpneq_epi32_mask(x, _mm512_set1_epi32(0x7F)), v);
}

/* iq4_nl, mxfp4: nb (1..16) blocks of the chunk at b0. */
static inline __attribute__((always_inline)) void decode_32(cb_kind kd, const unsigned char *b0,
                                                            int nb, __m512i tbl, __m512i wv[8],
                                                            __m512 dw[2]) {
    const size_t bs = kd == CB_IQ4_NL ? sizeof(block_iq4_nl) : sizeof(block_mxfp4);
    const size_t qs_at = kd == CB_IQ4_NL ? offsetof(block_iq4_nl, qs) : offsetof(block_mxfp4, qs);
    const __mmask16 valid = nb >= 16 ? 0xFFFF : (__mmask16)((1u << nb) - 1);
    const __m512i offs = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)bs));
    const __m512i sbits = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs, b0, 1);
    if (kd == CB_IQ4_NL)
        dw[0] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(sbits));
    else
        dw[0] = _mm512_maskz_mov_ps(valid, e8m0_half(_mm512_and_si512(sbits, _mm512_set1_epi32(0xFF))));
    dw[1] = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) {
        const unsigned char *pa = b0 + (size_t)(4 * u) * bs + qs_at;
        if (4 * u >= nb) {
            wv[2 * u] = wv[2 * u + 1] = _mm512_setzero_si512();
            continue;
        }
        __m128i qs[4];
        for (int e = 0; e < 4; e++)
            qs[e] = 4 * u + e < nb ? _mm_loadu_si128((const __m128i *)(pa + (size_t)e * bs))
                                   : _mm_setzero_si128();
        const __m256i y0 = _mm256_inserti128_si256(_mm256_castsi128_si256(qs[0]), qs[1], 1);
        const __m256i y1 = _mm256_inserti128_si256(_mm256_castsi128_si256(qs[2]), qs[3], 1);
        nibbles(_mm512_inserti64x4(_mm512_castsi256_si512(y0), y1, 1), tbl, &wv[2 * u],
                &wv[2 * u + 1]);
    }
}

/* iq4_xs: nsb (1..2) super-blocks at sb0. Sub-block ib's scale d * (ls - 32), ls = the
 * nibble ib of scales_l (byte ib / 2, low nibble first) | bits 2ib..2ib+1 of scales_h << 4. */
static inline __attribute__((always_inline)) void decode_xs(const unsigned char *sb0, int nsb,
                                                            __m512i tbl, __m512i wv[8],
                                                            __m512 dw[2]) {
    uint32_t sl[2] = {0, 0}, sh[2] = {0, 0};
    float d[2] = {0.0f, 0.0f};
    for (int h = 0; h < 2; h++) {
        if (h >= nsb) {
            for (int g = 0; g < 4; g++) wv[4 * h + g] = _mm512_setzero_si512();
            continue;
        }
        const unsigned char *blk = sb0 + (size_t)h * sizeof(block_iq4_xs);
        uint16_t dh, shb;
        memcpy(&dh, blk + offsetof(block_iq4_xs, d), 2);
        memcpy(&shb, blk + offsetof(block_iq4_xs, scales_h), 2);
        memcpy(&sl[h], blk + offsetof(block_iq4_xs, scales_l), 4);
        sh[h] = shb;
        d[h] = _cvtsh_ss(dh);
        const unsigned char *qs = blk + offsetof(block_iq4_xs, qs);
        nibbles(_mm512_loadu_si512(qs), tbl, &wv[4 * h], &wv[4 * h + 1]);
        nibbles(_mm512_loadu_si512(qs + 64), tbl, &wv[4 * h + 2], &wv[4 * h + 3]);
    }
    const __m512i ib = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
    const __m512i L = _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32((int)sl[0]),
                                              _mm512_set1_epi32((int)sl[1]));
    const __m512i H = _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32((int)sh[0]),
                                              _mm512_set1_epi32((int)sh[1]));
    const __m512i lo = _mm512_and_si512(_mm512_srlv_epi32(L, _mm512_slli_epi32(ib, 2)),
                                        _mm512_set1_epi32(15));
    const __m512i hi = _mm512_and_si512(_mm512_srlv_epi32(H, _mm512_slli_epi32(ib, 1)),
                                        _mm512_set1_epi32(3));
    const __m512i ls = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)),
                                        _mm512_set1_epi32(32));
    dw[0] = _mm512_mul_ps(_mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d[0]), _mm512_set1_ps(d[1])),
                          _mm512_cvtepi32_ps(ls));
    dw[1] = _mm512_setzero_ps();
}

/* nvfp4: nb (1..8) blocks at b0. */
static inline __attribute__((always_inline)) void decode_nv(const unsigned char *b0, int nb,
                                                            __m512i tbl, __m512i wv[8],
                                                            __m512 dw[2]) {
    const size_t bs = sizeof(block_nvfp4), qs_at = offsetof(block_nvfp4, qs);
    const __mmask8 valid = nb >= 8 ? 0xFF : (__mmask8)((1u << nb) - 1);
    const __m256i offs = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                            _mm256_set1_epi32((int)bs));
    /* the 4 scale bytes of block j in int32 j: bytes in sub-block order 0..31 */
    const __m256i sb = _mm256_mmask_i32gather_epi32(_mm256_setzero_si256(), valid, offs,
                                                    b0 + offsetof(block_nvfp4, d), 1);
    dw[0] = ue4m3_half(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(sb)));
    dw[1] = ue4m3_half(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(sb, 1)));
    if (nb < 8) { /* sub-blocks past the end (bytes 0 decode to 0 already; keep it explicit) */
        const uint32_t subs = 4u * (uint32_t)nb;
        dw[0] = _mm512_maskz_mov_ps((__mmask16)(subs >= 16 ? 0xFFFF : (1u << subs) - 1), dw[0]);
        dw[1] = _mm512_maskz_mov_ps((__mmask16)(subs <= 16 ? 0 : (1u << (subs - 16)) - 1), dw[1]);
    }
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++) {
        const unsigned char *pa = b0 + (size_t)(2 * u) * bs + qs_at;
        if (2 * u >= nb) {
            wv[2 * u] = wv[2 * u + 1] = _mm512_setzero_si512();
            continue;
        }
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)pa);
        const __m256i q1 = 2 * u + 1 < nb ? _mm256_loadu_si256((const __m256i *)(pa + bs))
                                          : _mm256_setzero_si256();
        nibbles(_mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1), tbl, &wv[2 * u],
                &wv[2 * u + 1]);
    }
}

/* ---------------------------------------------------------------------------------------
 * Row kernel
 * ------------------------------------------------------------------------------------- */

/* 128 * sum(q_x) of 16 lanes. */
static inline __m512i s128(const int32_t *sum) {
    return _mm512_slli_epi32(_mm512_loadu_si512(sum), 7);
}

/* t lane i = (a:b)[2i] + (a:b)[2i+1]: adjacent lanes of the 32 lanes of a then b summed. */
static inline __m512i pair_sums(__m512i a, __m512i b, __m512i even, __m512i odd) {
    return _mm512_add_epi32(_mm512_permutex2var_epi32(a, even, b),
                            _mm512_permutex2var_epi32(a, odd, b));
}

/* R (1..GROUP) consecutive W rows against n (<= NMAX) X rows: y[j * ldy + r]; as
 * gemv_int8_avx512.c's row_kernel (a row's arithmetic is the same for any R). */
static inline __attribute__((always_inline)) void row_kernel(
    cb_kind kd, const unsigned char *w, size_t row_stride, int R, size_t prefetch_off,
    int64_t k, int64_t n, const qmm_i8_xrow *xr, const qmm_i8_layout *lay, float *y,
    int64_t ldy) {
    (void)lay; /* natural order */
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i tbl = codebook_u8(kd);
    const bool two = sub16(kd);
    const int64_t chunks = (k + CHUNK - 1) / CHUNK;
    const size_t cbytes = chunk_bytes(kd);
    __m512 accs[GROUP][NMAX];
    for (int r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++) accs[r][j] = _mm512_setzero_ps();
    for (int64_t ch = 0; ch < chunks; ch++)
        for (int r = 0; r < R; r++) {
            const unsigned char *row = w + (size_t)r * row_stride;
            __m512 *acc = accs[r];
            qmm_i8_prefetch(row + ch * cbytes, cbytes, prefetch_off);
            const int64_t left = k - ch * CHUNK;
            const unsigned char *c0 = row + (size_t)ch * cbytes;
            __m512i wv[8];
            __m512 dw[2];
            if (kd == CB_IQ4_NL || kd == CB_MXFP4)
                decode_32(kd, c0, left >= CHUNK ? 16 : (int)(left / 32), tbl, wv, dw);
            else if (kd == CB_IQ4_XS)
                decode_xs(c0, left >= CHUNK ? 2 : 1, tbl, wv, dw);
            else
                decode_nv(c0, left >= CHUNK ? 8 : (int)(left / 64), tbl, wv, dw);
            for (int64_t j = 0; j < n; j++) {
                const int8_t *xq = xr[j].q + ch * CHUNK;
                const int64_t lo = ch * LANES;
                __m512i rr[4];
#pragma GCC unroll 4
                for (int u = 0; u < 4; u++) {
                    const __m512i xa = _mm512_loadu_si512(xq + 128 * u);
                    const __m512i xb = _mm512_loadu_si512(xq + 128 * u + 64);
                    rr[u] = _mm512_dpbusd_epi32(
                        _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[2 * u], xa), wv[2 * u + 1],
                        xb);
                }
                __m512i is0 = pair_sums(rr[0], rr[1], even, odd);
                __m512i is1 = pair_sums(rr[2], rr[3], even, odd);
                __m512 a = acc[j];
                if (!two) {
                    is0 = _mm512_sub_epi32(pair_sums(is0, is1, even, odd),
                                           s128(xr[j].sum + lo));
                    a = _mm512_fmadd_ps(
                        _mm512_mul_ps(_mm512_cvtepi32_ps(is0), _mm512_loadu_ps(xr[j].dx + lo)),
                        dw[0], a);
                } else {
                    is0 = _mm512_sub_epi32(is0, s128(xr[j].sum + lo));
                    is1 = _mm512_sub_epi32(is1, s128(xr[j].sum + lo + 16));
                    a = _mm512_fmadd_ps(
                        _mm512_mul_ps(_mm512_cvtepi32_ps(is0), _mm512_loadu_ps(xr[j].dx + lo)),
                        dw[0], a);
                    a = _mm512_fmadd_ps(
                        _mm512_mul_ps(_mm512_cvtepi32_ps(is1), _mm512_loadu_ps(xr[j].dx + lo + 16)),
                        dw[1], a);
                }
                acc[j] = a;
            }
        }
    for (int r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++) y[j * ldy + r] = _mm512_reduce_add_ps(accs[r][j]);
}

/* One instance per type (gemv_int8_common.h's row walk). */
#define ROWS(p, E, nm) QMM_I8_DEFINE_ROWS(p##_##nm, row_kernel, CB_##E)
QMM_I8_CODEBOOK_TYPES(ROWS, rows)
#undef ROWS

static const qmm_i8_rows_fn rows_for[] = {QMM_I8_CODEBOOK_TYPES(QMM_I8_NAME, rows)};

QMM_I8_LAYOUT_CACHE(layout_for, layout_make, qmm_x86_gemv_int8_codebook_has_type)

void qmm_x86_gemv_int8_codebook(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                                size_t row_stride, int64_t n, const float *x, int64_t ldx,
                                float *y, int64_t ldy, void *scratch, int n_threads) {
    const cb_kind kd = kind_of(type);
    if (kd == CB_NONE) return;
    qmm_i8_drive(rows_for[kd], layout_for(type), qmm_x86_int8_quantize_row, m, k, w, row_stride,
                 n, x, ldx, y, ldy, scratch, n_threads);
}

/* The largest n for which the int8 strategy runs this kernel rather than the AMX one. Types
 * without int8 tiles (nvfp4: 16-element sub-blocks) run it for every n. At n = 6 the two tie
 * on cache-resident shapes; this kernel reads 0.53-0.56 bytes per weight against AMX's 1.125
 * and weights used only up to this n never get the int8 tile copy, so 6 (measurements:
 * bench/results/cpu-spr-codebook.md). */
int64_t qmm_x86_gemv_int8_codebook_max_n(qmm_type type) {
    switch (kind_of(type)) {
    case CB_IQ4_NL: case CB_IQ4_XS: case CB_MXFP4: return 6;
    case CB_NVFP4: return INT64_MAX;
    default: return 0;
    }
}
