/*
 * backend.c — the CPU backend: contexts (threads, scratch), packed weights, strategy table
 * and dispatch, host buffers and the monotonic timer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/tuning.h"
#include "cpu/cpu_internal.h"

/* What qmm_path.auto_table adds in a batch-invariant context (cpu_resolve's rule). */
#define BI_NOTE(ctx) \
    (((ctx)->params.flags & QMM_FLAG_BATCH_INVARIANT) ? " (batch-invariant: its choice at n = 2^30, every n)" : "")
#if defined(QMM_ARCH_X86_64)
#include "cpu/x86/x86_backend.h"
#endif
#if defined(QMM_ARCH_AARCH64)
#include "cpu/arm/arm_backend.h"
#endif

/* ---------------------------------------------------------------------------------------
 * The strategy table: the ONE place a CPU strategy implementation is registered. resolve()
 * takes the first entry of the requested strategy whose supports() accepts; ISA-specific
 * entries (src/cpu/x86/, src/cpu/arm/: compiled for their architecture only) go before the
 * portable entry of the same strategy.
 * ------------------------------------------------------------------------------------- */

static const qmm_cpu_impl cpu_impls[] = {
    /* strategy, name, min ISA, types (NULL = all), extra conditions, run, precision, kernel_for */
    {QMM_STRATEGY_REF, "ref", QMM_CPU_ISA_GENERIC, NULL, NULL, qmm_cpu_matmul_ref,
     QMM_PRECISION_F32, NULL},
#if defined(QMM_ARCH_X86_64)
    {QMM_STRATEGY_GEMV, "gemv_avx512", QMM_CPU_ISA_AVX512, qmm_x86_gemv_avx512_has_type, NULL,
     qmm_cpu_x86_matmul_gemv_avx512, QMM_PRECISION_F32, NULL},
    {QMM_STRATEGY_GEMV, "gemv_avx2", QMM_CPU_ISA_AVX2, qmm_x86_gemv_avx2_has_type, NULL,
     qmm_cpu_x86_matmul_gemv_avx2, QMM_PRECISION_F32, NULL},
#endif
#if defined(QMM_ARCH_AARCH64)
    {QMM_STRATEGY_GEMV, "gemv_neon", QMM_CPU_ISA_NEON, qmm_arm_gemv_neon_has_type, NULL,
     qmm_cpu_arm_matmul_gemv_neon, QMM_PRECISION_F32, NULL},
#endif
    {QMM_STRATEGY_GEMV, "gemv_portable", QMM_CPU_ISA_GENERIC, NULL, NULL, qmm_cpu_matmul_gemv,
     QMM_PRECISION_F32, NULL},
#if defined(QMM_ARCH_X86_64)
    {QMM_STRATEGY_FUSED, "fused_amx_bf16x3", QMM_CPU_ISA_AMX, qmm_cpu_x86_fused_amx_f32_has_type,
     NULL, qmm_cpu_x86_matmul_fused_amx, QMM_PRECISION_F32, NULL},
    {QMM_STRATEGY_FUSED, "fused_amx_bf16", QMM_CPU_ISA_AMX, qmm_cpu_x86_fused_amx_has_type, NULL,
     qmm_cpu_x86_matmul_fused_amx, QMM_PRECISION_HALF, NULL},
    {QMM_STRATEGY_FUSED, "fused_gemm_avx2", QMM_CPU_ISA_AVX2, NULL,
     qmm_cpu_x86_fused_gemm_avx2_supports, qmm_cpu_x86_matmul_fused_gemm_avx2, QMM_PRECISION_F32,
     qmm_cpu_x86_fused_gemm_avx2_kernel},
    {QMM_STRATEGY_FUSED, "fused_avx2", QMM_CPU_ISA_AVX2, NULL, NULL,
     qmm_cpu_x86_matmul_fused_avx2, QMM_PRECISION_F32, qmm_cpu_x86_fused_avx2_kernel},
#endif
#if defined(QMM_ARCH_AARCH64)
    /* the gemv_neon kernel: its order depends only on k, so fused and gemv agree bit for bit */
    {QMM_STRATEGY_FUSED, "fused_neon", QMM_CPU_ISA_NEON, qmm_arm_gemv_neon_has_type, NULL,
     qmm_cpu_arm_matmul_gemv_neon, QMM_PRECISION_F32, NULL},
#endif
    {QMM_STRATEGY_FUSED, "fused_portable", QMM_CPU_ISA_GENERIC, NULL, NULL, qmm_cpu_matmul_fused,
     QMM_PRECISION_F32, NULL},
#if defined(QMM_ARCH_X86_64)
    {QMM_STRATEGY_INT8, "int8_amx", QMM_CPU_ISA_AMX, qmm_x86_gemv_int8_avx512_has_type, NULL,
     qmm_cpu_x86_matmul_int8_amx, QMM_PRECISION_INT8, qmm_cpu_x86_int8_kernel},
    {QMM_STRATEGY_INT8, "int8_avx512", QMM_CPU_ISA_AVX512, qmm_x86_gemv_int8_avx512_has_type,
     NULL, qmm_cpu_x86_matmul_int8_avx2, QMM_PRECISION_INT8, qmm_cpu_x86_int8_avx2_kernel},
    {QMM_STRATEGY_INT8, "int8_avx2", QMM_CPU_ISA_AVX2, qmm_x86_gemv_int8_avx2_has_type, NULL,
     qmm_cpu_x86_matmul_int8_avx2, QMM_PRECISION_INT8, qmm_cpu_x86_int8_avx2_kernel},
#endif
#if defined(QMM_ARCH_AARCH64)
    {QMM_STRATEGY_INT8, "int8_i8mm", QMM_CPU_ISA_I8MM, qmm_arm_int8_has_type, NULL,
     qmm_cpu_arm_matmul_int8_i8mm, QMM_PRECISION_INT8, qmm_cpu_arm_int8_i8mm_kernel},
    {QMM_STRATEGY_INT8, "int8_dotprod_gemv", QMM_CPU_ISA_DOTPROD, qmm_arm_int8_has_type, NULL,
     qmm_cpu_arm_matmul_int8_dotprod, QMM_PRECISION_INT8, NULL},
    {QMM_STRATEGY_INT8, "int8_neon_gemv", QMM_CPU_ISA_NEON, qmm_arm_int8_has_type, NULL,
     qmm_cpu_arm_matmul_int8_neon, QMM_PRECISION_INT8, NULL},
#endif
    {QMM_STRATEGY_DEQUANT_SGEMM, "dequant_sgemm_openblas", QMM_CPU_ISA_GENERIC, NULL,
     qmm_cpu_dequant_sgemm_supports, qmm_cpu_matmul_dequant_sgemm, QMM_PRECISION_F32, NULL},
};
#define N_CPU_IMPLS (sizeof cpu_impls / sizeof cpu_impls[0])

