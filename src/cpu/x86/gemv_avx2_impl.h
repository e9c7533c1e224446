/*
 * gemv_avx2_impl.h — pieces shared by the AVX2 (+FMA, F16C) gemv row kernels
 * (gemv_legacy_avx2.c, gemv_kquants_avx2.c, gemv_codebook_avx2.c, gemv_float_avx2.c) and
 * their entry point (gemv_avx2.c). Include only from files built with the AVX2 flags (names
 * ending _avx2.c).
 *
 * The contract and the summation order are those of gemv_common.h, the same as the AVX-512
 * kernels': each 16-lane f32 accumulator is held as two ymm registers (lanes 0..7, 8..15),
 * element p still goes into lane p % 16 of accumulator (p / 16) % 2 as one FMA, the panel
 * flush adds the two accumulators lane by lane and widens lane l into double lane l, and the
 * final tree adds the same pairs (l, l + 8), (l, l + 4), (l, l + 2), (0, 1). Decoded values
 * are the to_float values, as on AVX-512. So every output is bit-identical to gemv_avx512's
 * (tests/test_cpu_isa.c checks it).
 */
#ifndef QMM_CPU_X86_GEMV_AVX2_IMPL_H
#define QMM_CPU_X86_GEMV_AVX2_IMPL_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cpu/x86/gemv_common.h"
#include "formats/blocks.h"

/* The row kernels of each family for `type`, or NULL (gemv_legacy_avx2.c: q4_0, q4_1, q5_0,
 * q5_1, q8_0; gemv_float_avx2.c: f32, f16, bf16, any k). */
qmm_gemv_row_fn qmm_gemv_avx2_legacy_row_fn(int type);
qmm_gemv_row_fn qmm_gemv_avx2_kquant_row_fn(int type); /* gemv_kquants_avx2.c: q2_K..q6_K */
qmm_gemv_row_fn qmm_gemv_avx2_codebook_row_fn(int type); /* iq4_nl, iq4_xs, mxfp4, nvfp4 */
qmm_gemv_row_fn qmm_gemv_avx2_float_row_fn(int type);
qmm_gemv_row_fn qmm_gemv_avx2_tofloat_row_fn(int type); /* gemv_tofloat_avx2.c: grid i-quants, tq */

/* 16 f32 lanes: lo = lanes 0..7, hi = lanes 8..15. */
typedef struct qmm_v16 {
    __m256 lo, hi;
} qmm_v16;

/* 8 f16 values at p (any alignment) as floats: vcvtph2ps, exact (a NaN keeps sign and
 * payload and is made quiet, as qmm_fp16_to_fp32). */
QMM_GEMV_INLINE __m256 qmm_avx2_f16x8(const unsigned char *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* 8 bf16 values at p (any alignment) as floats: the 16 bits are the float's high half. */
QMM_GEMV_INLINE __m256 qmm_avx2_bf16x8(const unsigned char *p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

/* k f16 (bf16) values at src to floats with the conversions above (exact: the type table's
 * to_float bit for bit); the last k % 8 through a zeroed buffer (nothing past the row is
 * read). Used by fused_avx2.c and fused_gemm_avx2.c for their W tiles. */
QMM_GEMV_INLINE void qmm_avx2_half_row(bool bf16, const unsigned char *src, float *dst, int64_t k) {
    int64_t p = 0;
    for (; p + 8 <= k; p += 8)
        _mm256_storeu_ps(dst + p, bf16 ? qmm_avx2_bf16x8(src + 2 * p) : qmm_avx2_f16x8(src + 2 * p));
    if (p < k) {
        unsigned char h[16] = {0};
        memcpy(h, src + 2 * p, (size_t)(k - p) * 2);
        float f[8];
        _mm256_storeu_ps(f, bf16 ? qmm_avx2_bf16x8(h) : qmm_avx2_f16x8(h));
        memcpy(dst + p, f, (size_t)(k - p) * sizeof(float));
    }
}

/* f16 bits at any address to float (F16C). */
QMM_GEMV_INLINE float qmm_gemv_half(const void *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* The f16 fields at first, first + stride, ... (count <= 16 of them) as floats in
 * out[0..count). */
QMM_GEMV_INLINE void qmm_gemv_halves(const unsigned char *first, size_t stride, int count,
                                     float out[16]) {
    uint16_t h[16] = {0};
    for (int t = 0; t < count; t++) memcpy(&h[t], first + (size_t)t * stride, sizeof h[t]);
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
    _mm256_storeu_ps(out + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + 8))));
}

/* The f32 accumulators of nr X rows for the current panel (a[j][0]: even p / 16, a[j][1]:
 * odd). */
typedef struct qmm_gemv_acc {
    qmm_v16 a[QMM_GEMV_MAX_NR][2];
} qmm_gemv_acc;

QMM_GEMV_INLINE void qmm_gemv_acc_zero(qmm_gemv_acc *acc, int nr) {
    for (int j = 0; j < nr; j++)
        for (int par = 0; par < 2; par++) acc->a[j][par].lo = acc->a[j][par].hi = _mm256_setzero_ps();
}

QMM_GEMV_INLINE void qmm_gemv_dacc_zero(qmm_gemv_dacc *dacc, int nr) {
    for (int j = 0; j < nr; j++)
        for (int l = 0; l < 16; l += 4) _mm256_storeu_pd(dacc->d[j] + l, _mm256_setzero_pd());
}

