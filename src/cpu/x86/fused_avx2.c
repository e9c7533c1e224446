/*
 * fused_avx2.c — strategy `fused` on AVX2 + FMA + F16C for every weight type (`fused_avx2`,
 * precision class F32), in the summation order of the gemv kernels (gemv_common.h), so that
 * every output is bit-identical to gemv_avx2's and gemv_avx512's for the same W row, X row
 * and k. docs/KERNELS.md ("x86: fused_avx2") has the order, the bound, the blocking and the
 * memory; this comment says how the code gets there.
 *
 * The order of one output (gemv_common.h): k in panels of QMM_GEMV_PANEL = 1024 elements;
 * inside a panel, element p goes by one FMA into chain p % 32 (lane p % 16 of accumulator
 * (p / 16) % 2), in increasing p; at a panel's end chains c and c + 16 (c < 16) are added
 * as floats and widened into double lane c; at the end the 16 double lanes are summed by a
 * fixed tree and rounded once to float. The 32 chains of an output are independent, so they
 * need not be computed at the same time: a block computes them 8 at a time.
 *
 * Micro-kernel (block): MR <= 4 W rows x NR <= 3 X rows, one ymm accumulator per (W row, X
 * row) pair = 12 ymm, plus 3 X registers and 1 W register. A block walks one panel four
 * times, once per chain group g = 0..3 (chains 8g .. 8g + 7: the 8 floats at p = 32t + 8g,
 * t = 0, 1, ...): each step loads 3 X vectors and 4 W vectors and does 12 FMAs. The panel of
 * the block (4 W rows + 3 X rows, 28 KiB at 1024 elements) stays in L1 over the four passes.
 * After groups 0 and 2 the two results are added (chains c, c + 16 for c < 8: double lanes
 * 0..7), after groups 1 and 3 likewise (lanes 8..15). A pair's chains use the same
 * operations whatever MR, NR or the pair's place in the block, so the edge blocks (any MR x
 * NR) give the same bits.
 *
 * Tails: a panel whose length is not a multiple of 32 (f32/f16/bf16 rows have any k) ends,
 * in one chain group, with a partial step of 1..7 elements: W is read with a lane mask
 * (nothing past the row is read), X comes from its zero-padded packed copy, and the FMA
 * result is blended into those lanes only, as gemv's masked tail.
 *
 * X is packed once per call (x_pack_row: each chain group's steps contiguous, so a pass reads
 * each X row as one stream), a sub-chunk of rows by the first task that needs it.
 *
 * W: f32 rows are used in place (the packed rows, stride / 4 floats apart); every other type
 * is converted, a task's rows for the whole k, into a thread-scratch tile of exact floats:
 * f16 by vcvtph2ps and bf16 by a 16-bit shift (both the type table's to_float bit for bit),
 * the quantized types by the type table's to_float itself.
 *
 * Tasks: (up to TASK_ROWS W rows) x (a chunk of X rows, all n unless m is too small to feed
 * the threads), dynamic order. Inside a task, X rows in sub-chunks of SUB_ROWS (their panel:
 * 192 KiB, in L2), then panels, then 4-row W groups (their panel in L1), then 3-row X
 * groups; the last 4 blocks of a W group prefetch the next group's W rows (X rows are
 * left to the hardware's stream prefetchers: prefetching them too, two lines a step, made
 * the kernel 1.03-1.46x slower on a Zen 3, bench/results/zen3-fused-prefetch.md).
 * For k > 1024 the double lanes of the sub-chunk's outputs persist
 * across panels in thread scratch (16 doubles per output); for k <= 1024 a block finishes
 * its outputs at once. TASK_ROWS, TILE_BYTES_MAX and SUB_ROWS can be set with -D for
 * blocking experiments (dev/cpu_ab.c times such builds).
 */
#include <immintrin.h>
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu/x86/gemv_avx2_impl.h"
#include "cpu/x86/x86_backend.h"

