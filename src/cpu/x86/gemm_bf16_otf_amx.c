/*
 * gemm_bf16_otf_amx.c — Y = X W^T with AMX TDPBF16PS, W decoded from its GGUF blocks to bf16
 * just before use ("on the fly"): no bf16 copy of W is kept, each W byte is read once per
 * call. The output is bit-identical to qmm_x86_gemm_bf16_amx (the packed kernel) for every
 * type but f32, every n and every thread count; why, in short:
 *
 *   - W values: each element is decoded to the float the type's to_float gives (the same
 *     float operations), divided by the same power-of-two row scale (vscalefps; exact unless
 *     the result is subnormal) and rounded to bf16 by vcvtne2ps2bf16 (round to nearest even,
 *     as qmm_fp32_to_bf16). The instruction flushes subnormal inputs where the packer rounds
 *     them, so a row segment that holds any subnormal value after scaling is decoded again
 *     with the packer's scalar code (to_float, ldexpf, qmm_fp32_to_bf16).
 *   - X values: the packed kernel's own conversion (qmm_x86_bf16_convert_x_rows: the same
 *     power-of-two row scale and rounding).
 *   - Products: the operands are swapped. Here a W tile (16 W rows x 32 k, row-major, no
 *     transpose needed) is the A operand and an X tile in the VNNI pair layout is the B
 *     operand, so the accumulator holds Y^T. Every bf16 x bf16 product is exact in f32 and
 *     each output sums the same products in the same k order (one TDPBF16PS per 32-element
 *     k step, c increasing; accumulators stored and reloaded exactly between k panels), so
 *     swapping the factors of each product changes no bit. (The one exception: when W and X
 *     are both NaN at the same k, which NaN's payload survives may differ; the output is NaN
 *     either way.)
 *   - Output: the transposed tile is written to Y and multiplied by the row scales as the
 *     packed kernel does ((y * xs[j]) * ws[i]).
 *
 * Work split: tasks are groups of 32 W rows (2 tiles), handed out one at a time (OpenMP
 * dynamic schedule). A task walks k in chunks of OTF_STEPS k steps: it decodes its 32 rows
 * of the chunk into a per-thread buffer small enough to stay in L1 (32 x 256 bf16 = 16 KiB)
 * and runs every X block of the call against it, so each W element is decoded once per call
 * and its stores and tile loads hit L1. With one X block (n <= 32) the four accumulator
 * tiles stay in the tile registers for all of k; with more, each X block's accumulators are
 * stored and reloaded (exactly) between chunks. X is converted once per call (tiles of 16
 * rows split over the threads, then a barrier).
 */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "core/internal.h"
#include "core/types.h"
#include "cpu/x86/amx_tiles.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"
#include "formats/fp16.h"
#include "formats/kquant_search.h"

/* k steps (32 elements each) decoded at once: 32 rows x 256 bf16 = 16 KiB per thread, so the
 * decoder's stores and the tile loads stay in L1 (a 64 KiB panel in L2 cost more than the
 * decode itself). A multiple of OTF_CHUNK / 32. */
#define OTF_STEPS 8

/* Elements decoded per call of a row decoder (a multiple of every block size). */
#define OTF_CHUNK 256

static int64_t n_padded(int64_t n) { return (n + 15) / 16 * 16; }

/* ---------------------------------------------------------------------------------------
 * Row scales
 * ------------------------------------------------------------------------------------- */

qmm_status qmm_x86_bf16_otf_row_scales(qmm_type type, int64_t m, int64_t k, const void *rows,
                                       size_t row_stride, int n_threads, float **out) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    if (t == NULL || t->to_float == NULL)
        return qmm_error(QMM_ERR_INTERNAL, "bf16 row scales: type %d has no to_float", (int)type);
    const int64_t m_pad = (m + QMM_X86_TILE_M - 1) / QMM_X86_TILE_M * QMM_X86_TILE_M;
    float *scale = aligned_alloc(64, ((size_t)m_pad * sizeof(float) + 63) / 64 * 64);
    if (scale == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "bf16 row scales: cannot allocate %lld floats",
                         (long long)m_pad);
    int failed = 0;
