/*
 * cpu_internal.h — the CPU backend's kernel contract (written out in docs/KERNELS.md).
 *
 * The CPU backend has two layers:
 *
 *   1. Strategy implementations (qmm_cpu_impl): one entry per way of computing a whole
 *      matmul (ref, gemv, fused, dequant_sgemm; later int8 and ISA-specific variants). They
 *      are listed in ONE table, qmm_cpu_impls[] in backend.c; resolve() picks the first entry
 *      whose strategy matches and whose supports() accepts the type, flags and CPU.
 *
 *   2. The f32 panel kernel (qmm_cpu_panel_f32_fn) used by gemv and fused: dot products of
 *      already-dequantized W rows with X rows over one k-panel. gemv and fused differ only in
 *      tiling (qmm_cpu_tiling); both call the same panel kernel, which is why their outputs
 *      are bit-identical and why batch-invariant mode holds for both.
 *
 * Fixed accumulation order of the f32 paths (the "panel order"), for one output y[j][i]:
 *   - k is cut into panels of QMM_CPU_KP elements from 0 (the last one may be shorter);
 *   - inside a panel of length len, element p (0-based within the panel) is added into lane
 *     p % QMM_CPU_LANES as a float: lane += x[p] * w[p] (a rounded product, then a rounded
 *     add; no FMA in the portable kernel), in increasing p;
 *   - the lanes are reduced with the fixed tree qmm_cpu_lane_reduce() to one float;
 *   - the panel float is widened to double and added to a double accumulator in panel order;
 *   - the double is rounded once to float and stored.
 * This order depends only on k, never on n, m, the tile, the thread or the thread count.
 */
#ifndef QMM_CPU_INTERNAL_H
#define QMM_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "core/types.h"
#include "cpu/cpu_features.h"

/* k-panel length in elements. A multiple of every block size in the type table (1, 32,
 * 256), so every panel starts on a block boundary and can be dequantized on its own. */
#define QMM_CPU_KP 256
/* Lanes of the f32 panel order (two SSE registers, one AVX register). */
#define QMM_CPU_LANES 8
/* Alignment of packed weights, scratch buffers and qmm_buffer_alloc memory. */
#define QMM_CPU_ALIGN 64

/* Below this many flops (2 m n k) per thread a call uses fewer threads (provisional). */
#define QMM_CPU_MIN_FLOPS_PER_THREAD (1 << 20)

/* The team of a tiled call: at most n_threads, at most `tasks`, one per
 * QMM_CPU_MIN_FLOPS_PER_THREAD of work, at least 1. */
static inline int qmm_cpu_team_size(int n_threads, int64_t tasks, int64_t m, int64_t n, int64_t k) {
    const double per = 2.0 * (double)m * (double)n * (double)k / QMM_CPU_MIN_FLOPS_PER_THREAD;
    int64_t t = per >= (double)n_threads ? n_threads : (int64_t)per;
    if (t > tasks) t = tasks;
    return t < 1 ? 1 : (int)t;
}

/*
 * What `auto` runs for one (ISA level, weight type): int8 for int8_min_n <= n <= int8_max_n
 * (when an int8 kernel exists for the type), else gemv for n <= gemv_max_n, else fused.
 * The rows are data, measured on a machine of that ISA level (src/cpu/auto_table.c names the
 * command and the results); a (level, type) with no row gets the default row of its level.
 */
typedef struct qmm_cpu_auto_row {
    qmm_cpu_isa isa;
    qmm_type type;
    int64_t int8_min_n, int8_max_n; /* empty range (min > max): never int8 */
    int64_t gemv_max_n;
} qmm_cpu_auto_row;

/* A row of a tuning file made on this machine (auto_tuned.c, docs/TUNING.md): a row keyed by
 * a shape class too, the box m_min <= m <= m_max, k_min <= k <= k_max of W shapes (all four
 * 0: every shape). */
typedef struct qmm_cpu_auto_tuned_row {
    qmm_cpu_auto_row row;
    int64_t m_min, m_max, k_min, k_max;
} qmm_cpu_auto_tuned_row;

