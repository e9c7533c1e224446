/*
 * gemm_bf16_amx.c — Y = X W^T with AMX TDPBF16PS on bf16 tile-packed weights (any weight
 * type; layout in x86_kernels.h), f32 accumulation in tiles.
 *
 * Per call X is rounded to bf16 into scratch (rows padded to a multiple of 16 with zeros,
 * k padded to k_pad with zeros). The output is cut into 32 x 32 blocks (32 X rows by 32 W
 * rows = 2 x 2 tiles of 16 x 16 f32); each block accumulates over k in increasing steps of
 * 32 with tmm0..3 as accumulators, tmm4..5 as X tiles and tmm6..7 as W tiles. Blocks are
 * numbered W-block major and handed out one at a time (OpenMP dynamic schedule), so the
 * threads stay busy on every shape; each output block belongs to one task, so the schedule
 * cannot change a bit.
 *
 * Tile configuration: written with ldtilecfg through inline asm that takes the 64-byte
 * struct as a memory operand (gcc 12's _tile_loadconfig lets the compiler drop the stores
 * that fill the struct, and the CPU then faults on the all-zero configuration).
 */
#include <immintrin.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <math.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/amx_tiles.h"
#include "cpu/x86/x86_kernels.h"

/* Configure tmm0..7 as 16 rows x 64 bytes on the calling thread. */
static void tiles_configure(void) {
    static const uint16_t colsb[8] = {64, 64, 64, 64, 64, 64, 64, 64};
    static const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, 16, 16};
    qmm_amx_tiles_configure(colsb, rows);
}

static void tiles_release(void) { qmm_amx_tiles_release(); }

/* Row stride (bf16 elements) of the bf16 copy of X: k_pad, plus one cache line when k_pad
 * is a multiple of 512 so the 16 rows of a tile load do not alias in L1. */
static int64_t x_stride(const qmm_x86_bf16_tiles *w) {
    return w->k_pad + (w->k_pad % 512 == 0 ? 32 : 0);
}

static int64_t n_padded(int64_t n) { return (n + 15) / 16 * 16; }


/* max |x| over the k floats of one row (AVX-512, masked tail). */
static float row_amax(const float *src, int64_t k) {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    __m512 m = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(src + p), absmask));
    if (p < k) {
        const __m512 v = _mm512_maskz_loadu_ps((__mmask16)((1u << (k - p)) - 1), src + p);
        m = _mm512_max_ps(m, _mm512_and_ps(v, absmask));
    }
    return _mm512_reduce_max_ps(m);
}

/* Round X rows [j0, j1) to bf16 (nearest even), zero-padded to k_pad; rows >= n are zero.
 * With parts = 3 (f32 weights) also the residuals: part 1 = bf16(x - part 0), part 2 =
 * bf16(x - part 0 - part 1), each part_elems bf16 after the previous.
 * A row whose max |x| is outside [2^-40, 2^40] is first divided by its power-of-two row
 * scale (qmm_x86_bf16_row_scale's rule; vscalefps is exact), recorded in xscale[j]. */
