/*
 * gemm_int8_i8mm.c — the int8 class (arm_kernels.h) for several X rows at once with SMMLA
 * (Armv8.6 I8MM, built with -march=armv8.2-a+dotprod+i8mm): one SMMLA multiplies a 2 x 8
 * int8 block of X (two rows) by a 2 x 8 block of W (two rows) into 2 x 2 int32 lanes, so per
 * 32-element block a pair of W rows against a pair of X rows takes 4 SMMLA (2 + 2 for the
 * 16-element halves of q2_K, q3_K, q6_K, nvfp4) instead of 8 SDOT and 4 ADDV.
 *
 * W, two forms with the same integers and scales:
 *   - on the fly (qmm_arm_gemm_int8_i8mm): read from its GGUF blocks and decoded per pass
 *     (int8_blocks.h, as the gemv does), the two rows' blocks zipped into SMMLA's operand
 *     layout by 64-bit lanes (4 ZIP per block); the decode of a W pair is shared by up to
 *     QMM_ARM_I8MM_XPAIRS pairs of X rows per pass, and repeated for each further pass;
 *   - repacked (qmm_arm_i8mm_pack, qmm_arm_gemm_int8_i8mm_packed): the same decode and zip
 *     done once into records of QMM_ARM_I8MM_REC bytes per (W pair, 32-block) (arm_kernels.h
 *     has the layout), which every pass then loads as they are.
 * X is quantized by the rule once per call and its pairs of rows interleaved the same way (X
 * pair p, block b: 4 x 16 bytes [x0 8c..8c+7, x1 8c..8c+7]).
 *
 * The integers are the gemv's (exact dots of the same int8 values) and each output's T, FMA
 * and final sum are the gemv's operations, lane by lane in float64x2 (wblk_t2 below follows
 * wblk_t step by step), so the outputs are bit-identical to qmm_arm_gemv_int8_dotprod for
 * every n, and the repacked form gives the on-the-fly form's bits (the record holds the
 * decoded operands and the scales as the decode made them): the int8 strategy at level i8mm
 * is batch-invariant across its gemv / GEMM / repacked switches.
 */
#include <arm_neon.h>
#include <stdlib.h>

#include "cpu/arm/int8_blocks.h"

#define XPAIRS QMM_ARM_I8MM_XPAIRS

size_t qmm_arm_gemm_int8_i8mm_scratch(int64_t n, int64_t k) {
    return (size_t)((n + 1) / 2) * (size_t)(k / 32) * 64;
}

/* The pair-interleaved copy of the prepared X rows (the second row of a last odd pair is 0). */
static void x_pairs(const qmm_arm_int8_x *xs, int64_t n, int64_t k, int8_t *xp, int n_threads) {
    const int64_t nb = k / 32, pairs = (n + 1) / 2;
    const int threads = n_threads < 1 ? 1 : n_threads;
#pragma omp parallel for num_threads(threads) schedule(static) if (pairs >= 8 && threads > 1)
    for (int64_t p = 0; p < pairs; p++) {
        const int8_t *x0 = xs[2 * p].q, *x1 = 2 * p + 1 < n ? xs[2 * p + 1].q : NULL;
        for (int64_t b = 0; b < nb; b++) {
            int8_t *o = xp + (p * nb + b) * 64;
            for (int h = 0; h < 2; h++) {
                const int64x2_t a = vreinterpretq_s64_s8(vld1q_s8(x0 + 32 * b + 16 * h));
                const int64x2_t c = x1 ? vreinterpretq_s64_s8(vld1q_s8(x1 + 32 * b + 16 * h)) : vdupq_n_s64(0);
                vst1q_s8(o + 32 * h, vreinterpretq_s8_s64(vzip1q_s64(a, c)));
                vst1q_s8(o + 32 * h + 16, vreinterpretq_s8_s64(vzip2q_s64(a, c)));
            }
        }
    }
}

