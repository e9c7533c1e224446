/*
 * gemv_int8_common.h — the ISA-independent half of the int8 gemv kernels on native GGUF
 * blocks (AVX-512-VNNI: gemv_int8_avx512.c, gemv_int8_codebook_avx512.c; AVX2 and AVX-VNNI on
 * ymm: gemv_int8_avx2_impl.h): the layout of the quantized X, the walk over groups of W rows,
 * and the driver (gemv_int8_driver.c, portable C) that quantizes X and hands tasks of W rows
 * to the threads. The types and their per-type facts: cpu/int8_types.h (shared with aarch64).
 *
 * What every int8 gemv shares (docs/KERNELS.md, "gemv_int8_avx512" and "int8_avx2"):
 *   - X is quantized per call, per 32-element block, by the int8 rule (qmm_x86_int8_quantize_row
 *     and its AVX2 / portable twins, bit-identical), into a scratch copy padded with zero blocks
 *     to a multiple of QMM_I8_CHUNK = 512 elements;
 *   - a W row is walked in chunks of 512 elements; an ISA decodes a chunk's integer quants into
 *     registers in an order of its own (its elem() function) and the X copy is stored permuted
 *     into that order (qmm_i8_layout.run), so one load of X meets one register of W;
 *   - the exact int32 dot of every sub-block (32 elements; 16 for q2_K, q3_K, q6_K, nvfp4) lands
 *     in a fixed result lane: lane l holds sub-block lane_sub[l] of the chunk (16 lanes, or 32 in
 *     two vectors of 16 for the 16-element sub-blocks). The lane order is the same on every ISA
 *     (each derives it from its own reduction tree and decode order, and the AVX2 decoders are
 *     laid out to give AVX-512's), and so are the float operations per lane, so the AVX2 and
 *     AVX-512 kernels give the same bits;
 *   - per chunk and result lane the X copy carries dx of the lane's sub-block, the exact int32
 *     sum of its quants and s = dx * sum (the offset and min terms).
 * Rows and threads: R (1..QMM_I8_GROUP) consecutive W rows are walked side by side for passes of
 * n <= QMM_I8_GROUP_NMAX X rows (memory-level parallelism), one row at a time otherwise; X rows
 * go in groups of up to QMM_I8_NMAX per pass over a W row; tasks of W rows follow
 * gemv_int8_tasks.h. A row's arithmetic is the same for any R, group or task, so row j of Y has
 * the same bits for every n and thread count.
 */
#ifndef QMM_CPU_X86_GEMV_INT8_COMMON_H
#define QMM_CPU_X86_GEMV_INT8_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xmmintrin.h>

#include "cpu/int8_types.h"
#include "cpu/x86/gemv_int8_tasks.h"
#include "formats/blocks.h"
#include "qmm.h"

#define QMM_I8_CHUNK 512 /* elements per chunk */
#define QMM_I8_NMAX 8    /* X rows per pass over a W row */
#define QMM_I8_LANES 32  /* per-lane X data per chunk (16 used by 32-element sub-blocks) */
#define QMM_I8_RUN 8     /* the X permutation moves runs of 8 consecutive elements */

/* Bytes of W per chunk of 512 elements (0 for a type outside the class). */
static inline size_t qmm_i8_chunk_bytes(qmm_type t) {
    const int be = qmm_i8_block_elems(t);
    return be == 0 ? 0 : qmm_i8_block_bytes(t) * (size_t)(QMM_I8_CHUNK / be);
}

/* The X layout of one ISA's kernels for one type. */
typedef struct qmm_i8_layout {
    /* run[r]: the chunk element stored at bytes 8r..8r+7 of the X copy's chunk (the first of
     * 8 consecutive elements) */
    uint16_t run[QMM_I8_CHUNK / QMM_I8_RUN];
    int32_t lane_sub[QMM_I8_LANES]; /* sub-block of the chunk in each result lane */
    /* lane_out[L]: the ISA's accumulator lane that holds canonical lane L (qmm_i8_canonical_lane)
     * of the 16-lane accumulator; the identity where the ISA's lanes are the canonical ones */
    int32_t lane_out[16];
    int lanes, sub_size;            /* 16 lanes of 32 elements, or 32 of 16 */
    int flip;                       /* XORed into every stored quant (0x80: x + 128) */
} qmm_i8_layout;