#pragma omp parallel num_threads(n_threads < 1 ? 1 : n_threads) reduction(| : failed)
    {
        float *row = malloc((size_t)(k > 0 ? k : 1) * sizeof(float));
        if (row == NULL) failed = 1;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m_pad; i++) {
            if (row == NULL) continue;
            if (i >= m) {
                scale[i] = 1.0f;
                continue;
            }
            t->to_float((const unsigned char *)rows + (size_t)i * row_stride, row, k);
            scale[i] = qmm_x86_bf16_row_scale(row, k);
        }
        free(row);
    }
    if (failed) {
        free(scale);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "bf16 row scales: cannot allocate row buffers");
    }
    *out = scale;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * W decoding: one W row, elements [p0, p0 + len) (p0 a multiple of OTF_CHUNK, len <=
 * OTF_CHUNK and a multiple of 32, p0 + len <= k_pad), 32 bf16 per k step written at
 * dst + s * dst_step for step s = 0, 1, ... Elements >= k are zero.
 * ------------------------------------------------------------------------------------- */

/* How a row is scaled: e = ilogb(row scale), applied with vscalefps when `scaled`. */
typedef struct otf_scale {
    __m512 neg_e;
    int e;
    bool scaled;
    bool check; /* look for subnormals: scaled, or a type whose values can be subnormal */
} otf_scale;

/* Round 32 decoded floats (elements 0..15 in lo, 16..31 in hi) to bf16 at dst; *sub collects
 * the lanes that are subnormal after scaling (the caller redoes the segment exactly). */
static inline void put32(uint16_t *dst, __m512 lo, __m512 hi, const otf_scale *s,
                         __mmask16 *sub) {
    if (s->scaled) {
        lo = _mm512_scalef_ps(lo, s->neg_e);
        hi = _mm512_scalef_ps(hi, s->neg_e);
    }
    if (s->check) *sub |= _mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20);
    _mm512_store_si512(dst, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/* 0, 1, ..., 15 plus `off` as floats (exact). */
static inline __m512 ramp16(float off) {
    return _mm512_add_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_ps(off));
}

/* f16 bits at p as float by vcvtph2ps: exact, NaN kept quiet with its payload, as
 * qmm_fp16_to_fp32. */
static float half_at(const void *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* q4_0: (float)(q - 8) * d through a 16-entry table per block (vpermps on the nibble). */
static __mmask16 decode_q4_0(const unsigned char *row, int64_t p0, int64_t len, uint16_t *dst,
                             size_t dst_step, const otf_scale *s) {
    const __m512 base = ramp16(-8.0f);
    const block_q4_0 *b = (const block_q4_0 *)row + p0 / 32;
    __mmask16 sub = 0;
    for (int64_t i = 0; i < len / 32; i++) {
        const __m512 tab = _mm512_mul_ps(base, _mm512_set1_ps(half_at(&b[i].d)));
        const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b[i].qs));
        put32(dst + (size_t)i * dst_step, _mm512_permutexvar_ps(q, tab),
              _mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), tab), s, &sub);
    }
    return sub;
}

/* q8_0: (float)q * d. */
static __mmask16 decode_q8_0(const unsigned char *row, int64_t p0, int64_t len, uint16_t *dst,
                             size_t dst_step, const otf_scale *s) {
    const block_q8_0 *b = (const block_q8_0 *)row + p0 / 32;
    __mmask16 sub = 0;
    for (int64_t i = 0; i < len / 32; i++) {
        const __m512 d = _mm512_set1_ps(half_at(&b[i].d));
        const __m512 lo = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)b[i].qs)));
        const __m512 hi = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b[i].qs + 16))));
        put32(dst + (size_t)i * dst_step, _mm512_mul_ps(lo, d), _mm512_mul_ps(hi, d), s, &sub);
    }
    return sub;
}

