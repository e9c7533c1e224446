/*
 * fused_gemm_avx2.c — strategy `fused` on AVX2 + FMA + F16C outside batch-invariant mode
 * (`fused_gemm_avx2`, precision class F32, every weight type): a register-blocked GEMM on
 * exact float W panels. docs/KERNELS.md ("x86: fused_gemm_avx2") has the order, the bound
 * and the memory; this comment says how the code gets there.
 *
 * Below n = qmm_cpu_fused_gemm_min_n (auto_table.c: measured) the call goes to fused_avx2,
 * whose kernel needs no W panel per call.
 *
 * Order of one output y[j][i] (depends only on k): k in panels of KC = 256 from 0; in a
 * panel one f32 FMA chain from 0 in increasing p (acc = fma(w[p], x[p], acc)); the first
 * panel's chain is stored, each later one added to the stored float (y = y + chain). Each
 * output is one lane of one accumulator, and every lane does the same operations whatever
 * the tile, its edges, n or the thread, so the result is deterministic and the same for
 * every n this kernel runs (n >= the switch above) — but it is not the gemv order, so
 * batch-invariant mode (whose small n run gemv) takes fused_avx2 instead (supports() below).
 *
 * Micro-kernel (tile): 16 W rows (two ymm of a W panel interleaved 16 rows per element) x
 * NR <= 6 X rows (broadcast from X packed 6 rows per element) = 12 ymm accumulators; a step
 * is 2 W loads, 6 broadcasts and 12 FMAs.
 *
 * Blocking (Goto's): a task is up to MC W rows x a chunk of X rows. Per panel of KC it
 * converts its W rows to exact floats (f32 in place, f16/bf16 by vcvtph2ps / shift, the
 * others by the type table's to_float on the panel's blocks) and interleaves them into a
 * per-thread W panel (MC x KC floats, 128 KiB: in L2); then for each 6-row X group (6 x KC
 * floats: in L1) the W panel's 16-row groups in turn. X is packed once per call, in chunks
 * of 48 rows by the first task that needs them (as fused_avx2).
 */
#include <immintrin.h>
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu/x86/gemv_avx2_impl.h"
#include "cpu/x86/x86_backend.h"

#ifndef KC
#define KC 256       /* elements of k per panel (a multiple of every block size) */
#endif
#define MR 16        /* W rows per tile */
#define NR 6         /* X rows per tile (group) */
#ifndef MC
#define MC 128       /* W rows per task at most (MR times a power of two: plan() halves it) */
#endif
#define X_CHUNK 48   /* X rows packed at once (a multiple of NR) */