static qmm_cpu_isa ctx_isa(const qmm_context *ctx) {
    return ((const qmm_cpu_state *)ctx->backend)->isa;
}

/* First implementation of `s` that can run; *why gets the last refusal's reason. */
static const qmm_cpu_impl *find_impl(const qmm_context *ctx, qmm_type type, qmm_strategy s,
                                     const char **why) {
    *why = "no CPU kernel implements it";
    for (size_t i = 0; i < N_CPU_IMPLS; i++) {
        const qmm_cpu_impl *im = &cpu_impls[i];
        if (im->strategy != s) continue;
        if (ctx_isa(ctx) < im->min_isa) {
            *why = "the context's ISA level is below what its kernels need";
#if defined(QMM_ARCH_X86_64)
            if (s == QMM_STRATEGY_INT8)
                *why = im->min_isa == QMM_CPU_ISA_AMX
                           ? "the context's ISA level is below amx (int8 needs AMX-INT8)"
                           : "the context's ISA level is below avx2 (int8 needs AVX2)";
#endif
            continue;
        }
        if (im->has_type != NULL && !im->has_type(type)) {
            *why = s == QMM_STRATEGY_INT8 ? "the int8 strategy has no kernel for this weight type"
                                          : "its kernel does not handle this weight type";
            continue;
        }
        if (im->supports == NULL || im->supports(ctx, type, why)) return im;
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
    isa_status = qmm_cpu_avx_vnni_select(st->isa, &st->avx_vnni);
    if (isa_status != QMM_OK) {
        free(st);
        free(slots);
        return isa_status;
    }
    /* The tuning file for this identity (core/tuning.h): an error only when one was named. */
    const qmm_tuning_identity ident = {.backend = "cpu", .device_key = "cpu",
                                       .device = qmm_cpu_brand(), .level_key = "isa",
                                       .level = qmm_cpu_isa_name(st->isa), .threads = nt};
    qmm_status tune_status = qmm_tuning_load(ctx->params.tune_file, &ident,
                                             qmm_cpu_auto_rows_parse, &st->tuned, &ctx->tuning);
    if (tune_status == QMM_OK && ctx->tuning.state == QMM_TUNING_APPLIED) {
        const size_t len = strlen(ctx->tuning.path) + sizeof "tuning file " + strlen(BI_NOTE(ctx));
        st->tuned_name = malloc(len);
        if (st->tuned_name == NULL)
            tune_status = qmm_error(QMM_ERR_OUT_OF_MEMORY, "CPU context: out of memory");
        else
            snprintf(st->tuned_name, len, "tuning file %s%s", ctx->tuning.path, BI_NOTE(ctx));
    }
    if (tune_status == QMM_OK) { /* the compiled-in table's name, with the rule's note */
        const char *base = qmm_cpu_auto_compiled_name(st->isa);
        const size_t len = strlen(base) + strlen(BI_NOTE(ctx)) + 1;
        st->compiled_name = malloc(len);
        if (st->compiled_name == NULL)
            tune_status = qmm_error(QMM_ERR_OUT_OF_MEMORY, "CPU context: out of memory");
        else
            snprintf(st->compiled_name, len, "%s%s", base, BI_NOTE(ctx));
    }
    if (tune_status != QMM_OK) {
        qmm_cpu_auto_rows_free(&st->tuned);
        free(st->tuned_name);
        free(st);
        free(slots);
        return tune_status;
    }
    st->n_threads = nt;
    st->per_thread = slots;
    st->panel = qmm_cpu_panel_f32_select(st->isa);
    ctx->params.n_threads = nt;
    ctx->backend = st;
    qmm_log(1, "cpu backend: %d threads, f32 panel kernel '%s', ISA level %s%s; auto: %s", nt,
            st->panel->name, qmm_cpu_isa_name(st->isa), st->avx_vnni ? " with AVX-VNNI" : "",
            st->tuned_name ? st->tuned_name : qmm_cpu_auto_compiled_name(st->isa));
    return QMM_OK;
}

static void cpu_context_release(qmm_context *ctx) {
    qmm_cpu_state *st = ctx->backend;
    if (st == NULL) return;
    for (int i = 0; i < st->n_threads; i++) free(st->per_thread[i].ptr);
    free(st->per_thread);
    free(st->shared.ptr);
    qmm_cpu_auto_rows_free(&st->tuned);
    free(st->tuned_name);
    free(st->compiled_name);
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
    qmm_status s = QMM_OK;
#if defined(QMM_ARCH_X86_64)
    s = qmm_cpu_x86_weights_init(ctx, w);
#endif
#if defined(QMM_ARCH_AARCH64)
    s = qmm_cpu_arm_weights_init(ctx, w);
#endif
    if (s != QMM_OK) {
        free(buf);
        free(cw);
        w->backend = NULL;
    }
    return s;
}

static void cpu_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out) {
    const qmm_cpu_weights *cw = w->backend;
    out->gguf_bytes = cw->stride * (size_t)w->m;
#if defined(QMM_ARCH_X86_64)
    qmm_cpu_x86_weights_memory(w, out); /* the AMX / int8 copies, once made */
#endif
#if defined(QMM_ARCH_AARCH64)
    qmm_cpu_arm_weights_memory(w, out); /* the SMMLA copy, once made */
#endif
}

