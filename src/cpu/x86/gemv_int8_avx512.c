/*
 * gemv_int8_avx512.c — the int8 strategy for n <= 8 (decode) with AVX-512-VNNI on the native
 * GGUF blocks (q4_0, q8_0, q4_K; no repacked copy).
 *
 * X is quantized per call with int8_amx's function (qmm_x86_int8_quantize_row: per 32-element
 * block c, dx = max|x| / 127, q = round-to-nearest-even(x / dx), s = dx * sum(q)) into a
 * scratch copy padded with zero blocks to a multiple of 16 blocks. A W row is walked in chunks
 * of 16 blocks (512 elements): the quants are expanded to bytes in 8 zmm registers (two
 * 32-element blocks per register, in element order), and per X row
 *     VPDPBUSD (u8 x s8 -> 16 int32 lanes, 8 lanes per block) per register;
 *     the 8 registers reduced to one vector of the 16 exact int32 block dots (a fixed tree
 *     of permutes and adds);
 *     acc = fma((float)isum, d_w * dx, acc), for q4_K then acc = fnmadd(s, dmin * mn, acc),
 * with one 16-lane f32 accumulator per X row (lane = block index mod 16), reduced once at
 * the row's end by _mm512_reduce_add_ps. The order depends only on k (not on n, the thread
 * or the task), but differs from int8_amx's, so the two paths agree within the int8 bound,
 * not bit for bit.
 * Signs for VPDPBUSD (first operand unsigned):
 *   q4_0: the nibbles q (0..15) are the unsigned side, X the signed side; per block
 *         sum((q - 8) x) = dot(q, x) - 8 * sum(x), sum(x) summed exactly per X block;
 *   q8_0: X is the unsigned side as x + 128 (1..255; x is never -128) and the weights stay
 *         signed, so -128 needs no negation; the lanes start from -128 * sum(w) (VPDPBUSD of
 *         the bytes 128 with w), so they end at sum(x w);
 *   q4_K: the nibbles q are the unsigned side; the min term uses s as int8_amx does.
 * int32 cannot overflow: a lane sums 4 products of at most 255 * 128.
 * Threads: tasks of 64 W rows, schedule(dynamic); each output belongs to one task, so the
 * schedule changes no bit. Format source: ggml-common.h (block structs).
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"

#define CHUNK 16      /* 32-element blocks per chunk (8 zmm of W bytes) */
#define TASK_ROWS 64  /* W rows per task */
#define NMAX 8

/* q4_K lane order: lane j (of 8 per super-block) of the block sums holds sub-block
 * K_LANE[j] = 0, 2, 1, 3, 4, 6, 5, 7 (the low and high nibbles of one 64-byte load are
 * sub-blocks 0, 2 and 1, 3). X blocks are stored in this order too (it is its own inverse). */

/* The 8 six-bit scales (bytes of *sc8, sub-block order) and 8 mins (*mn8) of a q4_K
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

static int64_t blocks_padded(int64_t k) { return (k / 32 + CHUNK - 1) / CHUNK * CHUNK; }

/* Per X row: kcp * 32 quant bytes, then dx, s and the int32 block sums (kcp each). */
static size_t row_bytes(int64_t k) {
    return (size_t)blocks_padded(k) * (32 + 3 * sizeof(float));
}

size_t qmm_x86_gemv_int8_avx512_scratch(int64_t n, int64_t k) {
    return (size_t)n * row_bytes(k);
}

bool qmm_x86_gemv_int8_avx512_has_type(qmm_type type) {
    return type == QMM_TYPE_Q4_0 || type == QMM_TYPE_Q8_0 || type == QMM_TYPE_Q4_K;
}

/*
 * Measured (qmm bench, 14336 x 4096, 2 threads, int8 strategy, n = 1..8, this VM; ms gemv vs
 * AMX): AMX reads its int8 copy (1.125 bytes per weight) at the memory rate for any n
 * (~3.3 ms q4_0/q8_0, ~3.7 ms q4_K), so gemv wins while it stays under that: q4_0 up to
 * n = 8 (1.84 .. 3.12 ms), q4_K up to n = 6 (2.31 .. 3.23; n = 7: 3.98), q8_0 only at n = 1
 * (3.30 vs 3.36; its native blocks are 1.06 bytes per weight, n = 2: 3.68).
 */
int64_t qmm_x86_gemv_int8_avx512_max_n(qmm_type type) {
    return type == QMM_TYPE_Q4_0 ? 8 : type == QMM_TYPE_Q4_K ? 6 : type == QMM_TYPE_Q8_0 ? 1 : 0;
}

typedef struct xrows {
    const int8_t *q[NMAX];
    const float *dx[NMAX], *s[NMAX];
    const int32_t *sum[NMAX];
} xrows;