static void convert_x(const float *x, int64_t ldx, int64_t n, int64_t k, int64_t k_pad,
                      uint16_t *xb, int64_t ldxb, int parts, int64_t part_elems, float *xscale,
                      int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; j++) {
        uint16_t *dst = xb + j * ldxb;
        xscale[j] = 1.0f;
        if (j >= n) {
            for (int part = 0; part < parts; part++)
                memset(dst + part * part_elems, 0, (size_t)k_pad * sizeof *dst);
            continue;
        }
        const float *src = x + j * ldx;
        const float amax = row_amax(src, k);
        if (amax > 0.0f && isfinite(amax) && (amax < 0x1p-40f || amax > 0x1p40f))
            xscale[j] = ldexpf(1.0f, ilogbf(amax));
        const __m512 neg_e = _mm512_set1_ps(-(float)ilogbf(xscale[j]));
        for (int64_t p = 0; p < k_pad; p += 32) {
            __m512 lo, hi;
            if (p + 32 <= k) {
                lo = _mm512_loadu_ps(src + p);
                hi = _mm512_loadu_ps(src + p + 16);
            } else {
                int64_t left = k - p; /* may be <= 0 */
                __mmask16 mlo = left >= 16 ? 0xFFFF : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
                int64_t left_hi = left - 16;
                __mmask16 mhi = left_hi >= 16 ? 0xFFFF
                              : left_hi > 0 ? (__mmask16)((1u << left_hi) - 1) : 0;
                lo = _mm512_maskz_loadu_ps(mlo, src + p);
                hi = _mm512_maskz_loadu_ps(mhi, src + p + 16);
            }
            if (xscale[j] != 1.0f) {
                lo = _mm512_scalef_ps(lo, neg_e);
                hi = _mm512_scalef_ps(hi, neg_e);
            }
            for (int part = 0; part < parts; part++) {
                const __m512bh v = _mm512_cvtne2ps_pbh(hi, lo);
                _mm512_storeu_si512(dst + part * part_elems + p, (__m512i)v);
                if (part + 1 < parts) { /* the rounding residual is exact in f32 */
                    const __m512i vi = (__m512i)v; /* bf16 0..15 from lo, 16..31 from hi */
                    const __m512 lo_b = _mm512_castsi512_ps(_mm512_slli_epi32(
                        _mm512_cvtepu16_epi32(_mm512_castsi512_si256(vi)), 16));
                    const __m512 hi_b = _mm512_castsi512_ps(_mm512_slli_epi32(
                        _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(vi, 1)), 16));
                    lo = _mm512_sub_ps(lo, lo_b);
                    hi = _mm512_sub_ps(hi, hi_b);
                    lo = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(lo, lo, _CMP_ORD_Q), lo); /* Inf-Inf */
                    hi = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(hi, hi, _CMP_ORD_Q), hi);
                }
            }
        }
    }
}

void qmm_x86_bf16_convert_x_rows(const float *x, int64_t ldx, int64_t n, int64_t k,
                                 int64_t k_pad, uint16_t *xb, int64_t ldxb, float *xscale,
                                 int64_t j0, int64_t j1) {
    if (j0 >= n) /* every row is padding: no X row is read */
        convert_x(x, ldx, 0, k, k_pad, xb, ldxb, 1, 0, xscale, 0, j1 - j0);
    else
        convert_x(x + j0 * ldx, ldx, n - j0, k, k_pad, xb, ldxb, 1, 0, xscale, 0, j1 - j0);
}

/* Multiply the stored outputs of one block back by the row scales of its X rows (xs) and W
 * rows (ws): y = (y * xs[r]) * ws[c], both powers of two (exact unless the result is
 * subnormal). Nothing to do in the usual case where all are 1. */
static void rescale(float *y, int64_t ldy, int64_t rows, int64_t cols, const float *xs,
                    const float *ws) {
    bool any = false;
    for (int64_t r = 0; r < rows; r++) any |= xs[r] != 1.0f;
    for (int64_t c = 0; c < cols; c++) any |= ws[c] != 1.0f;
    if (!any) return;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) y[r * ldy + c] = (y[r * ldy + c] * xs[r]) * ws[c];
}

/* Copy the valid rows/columns of a 16 x 16 f32 tile buffer into y. */
static void store_partial(const float *buf, float *y, int64_t ldy, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++)
        memcpy(y + r * ldy, buf + r * 16, (size_t)cols * sizeof(float));
}

/* Copy a full 16 x 16 f32 tile buffer into y with non-temporal stores (every row of the
 * tile is one 64-byte-aligned line of y): no read-for-ownership of a cold Y. */
static void store_stream(const float *buf, float *y, int64_t ldy) {
    for (int r = 0; r < 16; r++) _mm512_stream_ps(y + r * ldy, _mm512_load_ps(buf + 16 * r));
}

/* Store accumulator tile `t` (a compile-time tile number) at output rows j, columns i. */
#define STORE_TILE(t, j, i)                                                                \
    do {                                                                                   \
        int64_t rows_ = n - (j) < 16 ? n - (j) : 16;                                       \
        int64_t cols_ = m - (i) < 16 ? m - (i) : 16;                                       \
        if (rows_ == 16 && cols_ == 16 && stream) {                                        \
            _tile_stored(t, cbuf, 64);                                                     \
            store_stream(cbuf, y + (j) * ldy + (i), ldy);                                  \
        } else if (rows_ == 16 && cols_ == 16) {                                           \
            _tile_stored(t, y + (j) * ldy + (i), ldy * (int64_t)sizeof(float));            \
        } else if (rows_ > 0 && cols_ > 0) {                                               \
            _tile_stored(t, cbuf, 64);                                                     \
            store_partial(cbuf, y + (j) * ldy + (i), ldy, rows_, cols_);                   \
        }                                                                                  \
    } while (0)

