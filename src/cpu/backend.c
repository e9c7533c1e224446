/*
 * backend.c — the CPU backend: contexts (threads, scratch), packed weights, strategy table
 * and dispatch, host buffers and the monotonic timer.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_internal.h"
#include "cpu/x86/x86_backend.h"

/* ---------------------------------------------------------------------------------------
 * The strategy table: the ONE place a CPU strategy implementation is registered. resolve()
 * takes the first entry of the requested strategy whose supports() accepts; ISA-specific
 * entries (src/cpu/x86/) go before the portable entry of the same strategy.
 * ------------------------------------------------------------------------------------- */

static const qmm_cpu_impl cpu_impls[] = {
    {QMM_STRATEGY_REF, "ref", NULL, qmm_cpu_matmul_ref, QMM_PRECISION_F32, NULL},
    {QMM_STRATEGY_GEMV, "gemv_avx512", qmm_cpu_x86_gemv_avx512_supports,
     qmm_cpu_x86_matmul_gemv_avx512, QMM_PRECISION_F32, NULL},
    {QMM_STRATEGY_GEMV, "gemv_portable", NULL, qmm_cpu_matmul_gemv, QMM_PRECISION_F32, NULL},
    {QMM_STRATEGY_FUSED, "fused_amx_bf16x3", qmm_cpu_x86_fused_amx_f32_supports,
     qmm_cpu_x86_matmul_fused_amx, QMM_PRECISION_F32, NULL},
    {QMM_STRATEGY_FUSED, "fused_amx_bf16", qmm_cpu_x86_fused_amx_supports,
     qmm_cpu_x86_matmul_fused_amx, QMM_PRECISION_HALF, NULL},
    {QMM_STRATEGY_FUSED, "fused_portable", NULL, qmm_cpu_matmul_fused, QMM_PRECISION_F32, NULL},
    {QMM_STRATEGY_INT8, "int8_amx", qmm_cpu_x86_int8_amx_supports, qmm_cpu_x86_matmul_int8_amx,
     QMM_PRECISION_INT8, qmm_cpu_x86_int8_kernel},
    {QMM_STRATEGY_DEQUANT_SGEMM, "dequant_sgemm_openblas", qmm_cpu_dequant_sgemm_supports,
     qmm_cpu_matmul_dequant_sgemm, QMM_PRECISION_F32, NULL},
};
#define N_CPU_IMPLS (sizeof cpu_impls / sizeof cpu_impls[0])

/* First implementation of `s` that can run; *why gets the last refusal's reason. */
static const qmm_cpu_impl *find_impl(const qmm_context *ctx, qmm_type type, qmm_strategy s,
                                     const char **why) {
    *why = "no CPU kernel implements it";
    for (size_t i = 0; i < N_CPU_IMPLS; i++) {
        if (cpu_impls[i].strategy != s) continue;
        if (cpu_impls[i].supports == NULL || cpu_impls[i].supports(ctx, type, why))
            return &cpu_impls[i];
    }
    return NULL;
}

qmm_status qmm_cpu_matmul_ref(qmm_context *ctx, const qmm_weights *w, int64_t n,
                              const float *x, int64_t ldx, float *y, int64_t ldy) {
    (void)ctx;
    const qmm_cpu_weights *cw = w->backend;
    return qmm_matmul_ref(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y, ldy);
}

/* ---------------------------------------------------------------------------------------
 * Scratch
 * ------------------------------------------------------------------------------------- */

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

