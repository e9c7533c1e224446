/*
 * gemv_float_avx2.c — AVX2 gemv row kernels for the unquantized weight types f32, f16 and
 * bf16 (contract and summation order: gemv_common.h, accumulators: gemv_avx2_impl.h); the
 * port of gemv_float_avx512.c.
 *
 * Decoding, exact (every value equals the type table's to_float bit for bit): f32 as is;
 * f16 by vcvtph2ps (F16C; a NaN keeps sign and payload and is made quiet, as
 * qmm_fp16_to_fp32); bf16 zero-extended and shifted into the high half.
 *
 * Block size 1, any k: panels of 1024 elements walked in groups of 16; the last group of
 * k % 16 elements copies its W elements and X floats into zeroed buffers (no byte past a row
 * is read) and blends the FMA result into the accumulator lanes < k % 16 only, the others
 * kept — the masked FMA of the AVX-512 kernel.
 */
#include "cpu/x86/gemv_avx2_impl.h"

#include "core/types.h"

#define BODY_ARGS                                                                         \
    const unsigned char *w, size_t stride, int R, int64_t k, const float *x, int64_t ldx,   \
        int nr, qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1

enum float_kind { KIND_F32, KIND_F16, KIND_BF16 };

QMM_GEMV_INLINE size_t kind_bytes(enum float_kind kind) { return kind == KIND_F32 ? 4 : 2; }

/* The 16 elements at p (bytes), exact floats. */
QMM_GEMV_INLINE qmm_v16 load16(enum float_kind kind, const unsigned char *p) {
    switch (kind) {
    case KIND_F32:
        return (qmm_v16){_mm256_loadu_ps((const float *)p), _mm256_loadu_ps((const float *)p + 8)};
    case KIND_F16:
        return (qmm_v16){qmm_avx2_f16x8(p), qmm_avx2_f16x8(p + 16)};
    default:
        return (qmm_v16){qmm_avx2_bf16x8(p), qmm_avx2_bf16x8(p + 16)};
    }
}

/* The last group of a row: elements p..p+count-1 (count < 16, p a multiple of 16); lanes
 * >= count keep the accumulator. */
QMM_GEMV_INLINE void fma_tail(qmm_gemv_acc *acc, int nr, qmm_v16 wv, int count,
                              const float *x, int64_t ldx, int64_t p) {
    const int par = (int)((p >> 4) & 1);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 mlo = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(count), lane));
    const __m256 mhi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(count - 8), lane));
    for (int j = 0; j < nr; j++) {
        float xb[16] = {0};
        memcpy(xb, x + j * ldx + p, (size_t)count * sizeof(float));
        qmm_v16 *a = &acc->a[j][par];
        a->lo = _mm256_blendv_ps(a->lo, _mm256_fmadd_ps(wv.lo, _mm256_loadu_ps(xb), a->lo), mlo);
        a->hi = _mm256_blendv_ps(a->hi, _mm256_fmadd_ps(wv.hi, _mm256_loadu_ps(xb + 8), a->hi), mhi);
    }
}

/* Elements [ib0, ib1) of R rows (ib0 a multiple of QMM_GEMV_PANEL; ib1 one or k). */
QMM_GEMV_INLINE void float_body(BODY_ARGS, enum float_kind kind) {
    const size_t esz = kind_bytes(kind);
    qmm_gemv_acc acc[2];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    int64_t p = ib0;
    for (; p + 16 <= ib1; p += 16) {
        for (int r = 0; r < R; r++) {
            const unsigned char *src = w + r * stride + (size_t)p * esz;
            if (esz == 4 || p % 32 == 0) qmm_gemv_prefetch(src, 1, ahead);
            qmm_gemv_fma16(&acc[r], nr, load16(kind, src), x, ldx, p);
        }
        qmm_gemv_panel_end(acc, dacc, R, nr, p + 16, 1);
    }
    if (p < ib1) {
        const int count = (int)(ib1 - p);
        for (int r = 0; r < R; r++) {
            unsigned char wb[64] = {0};
            memcpy(wb, w + r * stride + (size_t)p * esz, (size_t)count * esz);
            fma_tail(&acc[r], nr, load16(kind, wb), count, x, ldx, p);
        }
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void f32_body(BODY_ARGS) { float_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KIND_F32); }
QMM_GEMV_INLINE void f16_body(BODY_ARGS) { float_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KIND_F16); }
QMM_GEMV_INLINE void bf16_body(BODY_ARGS) { float_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KIND_BF16); }

QMM_GEMV_DEFINE_ROW_FN(row_f32, f32_body, 1)
QMM_GEMV_DEFINE_ROW_FN(row_f16, f16_body, 1)
QMM_GEMV_DEFINE_ROW_FN(row_bf16, bf16_body, 1)

qmm_gemv_row_fn qmm_gemv_avx2_float_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_F32: return row_f32;
    case QMM_TYPE_F16: return row_f16;
    case QMM_TYPE_BF16: return row_bf16;
    default: return NULL;
    }
}