/* The zipped W operands of one block of rows A and B (w0: elements 0..15, w1: 16..31). */
QMM_ARM_INL void w_zip(int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1, int8x16_t c[4]) {
    const int64x2_t A0 = vreinterpretq_s64_s8(a0), A1 = vreinterpretq_s64_s8(a1);
    const int64x2_t B0 = vreinterpretq_s64_s8(b0), B1 = vreinterpretq_s64_s8(b1);
    c[0] = vreinterpretq_s8_s64(vzip1q_s64(A0, B0));
    c[1] = vreinterpretq_s8_s64(vzip2q_s64(A0, B0));
    c[2] = vreinterpretq_s8_s64(vzip1q_s64(A1, B1));
    c[3] = vreinterpretq_s8_s64(vzip2q_s64(A1, B1));
}

QMM_ARM_INL float64x2_t i2d(int32x2_t v) { return vcvtq_f64_s64(vmovl_s32(v)); }
QMM_ARM_INL float64x2_t pair(double a, double b) { return vcombine_f64(vdup_n_f64(a), vdup_n_f64(b)); }
QMM_ARM_INL int32x2_t ipair(int32_t a, int32_t b) { return vset_lane_s32(b, vdup_n_s32(a), 1); }

/* wblk_t for one X row against W rows A (lane 0) and B (lane 1): ia, ib the lanes' dots,
 * xa, xb, s32 the X row's sums. The same operations as wblk_t in each lane. */
QMM_ARM_INL float64x2_t wblk_t2(qmm_type t, const wscale *A, const wscale *B, int32x2_t ia,
                                int32x2_t ib, int32_t xa, int32_t xb, double s32) {
    if (t == QMM_TYPE_NVFP4) return vfmaq_f64(vmulq_f64(i2d(ia), pair(A->d, B->d)), i2d(ib), pair(A->dm, B->dm));
    if (qmm_i8_sub16(t)) {
        const int32x2_t i = vmla_s32(vmul_s32(ia, ipair(A->sa, B->sa)), ib, ipair(A->sb, B->sb));
        const float64x2_t p = vmulq_f64(i2d(i), pair(A->d, B->d));
        if (t != QMM_TYPE_Q2_K) return p;
        const int32x2_t mm = vmla_s32(vmul_s32(ipair(A->ma, B->ma), vdup_n_s32(xa)), ipair(A->mb, B->mb), vdup_n_s32(xb));
        return vfmaq_f64(p, i2d(mm), pair(A->dm, B->dm));
    }
    const float64x2_t p = vmulq_f64(i2d(ia), pair(A->d, B->d));
    if (t == QMM_TYPE_Q4_1 || t == QMM_TYPE_Q5_1 || t == QMM_TYPE_Q4_K || t == QMM_TYPE_Q5_K)
        return vfmaq_f64(p, vdupq_n_f64(s32), pair(A->dm, B->dm));
    return p;
}

/* One record of the repacked form (arm_kernels.h): rows A and B of a pair, one 32-block. */
QMM_ARM_INL void rec_store(unsigned char *rec, const int8x16_t wc[4], const wscale *a, const wscale *b) {
    for (int v = 0; v < 4; v++) vst1q_s8((int8_t *)rec + 16 * v, wc[v]);
    const double d[4] = {a->d, b->d, a->dm, b->dm};
    memcpy(rec + 64, d, sizeof d);
    const int8_t sc[8] = {(int8_t)a->sa, (int8_t)a->sb, (int8_t)a->ma, (int8_t)a->mb,
                          (int8_t)b->sa, (int8_t)b->sb, (int8_t)b->ma, (int8_t)b->mb};
    memcpy(rec + 96, sc, sizeof sc);
}

QMM_ARM_INL void rec_load(const unsigned char *rec, int8x16_t wc[4], wscale *a, wscale *b) {
    for (int v = 0; v < 4; v++) wc[v] = vld1q_s8((const int8_t *)rec + 16 * v);
    double d[4];
    int8_t sc[8];
    memcpy(d, rec + 64, sizeof d);
    memcpy(sc, rec + 96, sizeof sc);
    *a = (wscale){.sa = sc[0], .sb = sc[1], .ma = sc[2], .mb = sc[3], .d = d[0], .dm = d[2]};
    *b = (wscale){.sa = sc[4], .sb = sc[5], .ma = sc[6], .mb = sc[7], .d = d[1], .dm = d[3]};
}