/* t lane i = (a:b)[2i] + (a:b)[2i+1]: adjacent lanes of the 32 lanes of a then b summed. */
static inline __m512i pair_sums(__m512i a, __m512i b, __m512i even, __m512i odd) {
    return _mm512_add_epi32(_mm512_permutex2var_epi32(a, even, b),
                            _mm512_permutex2var_epi32(a, odd, b));
}

/* r[v] holds block 2v in lanes 0..7 and block 2v+1 in lanes 8..15: lane b of the result is
 * the sum of block b's lanes. */
static inline __m512i block_sums(const __m512i r[8], __m512i even, __m512i odd) {
    const __m512i a0 = pair_sums(r[0], r[1], even, odd), a1 = pair_sums(r[2], r[3], even, odd);
    const __m512i a2 = pair_sums(r[4], r[5], even, odd), a3 = pair_sums(r[6], r[7], even, odd);
    return pair_sums(pair_sums(a0, a1, even, odd), pair_sums(a2, a3, even, odd), even, odd);
}

/* Decode chunk ch of a W row (nb = 1..16 blocks) into 8 registers of bytes (blocks beyond nb
 * are zero), the 16 block scales dw and, for q4_K, the 16 mins dmin * mn. */
static inline __attribute__((always_inline)) void decode_chunk(
    qmm_type type, const unsigned char *row, int64_t ch, int nb, __m512i wv[8], __m512 *dw,
    __m512 *mw) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    if (type == QMM_TYPE_Q4_K) {
        const unsigned char *sb0 = row + (size_t)ch * 2 * sizeof(block_q4_K);
        uint64_t sc8[2] = {0, 0}, mn8[2] = {0, 0};
        float dd[2] = {0.0f, 0.0f}, dmin[2] = {0.0f, 0.0f};
        for (int h = 0; h < 2; h++) {
            if (h * 8 >= nb) {
                for (int g = 0; g < 4; g++) wv[4 * h + g] = _mm512_setzero_si512();
                continue;
            }
            const block_q4_K *blk = (const block_q4_K *)(sb0 + h * sizeof(block_q4_K));
            uint32_t bits; /* d and dmin: vcvtph2ps is exact, as qmm_fp16_to_fp32 */
            memcpy(&bits, blk, sizeof bits);
            const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)bits));
            dd[h] = _mm_cvtss_f32(f);
            dmin[h] = _mm_cvtss_f32(_mm_movehdup_ps(f));
            k4_scales_mins(blk->scales, &sc8[h], &mn8[h]);
            /* 64 qs bytes = sub-blocks 4p..4p+3: low nibbles 4p and 4p+2, high 4p+1, 4p+3 */
            for (int p = 0; p < 2; p++) {
                const __m512i z = _mm512_loadu_si512(blk->qs + 64 * p);
                wv[4 * h + 2 * p] = _mm512_and_si512(z, low4);
                wv[4 * h + 2 * p + 1] = _mm512_and_si512(_mm512_srli_epi16(z, 4), low4);
            }
        }
        /* lane j of each half holds sub-block K_LANE[j]; d * sc and dmin * mn as to_float */
        const __m128i lane =
            _mm_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15);
        const __m128i sc = _mm_shuffle_epi8(
            _mm_set_epi64x((long long)sc8[1], (long long)sc8[0]), lane);
        const __m128i mn = _mm_shuffle_epi8(
            _mm_set_epi64x((long long)mn8[1], (long long)mn8[0]), lane);
        *dw = _mm512_mul_ps(
            _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(dd[0]), _mm512_set1_ps(dd[1])),
            _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)));
        *mw = _mm512_mul_ps(
            _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(dmin[0]), _mm512_set1_ps(dmin[1])),
            _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mn)));
        return;
    }
    const size_t bs = type == QMM_TYPE_Q4_0 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    const unsigned char *b0 = row + (size_t)ch * CHUNK * bs;
    const __mmask16 valid = nb >= 16 ? 0xFFFF : (__mmask16)((1u << nb) - 1);
    /* the f16 d of each block: one 4-byte gather per block, low half kept */
    const __m512i offs = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)bs));
    const __m512i dbits = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs, b0, 1);
    *dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dbits));
    *mw = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++) {
        const unsigned char *pa = b0 + (size_t)(2 * v) * bs;
        if (v % 2 == 1) {
            continue; /* made with v - 1 */
        } else if (2 * v >= nb) {
            wv[v] = wv[v + 1] = _mm512_setzero_si512();
        } else if (type == QMM_TYPE_Q4_0) {
            /* blocks 2v..2v+3: the 16 qs bytes of each side by side; wv[v] = low nibbles
             * (elements 0..15 of each block), wv[v + 1] = high nibbles (16..31) */
            __m128i qs[4];
            for (int e = 0; e < 4; e++)
                qs[e] = 2 * v + e < nb
                            ? _mm_loadu_si128((const __m128i *)(pa + (size_t)e * bs + 2))
                            : _mm_setzero_si128();
            const __m256i y0 = _mm256_inserti128_si256(_mm256_castsi128_si256(qs[0]), qs[1], 1);
            const __m256i y1 = _mm256_inserti128_si256(_mm256_castsi128_si256(qs[2]), qs[3], 1);
            const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(y0), y1, 1);
            wv[v] = _mm512_and_si512(z, low4);
            wv[v + 1] = _mm512_and_si512(_mm512_srli_epi16(z, 4), low4);
        } else { /* q8_0, blocks 2v..2v+3: wv[v] = bytes 0..15 of each, wv[v + 1] = 16..31 */
            __m128i lo[4], hi[4];
            for (int e = 0; e < 4; e++) {
                const unsigned char *qs = pa + (size_t)e * bs + 2;
                lo[e] = 2 * v + e < nb ? _mm_loadu_si128((const __m128i *)qs) : _mm_setzero_si128();
                hi[e] = 2 * v + e < nb ? _mm_loadu_si128((const __m128i *)(qs + 16))
                                       : _mm_setzero_si128();
            }
            wv[v] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(lo[1], lo[0])),
                                       _mm256_set_m128i(lo[3], lo[2]), 1);
            wv[v + 1] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(hi[1], hi[0])),
                                           _mm256_set_m128i(hi[3], hi[2]), 1);
        }
    }
}