/* q4_K: d * sc * q - dmin * mn per 32 elements, as (d * (float)sc) * (float)q - dmin *
 * (float)mn through a 16-entry table per sub-block; one super-block (len = 256). */
static __mmask16 decode_q4_K(const unsigned char *row, int64_t p0, int64_t len, uint16_t *dst,
                             size_t dst_step, const otf_scale *s) {
    (void)len;
    const __m512 base = ramp16(0.0f);
    const block_q4_K *b = (const block_q4_K *)row + p0 / QK_K;
    const float d = half_at(&b->d), dmin = half_at(&b->dmin);
    __mmask16 sub = 0;
    for (int c = 0; c < 4; c++) {
        for (int h = 0; h < 2; h++) {
            uint8_t sc, mn;
            qmm_kq_get_scale_min_k4(2 * c + h, b->scales, &sc, &mn);
            const __m512 tab = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(d * (float)sc), base),
                                             _mm512_set1_ps(dmin * (float)mn));
            __m512i q0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + 32 * c)));
            __m512i q1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + 32 * c + 16)));
            if (h) {
                q0 = _mm512_srli_epi32(q0, 4);
                q1 = _mm512_srli_epi32(q1, 4);
            }
            put32(dst + (size_t)(2 * c + h) * dst_step, _mm512_permutexvar_ps(q0, tab),
                  _mm512_permutexvar_ps(q1, tab), s, &sub);
        }
    }
    return sub;
}

/* q6_K: (d * (float)sc) * (float)(q - 32) per 16 elements, q = 4 low bits | 2 high bits << 4
 * (layout in quants_k.c): the 6-bit q is assembled in bytes (32 at a time), the 16 products
 * d * sc once per super-block; one super-block (len = 256). */
static __mmask16 decode_q6_K(const unsigned char *row, int64_t p0, int64_t len, uint16_t *dst,
                             size_t dst_step, const otf_scale *s) {
    (void)len;
    const block_q6_K *b = (const block_q6_K *)row + p0 / QK_K;
    float ds[16] __attribute__((aligned(64)));
    _mm512_store_ps(ds, _mm512_mul_ps(_mm512_set1_ps(half_at(&b->d)),
                                      _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                          _mm_loadu_si128((const __m128i *)b->scales)))));
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
    __mmask16 sub = 0;
    for (int h = 0; h < 2; h++) {
        const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
        const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
        for (int p = 0; p < 4; p++) {
            const __m256i src = (p & 1) ? ql1 : ql0;
            const __m256i lo = _mm256_and_si256(p >> 1 ? _mm256_srli_epi16(src, 4) : src, m4);
            const __m256i hi = _mm256_slli_epi16(
                _mm256_and_si256(_mm256_srli_epi16(qh, 2 * p), m3), 4);
            const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, hi), k32);
            const __m512 f0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
            const __m512 f1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
            put32(dst + (size_t)(4 * h + p) * dst_step,
                  _mm512_mul_ps(_mm512_set1_ps(ds[8 * h + 2 * p]), f0),
                  _mm512_mul_ps(_mm512_set1_ps(ds[8 * h + 2 * p + 1]), f1), s, &sub);
        }
    }
    return sub;
}

/* f16: vcvtph2ps (exact, as qmm_fp16_to_fp32). */
static __mmask16 decode_f16(const unsigned char *row, int64_t p0, int64_t len, uint16_t *dst,
                            size_t dst_step, const otf_scale *s) {
    const unsigned char *src = row + (size_t)p0 * 2;
    __mmask16 sub = 0;
    for (int64_t i = 0; i < len / 32; i++)
        put32(dst + (size_t)i * dst_step,
              _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + 64 * i))),
              _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + 64 * i + 32))), s,
              &sub);
    return sub;
}