/* Block b of W rows A and B as SMMLA operands and scales: decoded from group ga, gb (on the
 * fly), or loaded from the pair's records at pk (repacked). */
QMM_ARM_INL void wpair_block(qmm_type t, int packed, const unsigned char *pk, const wgroup *ga,
                             const wgroup *gb, int c, int64_t b, int8x16_t wc[4], wscale *wa,
                             wscale *wb) {
    if (packed) {
        rec_load(pk + (size_t)b * QMM_ARM_I8MM_REC, wc, wa, wb);
        return;
    }
    int8x16_t a0, a1, b0, b1;
    wblk_decode(t, ga, c, &a0, &a1, wa);
    wblk_decode(t, gb, c, &b0, &b1, wb);
    w_zip(a0, a1, b0, b1, wc);
}

/* W rows A, B (B == A when there is no second row) against X pairs [p0, p0 + np): acc[q][par]
 * [r] holds X row 2q + r against (A, B). packed: the pair's records at pk instead of the GGUF
 * rows ra, rb. */
QMM_ARM_INL void tile(qmm_type t, int packed, const unsigned char *pk, const unsigned char *ra,
                      const unsigned char *rb, int64_t k, const int8_t *xp, int64_t p0, int np,
                      const qmm_arm_int8_x *xs, int64_t n, float *y, int64_t ldy, int64_t i,
                      int two_w) {
    float64x2_t acc[XPAIRS][2][2];
    for (int q = 0; q < np; q++)
        for (int par = 0; par < 2; par++) acc[q][par][0] = acc[q][par][1] = vdupq_n_f64(0.0);
    const int G = wblk_group(t);
    const int64_t nb = k / 32, ngr = (nb + G - 1) / G;
    const int32x4_t z = vdupq_n_s32(0);
    for (int64_t g = 0; g < ngr; g++) {
        wgroup ga, gb;
        if (!packed) {
            wgroup_load(t, ra, g, &ga);
            wgroup_load(t, rb, g, &gb);
        }
        const int cmax = g * G + G <= nb ? G : (int)(nb - g * G);
#pragma GCC unroll 8
        for (int c = 0; c < G; c++) {
            if (c >= cmax) break;
            const int64_t b = g * G + c;
            const int par = c & 1;
            int8x16_t wc[4];
            wscale wa, wb;
            wpair_block(t, packed, pk, &ga, &gb, c, b, wc, &wa, &wb);
            for (int q = 0; q < np; q++) {
                const int8_t *xb = xp + ((p0 + q) * nb + b) * 64;
                int32x4_t ia, ib = z;
                if (qmm_i8_sub16(t)) {
                    ia = vmmlaq_s32(vmmlaq_s32(z, vld1q_s8(xb), wc[0]), vld1q_s8(xb + 16), wc[1]);
                    ib = vmmlaq_s32(vmmlaq_s32(z, vld1q_s8(xb + 32), wc[2]), vld1q_s8(xb + 48), wc[3]);
                } else {
                    ia = vmmlaq_s32(vmmlaq_s32(vmmlaq_s32(vmmlaq_s32(z, vld1q_s8(xb), wc[0]), vld1q_s8(xb + 16), wc[1]),
                                               vld1q_s8(xb + 32), wc[2]),
                                    vld1q_s8(xb + 48), wc[3]);
                }
                for (int r = 0; r < 2; r++) {
                    const int64_t j = 2 * (p0 + q) + r;
                    if (j >= n) break;
                    const int32x2_t la = r ? vget_high_s32(ia) : vget_low_s32(ia);
                    const int32x2_t lb = r ? vget_high_s32(ib) : vget_low_s32(ib);
                    const float64x2_t tb =
                        wblk_t2(t, &wa, &wb, la, lb, xs[j].s16[2 * b], xs[j].s16[2 * b + 1], xs[j].s32[b]);
                    acc[q][par][r] = vfmaq_f64(acc[q][par][r], tb, vdupq_n_f64(xs[j].dx[b]));
                }
            }
        }
    }
    for (int q = 0; q < np; q++)
        for (int r = 0; r < 2; r++) {
            const int64_t j = 2 * (p0 + q) + r;
            if (j >= n) break;
            const float32x2_t v = vcvt_f32_f64(vaddq_f64(acc[q][0][r], acc[q][1][r]));
            y[j * ldy + i] = vget_lane_f32(v, 0);
            if (two_w) y[j * ldy + i + 1] = vget_lane_f32(v, 1);
        }
}