#define PANEL QMM_GEMV_PANEL /* the order's panel */
#define MR_MAX 4             /* W rows per block */
#define NR_MAX 3             /* X rows per block */
#define LANES 16             /* double lanes per output */

/* W rows per task (a multiple of MR_MAX; a task's tile is TASK_ROWS x k floats, cut to fit
 * TILE_BYTES_MAX for long k), smallest rows per task when balancing few rows over the
 * threads, and X rows per sub-chunk (a multiple of NR_MAX). */
#ifndef TASK_ROWS
#define TASK_ROWS 32
#endif
#define TASK_ROWS_MIN 8
#ifndef TILE_BYTES_MAX
#define TILE_BYTES_MAX (512 * 1024)
#endif
#ifndef SUB_ROWS
#define SUB_ROWS 48
#endif


#define INL static inline __attribute__((always_inline))

/* All-ones in lanes < count (0 <= count <= 8). */
INL __m256i lane_mask(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)count),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Chain group g of the block over a panel of len elements: a[j][r] = the 8 chains
 * 8g .. 8g + 7 of (X row j, W row r). W rows are plain (element p at w + p); the X rows are
 * packed (x_pack: chain group g's steps contiguous from x + g * xg). pf (or NULL): rows to
 * bring into L1, two lines a step. */
INL void pass(int MR, int NR, int g, int64_t len, const float *w, int64_t ldw, const float *x,
              int64_t ldx, int64_t xg, const char *pf, __m256 a[NR_MAX][MR_MAX]) {
    for (int j = 0; j < NR; j++)
        for (int r = 0; r < MR; r++) a[j][r] = _mm256_setzero_ps();
    const float *xs = x + g * xg;
    int64_t p = 8 * g;
    for (; p + 8 <= len; p += 32, xs += 8) {
        if (pf != NULL) {
            _mm_prefetch(pf, _MM_HINT_T0);
            _mm_prefetch(pf + 64, _MM_HINT_T0);
            pf += 128;
        }
        __m256 xv[NR_MAX];
        for (int j = 0; j < NR; j++) xv[j] = _mm256_load_ps(xs + j * ldx);
        for (int r = 0; r < MR; r++) {
            const __m256 wv = _mm256_loadu_ps(w + r * ldw + p);
            for (int j = 0; j < NR; j++) a[j][r] = _mm256_fmadd_ps(wv, xv[j], a[j][r]);
        }
    }
    if (p < len) { /* the last 1..7 elements of the panel (packed X is zero after them) */
        const __m256i mi = lane_mask(len - p);
        const __m256 m = _mm256_castsi256_ps(mi);
        __m256 xv[NR_MAX];
        for (int j = 0; j < NR; j++) xv[j] = _mm256_load_ps(xs + j * ldx);
        for (int r = 0; r < MR; r++) {
            const __m256 wv = _mm256_maskload_ps(w + r * ldw + p, mi);
            for (int j = 0; j < NR; j++)
                a[j][r] = _mm256_blendv_ps(a[j][r], _mm256_fmadd_ps(wv, xv[j], a[j][r]), m);
        }
    }
}

/* The fixed tree of gemv_common.h over double lanes d0 (0..3), d1 (4..7), d2 (8..11), d3
 * (12..15): (l, l + 8), (l, l + 4), (l, l + 2), (0, 1), rounded once to float. */
INL float lane_tree(__m256d d0, __m256d d1, __m256d d2, __m256d d3) {
    const __m256d s4 = _mm256_add_pd(_mm256_add_pd(d0, d2), _mm256_add_pd(d1, d3));
    const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
    return (float)_mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

/* End of a panel for one output: lo = chains c + chains c + 16 (c < 8), hi = the same for
 * c = 8..15, widened into the double lanes: d (16 doubles) when the output has more panels,
 * else (first panel) zero lanes; on the last panel the tree's float goes to *y. */
INL void panel_end(__m256 lo, __m256 hi, double *d, int first, int last, float *y) {
    __m256d v[4] = {_mm256_cvtps_pd(_mm256_castps256_ps128(lo)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)),
                    _mm256_cvtps_pd(_mm256_castps256_ps128(hi)),
                    _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1))};
    for (int q = 0; q < 4; q++)
        v[q] = _mm256_add_pd(first ? _mm256_setzero_pd() : _mm256_loadu_pd(d + 4 * q), v[q]);
    if (last) {
        *y = lane_tree(v[0], v[1], v[2], v[3]);
    } else {
        for (int q = 0; q < 4; q++) _mm256_storeu_pd(d + 4 * q, v[q]);
    }
}

