/*
 * gemm_bf16_amx.c — Y = X W^T with AMX TDPBF16PS on bf16 tile-packed weights (any weight
 * type; layout in x86_kernels.h), f32 accumulation in tiles.
 *
 * Per call X is rounded to bf16 into scratch (rows padded to a multiple of 16 with zeros,
 * k padded to k_pad with zeros). The output is cut into 32 x 32 blocks (32 X rows by 32 W
 * rows = 2 x 2 tiles of 16 x 16 f32); each block accumulates over k in increasing steps of
 * 32 with tmm0..3 as accumulators, tmm4..5 as X tiles and tmm6..7 as W tiles. Blocks are
 * numbered W-block major and split into equal contiguous ranges, one per thread, so a
 * thread keeps its W block in L2 while it walks the X blocks.
 *
 * Tile configuration: written with ldtilecfg through inline asm that takes the 64-byte
 * struct as a memory operand (gcc 12's _tile_loadconfig lets the compiler drop the stores
 * that fill the struct, and the CPU then faults on the all-zero configuration).
 */
#include <immintrin.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/x86_kernels.h"

/* The 64-byte AMX tile configuration (palette 1). */
typedef struct __attribute__((aligned(64))) amx_tilecfg {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tilecfg;

/* Configure tmm0..7 as 16 rows x 64 bytes on the calling thread. */
static void tiles_configure(void) {
    amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 8; i++) {
        cfg.colsb[i] = 64;
        cfg.rows[i] = 16;
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg) : "memory");
}

static void tiles_release(void) { __asm__ volatile("tilerelease" ::: "memory"); }

/* Row stride (bf16 elements) of the bf16 copy of X: k_pad, plus one cache line when k_pad
 * is a multiple of 512 so the 16 rows of a tile load do not alias in L1. */
static int64_t x_stride(const qmm_x86_bf16_tiles *w) {
    return w->k_pad + (w->k_pad % 512 == 0 ? 32 : 0);
}

static int64_t n_padded(int64_t n) { return (n + 15) / 16 * 16; }

size_t qmm_x86_gemm_bf16_amx_scratch(const qmm_x86_bf16_tiles *w, int64_t n) {
    return (size_t)n_padded(n) * (size_t)x_stride(w) * sizeof(uint16_t);
}

/* Round X rows [j0, j1) to bf16 (nearest even), zero-padded to k_pad; rows >= n are zero. */
static void convert_x(const float *x, int64_t ldx, int64_t n, int64_t k, int64_t k_pad,
                      uint16_t *xb, int64_t ldxb, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; j++) {
        uint16_t *dst = xb + j * ldxb;
        if (j >= n) {
            memset(dst, 0, (size_t)k_pad * sizeof *dst);
            continue;
        }
        const float *src = x + j * ldx;
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
            __m512i v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            _mm512_storeu_si512(dst + p, v);
        }
    }
}

/* Copy the valid rows/columns of a 16 x 16 f32 tile buffer into y. */
static void store_partial(const float *buf, float *y, int64_t ldy, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++)
        memcpy(y + r * ldy, buf + r * 16, (size_t)cols * sizeof(float));
}

/* Store accumulator tile `t` (a compile-time tile number) at output rows j, columns i. */
#define STORE_TILE(t, j, i)                                                                \
    do {                                                                                   \
        int64_t rows_ = n - (j) < 16 ? n - (j) : 16;                                       \
        int64_t cols_ = m - (i) < 16 ? m - (i) : 16;                                       \
        if (rows_ == 16 && cols_ == 16) {                                                  \
            _tile_stored(t, y + (j) * ldy + (i), ldy * (int64_t)sizeof(float));            \
        } else if (rows_ > 0 && cols_ > 0) {                                               \
            _tile_stored(t, cbuf, 64);                                                     \
            store_partial(cbuf, y + (j) * ldy + (i), ldy, rows_, cols_);                   \
        }                                                                                  \
    } while (0)

/* One output block: X rows j0.. (nt tiles of 16, nt in {1,2}), W rows i0.. (mt tiles). */
static void block(const qmm_x86_bf16_tiles *w, const uint16_t *xb, int64_t ldxb, int64_t n,
                  int64_t j0, int nt, int64_t i0, int mt, float *y, int64_t ldy) {
    const int64_t m = w->m, kc = w->k_pad / 32;
    const int64_t a_stride = ldxb * (int64_t)sizeof(uint16_t);
    const uint16_t *a0 = xb + j0 * ldxb, *a1 = a0 + 16 * ldxb;
    const uint16_t *b0 = w->data + (size_t)(i0 / 16) * (size_t)kc * 512;
    const uint16_t *b1 = b0 + (size_t)kc * 512;
    float cbuf[256] __attribute__((aligned(64)));
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    if (nt == 2 && mt == 2) {
        for (int64_t c = 0; c < kc; c++) {
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
        for (int64_t c = 0; c < kc; c++) {
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
    STORE_TILE(0, j0, i0);
    if (mt == 2) STORE_TILE(1, j0, i0 + 16);
    if (nt == 2) STORE_TILE(2, j0 + 16, i0);
    if (nt == 2 && mt == 2) STORE_TILE(3, j0 + 16, i0 + 16);
}

void qmm_x86_gemm_bf16_amx(const qmm_x86_bf16_tiles *w, int64_t n, const float *x,
                           int64_t ldx, float *y, int64_t ldy, void *scratch, int n_threads) {
    uint16_t *xb = scratch;
    const int64_t ldxb = x_stride(w), n_pad = n_padded(n);
    const int64_t n_blocks = (n_pad + 31) / 32, m_blocks = (w->m_pad + 31) / 32;
    const int64_t total = n_blocks * m_blocks;
    int threads = n_threads < 1 ? 1 : n_threads;
    if (threads > total) threads = (int)total;
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        const int64_t rows_per = (n_pad / 16 + nth - 1) / nth * 16;
        const int64_t r0 = (int64_t)t * rows_per;
        const int64_t r1 = r0 + rows_per < n_pad ? r0 + rows_per : n_pad;
        if (r0 < r1) convert_x(x, ldx, n, w->k, w->k_pad, xb, ldxb, r0, r1);
#pragma omp barrier
        tiles_configure();
        const int64_t b0 = total * t / nth, b1 = total * (t + 1) / nth;
        for (int64_t b = b0; b < b1; b++) {
            const int64_t mb = b / n_blocks, nb = b % n_blocks;
            const int64_t j0 = nb * 32, i0 = mb * 32;
            const int nt = n_pad - j0 >= 32 ? 2 : 1;
            const int mt = w->m_pad - i0 >= 32 ? 2 : 1;
            block(w, xb, ldxb, n, j0, nt, i0, mt, y, ldy);
        }
        tiles_release();
    }
}
