/*
 * int8_quantize_avx2.c — the int8 strategy's X quantizer with AVX2: qmm_x86_int8_quantize_row's
 * contract (x86_kernels.h) with the same float operations as the AVX-512 one
 * (gemm_int8_amx.c) and the portable one (int8_quantize.c), hence the same bytes and scales.
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/x86/x86_kernels.h"

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

static inline int32_t hsum8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

void qmm_x86_int8_quantize_row_avx2(const float *x, int64_t k, int8_t *q, float *dx, float *s,
                                    int64_t ld) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 inf = _mm256_set1_ps(INFINITY);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const union { uint32_t u; float f; } nan_bits = {0x7FC00000u};
    for (int64_t c = 0; c < k / 32; c++) {
        __m256 v[4], a[4];
        __m256 fin = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        for (int i = 0; i < 4; i++) {
            v[i] = _mm256_loadu_ps(x + 32 * c + 8 * i);
            a[i] = _mm256_and_ps(v[i], absmask);
            fin = _mm256_and_ps(fin, _mm256_cmp_ps(a[i], inf, _CMP_LT_OQ));
        }
        if (_mm256_movemask_ps(fin) != 0xFF) { /* NaN or +-Inf in the block */
            memset(q + 32 * c, 0, 32);
            dx[c * ld] = s[c * ld] = nan_bits.f;
            continue;
        }
        const float amax = hmax8(_mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3])));
        const float d = amax / 127.0f;
        const float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
        const float inv = amax > 0.0f ? 127.0f / (amax * pre) : 0.0f;
        const __m256 vp = _mm256_set1_ps(pre), vi = _mm256_set1_ps(inv);
        __m256i qi[4];
        for (int i = 0; i < 4; i++) qi[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_mul_ps(v[i], vp), vi));
        /* packs work per 128-bit lane: dwords 0..3 hold elements 0-3, 8-11, 16-19, 24-27,
         * dwords 4..7 elements 4-7, 12-15, 20-23, 28-31 */
        const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]),
                                             _mm256_packs_epi32(qi[2], qi[3]));
        _mm256_storeu_si256((__m256i *)(q + 32 * c), _mm256_permutevar8x32_epi32(b, order));
        dx[c * ld] = d;
        s[c * ld] = d * (float)hsum8(_mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]),
                                                      _mm256_add_epi32(qi[2], qi[3])));
    }
}