/* bf16: the bits shifted into the high half of an f32 (exact, as qmm_bf16_to_fp32). */
static __mmask16 decode_bf16(const unsigned char *row, int64_t p0, int64_t len, uint16_t *dst,
                             size_t dst_step, const otf_scale *s) {
    const unsigned char *src = row + (size_t)p0 * 2;
    __mmask16 sub = 0;
    for (int64_t i = 0; i < len / 32; i++) {
        const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + 64 * i)));
        const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + 64 * i + 32)));
        put32(dst + (size_t)i * dst_step, _mm512_castsi512_ps(_mm512_slli_epi32(lo, 16)),
              _mm512_castsi512_ps(_mm512_slli_epi32(hi, 16)), s, &sub);
    }
    return sub;
}

/* Any other type: the type's to_float into a float buffer, then the same rounding. */
static __mmask16 decode_generic(const qmm_type_traits *t, const unsigned char *row, int64_t k,
                                int64_t p0, int64_t len, uint16_t *dst, size_t dst_step,
                                const otf_scale *s) {
    float f[OTF_CHUNK] __attribute__((aligned(64)));
    const int64_t valid = k - p0 < len ? k - p0 : len;
    t->to_float(row + (size_t)(p0 / t->block_size) * t->block_bytes, f, valid);
    memset(f + valid, 0, (size_t)(len - valid) * sizeof(float));
    __mmask16 sub = 0;
    for (int64_t i = 0; i < len / 32; i++)
        put32(dst + (size_t)i * dst_step, _mm512_load_ps(f + 32 * i),
              _mm512_load_ps(f + 32 * i + 16), s, &sub);
    return sub;
}

/* The packer's scalar code for one segment (used when a value is subnormal after scaling). */
static void decode_exact(const qmm_type_traits *t, const unsigned char *row, int64_t k,
                         int64_t p0, int64_t len, uint16_t *dst, size_t dst_step,
                         const otf_scale *s) {
    float f[OTF_CHUNK];
    const int64_t valid = k - p0 < len ? k - p0 : len;
    t->to_float(row + (size_t)(p0 / t->block_size) * t->block_bytes, f, valid);
    for (int64_t e = 0; e < len; e++) {
        float v = e < valid ? f[e] : 0.0f;
        if (s->scaled) v = ldexpf(v, -s->e);
        dst[(size_t)(e / 32) * dst_step + (size_t)(e % 32)] = qmm_fp32_to_bf16(v);
    }
}

/* Which fast decoder a type has (its values are to_float's bit for bit), or none. */
typedef __mmask16 (*otf_decode_fn)(const unsigned char *row, int64_t p0, int64_t len,
                                   uint16_t *dst, size_t dst_step, const otf_scale *s);

static otf_decode_fn fast_decoder(qmm_type type) {
    switch (type) {
    case QMM_TYPE_Q4_0: return decode_q4_0;
    case QMM_TYPE_Q8_0: return decode_q8_0;
    case QMM_TYPE_Q4_K: return decode_q4_K;
    case QMM_TYPE_Q6_K: return decode_q6_K;
    case QMM_TYPE_F16: return decode_f16;
    case QMM_TYPE_BF16: return decode_bf16;
    default: return NULL;
    }
}

/* Types whose decoded values are 0 or at least 2^-24 in magnitude (f16 scales times small
 * integers, or f16 itself) and at most 2^40, so their row scale is 1 and nothing is
 * subnormal: the subnormal check is skipped for them. */
static bool never_subnormal(qmm_type type) {
    return type == QMM_TYPE_Q4_0 || type == QMM_TYPE_Q8_0 || type == QMM_TYPE_Q4_K ||
           type == QMM_TYPE_Q6_K || type == QMM_TYPE_F16;
}

