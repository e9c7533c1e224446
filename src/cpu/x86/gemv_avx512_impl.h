/*
 * gemv_avx512_impl.h — pieces shared by the AVX-512 gemv row kernels (gemv_legacy_avx512.c,
 * gemv_kquants_avx512.c) and their driver (gemv_avx512.c). Include only from files built with
 * the AVX-512 flags (names ending _avx512.c).
 *
 * The row-kernel contract, the summation order and the per-ISA-free pieces (panel size, row
 * grouping, prefetch, the double lanes) are in gemv_common.h, shared with the AVX2 kernels
 * (gemv_avx2_impl.h): this header gives the 16-lane f32 accumulators one zmm each.
 */
#ifndef QMM_CPU_X86_GEMV_AVX512_IMPL_H
#define QMM_CPU_X86_GEMV_AVX512_IMPL_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu/x86/gemv_common.h"
#include "formats/blocks.h"

/* The row kernels of each family for `type`, or NULL (gemv_legacy_avx512.c,
 * gemv_kquants_avx512.c, gemv_codebook_avx512.c: the 4-bit codebook types,
 * gemv_float_avx512.c: f32, f16, bf16, any k). */
qmm_gemv_row_fn qmm_gemv_legacy_row_fn(int type);
qmm_gemv_row_fn qmm_gemv_kquant_row_fn(int type);
qmm_gemv_row_fn qmm_gemv_codebook_row_fn(int type);
qmm_gemv_row_fn qmm_gemv_float_row_fn(int type);
/* gemv_tofloat_avx512.c: the types no register decoder covers (grid i-quants, tq1_0, tq2_0),
 * decoded by the type table's to_float into L1 (gemv_tofloat_impl.h). */
qmm_gemv_row_fn qmm_gemv_tofloat_row_fn(int type);

/* f16 bits at any address to float (F16C). */
QMM_GEMV_INLINE float qmm_gemv_half(const void *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* The f16 fields at first, first + stride, ... (count <= 16 of them) as floats in out[0..count):
 * one vcvtph2ps for up to 16 blocks, so that a block's scale later costs one broadcast load. */
QMM_GEMV_INLINE void qmm_gemv_halves(const unsigned char *first, size_t stride, int count,
                                     float out[16]) {
    uint16_t h[16] = {0};
    for (int t = 0; t < count; t++) memcpy(&h[t], first + (size_t)t * stride, sizeof h[t]);
    _mm512_storeu_ps(out, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)h)));
}

/* The f32 accumulators of nr X rows for the current panel: a[j][0] gets the 16-element groups
 * with even p / 16, a[j][1] the odd ones. Lives in registers inside a body. */
typedef struct qmm_gemv_acc {
    __m512 a[QMM_GEMV_MAX_NR][2];
} qmm_gemv_acc;


QMM_GEMV_INLINE void qmm_gemv_acc_zero(qmm_gemv_acc *acc, int nr) {
    for (int j = 0; j < nr; j++) acc->a[j][0] = acc->a[j][1] = _mm512_setzero_ps();
}

QMM_GEMV_INLINE void qmm_gemv_dacc_zero(qmm_gemv_dacc *dacc, int nr) {
    for (int j = 0; j < nr; j++) {
        _mm512_storeu_pd(dacc->d[j], _mm512_setzero_pd());
        _mm512_storeu_pd(dacc->d[j] + 8, _mm512_setzero_pd());
    }
}

/* End of a panel: a[j][0] + a[j][1] widened and added into the double lanes, a[j] cleared. */
QMM_GEMV_INLINE void qmm_gemv_flush(qmm_gemv_acc *acc, qmm_gemv_dacc *dacc, int nr) {
    for (int j = 0; j < nr; j++) {
        const __m512 v = _mm512_add_ps(acc->a[j][0], acc->a[j][1]);
        _mm512_storeu_pd(dacc->d[j], _mm512_add_pd(_mm512_loadu_pd(dacc->d[j]),
                                                   _mm512_cvtps_pd(_mm512_castps512_ps256(v))));
        _mm512_storeu_pd(dacc->d[j] + 8, _mm512_add_pd(_mm512_loadu_pd(dacc->d[j] + 8),
                                                       _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1))));
        acc->a[j][0] = acc->a[j][1] = _mm512_setzero_ps();
    }
}

