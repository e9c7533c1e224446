/*
 * gemv_common.h — the ISA-independent half of the gemv row kernels (AVX-512:
 * gemv_avx512_impl.h and gemv_*_avx512.c; AVX2: gemv_avx2_impl.h and gemv_*_avx2.c) and of
 * their driver (gemv_driver.c): the row-kernel contract, the summation order, the panel
 * size, the double lanes, prefetch and the row-grouping macros. Each ISA header defines,
 * before expanding QMM_GEMV_DEFINE_ROW_FN, QMM_GEMV_ROWS_FOR(nr) and the functions
 * qmm_gemv_dacc_zero and qmm_gemv_store1 used by the macros below. Only baseline x86-64
 * intrinsics (prefetch) here.
 *
 * A row kernel computes, for one W row in GGUF blocks and nr <= QMM_GEMV_MAX_NR X rows,
 * y[j*ldy] = dot(W row, X row j) without storing the dequantized row: each group of 16
 * consecutive elements is decoded in a register (to exactly the float that the type's
 * to_float gives) and multiplied into the accumulators at once.
 *
 * The summation order of one output depends only on k (never on nr, the row's position, the
 * thread or the thread count):
 *   - k is cut into panels of QMM_GEMV_PANEL = 1024 elements from 0 (the last may be shorter);
 *   - inside a panel, element p goes into lane p % 16 of f32 accumulator (p / 16) % 2, as
 *     one FMA, in increasing p;
 *   - at the end of a panel the two accumulators are added (16 f32 adds) and the 16 lanes
 *     are widened and added to 16 double lanes;
 *   - at the end the 16 double lanes are summed by a fixed tree and rounded once to float.
 * Error (u = 2^-24): per panel at most 32 FMA roundings and one add per lane, so |err| <=
 * 33 u * sum |x w| to first order for any k, plus the double sums (about (k/1024) 2^-53
 * sum |x w|) and u/2 |y| for the store — the same class as the portable f32 path (36 u).
 */
#ifndef QMM_CPU_X86_GEMV_COMMON_H
#define QMM_CPU_X86_GEMV_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <xmmintrin.h>

/* Elements per f32 panel (a power of two, a multiple of 256): the f32 accumulators are
 * widened into double lanes at the end of each panel. 1024 rather than 256: the flush costs
 * ~15% of the n = 1 decode rate at 256, ~4% at 1024; the bound below stays independent of k. */
#define QMM_GEMV_PANEL 1024

/* X rows one row kernel handles per pass (2 accumulators each: 16 zmm registers; 32 ymm on
 * AVX2, where the compiler spills). */
#define QMM_GEMV_MAX_NR 8

#define QMM_GEMV_INLINE static inline __attribute__((always_inline))

/* A row kernel: rows <= QMM_GEMV_MAX_ROWS consecutive W rows (row r at w + r*row_stride) against nr in
 * 1..QMM_GEMV_MAX_NR X rows (row j at x + j*ldx, k floats read); writes y[j*ldy + r].
 * k is a multiple of the type's block size. */
typedef void (*qmm_gemv_row_fn)(const unsigned char *w, size_t row_stride, int64_t rows,
                                int64_t k, const float *x, int64_t ldx, int nr, float *y,
                                int64_t ldy);

/* Software prefetch: a body decoding R rows side by side prefetches, for each block it reads,
 * the same block of the row R (or a multiple of R) rows further on: the rows of a chunk are
 * consecutive in memory, so this prefetches the chunk as one stream, at least
 * QMM_GEMV_PREFETCH_MIN bytes ahead. (The hardware streamer alone leaves one core at about
 * half its read rate on these interleaved rows. Distances of 1 to 32 rows and hints T0/T1
 * measured the same within noise: dev/gemv_avx512.c.) */
#ifndef QMM_GEMV_PREFETCH_MIN
#define QMM_GEMV_PREFETCH_MIN 2048
#endif

/* Bytes ahead for R rows `stride` apart. */
QMM_GEMV_INLINE size_t qmm_gemv_prefetch_ahead(int R, size_t stride) {
    const size_t group = (size_t)R * stride;
    return group * ((QMM_GEMV_PREFETCH_MIN + group - 1) / group);
}

/* Prefetch the cache lines of [p + ahead, p + ahead + bytes). */
QMM_GEMV_INLINE void qmm_gemv_prefetch(const unsigned char *p, size_t bytes, size_t ahead) {
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)p + ahead + o, _MM_HINT_T0);
}

