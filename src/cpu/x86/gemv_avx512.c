/*
 * gemv_avx512.c — strategy `gemv` (n small) with AVX-512 on the native GGUF blocks of q4_0,
 * q8_0, q4_K and q6_K. Each thread takes a contiguous range of W rows; a row is dequantized
 * once per call with AVX-512 into an f32 row buffer (the same float operations as the
 * scalar dequantizers of src/formats, so the values are bit-identical), then dotted with
 * every X row: 4 x 16 f32 FMA lanes over k in increasing steps of 64, the 4 vectors added
 * as (a0 + a1) + (a2 + a3), the 16 lanes summed in double. That order depends only on k,
 * never on n or the row's position, so outputs are batch-invariant within this path.
 * Accuracy: f32 products and sums (bound in docs/KERNELS.md); X is not quantized.
 */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"

static inline float half_to_float(qmm_half h) { return _cvtsh_ss(h); }

static void dequant_q4_0(const void *src, float *dst, int64_t k) {
    const block_q4_0 *b = src;
    const __m512i eight = _mm512_set1_epi32(8);
    for (int64_t i = 0; i < k / QK4_0; i++) {
        const __m512 d = _mm512_set1_ps(half_to_float(b[i].d));
        const __m128i qs = _mm_loadu_si128((const __m128i *)b[i].qs);
        const __m128i lo = _mm_and_si128(qs, _mm_set1_epi8(0x0F));
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(qs, 4), _mm_set1_epi8(0x0F));
        __m512 v0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(lo), eight));
        __m512 v1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(hi), eight));
        _mm512_storeu_ps(dst + 32 * i, _mm512_mul_ps(v0, d));
        _mm512_storeu_ps(dst + 32 * i + 16, _mm512_mul_ps(v1, d));
    }
}

static void dequant_q8_0(const void *src, float *dst, int64_t k) {
    const block_q8_0 *b = src;
    for (int64_t i = 0; i < k / QK8_0; i++) {
        const __m512 d = _mm512_set1_ps(half_to_float(b[i].d));
        const __m128i q0 = _mm_loadu_si128((const __m128i *)b[i].qs);
        const __m128i q1 = _mm_loadu_si128((const __m128i *)(b[i].qs + 16));
        _mm512_storeu_ps(dst + 32 * i, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), d));
        _mm512_storeu_ps(dst + 32 * i + 16,
                         _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), d));
    }
}

/* 6-bit scale and min of sub-block j of a q4_K super-block (ggml's get_scale_min_k4). */
static inline void scale_min_k4(int j, const uint8_t *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* y = (d*sc) * q - (dmin*m) for 16 unsigned 4-bit q in a __m128i of bytes. */
static inline __m512 q4k_16(__m128i q, __m512 d1, __m512 m1) {
    return _mm512_sub_ps(_mm512_mul_ps(d1, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q))), m1);
}

static void dequant_q4_K(const void *src, float *dst, int64_t k) {
    const block_q4_K *b = src;
    const __m128i mask = _mm_set1_epi8(0x0F);
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = half_to_float(b[i].d), dmin = half_to_float(b[i].dmin);
        float *y = dst + i * QK_K;
        for (int c = 0; c < 4; c++) {
            int sc, m;
            scale_min_k4(2 * c, b[i].scales, &sc, &m);
            const __m512 d1 = _mm512_set1_ps(d * (float)sc), m1 = _mm512_set1_ps(dmin * (float)m);
            scale_min_k4(2 * c + 1, b[i].scales, &sc, &m);
            const __m512 d2 = _mm512_set1_ps(d * (float)sc), m2 = _mm512_set1_ps(dmin * (float)m);
            for (int h = 0; h < 2; h++) {
                const __m128i q = _mm_loadu_si128((const __m128i *)(b[i].qs + 32 * c + 16 * h));
                _mm512_storeu_ps(y + 64 * c + 16 * h, q4k_16(_mm_and_si128(q, mask), d1, m1));
                _mm512_storeu_ps(y + 64 * c + 32 + 16 * h,
                                 q4k_16(_mm_and_si128(_mm_srli_epi16(q, 4), mask), d2, m2));
            }
        }
    }
}