/* Cache blocking (see the file comment): a thread walks its W rows in groups of GROUP_W
 * blocks of 32 rows; per group it walks k in panels of KB elements; per panel it walks its X
 * blocks (32 rows), and for each X block every W block of the group. The X panel slice (32 x
 * KB bf16) is reused from L1 across the group, the group's W panel (GROUP_W*32 x KB) from L2
 * across the X blocks. Accumulators live in tiles for one (X block, W block, k panel) and in
 * f32 scratch between panels: storing and reloading an f32 tile is exact, so each output is
 * still the sum over c in increasing order, whatever the blocking. */
#ifndef GROUP_W
#define GROUP_W 8
#endif
#ifndef KB
#define KB 256
#endif

/* X blocks (32 rows) per task; a task is (GROUP_W W blocks) x (up to XCHUNK X blocks). */
#define XCHUNK 4

/* Accumulator scratch bytes per thread (one task's partial tiles). */
#define ACC_BYTES ((size_t)XCHUNK * GROUP_W * 4 * 1024)

/* One output block: X rows j0.. (nt tiles of 16, nt in {1,2}), W rows i0.. (mt tiles), k
 * steps c0..c1-1 of 32. `acc` (4 KiB, 64-byte aligned) holds the 4 partial f32 tiles between
 * k panels; first: start from zero; last: store into y. */