qmm_status qmm_cpu_scratch_grow(qmm_cpu_scratch *s, size_t bytes) {
    if (bytes <= s->bytes) return QMM_OK;
    if (bytes > SIZE_MAX - QMM_CPU_ALIGN)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CPU scratch of %zu bytes is too large", bytes);
    size_t size = round_up(bytes, QMM_CPU_ALIGN);
    void *p = aligned_alloc(QMM_CPU_ALIGN, size);
    if (p == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of CPU scratch", size);
    free(s->ptr);
    s->ptr = p;
    s->bytes = size;
    return QMM_OK;
}

qmm_status qmm_cpu_scratch_reserve(qmm_cpu_state *st, size_t bytes) {
    for (int i = 0; i < st->n_threads; i++) {
        qmm_status s = qmm_cpu_scratch_grow(&st->per_thread[i], bytes);
        if (s != QMM_OK) return s;
    }
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * Contexts and weights
 * ------------------------------------------------------------------------------------- */

static qmm_status cpu_context_init(qmm_context *ctx) {
    int nt = ctx->params.n_threads;
    if (nt == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        nt = online < 1 ? 1 : online > 4096 ? 4096 : (int)online;
    }
    qmm_cpu_state *st = calloc(1, sizeof *st);
    qmm_cpu_scratch *slots = calloc((size_t)nt, sizeof *slots);
    if (st == NULL || slots == NULL) {
        free(st);
        free(slots);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "CPU context: out of memory for %d threads", nt);
    }
    qmm_status isa_status = qmm_cpu_isa_select(&st->isa);
    if (isa_status != QMM_OK) {
        free(st);
        free(slots);
        return isa_status;
    }
    st->n_threads = nt;
    st->per_thread = slots;
    st->panel = qmm_cpu_panel_f32_select(st->isa);
    ctx->params.n_threads = nt;
    ctx->backend = st;
    qmm_log(1, "cpu backend: %d threads, f32 panel kernel '%s', ISA level %s", nt,
            st->panel->name, qmm_cpu_isa_name(st->isa));
    return QMM_OK;
}

static void cpu_context_release(qmm_context *ctx) {
    qmm_cpu_state *st = ctx->backend;
    if (st == NULL) return;
    for (int i = 0; i < st->n_threads; i++) free(st->per_thread[i].ptr);
    free(st->per_thread);
    free(st->shared.ptr);
    free(st);
    ctx->backend = NULL;
}

static qmm_status cpu_weights_init(qmm_context *ctx, qmm_weights *w, const void *data,
                                   size_t row_stride) {
    (void)ctx;
    size_t stride = round_up(w->row_bytes, QMM_CPU_ALIGN), total;
    if (stride < w->row_bytes || !qmm_mul_size(stride, (size_t)w->m, &total))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "weights of m=%lld rows of %zu bytes overflow",
                         (long long)w->m, w->row_bytes);
    qmm_cpu_weights *cw = calloc(1, sizeof *cw);
    unsigned char *buf = aligned_alloc(QMM_CPU_ALIGN, total);
    if (cw == NULL || buf == NULL) {
        free(cw);
        free(buf);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for weights", total);
    }
    for (int64_t i = 0; i < w->m; i++) {
        unsigned char *dst = buf + (size_t)i * stride;
        memcpy(dst, (const unsigned char *)data + (size_t)i * row_stride, w->row_bytes);
        memset(dst + w->row_bytes, 0, stride - w->row_bytes); /* defined padding */
    }
    cw->data = buf;
    cw->stride = stride;
    w->backend = cw;
    qmm_status s = qmm_cpu_x86_weights_init(ctx, w);
    if (s != QMM_OK) {
        free(buf);
        free(cw);
        w->backend = NULL;
    }
    return s;
}

static void cpu_weights_release(qmm_weights *w) {
    qmm_cpu_weights *cw = w->backend;
    if (cw == NULL) return;
    qmm_cpu_x86_weights_release(w);
    free(cw->data);
    free(cw);
    w->backend = NULL;
}

/* ---------------------------------------------------------------------------------------
 * Dispatch
 * ------------------------------------------------------------------------------------- */