/* One W row against n X rows: y[j * ldy] for j < n. */
static inline __attribute__((always_inline)) void row_kernel(
    qmm_type type, const unsigned char *row, size_t prefetch_off, int64_t k, int64_t n,
    const xrows *xr, float *y, int64_t ldy) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const int64_t kc = k / 32, chunks = (kc + CHUNK - 1) / CHUNK;
    const size_t chunk_bytes = type == QMM_TYPE_Q4_0   ? CHUNK * sizeof(block_q4_0)
                               : type == QMM_TYPE_Q8_0 ? CHUNK * sizeof(block_q8_0)
                                                       : 2 * sizeof(block_q4_K);
    __m512 acc[NMAX];
    for (int64_t j = 0; j < n; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t ch = 0; ch < chunks; ch++) {
        if (prefetch_off != 0)
            for (size_t o = 0; o < chunk_bytes; o += 64)
                _mm_prefetch((const char *)row + prefetch_off + ch * chunk_bytes + o,
                             _MM_HINT_T0);
        const int nb = kc - ch * CHUNK >= CHUNK ? CHUNK : (int)(kc - ch * CHUNK);
        __m512i wv[8], init[8];
        __m512 dw, mw;
        decode_chunk(type, row, ch, nb, wv, &dw, &mw);
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
            const int8_t *xq = xr->q[j] + ch * CHUNK * 32;
            __m512i r[8];
            if (type == QMM_TYPE_Q4_0) {
#pragma GCC unroll 4
                for (int u = 0; u < 4; u++)
                    r[u] = _mm512_dpbusd_epi32(
                        _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[2 * u],
                                            _mm512_loadu_si512(xq + 128 * u)),
                        wv[2 * u + 1], _mm512_loadu_si512(xq + 128 * u + 64));
            } else if (type == QMM_TYPE_Q8_0) {
#pragma GCC unroll 4
                for (int u = 0; u < 4; u++)
                    r[u] = _mm512_dpbusd_epi32(
                        _mm512_dpbusd_epi32(init[u], _mm512_loadu_si512(xq + 128 * u),
                                            wv[2 * u]),
                        _mm512_loadu_si512(xq + 128 * u + 64), wv[2 * u + 1]);
            } else {
#pragma GCC unroll 8
                for (int v = 0; v < 8; v++)
                    r[v] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[v],
                                               _mm512_loadu_si512(xq + 64 * v));
            }
            __m512i isum;
            if (type != QMM_TYPE_Q4_K) { /* block 4u + e in lanes 4e..4e+3 of pair u */
                const __m512i a0 = pair_sums(r[0], r[1], even, odd);
                const __m512i a1 = pair_sums(r[2], r[3], even, odd);
                isum = pair_sums(a0, a1, even, odd);
            } else {
                isum = block_sums(r, even, odd);
            }
            if (type == QMM_TYPE_Q4_0)
                isum = _mm512_sub_epi32(
                    isum, _mm512_slli_epi32(_mm512_loadu_si512(xr->sum[j] + ch * CHUNK), 3));
            const __m512 dx = _mm512_loadu_ps(xr->dx[j] + ch * CHUNK);
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, dx), acc[j]);
            if (type == QMM_TYPE_Q4_K)
                acc[j] = _mm512_fnmadd_ps(_mm512_loadu_ps(xr->s[j] + ch * CHUNK), mw, acc[j]);
        }
    }
    for (int64_t j = 0; j < n; j++) y[j * ldy] = _mm512_reduce_add_ps(acc[j]);
}