/* W rows [i0, i1) (i0 even) against every X pair: from the GGUF rows at w (pk NULL) or from
 * the repacked records at pk. */
typedef void (*rows_fn)(const unsigned char *w, size_t row_stride, const unsigned char *pk,
                        int64_t i0, int64_t i1, int64_t k, int64_t n, const qmm_arm_int8_x *xs,
                        const int8_t *xp, float *y, int64_t ldy);

QMM_ARM_INL void rows(qmm_type t, int packed, const unsigned char *w, size_t row_stride,
                      const unsigned char *pk, int64_t i0, int64_t i1, int64_t k, int64_t n,
                      const qmm_arm_int8_x *xs, const int8_t *xp, float *y, int64_t ldy) {
    const int64_t pairs = (n + 1) / 2;
    for (int64_t i = i0; i < i1; i += 2) {
        const unsigned char *ra = w + (size_t)i * row_stride;
        const int two = i + 1 < i1;
        const unsigned char *rb = two ? ra + row_stride : ra;
        const unsigned char *pki = packed ? pk + (size_t)(i / 2) * (size_t)(k / 32) * QMM_ARM_I8MM_REC : NULL;
        for (int64_t p0 = 0; p0 < pairs; p0 += XPAIRS) {
            const int np = pairs - p0 < XPAIRS ? (int)(pairs - p0) : XPAIRS;
            tile(t, packed, pki, ra, rb, k, xp, p0, np, xs, n, y, ldy, i, two);
        }
    }
}