/*
 * auto at the amx level: the largest n for which gemv beat fused, per weight type, measured
 * on 2026-11-29 on this project's 2-core Sapphire-Rapids-class VM (quiet, 2 threads) with
 *   qmm bench --shape 4608x1024 --n 1,2,3,4,6,8 --strategy gemv,fused --iters 9 --csv
 * and checked on 1024x4608 for q4_0, q4_K, q6_K (--n 1,2,4,8,16,32,64); docs/PERF.md has the
 * numbers. f32, f16, bf16 re-measured on 2026-11-29 18:18 UTC (load average 1.6-1.9, best of 3
 * runs) with gemv_avx512's row kernels for them:
 *   qmm bench --shape 4608x1024 --types f32,f16,bf16 --n 1,2,3,4,6,8 --strategy gemv,fused
 *             --iters 9 --csv
 * f32: gemv_avx512 beats fused_amx_bf16x3 up to n = 8 (0.70 vs 1.59 ms at n = 1, 1.18 vs
 * 1.58 at n = 8). f16/bf16: fused_amx_bf16 (W and X in bf16) still wins from n = 1 (f16
 * 0.41 vs 0.44 ms at n = 1, 0.41 vs 1.04 at n = 8), so they stay 0.
 */
static int64_t auto_gemv_max_n(const qmm_context *ctx, qmm_type type) {
    if (((const qmm_cpu_state *)ctx->backend)->isa < QMM_CPU_ISA_AMX) return QMM_CPU_AUTO_GEMV_MAX_N;
    switch (type) {
    case QMM_TYPE_F32: return 8;
    case QMM_TYPE_F16: case QMM_TYPE_BF16: return 0;
    case QMM_TYPE_Q4_0: case QMM_TYPE_Q4_1: case QMM_TYPE_Q5_0: case QMM_TYPE_Q2_K:
    case QMM_TYPE_Q4_K: return 4;
    case QMM_TYPE_Q5_K: return 3;
    case QMM_TYPE_Q5_1: case QMM_TYPE_Q3_K: return 2;
    case QMM_TYPE_Q8_0: case QMM_TYPE_Q6_K: return 1;
    default: return QMM_CPU_AUTO_GEMV_MAX_N;
    }
}

