/*
 * panel_f32_avx2.c — the f32 panel kernel (contract in cpu_internal.h) on AVX2, in the
 * portable panel order bit for bit.
 *
 * The 8 lanes of the panel order are one ymm register: element p of a panel goes to lane
 * p % 8 of the register, as a rounded product (_mm256_mul_ps) then a rounded add
 * (_mm256_add_ps), in increasing p — the float operations of the portable kernel, lane by
 * lane. No FMA: this file is built with -mfma, but the project compiles C11 without GNU
 * extensions, which makes gcc's default -ffp-contract=off, so the separate multiply and add
 * are never fused (checked in the disassembly, and tests/test_panel.c compares bits with
 * data whose products round).
 *
 * Tail (len % 8 != 0): the last, partial group of 8 is loaded with a lane mask (X with
 * _mm256_maskload_ps, so nothing past x[len-1] is read) and the new lane values are blended
 * in only for lanes p % 8 < len % 8; the other lanes keep their bits, as in the portable
 * kernel, whatever the W buffer holds past len.
 *
 * Lane tree ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)): for four lane registers at once, two
 * rounds of _mm256_hadd_ps give the pair sums and then the quad sums of each 128-bit half,
 * and one _mm_add_ps adds the lower half (lanes 0-3) to the upper (lanes 4-7).
 *
 * Register blocking: 4 W rows x 3 X rows = 12 ymm accumulators; each X load feeds 4 rows and
 * each W load 3 rows. Edges use smaller blocks (every mr x nr in 1..4 x 1..3), which compute
 * each (X row, W row) dot with the same operations, so the bits do not depend on the block a
 * pair lands in.
 */
#include <immintrin.h>

#include "cpu/cpu_internal.h"
#include "cpu/x86/panel_f32_avx2.h"

#define MR_MAX 4 /* W rows per block */
#define NR_MAX 3 /* X rows per block */

/* Lane mask for the first `t` lanes (0 < t < 8): all-ones where lane < t. */
static inline __m256i tail_mask(int64_t t) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)t), lane);
}

/*
 * Reduce four lane registers with the panel tree: returns (tree(a), tree(b), tree(c),
 * tree(d)). hadd(a, b) = (a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, a6+a7, b4+b5, b6+b7).
 */
static inline __m128 tree4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
    const __m256 q = _mm256_hadd_ps(ab, cd); /* (a0123, b0123, c0123, d0123 | a4567, ...) */
    return _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1));
}

/* One block: MR W rows x NR X rows over the whole panel (MR <= 4, NR <= 3, constants after
 * inlining, so the accumulators stay in registers). */
static inline __attribute__((always_inline)) void block(int MR, int NR, int64_t len,
                                                        const float *w, int64_t ldw,
                                                        const float *x, int64_t ldx,
                                                        double *acc, int64_t ldacc) {
    __m256 a[NR_MAX][MR_MAX];
    for (int j = 0; j < NR; j++)
        for (int r = 0; r < MR; r++) a[j][r] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + QMM_CPU_LANES <= len; p += QMM_CPU_LANES) {
        __m256 xv[NR_MAX];
        for (int j = 0; j < NR; j++) xv[j] = _mm256_loadu_ps(x + j * ldx + p);
        for (int r = 0; r < MR; r++) {
            const __m256 wv = _mm256_loadu_ps(w + r * ldw + p);
            for (int j = 0; j < NR; j++)
                a[j][r] = _mm256_add_ps(a[j][r], _mm256_mul_ps(xv[j], wv));
        }
    }
    if (p < len) {
        /* W rows have ldw >= 8 * ceil(len / 8) floats (ldw is a multiple of 16), so the
         * full load stays inside the buffer; lanes past len are discarded by the blend. */
        const __m256i mi = tail_mask(len - p);
        const __m256 m = _mm256_castsi256_ps(mi);
        __m256 xv[NR_MAX];
        for (int j = 0; j < NR; j++) xv[j] = _mm256_maskload_ps(x + j * ldx + p, mi);
        for (int r = 0; r < MR; r++) {
            const __m256 wv = _mm256_loadu_ps(w + r * ldw + p);
            for (int j = 0; j < NR; j++)
                a[j][r] = _mm256_blendv_ps(
                    a[j][r], _mm256_add_ps(a[j][r], _mm256_mul_ps(xv[j], wv)), m);
        }
    }
    for (int j = 0; j < NR; j++) {
        /* Rows past MR repeat row 0 in the tree and are not stored. */
        const __m128 s = tree4(a[j][0], MR > 1 ? a[j][1] : a[j][0], MR > 2 ? a[j][2] : a[j][0],
                               MR > 3 ? a[j][3] : a[j][0]);
        double *out = acc + j * ldacc;
        if (MR == 4) {
            _mm256_storeu_pd(out, _mm256_add_pd(_mm256_loadu_pd(out), _mm256_cvtps_pd(s)));
        } else {
            float t[4];
            _mm_storeu_ps(t, s);
            for (int r = 0; r < MR; r++) out[r] += (double)t[r];
        }
    }
}

/* All W rows of the panel against NR X rows: blocks of 4 rows, then the 1..3 left. */
static inline __attribute__((always_inline)) void rows(int NR, int64_t mr, int64_t len,
                                                       const float *w, int64_t ldw,
                                                       const float *x, int64_t ldx,
                                                       double *acc, int64_t ldacc) {
    int64_t r = 0;
    for (; r + MR_MAX <= mr; r += MR_MAX)
        block(MR_MAX, NR, len, w + r * ldw, ldw, x, ldx, acc + r, ldacc);
    switch (mr - r) {
    case 3: block(3, NR, len, w + r * ldw, ldw, x, ldx, acc + r, ldacc); break;
    case 2: block(2, NR, len, w + r * ldw, ldw, x, ldx, acc + r, ldacc); break;
    case 1: block(1, NR, len, w + r * ldw, ldw, x, ldx, acc + r, ldacc); break;
    default: break;
    }
}

void qmm_cpu_panel_f32_avx2(int64_t mr, int64_t nr, int64_t len, const float *w, int64_t ldw,
                            const float *x, int64_t ldx, double *acc, int64_t ldacc) {
    int64_t j = 0;
    for (; j + NR_MAX <= nr; j += NR_MAX)
        rows(NR_MAX, mr, len, w, ldw, x + j * ldx, ldx, acc + j * ldacc, ldacc);
    if (nr - j == 2) rows(2, mr, len, w, ldw, x + j * ldx, ldx, acc + j * ldacc, ldacc);
    if (nr - j == 1) rows(1, mr, len, w, ldw, x + j * ldx, ldx, acc + j * ldacc, ldacc);
}