/* One block over one panel. Pair (j, r)'s double lanes at d + (r * ldd + j) * LANES (unused
 * when first && last); its output at y[j * ldy + r]. */
INL void block(int MR, int NR, int64_t len, const float *w, int64_t ldw, const float *x,
               int64_t ldx, const float *wn, double *d, int64_t ldd, int first, int last, float *y,
               int64_t ldy) {
    __m256 lo[NR_MAX][MR_MAX], hi[NR_MAX][MR_MAX], t[NR_MAX][MR_MAX];
    const int64_t xg = (len + 31) / 32 * 8; /* packed X: floats per chain group */
    /* pass 3 brings the W row panel at wn (or NULL) into L1; X rows are left to the hardware
     * prefetchers (bench/results/zen3-fused-prefetch.md) */
    pass(MR, NR, 0, len, w, ldw, x, ldx, xg, NULL, lo);
    pass(MR, NR, 2, len, w, ldw, x, ldx, xg, NULL, t);
    for (int j = 0; j < NR; j++)
        for (int r = 0; r < MR; r++) lo[j][r] = _mm256_add_ps(lo[j][r], t[j][r]);
    pass(MR, NR, 1, len, w, ldw, x, ldx, xg, NULL, hi);
    pass(MR, NR, 3, len, w, ldw, x, ldx, xg, (const char *)wn, t);
    for (int j = 0; j < NR; j++)
        for (int r = 0; r < MR; r++) {
            hi[j][r] = _mm256_add_ps(hi[j][r], t[j][r]);
            panel_end(lo[j][r], hi[j][r], d + (r * ldd + j) * LANES, first, last, y + j * ldy + r);
        }
}

/* Instantiations for every MR x NR (constants, so the accumulators stay in registers). */
#define BLOCK_ARGS                                                                          \
    int64_t len, const float *w, int64_t ldw, const float *x, int64_t ldx, const float *wn, \
        double *d, int64_t ldd, int first, int last, float *y, int64_t ldy
#define BLOCK_FN(MR, NR)                                                                    \
    static void block_##MR##x##NR(BLOCK_ARGS) {                                             \
        block(MR, NR, len, w, ldw, x, ldx, wn, d, ldd, first, last, y, ldy);                \
    }
BLOCK_FN(4, 3) BLOCK_FN(4, 2) BLOCK_FN(4, 1)
BLOCK_FN(3, 3) BLOCK_FN(3, 2) BLOCK_FN(3, 1)
BLOCK_FN(2, 3) BLOCK_FN(2, 2) BLOCK_FN(2, 1)
BLOCK_FN(1, 3) BLOCK_FN(1, 2) BLOCK_FN(1, 1)

typedef void (*block_fn)(BLOCK_ARGS);
static const block_fn blocks[MR_MAX][NR_MAX] = {
    {block_1x1, block_1x2, block_1x3},
    {block_2x1, block_2x2, block_2x3},
    {block_3x1, block_3x2, block_3x3},
    {block_4x1, block_4x2, block_4x3},
};