#define INL static inline __attribute__((always_inline))

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* All-ones in lanes < count (count may be <= 0 or >= 8). */
INL __m256i lane_mask(int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(count < 0 ? 0 : count > 8 ? 8 : count)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* r[c] = column c of the 8 x 8 block r[0..7]. */
INL void transpose8(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* Interleave `count` <= 8 rows (src[r], len floats each; rows >= count are zeros) into
 * dst: element p of row r at dst[p * ld + r], lanes count..7 zero. */
static void interleave8(const float *const src[8], int count, int64_t len, float *dst, int64_t ld) {
    static const float zeros[8] = {0};
    int64_t p = 0;
    for (; p + 8 <= len; p += 8) {
        __m256 v[8];
        for (int r = 0; r < 8; r++) v[r] = _mm256_loadu_ps(r < count ? src[r] + p : zeros);
        transpose8(v);
        for (int c = 0; c < 8; c++) _mm256_store_ps(dst + (p + c) * ld, v[c]);
    }
    for (; p < len; p++)
        for (int r = 0; r < 8; r++) dst[p * ld + r] = r < count ? src[r][p] : 0.0f;
}

/* ---------------------------------------------------------------------------------------
 * The tile: nr X rows (packed: element p of row j at x[6 p + j]) x 16 W rows (the panel
 * group: element p of row r at w[16 p + r]) over kc elements; `rows` (1..16) of the 16 are
 * real. first: store the chains, else add them to the stored floats.
 * ------------------------------------------------------------------------------------- */

/* One step of X row j (named accumulators: gcc keeps them in registers, an array of them
 * it spilled every step). */
#define STEP(j)                                                       \
    if (nr > j) {                                                     \
        const __m256 b = _mm256_broadcast_ss(x + 6 * p + j);          \
        a##j##0 = _mm256_fmadd_ps(w0, b, a##j##0);                    \
        a##j##1 = _mm256_fmadd_ps(w1, b, a##j##1);                    \
    }

INL void tile(int nr, int64_t kc, const float *w, const float *x, float *y, int64_t ldy,
              int rows, int first) {
    __m256 a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51;
    a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = a40 = a41 = a50 = a51 = _mm256_setzero_ps();
    for (int64_t p = 0; p < kc; p++) {
        const __m256 w0 = _mm256_load_ps(w + 16 * p), w1 = _mm256_load_ps(w + 16 * p + 8);
        STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5)
    }
    __m256 a[NR][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}, {a40, a41}, {a50, a51}};
    if (rows == MR) {
        for (int j = 0; j < nr; j++) {
            float *yr = y + j * ldy;
            if (!first) {
                a[j][0] = _mm256_add_ps(_mm256_loadu_ps(yr), a[j][0]);
                a[j][1] = _mm256_add_ps(_mm256_loadu_ps(yr + 8), a[j][1]);
            }
            _mm256_storeu_ps(yr, a[j][0]);
            _mm256_storeu_ps(yr + 8, a[j][1]);
        }
        return;
    }
    const __m256i m0 = lane_mask(rows), m1 = lane_mask(rows - 8);
    for (int j = 0; j < nr; j++) {
        float *yr = y + j * ldy;
        if (!first) {
            a[j][0] = _mm256_add_ps(_mm256_maskload_ps(yr, m0), a[j][0]);
            a[j][1] = _mm256_add_ps(_mm256_maskload_ps(yr + 8, m1), a[j][1]);
        }
        _mm256_maskstore_ps(yr, m0, a[j][0]);
        _mm256_maskstore_ps(yr + 8, m1, a[j][1]);
    }
}

#define TILE_FN(NRV)                                                                        \
    static void tile_##NRV(int64_t kc, const float *w, const float *x, float *y, int64_t ldy, \
                           int rows, int first) {                                           \
        tile(NRV, kc, w, x, y, ldy, rows, first);                                           \
    }
TILE_FN(1) TILE_FN(2) TILE_FN(3) TILE_FN(4) TILE_FN(5) TILE_FN(6)
typedef void (*tile_fn)(int64_t, const float *, const float *, float *, int64_t, int, int);
static const tile_fn tiles[NR] = {tile_1, tile_2, tile_3, tile_4, tile_5, tile_6};

/* ---------------------------------------------------------------------------------------
 * Driver
 * ------------------------------------------------------------------------------------- */

typedef struct problem {
    const qmm_type_traits *t;
    qmm_type type;
    int64_t m, k, n;
    const unsigned char *w; /* packed rows, `stride` bytes apart */
    size_t stride;
    const float *x; /* the caller's X */
    int64_t ldx;
    float *xp;      /* X packed: group g (rows 6g..6g+5) at xp + g * xgs, element (j, p) at 6 p + j */
    int64_t xgs;
    atomic_int *packed; /* per chunk of X_CHUNK rows: 0 not packed, 1 being packed, 2 packed */
    float *y;
    int64_t ldy;
    int64_t task_rows, task_n;
} problem;

/* Floats per packed X group: 6 k, plus 8 so that the last 8-wide store stays inside. */
static int64_t x_group_floats(int64_t k) { return NR * k + 8; }

/* Pack rows j0 .. j0 + count - 1 (count <= 6) of X into the group at dst (zeros for rows
 * >= count): the 8 x 8 transposes of rows j0.., each column's first 6 floats at 6 p. */
static void pack_x_group(const float *x, int64_t ldx, int count, int64_t k, float *dst) {
    static const float zeros[8] = {0};
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
        __m256 v[8];
        for (int r = 0; r < 8; r++) v[r] = _mm256_loadu_ps(r < count ? x + r * ldx + p : zeros);
        transpose8(v);
        /* each store writes 8 floats; the next one overwrites the 2 past this element */
        for (int c = 0; c < 8; c++) _mm256_storeu_ps(dst + NR * (p + c), v[c]);
    }
    for (; p < k; p++)
        for (int r = 0; r < NR; r++) dst[NR * p + r] = r < count ? x[r * ldx + p] : 0.0f;
}