/* One prepared X row (pointers into the scratch): the permuted quants, then per chunk and
 * lane (QMM_I8_LANES apart) dx, s = dx * sum and the int32 sum of the lane's sub-block. */
typedef struct qmm_i8_xrow {
    const int8_t *q;
    const float *dx, *s;
    const int32_t *sum;
} qmm_i8_xrow;

/* The X quantizer: qmm_x86_int8_quantize_row's contract (x86_kernels.h). */
typedef void (*qmm_i8_quantize_fn)(const float *x, int64_t k, int8_t *q, float *dx, float *s,
                                   int64_t ld);

/* W rows [i0, i1) of m against n X rows in layout `lay`. */
typedef void (*qmm_i8_rows_fn)(int64_t i0, int64_t i1, int64_t m, int64_t k,
                               const unsigned char *w, size_t row_stride, int64_t n,
                               const qmm_i8_xrow *xr, const qmm_i8_layout *lay, float *y,
                               int64_t ldy);

/*
 * The canonical result lanes: the sub-block of the chunk that accumulator lane l (0..15) of
 * the AVX-512 kernels takes from the chunk's first super-block / first 256 elements (for
 * 32-element sub-blocks lanes 8..15 take the second 256; for 16-element ones lane l takes
 * sub-block 16 + canonical(l) of the second 256 next), as their reduction trees give it:
 * natural for the legacy, codebook and q6_K types; 0 2 1 3 4 6 5 7 (+8) for q4_K and q5_K;
 * 0 1 8 9 2 3 10 11 4 5 12 13 6 7 14 15 for q2_K and q3_K. An ISA whose own lanes are a
 * permutation of these within each group of 8 (lane_out) gives the same bits once it puts its
 * accumulators back in this order before the final sum. tests/test_int8.c checks the kernels
 * against each other bit for bit.
 */