/* The rows of a tuning file (all of the context's ISA level), in the file's order. */
typedef struct qmm_cpu_auto_rows {
    qmm_cpu_auto_tuned_row *rows;
    size_t count;
} qmm_cpu_auto_rows;

/*
 * The row `auto` uses for weights of `type` and shape m x k at level `isa`: the first row of
 * `tuned` (NULL or empty: none) of that type whose shape class holds m x k; else the
 * compiled-in row of (isa, type); else the level's default row. *from_file (may be NULL) tells
 * whether the row came from `tuned`.
 */
qmm_cpu_auto_row qmm_cpu_auto_lookup(const qmm_cpu_auto_rows *tuned, qmm_cpu_isa isa,
                                     qmm_type type, int64_t m, int64_t k, bool *from_file);
/* The smallest n at which strategy fused runs fused_gemm_avx2 rather than fused_avx2 at
 * level isa (avx2, avx512) outside batch-invariant mode (data: src/cpu/auto_table.c). */
int64_t qmm_cpu_fused_gemm_min_n(qmm_cpu_isa isa, qmm_type type);
/* "compiled-in table for <level>" (static storage). */
const char *qmm_cpu_auto_compiled_name(qmm_cpu_isa isa);
/* The tuning file's rows parser (a qmm_tuning_rows_fn, core/tuning.h; `out` is a
 * qmm_cpu_auto_rows, whose rows' isa the caller sets), and freeing what it made. */
struct cJSON;
qmm_status qmm_cpu_auto_rows_parse(const struct cJSON *rows, void *out, char *why, size_t why_len);
void qmm_cpu_auto_rows_free(qmm_cpu_auto_rows *rows);