/* The on-the-fly and the repacked instance of every type (constants: one compiled loop each). */
#define ROWS(p, E, nm)                                                                           \
    static void p##_##nm(const unsigned char *w, size_t row_stride, const unsigned char *pk,     \
                         int64_t i0, int64_t i1, int64_t k, int64_t n, const qmm_arm_int8_x *xs, \
                         const int8_t *xp, float *y, int64_t ldy) {                              \
        if (pk != NULL) rows(QMM_TYPE_##E, 1, w, row_stride, pk, i0, i1, k, n, xs, xp, y, ldy);  \
        else rows(QMM_TYPE_##E, 0, w, row_stride, NULL, i0, i1, k, n, xs, xp, y, ldy);           \
    }
QMM_I8_TYPES(ROWS, rows)
#undef ROWS

static rows_fn rows_for(qmm_type type) {
    switch (type) {
    QMM_I8_TYPES(QMM_I8_CASE_RETURN, rows)
    default: return NULL;
    }
}

/* ---------------------------------------------------------------------------------------
 * The repacked form
 * ------------------------------------------------------------------------------------- */

size_t qmm_arm_i8mm_pack_bytes(int64_t m, int64_t k) {
    return (size_t)((m + 1) / 2) * (size_t)(k / 32) * QMM_ARM_I8MM_REC;
}

/* The records of one W pair (B == A for a last odd row): the decode and zip of the on-the-fly
 * path, stored. */
#define PACK(p, E, nm)                                                                           \
    static void p##_##nm(const unsigned char *ra, const unsigned char *rb, int64_t k,            \
                         unsigned char *out) {                                                   \
        const int G = wblk_group(QMM_TYPE_##E);                                                  \
        const int64_t nb = k / 32, ngr = (nb + G - 1) / G;                                       \
        for (int64_t g = 0; g < ngr; g++) {                                                      \
            wgroup ga, gb;                                                                       \
            wgroup_load(QMM_TYPE_##E, ra, g, &ga);                                               \
            wgroup_load(QMM_TYPE_##E, rb, g, &gb);                                               \
            const int cmax = g * G + G <= nb ? G : (int)(nb - g * G);                            \
            for (int c = 0; c < cmax; c++) {                                                     \
                int8x16_t wc[4];                                                                 \
                wscale wa = {0}, wb = {0};                                                       \
                wpair_block(QMM_TYPE_##E, 0, NULL, &ga, &gb, c, 0, wc, &wa, &wb);                \
                rec_store(out + (size_t)(g * G + c) * QMM_ARM_I8MM_REC, wc, &wa, &wb);           \
            }                                                                                    \
        }                                                                                        \
    }
QMM_I8_TYPES(PACK, pack)
#undef PACK

typedef void (*pack_fn)(const unsigned char *, const unsigned char *, int64_t, unsigned char *);

static pack_fn pack_for(qmm_type type) {
    switch (type) {
    QMM_I8_TYPES(QMM_I8_CASE_RETURN, pack)
    default: return NULL;
    }
}

void qmm_arm_i8mm_pack(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                       size_t row_stride, void *dst, int n_threads) {
    const pack_fn fn = pack_for(type);
    if (fn == NULL || m <= 0) return;
    const int64_t pairs = (m + 1) / 2;
    const size_t pair_bytes = (size_t)(k / 32) * QMM_ARM_I8MM_REC;
    const int threads = n_threads < 1 ? 1 : n_threads;
#pragma omp parallel for num_threads(threads) schedule(static) if (pairs >= 16 && threads > 1)
    for (int64_t p = 0; p < pairs; p++) {
        const unsigned char *ra = w + (size_t)(2 * p) * row_stride;
        const unsigned char *rb = 2 * p + 1 < m ? ra + row_stride : ra;
        fn(ra, rb, k, (unsigned char *)dst + (size_t)p * pair_bytes);
    }
}

static void gemm(qmm_type type, int64_t m, int64_t k, const unsigned char *w, size_t row_stride,
                 const unsigned char *pk, int64_t n, const qmm_arm_int8_x *xs, void *scratch,
                 float *y, int64_t ldy, int n_threads) {
    const rows_fn fn = rows_for(type);
    if (fn == NULL || m <= 0 || n <= 0) return;
    int8_t *xp = scratch;
    x_pairs(xs, n, k, xp, n_threads);
    const int64_t tasks = (m + QMM_ARM_INT8_TASK_ROWS - 1) / QMM_ARM_INT8_TASK_ROWS;
    int threads = n_threads < 1 ? 1 : n_threads;
    if (threads > tasks) threads = (int)tasks;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t i0 = t * QMM_ARM_INT8_TASK_ROWS;
        fn(w, row_stride, pk, i0, i0 + QMM_ARM_INT8_TASK_ROWS < m ? i0 + QMM_ARM_INT8_TASK_ROWS : m,
           k, n, xs, xp, y, ldy);
    }
}

void qmm_arm_gemm_int8_i8mm(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                            size_t row_stride, int64_t n, const qmm_arm_int8_x *xs, void *scratch,
                            float *y, int64_t ldy, int n_threads) {
    gemm(type, m, k, w, row_stride, NULL, n, xs, scratch, y, ldy, n_threads);
}

void qmm_arm_gemm_int8_i8mm_packed(qmm_type type, int64_t m, int64_t k, const void *packed,
                                   int64_t n, const qmm_arm_int8_x *xs, void *scratch, float *y,
                                   int64_t ldy, int n_threads) {
    if (packed == NULL) return;
    /* w is not read: a non-NULL stand-in for the row pointers the loop forms */
    gemm(type, m, k, packed, 0, packed, n, xs, scratch, y, ldy, n_threads);
}
