/*
 * gemm_int8_amx.c — Y = X W^T with AMX TDPBSSD on int8 tile-packed weights (q4_0, q8_0,
 * q4_K; layout in x86_kernels.h) and X quantized per call to int8 per 32-element block.
 *
 * Per call every X row is quantized (AVX-512) per 32-element block c: dx = max|x| / 127,
 * q = round-to-nearest-even(x * (127 / max|x|)) in -127..127 (an all-zero block has dx = 0),
 * and s = dx * sum(q) (the block sum the q4_K min term needs). Rows are padded to a multiple
 * of 16 with zeros. The output is cut into 16 x 16 tiles (16 X rows x 16 W rows); for one
 * tile the 16 f32 accumulator rows live in zmm registers and for c = 0..k/32-1 in order:
 *     TDPBSSD (K = 32) into a zeroed int32 tile -> stored to a 1 KiB buffer;
 *     acc[r] = fma((float)isum[r], dx[r][c] * d_w[c], acc[r]);
 *     q4_K:  acc[r] = fma(s[r][c], mn_w[c], acc[r])          (mn_w = -(dmin * mn))
 * so an output depends only on its X row, its W row and k (batch invariant).
 * Threads: tasks of (up to 8 W tiles) x (up to 4 X tiles) handed out one at a time
 * (schedule(dynamic)); each output belongs to one task, so the schedule changes no bit. X is
 * quantized per 16-row tile by the first task that needs it (no barrier).
 * Tile configuration: inline-asm ldtilecfg (see gemm_bf16_amx.c for why).
 */
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/amx_tiles.h"
#include "cpu/x86/x86_kernels.h"

/* tmm0, tmm3, tmm6, tmm7: int32 results (16 x 64 B); tmm1, tmm4: X quants (16 x 32 B,
 * K = 32); tmm2, tmm5: W quants (8 x 64 B: 8 groups of 4 k-elements x 16 W rows). */
static void tiles_configure(void) {
    static const uint16_t colsb[8] = {64, 32, 64, 64, 32, 64, 64, 64};
    static const uint8_t rows[8] = {16, 16, 8, 16, 16, 8, 16, 16};
    qmm_amx_tiles_configure(colsb, rows);
}

static void tiles_release(void) { qmm_amx_tiles_release(); }

#define W_GROUP 8  /* W tiles (16 rows) per task */
#define X_CHUNK 4  /* X tiles (16 rows) per task */

static int64_t n_padded(int64_t n) { return (n + 15) / 16 * 16; }

/* Row stride of the int8 X copy: k, plus a cache line when k is a multiple of 512 (no L1
 * set aliasing across the 16 rows of a tile load). */
static int64_t xq_stride(int64_t k) { return k + (k % 512 == 0 ? 64 : 0); }

static size_t xq_bytes(const qmm_x86_int8_tiles *w, int64_t n) {
    return ((size_t)n_padded(n) * (size_t)xq_stride(w->k) + 63) / 64 * 64;
}

static size_t scale_bytes(const qmm_x86_int8_tiles *w, int64_t n) {
    return ((size_t)n_padded(n) * (size_t)(w->k / 32) * sizeof(float) + 63) / 64 * 64;
}

/* Scratch: int8 X, dx, s, then one quantization flag per 16-row X tile. */
size_t qmm_x86_gemm_int8_amx_scratch(const qmm_x86_int8_tiles *w, int64_t n) {
    return xq_bytes(w, n) + 2 * scale_bytes(w, n) + (size_t)(n_padded(n) / 16) * sizeof(atomic_int);
}

/* The dx and s of a block holding NaN or Inf: the quiet NaN 0x7FC00000 (as the CUDA rule). */
static inline float nonfinite_scale(void) {
    const union { uint32_t u; float f; } v = {0x7FC00000u};
    return v.f;
}

/* Quantize one X row into q (k bytes), dx and s (k/32 floats each, `ld` floats apart: the
 * scales of a 16-row X tile are stored block-major, 16 rows per block). Also used by
 * gemv_int8_avx512.c (declared in x86_kernels.h). */