/* The scaling of rows i0 .. i0 + 31 (once per group). */
static void group_scales(const qmm_x86_bf16_otf *w, int64_t i0, otf_scale rs[32]) {
    const bool plain = never_subnormal(w->type) && fast_decoder(w->type) != NULL;
    for (int r = 0; r < 32; r++) {
        const int64_t i = i0 + r;
        otf_scale *s = &rs[r];
        s->scaled = i < w->m && w->row_scale[i] != 1.0f;
        s->e = s->scaled ? ilogbf(w->row_scale[i]) : 0;
        s->neg_e = _mm512_set1_ps(-(float)s->e);
        s->check = s->scaled || !plain;
    }
}

/* Decode rows i0 + r0 .. i0 + r1 - 1 (r0 < r1 <= 32) x k steps [c0, c1) into buf: tile (wt,
 * c) (W rows i0 + 16 wt .. + 15, elements 32c .. 32c + 31, row-major, 64 bytes a row) at
 * buf + (wt * (c1 - c0) + c - c0) * 512. Rows >= m are zero; rows >= m_pad are not written. */
static void decode_rows(const qmm_x86_bf16_otf *w, const otf_scale rs[32], int64_t i0, int r0,
                        int r1, int64_t c0, int64_t c1, uint16_t *buf) {
    const qmm_type_traits *t = qmm_type_traits_get(w->type);
    const otf_decode_fn fast = fast_decoder(w->type);
    const int64_t steps = c1 - c0;
    for (int r = r0; r < r1; r++) {
        const int64_t i = i0 + r;
        uint16_t *rdst = buf + ((size_t)(r / 16) * (size_t)steps) * 512 + (size_t)(r % 16) * 32;
        if (i >= w->m) {
            if (i < w->m_pad)
                for (int64_t c = 0; c < steps; c++) memset(rdst + c * 512, 0, 64);
            continue;
        }
        const unsigned char *row = w->rows + (size_t)i * w->row_stride;
        for (int64_t p0 = c0 * 32; p0 < c1 * 32; p0 += OTF_CHUNK) {
            const int64_t len = c1 * 32 - p0 < OTF_CHUNK ? c1 * 32 - p0 : OTF_CHUNK;
            uint16_t *d = rdst + (size_t)((p0 / 32 - c0) * 512);
            /* fast decoders need whole blocks inside k (k is a multiple of the block) */
            const __mmask16 sub = fast != NULL && p0 + len <= w->k
                                      ? fast(row, p0, len, d, 512, &rs[r])
                                      : decode_generic(t, row, w->k, p0, len, d, 512, &rs[r]);
            if (sub) decode_exact(t, row, w->k, p0, len, d, 512, &rs[r]);
        }
        /* Ask for this row's bytes of the chunk after the next (or, at the end of the row,
         * the start of row i + 32, which the next group decodes first): 32 rows read a few
         * hundred bytes each, a pattern the hardware prefetchers follow poorly. */
        const int64_t q0 = c1 * 32 + (c1 - c0) * 32, q1 = q0 + (c1 - c0) * 32;
        const unsigned char *ahead = row;
        int64_t e0 = q0, e1 = q1;
        if (q0 >= w->k) {
            ahead = i + 32 < w->m ? row + 32 * w->row_stride : NULL;
            e0 = 0;
            e1 = (c1 - c0) * 32;
        }
        if (ahead != NULL) {
            if (e1 > w->k) e1 = w->k;
            const size_t b0 = (size_t)(e0 / t->block_size) * t->block_bytes;
            const size_t b1 = (size_t)((e1 + t->block_size - 1) / t->block_size) * t->block_bytes;
            for (size_t o = b0; o < b1; o += 64) _mm_prefetch((const char *)ahead + o, _MM_HINT_T0);
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * X: bf16 rows (the packed kernel's conversion) transposed into the VNNI B-operand form:
 * tile (xt, c), row p (pair p), column j holds X[16 xt + j][32c + 2p], [32c + 2p + 1].
 * ------------------------------------------------------------------------------------- */

/* Transpose a 16 x 16 matrix of 32-bit elements held in r[0..15] (r[i] = row i). */
static inline void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
    }
}

void qmm_x86_otf_transpose16_for_test(uint32_t m[256]) {
    __m512i r[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512(m + 16 * i);
    transpose16(r);
    for (int i = 0; i < 16; i++) _mm512_storeu_si512(m + 16 * i, r[i]);
}

/* X tile xt (rows 16 xt ..) into its VNNI tiles, via the row-major bf16 rows in tmp
 * (16 x k_pad). */
static void convert_x_tile(const qmm_x86_bf16_otf *w, const float *x, int64_t ldx, int64_t n,
                           int64_t xt, uint16_t *tmp, uint16_t *xv, float *xscale) {
    const int64_t kc = w->k_pad / 32;
    qmm_x86_bf16_convert_x_rows(x, ldx, n, w->k, w->k_pad, tmp, w->k_pad, xscale + 16 * xt,
                                16 * xt, 16 * xt + 16);
    for (int64_t c = 0; c < kc; c++) {
        __m512i r[16];
        for (int j = 0; j < 16; j++) r[j] = _mm512_loadu_si512(tmp + j * w->k_pad + 32 * c);
        transpose16(r);
        uint16_t *tile = xv + (size_t)(xt * kc + c) * 512;
        for (int p = 0; p < 16; p++) _mm512_store_si512(tile + 32 * p, r[p]);
    }
}

/* ---------------------------------------------------------------------------------------
 * The tile loop
 * ------------------------------------------------------------------------------------- */

/* Store accumulator tile (W rows i0.., X rows j0..) transposed into y, then the row scales
 * as the packed kernel applies them. */
static void store_tile_t(const float *cbuf, float *y, int64_t ldy, int64_t n, int64_t m,
                         int64_t j0, int64_t i0, const float *xscale, const float *wscale) {
    const int64_t rows = n - j0 < 16 ? n - j0 : 16, cols = m - i0 < 16 ? m - i0 : 16;
    if (rows <= 0 || cols <= 0) return;
    __m512i r[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_load_si512(cbuf + 16 * i);
    transpose16(r);
    const __mmask16 mask = (__mmask16)((1u << cols) - 1);
    for (int64_t j = 0; j < rows; j++)
        _mm512_mask_storeu_ps(y + (j0 + j) * ldy + i0, mask, _mm512_castsi512_ps(r[j]));
    bool any = false;
    for (int64_t j = 0; j < rows; j++) any |= xscale[j0 + j] != 1.0f;
    for (int64_t i = 0; i < cols; i++) any |= wscale[i0 + i] != 1.0f;
    if (!any) return;
    for (int64_t j = 0; j < rows; j++)
        for (int64_t i = 0; i < cols; i++) {
            float *p = y + (j0 + j) * ldy + i0 + i;
            *p = (*p * xscale[j0 + j]) * wscale[i0 + i];
        }
}

/* One k step of one X block: a0/a1 the W tiles (mt of them), b0/b1 the X tiles (nt).
 * tmm0 = W0 x X0, tmm1 = W1 x X0, tmm2 = W0 x X1, tmm3 = W1 x X1 (rows: W, cols: X). */
static inline void tile_step(const uint16_t *a0, const uint16_t *a1, const uint16_t *b0,
                             const uint16_t *b1, int mt, int nt) {
    _tile_loadd(4, a0, 64);
    _tile_loadd(6, b0, 64);
    _tile_dpbf16ps(0, 4, 6);
    if (mt == 2) {
        _tile_loadd(5, a1, 64);
        _tile_dpbf16ps(1, 5, 6);
    }
    if (nt == 2) {
        _tile_loadd(7, b1, 64);
        _tile_dpbf16ps(2, 4, 7);
        if (mt == 2) _tile_dpbf16ps(3, 5, 7);
    }
}

/* The end of one X block's chunk: store the partial sums (acc), or after the last chunk the
 * outputs (X tiles xt0, xt0 + 1 if nt = 2; W rows i0 ..). */
static void acc_end(const qmm_x86_bf16_otf *w, float *acc, bool last, int64_t xt0, int nt,
                    int mt, int64_t n, int64_t i0, const float *xscale, float *y, int64_t ldy) {
    if (!last) {
        _tile_stored(0, acc, 64);
        _tile_stored(1, acc + 256, 64);
        _tile_stored(2, acc + 512, 64);
        _tile_stored(3, acc + 768, 64);
        return;
    }
    float cbuf[256] __attribute__((aligned(64)));
    const int64_t j0 = 16 * xt0;
    _tile_stored(0, cbuf, 64);
    store_tile_t(cbuf, y, ldy, n, w->m, j0, i0, xscale, w->row_scale);
    if (mt == 2) {
        _tile_stored(1, cbuf, 64);
        store_tile_t(cbuf, y, ldy, n, w->m, j0, i0 + 16, xscale, w->row_scale);
    }
    if (nt == 2) {
        _tile_stored(2, cbuf, 64);
        store_tile_t(cbuf, y, ldy, n, w->m, j0 + 16, i0, xscale, w->row_scale);
    }
    if (nt == 2 && mt == 2) {
        _tile_stored(3, cbuf, 64);
        store_tile_t(cbuf, y, ldy, n, w->m, j0 + 16, i0 + 16, xscale, w->row_scale);
    }
}

/* One group of 32 W rows (mt tiles) against every X block, chunk by chunk. The next
 * chunk's rows are decoded into the other half of wbuf a few rows after each k step of
 * this one, so the vector decode and the tile products overlap and the tile loads find
 * stores that committed long before. With one X block (keep) the accumulators stay in
 * tmm0..3 for all of k. */
static void run_group(const qmm_x86_bf16_otf *w, int64_t i0, const uint16_t *xv, int64_t n,
                      const float *xscale, uint16_t *wbuf, float *acc, float *y, int64_t ldy) {
    const int64_t kc = w->k_pad / 32, kp = kc < OTF_STEPS ? kc : OTF_STEPS;
    const int64_t x_tiles = n_padded(n) / 16, x_blocks = (x_tiles + 1) / 2;
    const int64_t chunks = (kc + kp - 1) / kp;
    const int mt = w->m_pad - i0 >= 32 ? 2 : 1;
    const bool keep = x_blocks == 1;
    uint16_t *buf[2] = {wbuf, wbuf + (size_t)32 * (size_t)kp * 32};
    otf_scale rs[32];
    group_scales(w, i0, rs);
    decode_rows(w, rs, i0, 0, 32, 0, kp, buf[0]);
    for (int64_t ch = 0; ch < chunks; ch++) {
        const int64_t c0 = ch * kp, c1 = c0 + kp < kc ? c0 + kp : kc, steps = c1 - c0;
        const bool first = ch == 0, last = ch == chunks - 1;
        const int64_t n0 = c1, n1 = c1 + kp < kc ? c1 + kp : kc; /* the next chunk */
        const int64_t units = x_blocks * steps;
        int64_t unit = 0;
        int done = 0; /* rows of the next chunk decoded so far */
        const uint16_t *a0 = buf[ch & 1], *a1 = a0 + (size_t)steps * 512;
        for (int64_t xb = 0; xb < x_blocks; xb++) {
            const int nt = x_tiles - 2 * xb >= 2 ? 2 : 1;
            const uint16_t *b0 = xv + (size_t)(2 * xb * kc + c0) * 512, *b1 = b0 + (size_t)kc * 512;
            if (!keep || first) qmm_amx_acc_begin(acc + (size_t)xb * 1024, first);
            for (int64_t s = 0; s < steps; s++) {
                tile_step(a0 + s * 512, a1 + s * 512, b0 + s * 512, b1 + s * 512, mt, nt);
                unit++;
                const int upto = (int)(32 * unit / units);
                if (!last && upto > done) {
                    decode_rows(w, rs, i0, done, upto, n0, n1, buf[(ch + 1) & 1]);
                    done = upto;
                }
            }
            if (!keep || last)
                acc_end(w, acc + (size_t)xb * 1024, last, 2 * xb, nt, mt, n, i0, xscale, y, ldy);
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Scratch and the driver
 * ------------------------------------------------------------------------------------- */

static int64_t panel_steps(const qmm_x86_bf16_otf *w) {
    const int64_t kc = w->k_pad / 32;
    return kc < OTF_STEPS ? kc : OTF_STEPS;
}

/* Shared: X VNNI tiles, X row scales. Per thread: the X row buffer, the W group buffer,
 * 4 KiB of accumulators per X block. */
static size_t xv_bytes(const qmm_x86_bf16_otf *w, int64_t n) {
    return (size_t)n_padded(n) * (size_t)w->k_pad * sizeof(uint16_t);
}
static size_t xscale_bytes(int64_t n) { return ((size_t)n_padded(n) * sizeof(float) + 63) / 64 * 64; }
static size_t thread_bytes(const qmm_x86_bf16_otf *w, int64_t n) {
    const size_t tmp = (16 * (size_t)w->k_pad * sizeof(uint16_t) + 63) / 64 * 64;
    const size_t wbuf = 2 * 32 * (size_t)panel_steps(w) * 32 * sizeof(uint16_t);
    return tmp + wbuf + (size_t)((n_padded(n) + 31) / 32) * 4096;
}

size_t qmm_x86_gemm_bf16_otf_amx_scratch(const qmm_x86_bf16_otf *w, int64_t n, int n_threads) {
    return xv_bytes(w, n) + xscale_bytes(n) +
           (size_t)(n_threads < 1 ? 1 : n_threads) * thread_bytes(w, n);
}

bool qmm_x86_gemm_bf16_otf_amx_has_type(qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    return type != QMM_TYPE_F32 && t != NULL && t->is_weight && t->to_float != NULL &&
           OTF_CHUNK % t->block_size == 0;
}

void qmm_x86_gemm_bf16_otf_amx(const qmm_x86_bf16_otf *w, int64_t n, const float *x,
                               int64_t ldx, float *y, int64_t ldy, void *scratch, int n_threads) {
    const int64_t x_tiles = n_padded(n) / 16, kp = panel_steps(w), groups = (w->m_pad + 31) / 32;
    uint16_t *xv = scratch;
    float *xscale = (float *)((unsigned char *)scratch + xv_bytes(w, n));
    unsigned char *per_thread = (unsigned char *)xscale + xscale_bytes(n);
    const size_t tb = thread_bytes(w, n);
    int threads = n_threads < 1 ? 1 : n_threads;
    const int64_t tasks = groups > x_tiles ? groups : x_tiles;
    if (threads > tasks) threads = (int)tasks;
#pragma omp parallel num_threads(threads)
    {
        unsigned char *mine = per_thread + (size_t)omp_get_thread_num() * tb;
        uint16_t *tmp = (uint16_t *)mine;
        uint16_t *wbuf = (uint16_t *)(mine + (16 * (size_t)w->k_pad * sizeof(uint16_t) + 63) / 64 * 64);
        float *acc = (float *)((unsigned char *)wbuf + 2 * 32 * (size_t)kp * 32 * sizeof(uint16_t));
#pragma omp for schedule(static)
        for (int64_t xt = 0; xt < x_tiles; xt++) convert_x_tile(w, x, ldx, n, xt, tmp, xv, xscale);
        /* (implicit barrier: every X tile is ready) */
        static const uint16_t colsb[8] = {64, 64, 64, 64, 64, 64, 64, 64};
        static const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, 16, 16};
        qmm_amx_tiles_configure(colsb, rows);
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t g = 0; g < groups; g++) run_group(w, 32 * g, xv, n, xscale, wbuf, acc, y, ldy);
        qmm_amx_tiles_release();
    }
}