static void dequant_q6_K(const void *src, float *dst, int64_t k) {
    const block_q6_K *b = src;
    const __m128i mask4 = _mm_set1_epi8(0x0F), mask2 = _mm_set1_epi8(0x03);
    const __m512i off = _mm512_set1_epi32(32);
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = half_to_float(b[i].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = b[i].ql + 64 * h, *qh = b[i].qh + 32 * h;
            const int8_t *sc = b[i].scales + 8 * h;
            float *y = dst + i * QK_K + 128 * h;
            for (int p = 0; p < 4; p++) {
                for (int half = 0; half < 2; half++) { /* l in [16*half, 16*half + 16) */
                    const int l0 = 16 * half;
                    __m128i lo = _mm_loadu_si128((const __m128i *)(ql + l0 + 32 * (p & 1)));
                    if (p >> 1) lo = _mm_srli_epi16(lo, 4);
                    lo = _mm_and_si128(lo, mask4);
                    __m128i hi = _mm_loadu_si128((const __m128i *)(qh + l0));
                    hi = _mm_and_si128(_mm_srli_epi16(hi, 2 * p), mask2);
                    const __m128i q = _mm_or_si128(lo, _mm_slli_epi16(hi, 4));
                    const __m512 qv = _mm512_cvtepi32_ps(
                        _mm512_sub_epi32(_mm512_cvtepu8_epi32(q), off));
                    const __m512 ds = _mm512_set1_ps(d * (float)sc[2 * p + half]);
                    _mm512_storeu_ps(y + 32 * p + l0, _mm512_mul_ps(ds, qv));
                }
            }
        }
    }
}

typedef void (*dequant_fn)(const void *src, float *dst, int64_t k);

static dequant_fn dequant_for(qmm_type type) {
    switch (type) {
    case QMM_TYPE_Q4_0: return dequant_q4_0;
    case QMM_TYPE_Q8_0: return dequant_q8_0;
    case QMM_TYPE_Q4_K: return dequant_q4_K;
    case QMM_TYPE_Q6_K: return dequant_q6_K;
    default: return NULL;
    }
}

bool qmm_x86_gemv_avx512_has_type(qmm_type type) { return dequant_for(type) != NULL; }

/* Sum of the 16 lanes in double, lanes added in a fixed order. */
static inline double reduce_lanes(__m512 v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/* Dot of the f32 row buffer w (k floats, k_vec = k rounded down to 16) with one X row. */
static inline float dot_row(const float *w, const float *x, int64_t k) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t p = 0;
    for (; p + 64 <= k; p += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + p), _mm512_loadu_ps(x + p), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + p + 16), _mm512_loadu_ps(x + p + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + p + 32), _mm512_loadu_ps(x + p + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + p + 48), _mm512_loadu_ps(x + p + 48), a3);
    }
    for (; p < k; p += 16) { /* k is a multiple of 32 for these types */
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + p), _mm512_loadu_ps(x + p), a0);
    }
    return (float)reduce_lanes(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

qmm_status qmm_x86_gemv_avx512(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                               size_t row_stride, int64_t n, const float *x, int64_t ldx,
                               float *y, int64_t ldy, float *rowbuf, int n_threads) {
    const dequant_fn dequant = dequant_for(type);
    if (dequant == NULL)
        return QMM_ERR_UNSUPPORTED;
    int threads = n_threads < 1 ? 1 : n_threads;
    if (threads > m) threads = (int)m;
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        float *buf = rowbuf + (size_t)t * (size_t)k;
        const int64_t i0 = m * t / nth, i1 = m * (t + 1) / nth;
        for (int64_t i = i0; i < i1; i++) {
            dequant(w + (size_t)i * row_stride, buf, k);
            for (int64_t j = 0; j < n; j++) y[j * ldy + i] = dot_row(buf, x + j * ldx, k);
        }
    }
    return QMM_OK;
}