/* The 16 double lanes of nr X rows, kept across panels (in memory: touched once per panel). */
typedef struct qmm_gemv_dacc {
    double d[QMM_GEMV_MAX_NR][16];
} qmm_gemv_dacc;

/* W rows a row kernel gets at most (the driver's chunk). */
#define QMM_GEMV_MAX_ROWS 64

/* All `rows` rows at a constant nr. BODY(w, stride, R, k, x, ldx, nr, acc_d, ib0, ib1)
 * decodes blocks [ib0, ib1) of R rows (row r's double lanes at acc_d[r]) and flushes them.
 * For nr <= 2 every row group runs over all of k at once (X fits in L1). For nr >= 3 the nr
 * X rows no longer fit in L1, so k is walked panel by panel, all rows of the chunk per panel
 * (X panel: nr * QMM_GEMV_PANEL floats <= 32 KiB). Both give the same order per output. */
#define QMM_GEMV_ROWS_NR(BODY, NR, BLOCK)                                                     \
    do {                                                                                      \
        const int64_t nbk = k / (BLOCK), per = QMM_GEMV_PANEL / (BLOCK);                      \
        qmm_gemv_dacc dacc[QMM_GEMV_MAX_ROWS];                                                \
        for (int64_t r = 0; r < rows; r++) qmm_gemv_dacc_zero(&dacc[r], NR);                  \
        if ((NR) >= 3) {                                                                      \
            for (int64_t ib0 = 0; ib0 < nbk; ib0 += per)                                      \
                for (int64_t r = 0; r < rows; r++)                                            \
                    BODY(w + (size_t)r * row_stride, row_stride, 1, k, x, ldx, NR, &dacc[r],  \
                         ib0, nbk - ib0 < per ? nbk : ib0 + per);                             \
        } else {                                                                              \
            int64_t r = 0;                                                                    \
            for (; r + QMM_GEMV_ROWS_FOR(NR) <= rows; r += QMM_GEMV_ROWS_FOR(NR))             \
                BODY(w + (size_t)r * row_stride, row_stride, QMM_GEMV_ROWS_FOR(NR), k, x, ldx, \
                     NR, &dacc[r], 0, nbk);                                                   \
            for (; r < rows; r++)                                                             \
                BODY(w + (size_t)r * row_stride, row_stride, 1, k, x, ldx, NR, &dacc[r], 0,   \
                     nbk);                                                                    \
        }                                                                                     \
        for (int64_t r = 0; r < rows; r++) qmm_gemv_store1(&dacc[r], NR, y + r, ldy);         \
    } while (0)

/* The row-kernel entry point `name` for nr = 1..QMM_GEMV_MAX_NR; BLOCK elements per block. */
#define QMM_GEMV_DEFINE_ROW_FN(name, BODY, BLOCK)                                             \
    static void name(const unsigned char *w, size_t row_stride, int64_t rows, int64_t k,      \
                     const float *x, int64_t ldx, int nr, float *y, int64_t ldy) {            \
        switch (nr) {                                                                         \
        case 1: QMM_GEMV_ROWS_NR(BODY, 1, BLOCK); break;                                      \
        case 2: QMM_GEMV_ROWS_NR(BODY, 2, BLOCK); break;                                      \
        case 3: QMM_GEMV_ROWS_NR(BODY, 3, BLOCK); break;                                      \
        case 4: QMM_GEMV_ROWS_NR(BODY, 4, BLOCK); break;                                      \
        case 5: QMM_GEMV_ROWS_NR(BODY, 5, BLOCK); break;                                      \
        case 6: QMM_GEMV_ROWS_NR(BODY, 6, BLOCK); break;                                      \
        case 7: QMM_GEMV_ROWS_NR(BODY, 7, BLOCK); break;                                      \
        default: QMM_GEMV_ROWS_NR(BODY, 8, BLOCK); break;                                     \
        }                                                                                     \
    }

/* The driver shared by every ISA (gemv_driver.c): Y[n][m] = X W^T with `row_fn`, tasks of
 * QMM_GEMV_MAX_ROWS W rows on up to n_threads OpenMP threads in dynamic order, groups of
 * QMM_GEMV_MAX_NR X rows per task. */
void qmm_gemv_drive(qmm_gemv_row_fn row_fn, int64_t m, int64_t k, const unsigned char *w,
                    size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                    int64_t ldy, int n_threads);

#endif /* QMM_CPU_X86_GEMV_COMMON_H */