/*
 * auto at the amx level, decode sizes: the int8 strategy (X quantized per 32-block, exact
 * integer dots on VNNI / AMX; precision class INT8, docs/KERNELS.md) for n in
 * [auto_int8_min_n, auto_int8_max_n], where it beat both gemv and fused on 2026-11-29 19:42 UTC
 * on this project's 2-core VM (quiet: load < 1.1, 2 threads), every row verified:
 *   qmm bench --shape 4608x1024,1024x4608 --n 1,2,4,8,16 --strategy gemv,int8,fused --iters 9
 *             --types q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K --csv
 * ms at 4608x1024 (gemv / int8 / fused): q4_0 n=1 0.183/0.162/0.392, n=8 0.565/0.275/0.419,
 * n=16 1.138/0.280/0.404; q4_K n=16 1.059/0.324/0.385; q6_K n=8 0.901/0.333/0.398, n=16
 * 1.872/0.616/0.400; q8_0 n=1 0.300/0.264 but 0.225/0.271 at 1024x4608 and 2.87/3.77 at
 * 14336x4096 (gemv stays at n = 1), n=2 0.381/0.275. q4_0, q8_0 and q4_K have AMX int8
 * tiles (int8 wins through n = 16); the other types then ran the VNNI gemv in 8-row chunks,
 * which loses to fused from n = 16. docs/PERF.md has every row.
 * Above n = 16 for the AMX types, two quiet sweeps on 2026-11-29 (22:11 and 22:13 UTC, load
 * < 1.2, 2 threads, every row verified):
 *   qmm bench --shape 4608x1024,1024x4608,3072x1024,1024x1024,512x1024 --types q4_0,q8_0,q4_K
 *             --strategy int8,fused --n 16,17,20,24,32,33,40,48 --iters 9 --csv
 * ms int8 / fused at 4608x1024: q4_0 n=24 0.399/0.505, n=32 0.419/0.500, n=40 0.497/0.595 but
 * 1024x1024 n=33 0.152/0.145 and 1024x4608 n=48 0.718/0.610; q8_0 n=32 0.427/0.484 (every shape
 * int8 or a tie at n = 32); q4_K n=24 0.423/0.525, but n=32 at 1024x1024 0.133/0.129 and, in
 * the first sweep, 1024x4608 0.585/0.535. So q4_0 and q8_0 through n = 32, q4_K through 24.
 * q4_1, q5_0, q5_1, q5_K (AMX int8 tiles since the third session), 2026-11-29 22:47 UTC, quiet:
 *   qmm bench --shape 4608x1024,1024x4608 --types q4_1,q5_0,q5_1,q5_K --strategy int8
 *             --batch-invariant --n 8,12,16,24,32 --iters 7 --csv   (AMX at every n) and
 *   the same with --strategy fused --n 8,12,16,24,32,48 (no flag)
 * ms AMX / fused at 4608x1024 and 1024x4608: n=16 0.30-0.37 / 0.39-0.43 for all four; n=24
 * q4_1 0.428/0.494, 0.505/0.524, q5_0 0.403/0.487, 0.479/0.503, q5_1 0.451/0.471, 0.537/0.502,
 * q5_K 0.436/0.479, 0.533/0.480; n=32 q4_1 0.445/0.481, 0.524/0.516, q5_0 0.408/0.505,
 * 0.469/0.494. So q5_0 through 32, q4_1 through 24, q5_1 and q5_K through 16. q2_K, q3_K,
 * q6_K (16-element sub-blocks, no int8 tiles): the VNNI gemv, through 8.
 * Codebook types (iq4_nl, iq4_xs, mxfp4: AMX int8 tiles; nvfp4: the VNNI gemv at every n),
 * 2026-12-01 14:28 UTC, load average 1.4-1.6 (other sessions), 2 threads, the strategies
 * called alternately in one process, min / median of 21 calls (docs/KERNELS.md, "x86: the
 * codebook types"); the same order in one-thread runs at 14:17 UTC and in
 *   qmm bench --shape 4608x1024,1024x4608 --types iq4_nl,iq4_xs,mxfp4,nvfp4
 *             --strategy gemv,int8,fused --n 1,2,4,8,16,32,64,512 --iters 9 --threads 1 --csv
 * (two-thread bench runs then waited for the scheduler tick: 8.0 ms medians). ms int8 / fused
 * at 4608x1024 and 1024x4608: iq4_nl n=32 0.463/0.501, 0.479/0.525, n=48 0.647/0.619,
 * 0.636/0.623; iq4_xs n=32 0.461/0.481, 0.492/0.505, n=48 0.620/0.591, 0.727/0.612; mxfp4
 * n=32 0.491/0.525, 0.592/0.607, n=48 0.759/0.778, 0.785/0.834, n=64 0.829/0.730; nvfp4 n=8
 * 0.365/0.370 (medians 0.386/0.505), 0.440/0.425 (0.473/0.532), n=12 0.581/0.489,
 * 0.608/0.426. So iq4_nl, iq4_xs, mxfp4 through 32, nvfp4 through 8.
 */
static int64_t auto_int8_max_n(const qmm_context *ctx, qmm_type type) {
    if (((const qmm_cpu_state *)ctx->backend)->isa < QMM_CPU_ISA_AMX) return 0;
    switch (type) {
    case QMM_TYPE_Q4_0: case QMM_TYPE_Q8_0: case QMM_TYPE_Q5_0: return 32;
    case QMM_TYPE_Q4_K: case QMM_TYPE_Q4_1: return 24;
    case QMM_TYPE_Q5_1: case QMM_TYPE_Q5_K: return 16;
    case QMM_TYPE_Q2_K: case QMM_TYPE_Q3_K: case QMM_TYPE_Q6_K: return 8;
    case QMM_TYPE_IQ4_NL: case QMM_TYPE_IQ4_XS: case QMM_TYPE_MXFP4: return 32; /* codebook */
    case QMM_TYPE_NVFP4: return 8;
    default: return 0;
    }
}

static int64_t auto_int8_min_n(qmm_type type) { return type == QMM_TYPE_Q8_0 ? 2 : 1; }