/* Make sure the X rows of chunk c are packed: the first task to need them packs them, others
 * wait for it (it has started); the bits do not depend on who packed them. */
static void need_x_chunk(const problem *pb, int64_t c) {
    atomic_int *f = &pb->packed[c];
    if (atomic_load_explicit(f, memory_order_acquire) == 2) return;
    int expected = 0;
    if (atomic_compare_exchange_strong_explicit(f, &expected, 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
        const int64_t j1 = (c + 1) * X_CHUNK < pb->n ? (c + 1) * X_CHUNK : pb->n;
        for (int64_t j = c * X_CHUNK; j < j1; j += NR)
            pack_x_group(pb->x + j * pb->ldx, pb->ldx, (int)(j1 - j < NR ? j1 - j : NR), pb->k,
                         pb->xp + j / NR * pb->xgs);
        atomic_store_explicit(f, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(f, memory_order_acquire) != 2) _mm_pause();
}

/* Per-thread scratch: the W panel (MC x KC floats) and one 16-row group of converted rows. */
#define PANEL_FLOATS ((size_t)MC * KC)
#define ROWS_FLOATS ((size_t)MR * KC)

/* W rows [i0, i0 + rows) x elements [p0, p0 + kc) as exact floats, interleaved 16 rows per
 * element into wp (group q at wp + q * 16 kc). */
static void pack_w_panel(const problem *pb, int64_t i0, int64_t rows, int64_t p0, int64_t kc,
                         float *wp, float *conv) {
    for (int64_t q = 0; q * MR < rows; q++) {
        const int count = (int)(rows - q * MR < MR ? rows - q * MR : MR);
        const float *src[MR];
        for (int r = 0; r < count; r++) {
            const unsigned char *row = pb->w + (size_t)(i0 + q * MR + r) * pb->stride;
            if (pb->type == QMM_TYPE_F32) {
                src[r] = (const float *)row + p0;
                continue;
            }
            float *dst = conv + (size_t)r * KC;
            if (pb->type == QMM_TYPE_F16 || pb->type == QMM_TYPE_BF16)
                qmm_avx2_half_row(pb->type == QMM_TYPE_BF16, row + 2 * p0, dst, kc);
            else
                pb->t->to_float(row + (size_t)(p0 / pb->t->block_size) * pb->t->block_bytes, dst, kc);
            src[r] = dst;
        }
        float *g = wp + q * MR * kc;
        interleave8(src, count < 8 ? count : 8, kc, g, MR);
        interleave8(src + 8, count > 8 ? count - 8 : 0, kc, g + 8, MR);
    }
}

/* W rows [i0, i0 + rows) x X rows [j0, j0 + nt) (j0 and nt multiples of 6 but at n). */
static void run_task(const problem *pb, int64_t i0, int64_t rows, int64_t j0, int64_t nt,
                     float *scratch) {
    float *wp = scratch, *conv = scratch + PANEL_FLOATS;
    for (int64_t c = j0 / X_CHUNK; c <= (j0 + nt - 1) / X_CHUNK; c++) need_x_chunk(pb, c);
    for (int64_t p0 = 0; p0 < pb->k; p0 += KC) {
        const int64_t kc = pb->k - p0 < KC ? pb->k - p0 : KC;
        pack_w_panel(pb, i0, rows, p0, kc, wp, conv);
        for (int64_t j = j0; j < j0 + nt; j += NR) {
            const int nr = (int)(j0 + nt - j < NR ? j0 + nt - j : NR);
            const float *xg = pb->xp + j / NR * pb->xgs + NR * p0;
            for (int64_t q = 0; q * MR < rows; q++) {
                const int rq = (int)(rows - q * MR < MR ? rows - q * MR : MR);
                tiles[nr - 1](kc, wp + q * MR * kc, xg, pb->y + j * pb->ldy + i0 + q * MR,
                              pb->ldy, rq, p0 == 0);
            }
        }
    }
}

/* Rows per task: MC, halved down to MR while there are fewer than 2 tasks per thread; then
 * X rows per task: all n, or n split in multiples of 6 to make up the tasks. */
static void plan(int64_t m, int64_t n, int n_threads, int64_t *task_rows, int64_t *task_n) {
    const int64_t want = 2 * (int64_t)n_threads;
    int64_t rows = MC;
    while (rows > MR && ceil_div(m, rows) < want) rows /= 2;
    int64_t nt = n;
    const int64_t tiles_m = ceil_div(m, rows);
    if (tiles_m < want) nt = ceil_div(ceil_div(n, ceil_div(want, tiles_m)), NR) * NR;
    *task_rows = rows;
    *task_n = nt;
}

bool qmm_cpu_x86_fused_gemm_avx2_supports(const qmm_context *ctx, qmm_type type, const char **why) {
    (void)type;
    if (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) {
        *why = "fused_gemm_avx2's order is not gemv's (batch-invariant mode runs fused_avx2)";
        return false;
    }
    return true;
}

static bool uses_gemm(const qmm_context *ctx, qmm_type type, int64_t n) {
    return n >= qmm_cpu_fused_gemm_min_n(((const qmm_cpu_state *)ctx->backend)->isa, type);
}

const char *qmm_cpu_x86_fused_gemm_avx2_kernel(const qmm_context *ctx, qmm_type type, int64_t n) {
    return uses_gemm(ctx, type, n) ? "fused_gemm_avx2" : "fused_avx2";
}

qmm_status qmm_cpu_x86_matmul_fused_gemm_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                              const float *x, int64_t ldx, float *y, int64_t ldy) {
    if (!uses_gemm(ctx, w->type, n)) return qmm_cpu_x86_matmul_fused_avx2(ctx, w, n, x, ldx, y, ldy);
    qmm_cpu_state *st = ctx->backend;
    const qmm_cpu_weights *cw = w->backend;
    problem pb = {.t = qmm_type_traits_get(w->type), .type = w->type, .m = w->m, .k = w->k,
                  .n = n, .w = cw->data, .stride = cw->stride, .x = x, .ldx = ldx, .y = y,
                  .ldy = ldy, .xgs = x_group_floats(w->k)};
    if (pb.t == NULL || pb.t->to_float == NULL || KC % pb.t->block_size != 0)
        return qmm_error(QMM_ERR_INTERNAL, "fused_gemm_avx2: no dequantizer for type %d", (int)w->type);
    plan(w->m, n, st->n_threads, &pb.task_rows, &pb.task_n);
    const int64_t groups = ceil_div(n, NR), x_chunks = ceil_div(n, X_CHUNK);
    const size_t flag_bytes = ((size_t)x_chunks * sizeof(atomic_int) + 63) / 64 * 64;
    size_t xbytes;
    if (!qmm_mul_size((size_t)groups, (size_t)pb.xgs * sizeof(float), &xbytes) ||
        xbytes > SIZE_MAX - flag_bytes)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "fused_gemm_avx2: packed X of n=%lld rows of "
                         "k=%lld overflows size_t", (long long)n, (long long)w->k);
    qmm_status s = qmm_cpu_scratch_reserve(st, (PANEL_FLOATS + ROWS_FLOATS) * sizeof(float));
    if (s == QMM_OK) s = qmm_cpu_scratch_grow(&st->shared, flag_bytes + xbytes);
    if (s != QMM_OK) return s;
    pb.packed = st->shared.ptr;
    for (int64_t c = 0; c < x_chunks; c++) atomic_init(&pb.packed[c], 0);
    pb.xp = (float *)((unsigned char *)st->shared.ptr + flag_bytes);

    const int64_t tiles_m = ceil_div(w->m, pb.task_rows), chunks = ceil_div(n, pb.task_n);
    const int64_t tasks = tiles_m * chunks;
    const int threads = qmm_cpu_team_size(st->n_threads, tasks, w->m, n, w->k);
    /* tasks handed out one at a time; each output belongs to one task */
#pragma omp parallel for num_threads((int)threads) schedule(dynamic, 1) if (threads > 1)
    for (int64_t task = 0; task < tasks; task++) {
        const int64_t tm = task % tiles_m, tn = task / tiles_m;
        const int64_t i0 = tm * pb.task_rows, j0 = tn * pb.task_n;
        const int64_t rows = w->m - i0 < pb.task_rows ? w->m - i0 : pb.task_rows;
        const int64_t nt = n - j0 < pb.task_n ? n - j0 : pb.task_n;
        run_task(&pb, i0, rows, j0, nt, st->per_thread[omp_get_thread_num()].ptr);
    }
    return QMM_OK;
}