/* The fixed lane-reduction tree of the panel order. */
static inline float qmm_cpu_lane_reduce(const float a[QMM_CPU_LANES]) {
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

/*
 * f32 panel kernel. For r < mr and j < nr:
 *     acc[j*ldacc + r] += (double) panel_dot(x + j*ldx, w + r*ldw, len)
 * where panel_dot follows the panel order above.
 *   w: mr dequantized W rows of len floats, row r at w + r*ldw; ldw is a multiple of 16 and
 *      w is QMM_CPU_ALIGN-aligned (a kernel may use aligned loads on w).
 *   x: nr X rows, row j at x + j*ldx (the caller's memory: no alignment promised, ldx >= len,
 *      and the floats after x[len-1] of a row may be NaN padding — never read them).
 *   acc: nr x mr doubles, row stride ldacc >= mr.
 *   1 <= len <= QMM_CPU_KP (len is any value for f32/f16/bf16 weights: handle tails),
 *   1 <= mr, 1 <= nr (any values: handle tails).
 * The value added for one (j, r) must depend only on (x row j, w row r, len) — never on mr,
 * nr, r, j or alignment — so that every tiling gives the same bits (batch invariance).
 * A kernel that also reproduces the portable order bit for bit may say so (exact_order);
 * one that uses FMA or another lane count keeps batch invariance but not bit equality with
 * the portable kernel; its error bound must be documented in docs/KERNELS.md.
 */
typedef void (*qmm_cpu_panel_f32_fn)(int64_t mr, int64_t nr, int64_t len, const float *w,
                                     int64_t ldw, const float *x, int64_t ldx, double *acc,
                                     int64_t ldacc);

/* A panel kernel and when it may run. */
typedef struct qmm_cpu_panel_f32_kernel {
    const char *name;           /* e.g. "portable", "avx2" */
    bool (*available)(qmm_cpu_isa isa); /* may run at the context's ISA level (NULL = always) */
    bool exact_order;           /* reproduces the portable panel order bit for bit */
    qmm_cpu_panel_f32_fn run;
} qmm_cpu_panel_f32_kernel;

/* The portable kernel (panel_f32.c): plain C that gcc -O3 vectorizes for baseline x86-64. */
void qmm_cpu_panel_f32_portable(int64_t mr, int64_t nr, int64_t len, const float *w,
                                int64_t ldw, const float *x, int64_t ldx, double *acc,
                                int64_t ldacc);

/* The panel kernel the f32 paths use at ISA level `isa` (first available in panel_f32.c's
 * table; at level generic always the portable one). */
const qmm_cpu_panel_f32_kernel *qmm_cpu_panel_f32_select(qmm_cpu_isa isa);

/* ---------------------------------------------------------------------------------------
 * Backend state and scratch
 * ------------------------------------------------------------------------------------- */

typedef struct qmm_cpu_scratch {
    void *ptr;                  /* QMM_CPU_ALIGN-aligned */
    size_t bytes;
} qmm_cpu_scratch;

/* ctx->backend of a CPU context. Used by one thread at a time (the context's rule). */
typedef struct qmm_cpu_state {
    int n_threads;              /* resolved, >= 1 */
    qmm_cpu_scratch *per_thread;/* n_threads slots, grown by qmm_cpu_scratch_reserve */
    qmm_cpu_scratch shared;     /* dequant_sgemm's f32 copy of W, grown when needed */
    const qmm_cpu_panel_f32_kernel *panel; /* chosen at context creation */
    double timer_start_ms;      /* qmm_timer_begin's clock reading */
    qmm_cpu_isa isa;            /* ISA level, chosen at creation (QMM_CPU_ISA or best) */
    qmm_cpu_auto_rows tuned;    /* rows of the tuning file in use (count 0: none) */
    char *tuned_name;           /* "tuning file PATH" when rows came from one, else NULL */
    char *compiled_name;        /* the compiled-in table's name (with the batch-invariant note) */
    bool avx_vnni;              /* the AVX-VNNI kernels may run (qmm_cpu_avx_vnni_select) */
} qmm_cpu_state;

/* Grow `s` to at least `bytes` (contents not kept). QMM_ERR_OUT_OF_MEMORY on failure. */
qmm_status qmm_cpu_scratch_grow(qmm_cpu_scratch *s, size_t bytes);
/* Grow every per-thread slot of the context to at least `bytes`. */
qmm_status qmm_cpu_scratch_reserve(qmm_cpu_state *st, size_t bytes);

/* The packed weights of a CPU qmm_weights (w->backend): rows `stride` bytes apart. */
typedef struct qmm_cpu_weights {
    unsigned char *data;        /* QMM_CPU_ALIGN-aligned, m rows */
    size_t stride;              /* row_bytes rounded up to QMM_CPU_ALIGN */
    void *x86;                  /* repacked forms for x86 kernels (cpu/x86/x86_backend.h) or NULL */
    void *arm;                  /* the same for the aarch64 kernels (cpu/arm/arm_backend.h) */
} qmm_cpu_weights;

/* ---------------------------------------------------------------------------------------
 * Strategy implementations
 * ------------------------------------------------------------------------------------- */

/*
 * Run a whole matmul. Called only after the core checked every argument and resolve()
 * accepted the strategy: w is a CPU weights object of ctx, n >= 1, ldx >= k, ldy >= m, x
 * and y do not overlap. Must write exactly y[j*ldy + i] for j < n, i < m (never the padding
 * between m and ldy), read only x[j*ldx + p] for p < k, and on error write nothing.
 * Must be deterministic: the same inputs give the same bits run after run.
 */
typedef qmm_status (*qmm_cpu_matmul_fn)(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);

typedef struct qmm_cpu_impl {
    qmm_strategy strategy;
    const char *name;           /* "gemv_portable", "int8_amx", ... */
    qmm_cpu_isa min_isa;        /* lowest ISA level of the context it runs at */
    /* The weight types it implements: NULL = every weight type of the type table (the
     * generic paths, built on the table's dequantizer); else the kernel file's own list. */
    bool (*has_type)(qmm_type type);
    /* Further conditions (context flags), NULL = none. False when it cannot run, with *why
     * set to a static phrase for the error sentence. */
    bool (*supports)(const qmm_context *ctx, qmm_type type, const char **why);
    qmm_cpu_matmul_fn run;
    qmm_precision precision;    /* numerical class (qmm.h); 0 = QMM_PRECISION_F32 */
    /* NULL: `name` is the kernel for every n. Otherwise the kernel that run() takes for this
     * type and n (an implementation that switches kernels by n), as qmm_matmul_path reports. */
    const char *(*kernel_for)(const qmm_context *ctx, qmm_type type, int64_t n);
} qmm_cpu_impl;

qmm_status qmm_cpu_matmul_ref(qmm_context *ctx, const qmm_weights *w, int64_t n,
                              const float *x, int64_t ldx, float *y, int64_t ldy);
qmm_status qmm_cpu_matmul_gemv(qmm_context *ctx, const qmm_weights *w, int64_t n,
                               const float *x, int64_t ldx, float *y, int64_t ldy);
qmm_status qmm_cpu_matmul_fused(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                const float *x, int64_t ldx, float *y, int64_t ldy);
qmm_status qmm_cpu_matmul_dequant_sgemm(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy);
bool qmm_cpu_dequant_sgemm_supports(const qmm_context *ctx, qmm_type type, const char **why);

/*
 * The int8 class's X rule (int8_quantize.c, portable C; the int8 kernels of every
 * architecture quantize X this way): one X row of k floats (k a multiple of 32), per
 * 32-element block c: dx[c * ld] = max|x| / 127, q[32c + e] = round-to-nearest-even(x * 127 /
 * max|x|) in -127..127 (an all-zero block: dx = 0, q = 0; a block with max|x| < 2^-100 is first
 * scaled by 2^64), s[c * ld] = dx * sum of the block's q; a block holding NaN or +-Inf: q = 0,
 * dx = s = NaN (bits 0x7FC00000). Bit-identical to qmm_x86_int8_quantize_row.
 */
void qmm_cpu_int8_quantize_row(const float *x, int64_t k, int8_t *q, float *dx, float *s,
                               int64_t ld);

/* Whether some element of the m rows of `type` (row i at rows + i * stride) dequantizes to
 * Inf or NaN (to_float of every row, on up to n_threads OpenMP threads): *found gets 1 or 0.
 * An int8 kernel scales integer dots by d_w * d_x and cannot form such an element (mxfp4's
 * E8M0 0xFE times 4 overflows in the dequantizer only), so such weights take an exact path.
 * QMM_ERR_OUT_OF_MEMORY (nothing set) if a row buffer cannot be allocated. */
qmm_status qmm_cpu_rows_nonfinite(qmm_type type, int64_t m, int64_t k, const unsigned char *rows,
                                  size_t stride, int n_threads, int *found);

/* ---------------------------------------------------------------------------------------
 * The tiled f32 driver shared by gemv and fused (tiles.c)
 * ------------------------------------------------------------------------------------- */

/*
 * How the tiled driver cuts the work. A task is (an m-tile of mr W rows) x (an n-chunk of
 * nb X rows). For each k-panel the task dequantizes its mr rows (with the type table's
 * to_float, exact) into thread scratch, then runs the panel kernel over its nb X rows.
 */
typedef struct qmm_cpu_tiling {
    int64_t mr;                 /* W rows per tile (>= 1) */
    int64_t nb;                 /* X rows per task (>= 1) */
} qmm_cpu_tiling;

/* Run Y = X W^T with `tiling` on the context's threads (OpenMP, dynamic task order; each
 * output is computed by exactly one task in the panel order, so the result does not depend
 * on the schedule or the thread count). */
qmm_status qmm_cpu_run_tiled(qmm_context *ctx, const qmm_weights *w, qmm_cpu_tiling tiling,
                             int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy);

/* Pointer to packed row i of CPU weights. */
static inline const unsigned char *qmm_cpu_weights_row(const qmm_weights *w, int64_t i) {
    const qmm_cpu_weights *cw = (const qmm_cpu_weights *)w->backend;
    return cw->data + (size_t)i * cw->stride;
}

#endif /* QMM_CPU_INTERNAL_H */