static void block(const qmm_x86_bf16_tiles *w, const uint16_t *xb, int64_t ldxb,
                  int64_t x_part_elems, int64_t n, int64_t j0, int nt, int64_t i0, int mt,
                  int64_t c0, int64_t c1, float *acc, bool first, bool last,
                  const float *xscale, float *y, int64_t ldy) {
    const int64_t m = w->m, kc = w->k_pad / 32;
    const int64_t a_stride = ldxb * (int64_t)sizeof(uint16_t);
    const uint16_t *a0 = xb + j0 * ldxb, *a1 = a0 + 16 * ldxb;
    const uint16_t *b0 = w->data + (size_t)(i0 / 16) * (size_t)kc * 512;
    const uint16_t *b1 = b0 + (size_t)kc * 512;
    float cbuf[256] __attribute__((aligned(64)));
    /* Full tiles go to Y with non-temporal stores when its rows are 64-byte aligned. */
    const bool stream = ((uintptr_t)(y + j0 * ldy + i0) % 64 == 0) && ldy % 16 == 0;
    if (last && !stream) {
        /* The block's Y lines are written after this panel: ask for them now (for writing)
         * so a cold Y costs no read-for-ownership stall at the tile stores. */
        const int64_t rows = n - j0 < 16 * nt ? n - j0 : 16 * nt;
        const int64_t cols = m - i0 < 16 * mt ? m - i0 : 16 * mt;
        for (int64_t r = 0; r < rows; r++) {
            __builtin_prefetch(y + (j0 + r) * ldy + i0, 1, 3);
            __builtin_prefetch(y + (j0 + r) * ldy + i0 + cols - 1, 1, 3);
        }
    }
    qmm_amx_acc_begin(acc, first);
    if (w->parts == 3) {
        /* f32 weights: x = xh + xm + xl and w = wh + wm + wl (bf16 parts 0, 1, 2); per k
         * step the six products down to 2^-17 relative, in this fixed order:
         * xh*wh, xh*wm, xh*wl, xm*wh, xm*wm, xl*wh (one X part loaded per group). */
        static const int x_part[3] = {0, 1, 2}, w_parts[3] = {3, 2, 1};
        const size_t xpart = (size_t)x_part_elems, wpart = (size_t)(w->m_pad * w->k_pad);
        for (int64_t c = c0; c < c1; c++) {
            for (int g = 0; g < 3; g++) {
                const uint16_t *ap = a0 + x_part[g] * xpart + c * 32;
                _tile_loadd(4, ap, a_stride);
                if (nt == 2) _tile_loadd(5, ap + 16 * ldxb, a_stride);
                for (int q = 0; q < w_parts[g]; q++) {
                    const uint16_t *bp = b0 + q * wpart + c * 512;
                    _tile_loadd(6, bp, 64);
                    _tile_dpbf16ps(0, 4, 6);
                    if (nt == 2) _tile_dpbf16ps(2, 5, 6);
                    if (mt == 2) {
                        _tile_loadd(7, bp + (size_t)kc * 512, 64);
                        _tile_dpbf16ps(1, 4, 7);
                        if (nt == 2) _tile_dpbf16ps(3, 5, 7);
                    }
                }
            }
        }
    } else if (nt == 2 && mt == 2) {
        for (int64_t c = c0; c < c1; c++) {
            _tile_loadd(4, a0 + c * 32, a_stride);
            _tile_loadd(6, b0 + c * 512, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_loadd(7, b1 + c * 512, 64);
            _tile_dpbf16ps(1, 4, 7);
            _tile_loadd(5, a1 + c * 32, a_stride);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    } else {
        for (int64_t c = c0; c < c1; c++) {
            _tile_loadd(4, a0 + c * 32, a_stride);
            _tile_loadd(6, b0 + c * 512, 64);
            _tile_dpbf16ps(0, 4, 6);
            if (mt == 2) {
                _tile_loadd(7, b1 + c * 512, 64);
                _tile_dpbf16ps(1, 4, 7);
            }
            if (nt == 2) {
                _tile_loadd(5, a1 + c * 32, a_stride);
                _tile_dpbf16ps(2, 5, 6);
            }
        }
    }
    if (!last) {
        _tile_stored(0, acc, 64);
        _tile_stored(1, acc + 256, 64);
        _tile_stored(2, acc + 512, 64);
        _tile_stored(3, acc + 768, 64);
        return;
    }
    STORE_TILE(0, j0, i0);
    if (mt == 2) STORE_TILE(1, j0, i0 + 16);
    if (nt == 2) STORE_TILE(2, j0 + 16, i0);
    if (nt == 2 && mt == 2) STORE_TILE(3, j0 + 16, i0 + 16);
    const int64_t rows = n - j0 < 16 * nt ? n - j0 : 16 * nt;
    const int64_t cols = m - i0 < 16 * mt ? m - i0 : 16 * mt;
    if (rows > 0 && cols > 0) rescale(y + j0 * ldy + i0, ldy, rows, cols, xscale + j0, w->row_scale + i0);
}

/* Scratch layout: the bf16 copy of X, one conversion flag per X block (rounded to 64
 * bytes), then ACC_BYTES per thread. */
static size_t xb_bytes(const qmm_x86_bf16_tiles *w, int64_t n) {
    return (size_t)w->parts * (size_t)n_padded(n) * (size_t)x_stride(w) * sizeof(uint16_t);
}
static size_t flag_bytes(int64_t n) {
    return ((size_t)(n_padded(n) + 31) / 32 * sizeof(atomic_int) + 63) / 64 * 64;
}
static size_t xscale_bytes(int64_t n) { return ((size_t)n_padded(n) * sizeof(float) + 63) / 64 * 64; }

size_t qmm_x86_gemm_bf16_amx_scratch(const qmm_x86_bf16_tiles *w, int64_t n, int n_threads) {
    return xb_bytes(w, n) + flag_bytes(n) + xscale_bytes(n) +
           (size_t)(n_threads < 1 ? 1 : n_threads) * ACC_BYTES;
}

/* Make sure X block b (rows 32b..32b+31) is converted: the first thread to need it converts
 * it, others wait. The result does not depend on which thread converts (deterministic), and
 * no thread waits for a thread that has not started (no barrier). */
static void need_x_block(atomic_int *flags, int64_t b, const float *x, int64_t ldx, int64_t n,
                         const qmm_x86_bf16_tiles *w, uint16_t *xb, int64_t ldxb, float *xscale,
                         int64_t n_pad) {
    if (atomic_load_explicit(&flags[b], memory_order_acquire) == 2) return;
    int expected = 0;
    if (atomic_compare_exchange_strong_explicit(&flags[b], &expected, 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
        const int64_t j1 = 32 * b + 32 < n_pad ? 32 * b + 32 : n_pad;
        convert_x(x, ldx, n, w->k, w->k_pad, xb, ldxb, w->parts, n_pad * ldxb, xscale, 32 * b, j1);
        atomic_store_explicit(&flags[b], 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&flags[b], memory_order_acquire) != 2) _mm_pause();
}

/* One task: X blocks [xb0, xb1) x W blocks [g0, g1) (units of 32 rows). */
static void run_task(const qmm_x86_bf16_tiles *w, const uint16_t *xb, int64_t ldxb, int64_t n,
                     int64_t n_pad, int64_t xb0, int64_t xb1, int64_t g0, int64_t g1,
                     float *acc, const float *xscale, float *y, int64_t ldy) {
    /* three parts (f32 weights) triple the panel bytes: a third of the panel length */
    const int64_t kc = w->k_pad / 32, kbc = w->parts == 3 ? (KB / 32 + 2) / 3 : KB / 32;
    for (int64_t c0 = 0; c0 < kc; c0 += kbc) {
        const int64_t c1 = c0 + kbc < kc ? c0 + kbc : kc;
        for (int64_t xbi = xb0; xbi < xb1; xbi++) {
            const int64_t j0 = xbi * 32;
            const int nt = n_pad - j0 >= 32 ? 2 : 1;
            for (int64_t wbi = g0; wbi < g1; wbi++) {
                const int64_t i0 = wbi * 32;
                const int mt = w->m_pad - i0 >= 32 ? 2 : 1;
                float *a = acc + ((xbi - xb0) * GROUP_W + (wbi - g0)) * 1024;
                block(w, xb, ldxb, n_pad * ldxb, n, j0, nt, i0, mt, c0, c1, a, c0 == 0, c1 == kc,
                      xscale, y, ldy);
            }
        }
    }
}

void qmm_x86_gemm_bf16_amx(const qmm_x86_bf16_tiles *w, int64_t n, const float *x,
                           int64_t ldx, float *y, int64_t ldy, void *scratch, int n_threads) {
    uint16_t *xb = scratch;
    const int64_t ldxb = x_stride(w), n_pad = n_padded(n);
    const int64_t n_blocks = (n_pad + 31) / 32, m_blocks = (w->m_pad + 31) / 32;
    atomic_int *flags = (atomic_int *)((unsigned char *)scratch + xb_bytes(w, n));
    float *xscale = (float *)((unsigned char *)scratch + xb_bytes(w, n) + flag_bytes(n));
    unsigned char *acc_all = (unsigned char *)xscale + xscale_bytes(n);
    for (int64_t b = 0; b < n_blocks; b++) atomic_init(&flags[b], 0);
    int threads = n_threads < 1 ? 1 : n_threads;
    /* W groups of up to GROUP_W blocks, smaller while that leaves under 4 tasks a thread. */
    int64_t group = GROUP_W;
    const int64_t x_chunks = (n_blocks + XCHUNK - 1) / XCHUNK;
    while (group > 1 && (m_blocks + group - 1) / group * x_chunks < 4 * (int64_t)threads)
        group /= 2;
    const int64_t w_groups = (m_blocks + group - 1) / group, tasks = w_groups * x_chunks;
    if (threads > tasks) threads = (int)tasks;
    /* Tasks in W-group-major order, handed out one at a time: a thread that runs late (the
     * machine is shared) leaves its tasks to the others; each output belongs to one task. */
#pragma omp parallel num_threads(threads)
    {
        float *acc = (float *)(acc_all + (size_t)omp_get_thread_num() * ACC_BYTES);
        tiles_configure();
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t task = 0; task < tasks; task++) {
            const int64_t g = task / x_chunks, xc = task % x_chunks;
            const int64_t xb0 = xc * XCHUNK, xb1 = xb0 + XCHUNK < n_blocks ? xb0 + XCHUNK : n_blocks;
            const int64_t g0 = g * group, g1 = g0 + group < m_blocks ? g0 + group : m_blocks;
            for (int64_t b = xb0; b < xb1; b++)
                need_x_block(flags, b, x, ldx, n, w, xb, ldxb, xscale, n_pad);
            run_task(w, xb, ldxb, n, n_pad, xb0, xb1, g0, g1, acc, xscale, y, ldy);
        }
        _mm_sfence(); /* order the non-temporal Y stores before the region ends */
        tiles_release();
    }
}