static void rows_run(qmm_type type, int64_t i0, int64_t i1, int64_t m, int64_t k,
                     const unsigned char *w, size_t row_stride, int64_t n, const xrows *xr,
                     float *y, int64_t ldy) {
    for (int64_t i = i0; i < i1; i++) {
        const size_t pf = i + 2 < m ? 2 * row_stride : 0;
        const unsigned char *row = w + (size_t)i * row_stride;
        if (type == QMM_TYPE_Q4_0)
            row_kernel(QMM_TYPE_Q4_0, row, pf, k, n, xr, y + i, ldy);
        else if (type == QMM_TYPE_Q8_0)
            row_kernel(QMM_TYPE_Q8_0, row, pf, k, n, xr, y + i, ldy);
        else
            row_kernel(QMM_TYPE_Q4_K, row, pf, k, n, xr, y + i, ldy);
    }
}

void qmm_x86_gemv_int8_avx512(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                              size_t row_stride, int64_t n, const float *x, int64_t ldx,
                              float *y, int64_t ldy, void *scratch, int n_threads) {
    const int64_t kc = k / 32, kcp = blocks_padded(k);
    xrows xr;
    for (int64_t j = 0; j < n; j++) {
        unsigned char *base = (unsigned char *)scratch + (size_t)j * row_bytes(k);
        int8_t *q = (int8_t *)base;
        float *dx = (float *)(base + (size_t)kcp * 32), *s = dx + kcp;
        int32_t *sum = (int32_t *)(s + kcp);
        qmm_x86_int8_quantize_row(x + j * ldx, k, q, dx, s, 1);
        memset(q + kc * 32, 0, (size_t)(kcp - kc) * 32);
        for (int64_t c = kc; c < kcp; c++) dx[c] = s[c] = 0.0f;
        for (int64_t c = 0; c < kcp; c++) {
            int32_t t = 0;
            for (int e = 0; e < 32; e++) t += q[32 * c + e];
            sum[c] = t;
        }
        if (type == QMM_TYPE_Q8_0) /* x + 128 as the unsigned operand */
            for (int64_t e = 0; e < kc * 32; e++) q[e] = (int8_t)(q[e] ^ 0x80);
        if (type == QMM_TYPE_Q4_K) /* sub-blocks in K_LANE order */
            for (int64_t c0 = 0; c0 < kc; c0 += 8)
                for (int j = 1; j <= 5; j += 4) { /* swap j and j + 1 */
                    int8_t t[32];
                    memcpy(t, q + 32 * (c0 + j), 32);
                    memcpy(q + 32 * (c0 + j), q + 32 * (c0 + j + 1), 32);
                    memcpy(q + 32 * (c0 + j + 1), t, 32);
                    const float td = dx[c0 + j], ts = s[c0 + j];
                    dx[c0 + j] = dx[c0 + j + 1];
                    s[c0 + j] = s[c0 + j + 1];
                    dx[c0 + j + 1] = td;
                    s[c0 + j + 1] = ts;
                }
        if (type != QMM_TYPE_Q4_K) /* per 4 blocks: elements 0..15 of each, then 16..31 */
            for (int64_t c0 = 0; c0 < kcp; c0 += 4) {
                int8_t t[128];
                for (int e = 0; e < 4; e++)
                    for (int l = 0; l < 16; l++) {
                        t[16 * e + l] = q[32 * (c0 + e) + l];
                        t[64 + 16 * e + l] = q[32 * (c0 + e) + 16 + l];
                    }
                memcpy(q + 32 * c0, t, sizeof t);
            }
        xr.q[j] = q;
        xr.dx[j] = dx;
        xr.s[j] = s;
        xr.sum[j] = sum;
    }
    const int64_t tasks = (m + TASK_ROWS - 1) / TASK_ROWS;
    int threads = n_threads < 1 ? 1 : n_threads;
    if (threads > tasks) threads = (int)tasks;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t i0 = t * TASK_ROWS, i1 = i0 + TASK_ROWS < m ? i0 + TASK_ROWS : m;
        rows_run(type, i0, i1, m, k, w, row_stride, n, &xr, y, ldy);
    }
}