void qmm_x86_int8_quantize_row(const float *x, int64_t k, int8_t *q, float *dx, float *s,
                               int64_t ld) {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    const __m512 inf = _mm512_set1_ps(INFINITY);
    for (int64_t c = 0; c < k / 32; c++) {
        const __m512 lo = _mm512_loadu_ps(x + 32 * c), hi = _mm512_loadu_ps(x + 32 * c + 16);
        /* A block holding NaN or +-Inf: q = 0, dx = s = NaN (bits 0x7FC00000, the CUDA
         * quantizer's too), so every output that reads it is NaN, never silently finite. */
        if ((__mmask16)(_mm512_cmp_ps_mask(_mm512_and_ps(lo, absmask), inf, _CMP_LT_OQ) &
                        _mm512_cmp_ps_mask(_mm512_and_ps(hi, absmask), inf, _CMP_LT_OQ)) != 0xFFFF) {
            memset(q + 32 * c, 0, 32);
            dx[c * ld] = s[c * ld] = nonfinite_scale();
            continue;
        }
        const float amax = _mm512_reduce_max_ps(
            _mm512_max_ps(_mm512_and_ps(lo, absmask), _mm512_and_ps(hi, absmask)));
        const float d = amax / 127.0f;
        /* 127 / amax overflows for amax below ~3.7e-37: such blocks are scaled by 2^64 first
         * (exact), so q never comes from an infinite factor. */
        const float pre = amax < 0x1p-100f ? 0x1p64f : 1.0f;
        const float inv = amax > 0.0f ? 127.0f / (amax * pre) : 0.0f;
        const __m512 vp = _mm512_set1_ps(pre), vi = _mm512_set1_ps(inv);
        const __m512i qlo = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(lo, vp), vi));
        const __m512i qhi = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(hi, vp), vi));
        _mm_storeu_si128((__m128i *)(q + 32 * c), _mm512_cvtsepi32_epi8(qlo));
        _mm_storeu_si128((__m128i *)(q + 32 * c + 16), _mm512_cvtsepi32_epi8(qhi));
        dx[c * ld] = d;
        s[c * ld] = d * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(qlo, qhi));
    }
}

/* Quantize X tile t (rows 16t..16t+15; rows >= n are zeros) unless done: the first task
 * that needs it quantizes it, others wait (no barrier; the result does not depend on which
 * thread does it). Scales of a tile are stored block-major: dx[(t*kc + c)*16 + r]. */
static void need_x_tile(atomic_int *flags, int64_t t, const float *x, int64_t ldx, int64_t n,
                        int64_t k, int8_t *xq, int64_t ldq, float *xd, float *xs) {
    if (atomic_load_explicit(&flags[t], memory_order_acquire) == 2) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&flags[t], &expected, 1, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        while (atomic_load_explicit(&flags[t], memory_order_acquire) != 2) _mm_pause();
        return;
    }
    const int64_t kc = k / 32;
    for (int64_t j = 16 * t; j < 16 * t + 16; j++) {
        const int64_t at = t * 16 * kc + j % 16;
        if (j < n) {
            qmm_x86_int8_quantize_row(x + j * ldx, k, xq + j * ldq, xd + at, xs + at, 16);
        } else {
            memset(xq + j * ldq, 0, (size_t)k);
            for (int64_t c = 0; c < kc; c++) xd[at + 16 * c] = xs[at + 16 * c] = 0.0f;
        }
    }
    atomic_store_explicit(&flags[t], 2, memory_order_release);
}

/* Add one 16 x 16 int32 block result (buf) with its scales into the accumulators. */
#define APPLY(buf, c)                                                                      \
    do {                                                                                   \
        const __m512 dw_ = _mm512_load_ps(wd + (c) * 16);                                  \
        _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++) {                            \
            const __m512 v_ = _mm512_cvtepi32_ps(_mm512_load_si512((buf) + 16 * r));       \
            acc[r] = _mm512_fmadd_ps(v_, _mm512_mul_ps(dw_, _mm512_set1_ps(xd[(c) * 16 + r])), \
                                     acc[r]);                                              \
        }                                                                                  \
        if (wm != NULL) {                                                                  \
            const __m512 mn_ = _mm512_load_ps(wm + (c) * 16);                              \
            _Pragma("GCC unroll 16") for (int r = 0; r < 16; r++)                          \
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(xs[(c) * 16 + r]), mn_, acc[r]);   \
        }                                                                                  \
    } while (0)

/* One 16 x 16 output tile: X rows j0.. (quants xq, stride ldq; scales xd/xs block-major) and
 * W tile g. */