/* Multiply the 16 decoded W values of elements p..p+15 (p a multiple of 16, increasing) into
 * every X row. */
QMM_GEMV_INLINE void qmm_gemv_fma16(qmm_gemv_acc *acc, int nr, __m512 w, const float *x,
                                    int64_t ldx, int64_t p) {
    const int par = (int)((p >> 4) & 1);
    for (int j = 0; j < nr; j++)
        acc->a[j][par] = _mm512_fmadd_ps(w, _mm512_loadu_ps(x + j * ldx + p), acc->a[j][par]);
}

/* Called after each block (`done` blocks of `block` elements so far): flushes the R rows'
 * accumulators when a panel is complete. */
QMM_GEMV_INLINE void qmm_gemv_panel_end(qmm_gemv_acc *acc, qmm_gemv_dacc *dacc, int R, int nr,
                                        int64_t done, int block) {
    if (done % (QMM_GEMV_PANEL / block) == 0)
        for (int r = 0; r < R; r++) qmm_gemv_flush(&acc[r], &dacc[r], nr);
}

/* End of a body's block range: flush what is left (a partial panel; adding +0.0 to the
 * double lanes after a complete panel changes nothing). */
QMM_GEMV_INLINE void qmm_gemv_body_end(qmm_gemv_acc *acc, qmm_gemv_dacc *dacc, int R, int nr) {
    for (int r = 0; r < R; r++) qmm_gemv_flush(&acc[r], &dacc[r], nr);
}

/* Sum the 16 double lanes of each X row in a fixed tree, round once to float, store
 * y[j*ldy]. */
QMM_GEMV_INLINE void qmm_gemv_store1(const qmm_gemv_dacc *dacc, int nr, float *y, int64_t ldy) {
    for (int j = 0; j < nr; j++) {
        const __m512d s8 = _mm512_add_pd(_mm512_loadu_pd(dacc->d[j]), _mm512_loadu_pd(dacc->d[j] + 8));
        const __m256d s4 = _mm256_add_pd(_mm512_castpd512_pd256(s8), _mm512_extractf64x4_pd(s8, 1));
        const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
        const __m128d s1 = _mm_add_sd(s2, _mm_unpackhi_pd(s2, s2));
        y[j * ldy] = (float)_mm_cvtsd_f64(s1);
    }
}

/* 16 bytes at p zero-extended to 16 dwords. */
QMM_GEMV_INLINE __m512i qmm_gemv_u8x16(const uint8_t *p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

/* Staged decoding (types whose quants take several bit fields): a super-block's signed
 * integer quants are assembled with 64-byte-wide byte operations into an int8 buffer of 256
 * (in L1), then each 16 elements are converted and scaled: w = (float)q * scale[c], one
 * rounding as in the scalar code. count16 groups of 16 starting at element p. */
QMM_GEMV_INLINE void qmm_gemv_fma_staged(qmm_gemv_acc *acc, int nr, const int8_t *q,
                                         const float *scale, int c, const float *x,
                                         int64_t ldx, int64_t p) {
    const __m512 qf = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + 16 * c))));
    qmm_gemv_fma16(acc, nr, _mm512_mul_ps(qf, _mm512_set1_ps(scale[c])), x, ldx, p);
}

/* 32 bytes at p in both halves of a zmm. */
QMM_GEMV_INLINE __m512i qmm_gemv_bcast32(const uint8_t *p) {
    return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
}

/* 16-bit lanes: the low 16 lanes get `lo`, the high 16 lanes `hi` (shift counts). */
QMM_GEMV_INLINE __m512i qmm_gemv_halves16(short lo, short hi) {
    return _mm512_inserti64x4(_mm512_set1_epi16(lo), _mm256_set1_epi16(hi), 1);
}


/* W rows decoded side by side for nr X rows: 2 FMA chains per (W row, X row) need at least
 * 4 pairs to hide the FMA latency. The order of an output does not depend on this. */
#define QMM_GEMV_ROWS_FOR(nr) ((nr) == 1 ? 4 : (nr) == 2 ? 2 : 1)

#endif /* QMM_CPU_X86_GEMV_AVX512_IMPL_H */