/* ---------------------------------------------------------------------------------------
 * W tiles: exact floats of a task's rows
 * ------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------
 * X, packed once per call: row j at xp + j * ldxp (ldxp = k rounded up to 32); in the
 * panel at p0 of len elements (rounded up to L = 32 T), chain group g's steps are
 * contiguous: element p0 + 32 t + 8 g + l at xp + p0 + g * 8 T + 8 t + l, zero past len. A
 * pass then reads its X rows as one stream (in the row-major layout each pass would touch
 * half of every other line of 128 bytes).
 * ------------------------------------------------------------------------------------- */

static int64_t x_ld(int64_t k) { return (k + 31) / 32 * 32; }

static void x_pack_row(const float *x, int64_t k, float *xp) {
    for (int64_t p0 = 0; p0 < k; p0 += PANEL) {
        const int64_t len = k - p0 < PANEL ? k - p0 : PANEL, steps = (len + 31) / 32;
        for (int g = 0; g < 4; g++)
            for (int64_t t = 0; t < steps; t++) {
                const int64_t p = 32 * t + 8 * g;
                float *dst = xp + p0 + g * 8 * steps + 8 * t;
                if (p + 8 <= len) {
                    _mm256_store_ps(dst, _mm256_loadu_ps(x + p0 + p));
                } else {
                    const int64_t c = len - p > 0 ? len - p : 0;
                    _mm256_store_ps(dst, _mm256_maskload_ps(x + p0 + p, lane_mask(c)));
                }
            }
    }
}

/* ---------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------- */

typedef struct problem {
    const qmm_type_traits *t;
    qmm_type type;
    int64_t m, k, n;
    const unsigned char *w; /* packed rows, `stride` bytes apart */
    size_t stride;
    const float *x;  /* the caller's X */
    int64_t ldx;
    float *xp;       /* X packed (x_pack_row), rows ldxp floats apart */
    int64_t ldxp;
    atomic_int *packed; /* per sub-chunk of X rows: 0 not packed, 1 being packed, 2 packed */
    float *y;
    int64_t ldy;
    int64_t task_rows, task_n; /* a task's W rows and X rows */
    int64_t ldt;               /* floats between tile rows */
} problem;

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Make sure the X rows of sub-chunk c are packed: the first task to need them packs them,
 * others wait; no thread waits for one that has not started (no barrier), and the packed
 * bits do not depend on who packed them. */