static void tile(const qmm_x86_int8_tiles *w, const int8_t *xq, int64_t ldq, const float *xd,
                 const float *xs, int64_t n, int64_t j0, int64_t g, float *y, int64_t ldy) {
    const int64_t kc = w->k / 32;
    const int8_t *a = xq + j0 * ldq, *b = w->q + (size_t)g * (size_t)kc * 512;
    const float *wd = w->d + (size_t)g * (size_t)kc * 16;
    const float *wm = w->mn != NULL ? w->mn + (size_t)g * (size_t)kc * 16 : NULL;
    xd += j0 * kc;
    xs += j0 * kc;
    const bool stream = ((uintptr_t)(y + j0 * ldy + g * 16) % 64 == 0) && ldy % 16 == 0 &&
                        w->m - g * 16 >= 16;
    if (!stream) { /* Y lines of this tile, for writing, while the k loop runs (no RFO stall) */
        const int64_t rows = n - j0 < 16 ? n - j0 : 16, i0 = g * 16;
        const int64_t cols = w->m - i0 < 16 ? w->m - i0 : 16;
        for (int64_t r = 0; r < rows; r++) {
            __builtin_prefetch(y + (j0 + r) * ldy + i0, 1, 3);
            __builtin_prefetch(y + (j0 + r) * ldy + i0 + cols - 1, 1, 3);
        }
    }
    int32_t buf[4][256] __attribute__((aligned(64)));
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
    /* Software pipeline over pairs of k-steps: the tiles of pair p+1 are computed (two sets of
     * result tiles: 0/3 and 6/7) while the int32 results of pair p, stored one pair earlier,
     * are scaled into the accumulators. Blocks are still applied in increasing c. */
#define ISSUE2(t0, t1, c)                                                                  \
    do {                                                                                   \
        _tile_zero(t0);                                                                    \
        _tile_zero(t1);                                                                    \
        _tile_loadd(1, a + 32 * (c), ldq);                                                 \
        _tile_loadd(2, b + 512 * (c), 64);                                                 \
        _tile_dpbssd(t0, 1, 2);                                                            \
        _tile_loadd(4, a + 32 * (c) + 32, ldq);                                            \
        _tile_loadd(5, b + 512 * (c) + 512, 64);                                           \
        _tile_dpbssd(t1, 4, 5);                                                            \
    } while (0)
#define STORE2(t0, t1, b0, b1)                                                             \
    do {                                                                                   \
        _tile_stored(t0, b0, 64);                                                          \
        _tile_stored(t1, b1, 64);                                                          \
    } while (0)
    const int64_t np = kc / 2;
    if (np > 0) {
        ISSUE2(0, 3, 0);
        STORE2(0, 3, buf[0], buf[1]);
    }
    for (int64_t p = 0; p < np; p += 2) {
        /* pair p is in buf[0..1] */
        if (p + 1 < np) ISSUE2(6, 7, 2 * (p + 1));
        APPLY(buf[0], 2 * p);
        APPLY(buf[1], 2 * p + 1);
        if (p + 1 >= np) break;
        STORE2(6, 7, buf[2], buf[3]);
        if (p + 2 < np) ISSUE2(0, 3, 2 * (p + 2));
        APPLY(buf[2], 2 * p + 2);
        APPLY(buf[3], 2 * p + 3);
        if (p + 2 < np) STORE2(0, 3, buf[0], buf[1]);
    }
#undef ISSUE2
#undef STORE2
    if (kc % 2 != 0) {
        const int64_t c = kc - 1;
        _tile_zero(0);
        _tile_loadd(1, a + 32 * c, ldq);
        _tile_loadd(2, b + 512 * c, 64);
        _tile_dpbssd(0, 1, 2);
        _tile_stored(0, buf[0], 64);
        APPLY(buf[0], c);
    }
    const int64_t i0 = g * 16, rows = n - j0 < 16 ? n - j0 : 16;
    const int64_t cols = w->m - i0 < 16 ? w->m - i0 : 16;
    const __mmask16 mask = cols >= 16 ? 0xFFFF : (__mmask16)((1u << cols) - 1);
    /* Constant indices into acc (fully unrolled) keep the accumulators in registers. Full,
     * 64-byte-aligned rows go out with non-temporal stores (no read-for-ownership of Y). */
    if (stream) {
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            if (r < rows) _mm512_stream_ps(y + (j0 + r) * ldy + i0, acc[r]);
        return;
    }
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++)
        if (r < rows) _mm512_mask_storeu_ps(y + (j0 + r) * ldy + i0, mask, acc[r]);
}

void qmm_x86_gemm_int8_amx(const qmm_x86_int8_tiles *w, int64_t n, const float *x,
                           int64_t ldx, float *y, int64_t ldy, void *scratch, int n_threads) {
    const int64_t k = w->k, ldq = xq_stride(k), n_pad = n_padded(n);
    int8_t *xq = scratch;
    float *xd = (float *)((unsigned char *)scratch + xq_bytes(w, n));
    float *xs = (float *)((unsigned char *)xd + scale_bytes(w, n));
    atomic_int *flags = (atomic_int *)((unsigned char *)xs + scale_bytes(w, n));
    const int64_t x_tiles = n_pad / 16, w_tiles = w->m_pad / 16;
    const int64_t x_chunks = (x_tiles + X_CHUNK - 1) / X_CHUNK;
    int threads = n_threads < 1 ? 1 : n_threads;
    int64_t group = W_GROUP;
    while (group > 1 && (w_tiles + group - 1) / group * x_chunks < 4 * (int64_t)threads)
        group /= 2;
    const int64_t w_groups = (w_tiles + group - 1) / group, tasks = w_groups * x_chunks;
    if (threads > tasks) threads = (int)tasks;
    for (int64_t t = 0; t < x_tiles; t++) atomic_init(&flags[t], 0);
#pragma omp parallel num_threads(threads)
    {
        tiles_configure();
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t task = 0; task < tasks; task++) {
            const int64_t gi = task / x_chunks, xc = task % x_chunks;
            const int64_t g0 = gi * group, g1 = g0 + group < w_tiles ? g0 + group : w_tiles;
            const int64_t t0 = xc * X_CHUNK, t1 = t0 + X_CHUNK < x_tiles ? t0 + X_CHUNK : x_tiles;
            for (int64_t t = t0; t < t1; t++) need_x_tile(flags, t, x, ldx, n, k, xq, ldq, xd, xs);
            for (int64_t g = g0; g < g1; g++)
                for (int64_t t = t0; t < t1; t++) tile(w, xq, ldq, xd, xs, n, t * 16, g, y, ldy);
        }
        _mm_sfence(); /* order the non-temporal Y stores before the region ends */
        tiles_release();
    }
}