/* Double lanes l..l+3 += the 4 f32 lanes of v, widened. */
QMM_GEMV_INLINE void dacc_add4(double *d, __m128 v) {
    _mm256_storeu_pd(d, _mm256_add_pd(_mm256_loadu_pd(d), _mm256_cvtps_pd(v)));
}

/* End of a panel: a[j][0] + a[j][1] widened and added into the double lanes, a[j] cleared. */
QMM_GEMV_INLINE void qmm_gemv_flush(qmm_gemv_acc *acc, qmm_gemv_dacc *dacc, int nr) {
    for (int j = 0; j < nr; j++) {
        const __m256 lo = _mm256_add_ps(acc->a[j][0].lo, acc->a[j][1].lo);
        const __m256 hi = _mm256_add_ps(acc->a[j][0].hi, acc->a[j][1].hi);
        dacc_add4(dacc->d[j], _mm256_castps256_ps128(lo));
        dacc_add4(dacc->d[j] + 4, _mm256_extractf128_ps(lo, 1));
        dacc_add4(dacc->d[j] + 8, _mm256_castps256_ps128(hi));
        dacc_add4(dacc->d[j] + 12, _mm256_extractf128_ps(hi, 1));
        for (int par = 0; par < 2; par++) acc->a[j][par].lo = acc->a[j][par].hi = _mm256_setzero_ps();
    }
}

/* Multiply the 16 decoded W values of elements p..p+15 (p a multiple of 16, increasing) into
 * every X row. */
QMM_GEMV_INLINE void qmm_gemv_fma16(qmm_gemv_acc *acc, int nr, qmm_v16 w, const float *x,
                                    int64_t ldx, int64_t p) {
    const int par = (int)((p >> 4) & 1);
    for (int j = 0; j < nr; j++) {
        const float *xj = x + j * ldx + p;
        acc->a[j][par].lo = _mm256_fmadd_ps(w.lo, _mm256_loadu_ps(xj), acc->a[j][par].lo);
        acc->a[j][par].hi = _mm256_fmadd_ps(w.hi, _mm256_loadu_ps(xj + 8), acc->a[j][par].hi);
    }
}

QMM_GEMV_INLINE void qmm_gemv_panel_end(qmm_gemv_acc *acc, qmm_gemv_dacc *dacc, int R, int nr,
                                        int64_t done, int block) {
    if (done % (QMM_GEMV_PANEL / block) == 0)
        for (int r = 0; r < R; r++) qmm_gemv_flush(&acc[r], &dacc[r], nr);
}

QMM_GEMV_INLINE void qmm_gemv_body_end(qmm_gemv_acc *acc, qmm_gemv_dacc *dacc, int R, int nr) {
    for (int r = 0; r < R; r++) qmm_gemv_flush(&acc[r], &dacc[r], nr);
}

/* The fixed tree of gemv_common.h: s8[l] = d[l] + d[l + 8], s4[l] = s8[l] + s8[l + 4],
 * s2[l] = s4[l] + s4[l + 2], s2[0] + s2[1], rounded once to float. */
QMM_GEMV_INLINE void qmm_gemv_store1(const qmm_gemv_dacc *dacc, int nr, float *y, int64_t ldy) {
    for (int j = 0; j < nr; j++) {
        const double *d = dacc->d[j];
        const __m256d s8lo = _mm256_add_pd(_mm256_loadu_pd(d), _mm256_loadu_pd(d + 8));
        const __m256d s8hi = _mm256_add_pd(_mm256_loadu_pd(d + 4), _mm256_loadu_pd(d + 12));
        const __m256d s4 = _mm256_add_pd(s8lo, s8hi);
        const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
        const __m128d s1 = _mm_add_sd(s2, _mm_unpackhi_pd(s2, s2));
        y[j * ldy] = (float)_mm_cvtsd_f64(s1);
    }
}

/* 16 int32 lanes: lo = 0..7, hi = 8..15. */
typedef struct qmm_i16 {
    __m256i lo, hi;
} qmm_i16;

/* 16 bytes at p zero-extended to 16 dwords. */
QMM_GEMV_INLINE qmm_i16 qmm_gemv_u8x16(const uint8_t *p) {
    const __m128i b = _mm_loadu_si128((const __m128i *)p);
    return (qmm_i16){_mm256_cvtepu8_epi32(b), _mm256_cvtepu8_epi32(_mm_srli_si128(b, 8))};
}

/* 16 bytes at p sign-extended to 16 dwords. */
QMM_GEMV_INLINE qmm_i16 qmm_gemv_i8x16(const void *p) {
    const __m128i b = _mm_loadu_si128((const __m128i *)p);
    return (qmm_i16){_mm256_cvtepi8_epi32(b), _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))};
}

/* (float)q * s, lane by lane (one rounding). */
QMM_GEMV_INLINE qmm_v16 qmm_gemv_scale(qmm_i16 q, __m256 s) {
    return (qmm_v16){_mm256_mul_ps(_mm256_cvtepi32_ps(q.lo), s),
                     _mm256_mul_ps(_mm256_cvtepi32_ps(q.hi), s)};
}

/* W rows decoded side by side for nr X rows (the order of an output does not depend on it):
 * 16 ymm registers leave room for 2 W rows' accumulators at nr = 1. */
#define QMM_GEMV_ROWS_FOR(nr) ((nr) == 1 ? 2 : 1)

#endif /* QMM_CPU_X86_GEMV_AVX2_IMPL_H */