static void need_x_chunk(const problem *pb, int64_t c) {
    atomic_int *f = &pb->packed[c];
    if (atomic_load_explicit(f, memory_order_acquire) == 2) return;
    int expected = 0;
    if (atomic_compare_exchange_strong_explicit(f, &expected, 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
        const int64_t j1 = (c + 1) * SUB_ROWS < pb->n ? (c + 1) * SUB_ROWS : pb->n;
        for (int64_t j = c * SUB_ROWS; j < j1; j++)
            x_pack_row(pb->x + j * pb->ldx, pb->k, pb->xp + j * pb->ldxp);
        atomic_store_explicit(f, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(f, memory_order_acquire) != 2) _mm_pause();
}

/* Floats between tile rows: k rounded up to 16 (64-byte rows). */
static int64_t tile_ld(int64_t k) { return (k + 15) / 16 * 16; }

static size_t tile_bytes(qmm_type type, int64_t rows, int64_t k) {
    return type == QMM_TYPE_F32 ? 0 : (size_t)rows * (size_t)tile_ld(k) * sizeof(float);
}

static size_t lanes_bytes(int64_t rows, int64_t k) {
    return k > PANEL ? (size_t)rows * SUB_ROWS * LANES * sizeof(double) : 0;
}

/* W rows per task before balancing: TASK_ROWS, fewer when the tile would pass TILE_BYTES_MAX. */
static int64_t task_rows_for(int64_t k) {
    int64_t rows = TILE_BYTES_MAX / ((int64_t)sizeof(float) * tile_ld(k));
    rows = rows / MR_MAX * MR_MAX;
    if (rows > TASK_ROWS) rows = TASK_ROWS;
    return rows < MR_MAX ? MR_MAX : rows;
}

/* X rows of the block at `left` rows before the end of a sub-chunk (3 x 1 for a last 4 rows
 * measured as fast as 2 x 2). */
static int x_block_rows(int64_t left) { return left < NR_MAX ? (int)left : NR_MAX; }

static int64_t x_blocks(int64_t nc) {
    int64_t b = 0;
    for (int64_t j = 0; j < nc; j += x_block_rows(nc - j)) b++;
    return b;
}

/* W rows [i0, i0 + rows) x X rows [j0, j0 + nt). */
static void run_task(const problem *pb, int64_t i0, int64_t rows, int64_t j0, int64_t nt,
                     unsigned char *scratch) {
    const int64_t k = pb->k;
    const float *wt;
    int64_t ldw;
    if (pb->type == QMM_TYPE_F32) {
        wt = (const float *)(pb->w + (size_t)i0 * pb->stride);
        ldw = (int64_t)(pb->stride / sizeof(float));
    } else {
        float *tile = (float *)scratch;
        for (int64_t r = 0; r < rows; r++) {
            const unsigned char *src = pb->w + (size_t)(i0 + r) * pb->stride;
            float *dst = tile + r * pb->ldt;
            if (pb->type == QMM_TYPE_F16 || pb->type == QMM_TYPE_BF16)
                qmm_avx2_half_row(pb->type == QMM_TYPE_BF16, src, dst, k);
            else
                pb->t->to_float(src, dst, k);
        }
        wt = tile;
        ldw = pb->ldt;
    }
    double *lanes = k > PANEL ? (double *)(scratch + tile_bytes(pb->type, pb->task_rows, k)) : NULL;
    const int64_t panels = ceil_div(k, PANEL);
    /* k <= PANEL: blocks finish their outputs at once and touch no lanes (a stand-in) */
    double one_block[MR_MAX * NR_MAX * LANES];
    const int64_t ldd = panels > 1 ? SUB_ROWS : NR_MAX;
    for (int64_t jc = j0; jc < j0 + nt; jc += SUB_ROWS) {
        const int64_t nc = j0 + nt - jc < SUB_ROWS ? j0 + nt - jc : SUB_ROWS;
        for (int64_t c = jc / SUB_ROWS; c <= (jc + nc - 1) / SUB_ROWS; c++) need_x_chunk(pb, c);
        for (int64_t pi = 0; pi < panels; pi++) {
            const int64_t p0 = pi * PANEL, len = k - p0 < PANEL ? k - p0 : PANEL;
            const int first = pi == 0, last = pi == panels - 1;
            for (int64_t r = 0; r < rows; r += MR_MAX) {
                const int mr = (int)(rows - r < MR_MAX ? rows - r : MR_MAX);
                const int64_t blocks_n = x_blocks(nc);
                for (int64_t j = 0, b = 0; j < nc; b++) {
                    const int nr = x_block_rows(nc - j);
                    double *d = panels > 1 ? lanes + (r * SUB_ROWS + j) * LANES : one_block;
                    const float *xc = pb->xp + jc * pb->ldxp + p0;
                    /* the last 4 blocks of a W group bring the next group's rows into L1 */
                    const int64_t q = b - (blocks_n - MR_MAX);
                    const int64_t rn = r + MR_MAX + (q < 0 ? 0 : q);
                    const float *wn = q >= 0 && rn < rows ? wt + rn * ldw + p0 : NULL;
                    blocks[mr - 1][nr - 1](len, wt + r * ldw + p0, ldw, xc + j * pb->ldxp, pb->ldxp, wn,
                                           d, ldd, first, last, pb->y + (jc + j) * pb->ldy + i0 + r,
                                           pb->ldy);
                    j += nr;
                }
            }
        }
    }
}

/* The task shape for (m, k, n) on n_threads: rows per task and X rows per task. */
static void plan(int64_t m, int64_t k, int64_t n, int n_threads, int64_t *task_rows,
                 int64_t *task_n) {
    const int64_t want = 2 * (int64_t)n_threads; /* tasks for balance */
    int64_t rows = task_rows_for(k);
    while (rows > TASK_ROWS_MIN && ceil_div(m, rows) < want) rows = rows / 2 / MR_MAX * MR_MAX;
    if (rows < MR_MAX) rows = MR_MAX;
    int64_t nt = n;
    const int64_t tiles = ceil_div(m, rows);
    if (tiles < want) {
        const int64_t chunks = ceil_div(want, tiles);
        nt = ceil_div(ceil_div(n, chunks), NR_MAX) * NR_MAX;
    }
    *task_rows = rows;
    *task_n = nt;
}

qmm_status qmm_cpu_x86_matmul_fused_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                         const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    if (qmm_cpu_x86_fused_avx2_uses_gemv(ctx, w->type, n))
        return st->isa >= QMM_CPU_ISA_AVX512 ? qmm_cpu_x86_matmul_gemv_avx512(ctx, w, n, x, ldx, y, ldy)
                                             : qmm_cpu_x86_matmul_gemv_avx2(ctx, w, n, x, ldx, y, ldy);
    const qmm_cpu_weights *cw = w->backend;
    problem pb = {.t = qmm_type_traits_get(w->type), .type = w->type, .m = w->m, .k = w->k,
                  .n = n, .w = cw->data, .stride = cw->stride, .ldxp = x_ld(w->k), .y = y,
                  .ldy = ldy, .ldt = tile_ld(w->k)};
    if (pb.t == NULL || pb.t->to_float == NULL)
        return qmm_error(QMM_ERR_INTERNAL, "fused_avx2: no dequantizer for type %d", (int)w->type);
    plan(w->m, w->k, n, st->n_threads, &pb.task_rows, &pb.task_n);
    size_t xbytes;
    const int64_t x_chunks = ceil_div(n, SUB_ROWS);
    const size_t flag_bytes = ((size_t)x_chunks * sizeof(atomic_int) + 63) / 64 * 64;
    if (!qmm_mul_size((size_t)n, (size_t)pb.ldxp * sizeof(float), &xbytes) ||
        xbytes > SIZE_MAX - flag_bytes)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "fused_avx2: packed X of n=%lld rows of k=%lld "
                         "overflows size_t", (long long)n, (long long)w->k);
    qmm_status s = qmm_cpu_scratch_reserve(
        st, tile_bytes(w->type, pb.task_rows, w->k) + lanes_bytes(pb.task_rows, w->k));
    if (s == QMM_OK) s = qmm_cpu_scratch_grow(&st->shared, flag_bytes + xbytes);
    if (s != QMM_OK) return s;
    pb.packed = st->shared.ptr;
    for (int64_t c = 0; c < x_chunks; c++) atomic_init(&pb.packed[c], 0);
    pb.xp = (float *)((unsigned char *)st->shared.ptr + flag_bytes);
    pb.x = x;
    pb.ldx = ldx;

    const int64_t tiles = ceil_div(w->m, pb.task_rows), chunks = ceil_div(n, pb.task_n);
    const int64_t tasks = tiles * chunks;
    const int threads = qmm_cpu_team_size(st->n_threads, tasks, w->m, n, w->k);
    /* tasks handed out one at a time: a thread that starts late (a shared machine) leaves its
     * tasks to the others; each output belongs to one task */
#pragma omp parallel for num_threads((int)threads) schedule(dynamic, 1) if (threads > 1)
    for (int64_t task = 0; task < tasks; task++) {
        const int64_t tm = task % tiles, tn = task / tiles;
        const int64_t i0 = tm * pb.task_rows, j0 = tn * pb.task_n;
        const int64_t rows = w->m - i0 < pb.task_rows ? w->m - i0 : pb.task_rows;
        const int64_t nt = n - j0 < pb.task_n ? n - j0 : pb.task_n;
        run_task(&pb, i0, rows, j0, nt, st->per_thread[omp_get_thread_num()].ptr);
    }
    return QMM_OK;
}