static qmm_status cpu_resolve(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                              qmm_strategy requested, qmm_strategy *out) {
    qmm_strategy s = requested;
    /* Batch-invariant: one path for every n (the ISA paths of gemv and fused differ). */
    const bool one_path = (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) != 0;
    if (s == QMM_STRATEGY_AUTO) {
        const char *why_not;
        if (!one_path && n >= auto_int8_min_n(w->type) && n <= auto_int8_max_n(ctx, w->type) &&
            find_impl(ctx, w->type, QMM_STRATEGY_INT8, &why_not) != NULL)
            s = QMM_STRATEGY_INT8;
        else
            s = n <= auto_gemv_max_n(ctx, w->type) && !one_path ? QMM_STRATEGY_GEMV
                                                                 : QMM_STRATEGY_FUSED;
    }
    const char *why;
    if (find_impl(ctx, w->type, s, &why) == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s is not available for %s weights on "
                         "the CPU backend: %s", qmm_strategy_name(s) ? qmm_strategy_name(s) : "?",
                         qmm_type_name(w->type) ? qmm_type_name(w->type) : "?", why);
    *out = s;
    return QMM_OK;
}

static qmm_status cpu_describe(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                               qmm_strategy resolved, const char **kernel,
                               qmm_precision *precision) {
    const char *why;
    const qmm_cpu_impl *impl = find_impl(ctx, w->type, resolved, &why);
    if (impl == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %d is not available on the CPU backend: %s",
                         (int)resolved, why);
    *kernel = impl->kernel_for != NULL ? impl->kernel_for(ctx, w->type, n) : impl->name;
    *precision = impl->precision;
    return QMM_OK;
}

static qmm_status cpu_matmul(qmm_context *ctx, const qmm_weights *w, qmm_strategy strategy,
                             int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy) {
    const char *why;
    const qmm_cpu_impl *impl = find_impl(ctx, w->type, strategy, &why);
    if (impl == NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %d is not available on the CPU backend: %s",
                         (int)strategy, why);
    qmm_log(2, "cpu matmul: %s, m=%lld k=%lld n=%lld", impl->name, (long long)w->m,
            (long long)w->k, (long long)n);
    return impl->run(ctx, w, n, x, ldx, y, ldy);
}

/* ---------------------------------------------------------------------------------------
 * Buffers, ordering, timing
 * ------------------------------------------------------------------------------------- */

static qmm_status cpu_buffer_alloc(qmm_context *ctx, size_t bytes, void **out) {
    (void)ctx;
    if (bytes > SIZE_MAX - QMM_CPU_ALIGN)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "qmm_buffer_alloc: %zu bytes is too large", bytes);
    void *p = aligned_alloc(QMM_CPU_ALIGN, round_up(bytes, QMM_CPU_ALIGN));
    if (p == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "qmm_buffer_alloc: cannot allocate %zu bytes", bytes);
    *out = p;
    return QMM_OK;
}

static void cpu_buffer_free(qmm_context *ctx, void *buf) {
    (void)ctx;
    free(buf);
}

static qmm_status cpu_copy(qmm_context *ctx, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    memmove(dst, src, bytes);
    return QMM_OK;
}

static qmm_status cpu_synchronize(qmm_context *ctx) {
    (void)ctx;
    return QMM_OK;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static qmm_status cpu_timer_begin(qmm_context *ctx) {
    ((qmm_cpu_state *)ctx->backend)->timer_start_ms = now_ms();
    return QMM_OK;
}

static qmm_status cpu_timer_end(qmm_context *ctx, double *ms) {
    *ms = now_ms() - ((qmm_cpu_state *)ctx->backend)->timer_start_ms;
    return QMM_OK;
}

const qmm_backend_ops qmm_cpu_backend_ops = {
    .name = "cpu",
    .context_init = cpu_context_init,
    .context_release = cpu_context_release,
    .weights_init = cpu_weights_init,
    .weights_release = cpu_weights_release,
    .resolve = cpu_resolve,
    .describe = cpu_describe,
    .matmul = cpu_matmul,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .synchronize = cpu_synchronize,
    .timer_begin = cpu_timer_begin,
    .timer_end = cpu_timer_end,
};