static void cpu_weights_release(qmm_weights *w) {
    qmm_cpu_weights *cw = w->backend;
    if (cw == NULL) return;
#if defined(QMM_ARCH_X86_64)
    qmm_cpu_x86_weights_release(w);
#endif
#if defined(QMM_ARCH_AARCH64)
    qmm_cpu_arm_weights_release(w);
#endif
    free(cw->data);
    free(cw);
    w->backend = NULL;
}

/* ---------------------------------------------------------------------------------------
 * Dispatch
 * ------------------------------------------------------------------------------------- */

static qmm_status cpu_resolve(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                              qmm_strategy requested, qmm_strategy *out) {
    qmm_strategy s = requested;
    /* Batch-invariant: one strategy for every n, the row's prefill choice (its choice at the
     * largest n a row describes, QMM_TUNE_MAX_N): int8 where the row takes int8 there, else
     * fused. Under the flag each of the two runs one kernel order for every n (the int8
     * strategy its GEMM, or its gemv for the types without one; fused the gemv kernels of its
     * own order at decode sizes), and int8 keeps the precision class of the default's
     * prefill. gemv is never taken: its ISA kernels and fused's differ in order. */
    const bool one_path = (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) != 0;
    if (s == QMM_STRATEGY_AUTO) {
        const char *why_not;
        const qmm_cpu_state *st = ctx->backend;
        const qmm_cpu_auto_row a =
            qmm_cpu_auto_lookup(&st->tuned, st->isa, w->type, w->m, w->k, NULL);
        const int64_t nr = one_path ? QMM_TUNE_MAX_N : n;
        if (nr >= a.int8_min_n && nr <= a.int8_max_n &&
            find_impl(ctx, w->type, QMM_STRATEGY_INT8, &why_not) != NULL)
            s = QMM_STRATEGY_INT8;
        else
            s = nr <= a.gemv_max_n && !one_path ? QMM_STRATEGY_GEMV : QMM_STRATEGY_FUSED;
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

static const char *cpu_auto_table(const qmm_context *ctx, const qmm_weights *w, int64_t n) {
    (void)n;
    const qmm_cpu_state *st = ctx->backend;
    bool from_file = false;
    qmm_cpu_auto_lookup(&st->tuned, st->isa, w->type, w->m, w->k, &from_file);
    /* batch-invariant: the row's prefill choice at every n (cpu_resolve), said beside the name */
    return from_file ? st->tuned_name : st->compiled_name;
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
    .auto_table = cpu_auto_table,
    .matmul = cpu_matmul,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .synchronize = cpu_synchronize,
    .timer_begin = cpu_timer_begin,
    .timer_end = cpu_timer_end,
    .weights_memory = cpu_weights_memory,
};
