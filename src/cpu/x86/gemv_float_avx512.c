/*
 * gemv_float_avx512.c — AVX-512 gemv row kernels for the unquantized weight types f32, f16
 * and bf16 (contract and summation order: gemv_avx512_impl.h).
 *
 * Decoding in registers, exact (every value equals the type table's to_float bit for bit):
 *   - f32: loaded as is;
 *   - f16: vcvtph2ps, exact for normals, subnormals, +-0 and +-Inf; a NaN keeps its sign and
 *     payload and is made quiet (as qmm_fp16_to_fp32 in src/formats/fp16.h);
 *   - bf16: zero-extended to 32 bits and shifted into the high half (qmm_bf16_to_fp32).
 *
 * The block size of these types is 1, so k is any length: the row kernels use the row-kernel
 * macro with BLOCK = 1 (a "block" index is an element index; panels are 1024 elements) and
 * walk each panel in groups of 16; a last group of k % 16 elements loads W and X with a mask
 * (no byte past the row or the X row is read) and FMAs only those lanes, the other lanes of
 * the accumulator left as they are. The order of one output is the one of
 * gemv_avx512_impl.h.
 */
#include "cpu/x86/gemv_avx512_impl.h"

#include "core/types.h"

#define BODY_ARGS                                                                         \
    const unsigned char *w, size_t stride, int R, int64_t k, const float *x, int64_t ldx,   \
        int nr, qmm_gemv_dacc *dacc, int64_t ib0, int64_t ib1

enum float_kind { KIND_F32, KIND_F16, KIND_BF16 };

/* Bytes per element of a kind. */
QMM_GEMV_INLINE size_t kind_bytes(enum float_kind kind) { return kind == KIND_F32 ? 4 : 2; }

/* The lanes of `mask` of the 16 elements at p (bytes), exact floats; the other lanes 0 and
 * their bytes not read. */
QMM_GEMV_INLINE __m512 load16(enum float_kind kind, const unsigned char *p, __mmask16 mask,
                              int full) {
    switch (kind) {
    case KIND_F32:
        return full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask, p);
    case KIND_F16: {
        const __m256i h = full ? _mm256_loadu_si256((const __m256i *)p)
                               : _mm256_maskz_loadu_epi16(mask, p);
        return _mm512_cvtph_ps(h);
    }
    default: {
        const __m256i h = full ? _mm256_loadu_si256((const __m256i *)p)
                               : _mm256_maskz_loadu_epi16(mask, p);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    }
}

/* The last group of a row: elements p..p+count-1 (count < 16, p a multiple of 16) multiplied
 * into every X row, X read with the same mask; lanes >= count keep the accumulator. */
QMM_GEMV_INLINE void fma_tail(qmm_gemv_acc *acc, int nr, __m512 wv, __mmask16 mask,
                              const float *x, int64_t ldx, int64_t p) {
    const int par = (int)((p >> 4) & 1);
    for (int j = 0; j < nr; j++)
        acc->a[j][par] = _mm512_mask3_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, x + j * ldx + p),
                                               acc->a[j][par], mask);
}

/* Elements [ib0, ib1) of R rows (ib0 a multiple of QMM_GEMV_PANEL; ib1 one or k). */
QMM_GEMV_INLINE void float_body(BODY_ARGS, enum float_kind kind) {
    const size_t esz = kind_bytes(kind);
    qmm_gemv_acc acc[4];
    for (int r = 0; r < R; r++) qmm_gemv_acc_zero(&acc[r], nr);
    (void)k;
    const size_t ahead = qmm_gemv_prefetch_ahead(R, stride);
    int64_t p = ib0;
    for (; p + 16 <= ib1; p += 16) {
        for (int r = 0; r < R; r++) {
            const unsigned char *src = w + r * stride + (size_t)p * esz;
            if (esz == 4 || p % 32 == 0) qmm_gemv_prefetch(src, 1, ahead);
            qmm_gemv_fma16(&acc[r], nr, load16(kind, src, 0xFFFF, 1), x, ldx, p);
        }
        qmm_gemv_panel_end(acc, dacc, R, nr, p + 16, 1);
    }
    if (p < ib1) {
        const __mmask16 mask = (__mmask16)((1u << (ib1 - p)) - 1u);
        for (int r = 0; r < R; r++)
            fma_tail(&acc[r], nr, load16(kind, w + r * stride + (size_t)p * esz, mask, 0), mask,
                     x, ldx, p);
    }
    qmm_gemv_body_end(acc, dacc, R, nr);
}

QMM_GEMV_INLINE void f32_body(BODY_ARGS) { float_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KIND_F32); }
QMM_GEMV_INLINE void f16_body(BODY_ARGS) { float_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KIND_F16); }
QMM_GEMV_INLINE void bf16_body(BODY_ARGS) { float_body(w, stride, R, k, x, ldx, nr, dacc, ib0, ib1, KIND_BF16); }

QMM_GEMV_DEFINE_ROW_FN(row_f32, f32_body, 1)
QMM_GEMV_DEFINE_ROW_FN(row_f16, f16_body, 1)
QMM_GEMV_DEFINE_ROW_FN(row_bf16, bf16_body, 1)

qmm_gemv_row_fn qmm_gemv_float_row_fn(int type) {
    switch (type) {
    case QMM_TYPE_F32: return row_f32;
    case QMM_TYPE_F16: return row_f16;
    case QMM_TYPE_BF16: return row_bf16;
    default: return NULL;
    }
}