static inline int qmm_i8_canonical_lane(qmm_type t, int l) {
    static const int8_t k4[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    static const int8_t k2[16] = {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15};
    if (t == QMM_TYPE_Q4_K || t == QMM_TYPE_Q5_K) return 8 * (l / 8) + k4[l % 8];
    if (t == QMM_TYPE_Q2_K || t == QMM_TYPE_Q3_K) return k2[l];
    return l;
}

/* lay->lane_out from lay->lane_sub (the ISA's lanes 0..15) and the canonical lanes. Returns
 * false if some canonical lane is not among the ISA's lanes of its group of 8. */
static inline bool qmm_i8_layout_out(qmm_i8_layout *lay, qmm_type t) {
    bool ok = true;
    for (int L = 0; L < 16; L++) {
        const int want = qmm_i8_canonical_lane(t, L);
        int at = -1;
        for (int l = 8 * (L / 8); l < 8 * (L / 8) + 8; l++)
            if (lay->lane_sub[l] == want) at = l;
        ok &= at >= 0;
        lay->lane_out[L] = at < 0 ? L : at;
    }
    return ok;
}

/* Scratch bytes of qmm_i8_drive for n X rows of k elements (per row the permuted and the
 * natural quants, padded to a multiple of 512, and 3 x 32 lanes of 4 bytes per chunk; for
 * n > QMM_I8_NMAX one record per row). */
size_t qmm_i8_scratch(int64_t n, int64_t k);

/* Quantize the n X rows with `quantize` into `scratch` (>= qmm_i8_scratch bytes, 64-byte
 * aligned) in layout `lo`, then run fn over tasks of W rows (qmm_x86_int8_task_rows) on up to
 * n_threads OpenMP threads, dynamic schedule. */
void qmm_i8_drive(qmm_i8_rows_fn fn, const qmm_i8_layout *lo, qmm_i8_quantize_fn quantize,
                  int64_t m, int64_t k, const unsigned char *w, size_t row_stride, int64_t n,
                  const float *x, int64_t ldx, float *y, int64_t ldy, void *scratch,
                  int n_threads);

/* The layout of an ISA whose elem(v, b) gives the chunk element in byte b of register v
 * (registers of `reg_bytes` bytes, QMM_I8_CHUNK / reg_bytes of them): runs from elem at every
 * 8th byte. Returns false if some run is not 8 consecutive elements. */
static inline bool qmm_i8_layout_runs(qmm_i8_layout *lo, int reg_bytes,
                                      int (*elem)(qmm_type, int, int), qmm_type type) {
    bool ok = true;
    for (int r = 0; r < QMM_I8_CHUNK / QMM_I8_RUN; r++) {
        const int v = r * QMM_I8_RUN / reg_bytes, b = r * QMM_I8_RUN % reg_bytes;
        lo->run[r] = (uint16_t)elem(type, v, b);
        for (int o = 1; o < QMM_I8_RUN; o++) ok &= elem(type, v, b + o) == lo->run[r] + o;
    }
    return ok;
}

/* The row walk of one type: rows i0..i1-1; passes of n <= QMM_I8_GROUP_NMAX X rows take
 * groups of QMM_I8_GROUP rows, prefetching the next group (while it lies within W), then single
 * rows; other passes single rows prefetching two rows ahead (first pass of X rows only: later
 * passes find the task in L2). ROW_KERNEL(TYPE, w, row_stride, R, prefetch_off, k, n, xr,
 * lay, y, ldy) computes R rows; it is expanded with n = 1 and 2 as constants too (the decode
 * sizes get code with their accumulators in registers). */
#define QMM_I8_DEFINE_ROWS(name, ROW_KERNEL, TYPE)                                            \
    static void name(int64_t i0, int64_t i1, int64_t m, int64_t k, const unsigned char *w,    \
                     size_t row_stride, int64_t n, const qmm_i8_xrow *xr,                     \
                     const qmm_i8_layout *lay, float *y, int64_t ldy) {                       \
        for (int64_t g = 0; g < n; g += QMM_I8_NMAX) {                                        \
            const int64_t ng = n - g < QMM_I8_NMAX ? n - g : QMM_I8_NMAX;                     \
            int64_t i = i0;                                                                   \
            if (ng <= QMM_I8_GROUP_NMAX)                                                      \
                for (; i + QMM_I8_GROUP <= i1; i += QMM_I8_GROUP) {                           \
                    const size_t pf =                                                         \
                        g == 0 && i + 2 * QMM_I8_GROUP <= m ? QMM_I8_GROUP * row_stride : 0;  \
                    if (ng == 1)                                                              \
                        ROW_KERNEL(TYPE, w + (size_t)i * row_stride, row_stride, QMM_I8_GROUP,\
                                   pf, k, 1, xr + g, lay, y + g * ldy + i, ldy);              \
                    else                                                                      \
                        ROW_KERNEL(TYPE, w + (size_t)i * row_stride, row_stride, QMM_I8_GROUP,\
                                   pf, k, 2, xr + g, lay, y + g * ldy + i, ldy);              \
                }                                                                             \
            for (; i < i1; i++) {                                                             \
                const size_t pf = g == 0 && i + 2 < m ? 2 * row_stride : 0;                   \
                if (ng == 1)                                                                  \
                    ROW_KERNEL(TYPE, w + (size_t)i * row_stride, row_stride, 1, pf, k, 1,     \
                               xr + g, lay, y + g * ldy + i, ldy);                            \
                else                                                                          \
                    ROW_KERNEL(TYPE, w + (size_t)i * row_stride, row_stride, 1, pf, k, ng,    \
                               xr + g, lay, y + g * ldy + i, ldy);                            \
            }                                                                                 \
        }                                                                                     \
    }

/* getter(type): the layout of `type` made by make(type, &layout) for every type with has(type),
 * once per process (pthread_once), so calls do not rebuild it. */
#define QMM_I8_LAYOUT_CACHE(getter, make, has)                                                \
    static qmm_i8_layout getter##_tab[QMM_TYPE_COUNT];                                        \
    static pthread_once_t getter##_once = PTHREAD_ONCE_INIT;                                  \
    static void getter##_init(void) {                                                         \
        for (int t_ = 0; t_ < QMM_TYPE_COUNT; t_++)                                           \
            if (has((qmm_type)t_)) make((qmm_type)t_, &getter##_tab[t_]);                     \
    }                                                                                         \
    static const qmm_i8_layout *getter(qmm_type t) {                                          \
        pthread_once(&getter##_once, getter##_init);                                          \
        return &getter##_tab[t];                                                              \
    }

/* Prefetch (T0) the `bytes` of one chunk read at p, `off` bytes further on (off 0: none). */
static inline __attribute__((always_inline)) void qmm_i8_prefetch(const unsigned char *p,
                                                                  size_t bytes, size_t off) {
    if (off == 0) return;
#pragma GCC unroll 8
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)p + off + o, _MM_HINT_T0);
}

#endif /* QMM_CPU_X86_GEMV_INT8_COMMON_H */
