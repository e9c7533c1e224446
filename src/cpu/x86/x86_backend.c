/*
 * x86_backend.c — glue between the CPU backend and the x86 kernels: repacking at weights
 * creation, the type lists the registry (src/cpu/backend.c) reads, and the strategy entry points.
 * Portable C: it only calls the kernels after checking the context's ISA level.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu/x86/x86_backend.h"


/*
 * The AMX layouts (bf16 tiles for fused, int8 tiles for int8) are made on the first matmul
 * that needs them, not at creation: weights used only by gemv, or never by int8, carry no
 * extra copy (bf16: 2 bytes per weight; int8: about 1.1). A context and its weights are used
 * by one thread at a time (qmm.h), so filling them in during a call is safe.
 */
qmm_status qmm_cpu_x86_weights_init(const qmm_context *ctx, qmm_weights *w) {
    (void)ctx;
    ((qmm_cpu_weights *)w->backend)->x86 = NULL;
    return QMM_OK;
}

static qmm_status x86_record(const qmm_weights *w, qmm_x86_weights **out) {
    qmm_cpu_weights *cw = w->backend;
    if (cw->x86 == NULL) {
        cw->x86 = calloc(1, sizeof(qmm_x86_weights));
        if (cw->x86 == NULL)
            return qmm_error(QMM_ERR_OUT_OF_MEMORY, "cannot allocate the x86 weights record");
        ((qmm_x86_weights *)cw->x86)->nonfinite = -1;
    }
    *out = cw->x86;
    return QMM_OK;
}

static qmm_status ensure_bf16_tiles(const qmm_context *ctx, const qmm_weights *w,
                                    const qmm_x86_weights **out) {
    qmm_x86_weights *xw = NULL;
    qmm_status s = x86_record(w, &xw);
    if (s != QMM_OK) return s;
    if (xw->bf16.data == NULL) {
        const qmm_cpu_weights *cw = w->backend;
        s = qmm_x86_bf16_tiles_pack(w->type, w->m, w->k, cw->data, cw->stride,
                                    ((const qmm_cpu_state *)ctx->backend)->n_threads, &xw->bf16);
        if (s != QMM_OK) return s;
    }
    *out = xw;
    return QMM_OK;
}

static qmm_status ensure_int8_tiles(const qmm_context *ctx, const qmm_weights *w,
                                    const qmm_x86_weights **out) {
    qmm_x86_weights *xw = NULL;
    qmm_status s = x86_record(w, &xw);
    if (s != QMM_OK) return s;
    if (xw->int8.q == NULL) {
        const qmm_cpu_weights *cw = w->backend;
        s = qmm_x86_int8_tiles_pack(w->type, w->m, w->k, cw->data, cw->stride,
                                    ((const qmm_cpu_state *)ctx->backend)->n_threads, &xw->int8);
        if (s != QMM_OK) return s;
    }
    *out = xw;
    return QMM_OK;
}

static qmm_status ensure_int8_x8(const qmm_context *ctx, const qmm_weights *w,
                                 const qmm_x86_weights **out) {
    qmm_x86_weights *xw = NULL;
    qmm_status s = x86_record(w, &xw);
    if (s != QMM_OK) return s;
    if (xw->x8.data == NULL) {
        const qmm_cpu_weights *cw = w->backend;
        s = qmm_x86_gemm_int8_avx2_pack(w->type, w->m, w->k, cw->data, cw->stride,
                                        ((const qmm_cpu_state *)ctx->backend)->n_threads, &xw->x8);
        if (s != QMM_OK) return s;
    }
    *out = xw;
    return QMM_OK;
}

void qmm_cpu_x86_weights_release(qmm_weights *w) {
    qmm_cpu_weights *cw = w->backend;
    if (cw == NULL || cw->x86 == NULL) return;
    qmm_x86_weights *xw = cw->x86;
    qmm_x86_bf16_tiles_free(&xw->bf16);
    qmm_x86_int8_tiles_free(&xw->int8);
    qmm_x86_gemm_int8_avx2_free(&xw->x8);
    free(xw->otf_row_scale);
    free(xw);
    cw->x86 = NULL;
}

static size_t round64(size_t v) { return (v + 63) / 64 * 64; }

void qmm_cpu_x86_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out) {
    const qmm_cpu_weights *cw = w->backend;
    const qmm_x86_weights *xw = cw != NULL ? cw->x86 : NULL;
    if (xw == NULL) return;
    if (xw->bf16.data != NULL)
        out->bf16_bytes += round64((size_t)xw->bf16.parts * (size_t)xw->bf16.m_pad *
                                   (size_t)xw->bf16.k_pad * sizeof(uint16_t)) +
                           round64((size_t)xw->bf16.m_pad * sizeof(float));
    if (xw->otf_row_scale != NULL) {
        const size_t m_pad = ((size_t)w->m + QMM_X86_TILE_M - 1) / QMM_X86_TILE_M * QMM_X86_TILE_M;
        out->bf16_bytes += round64(m_pad * sizeof(float));
    }
    if (xw->int8.q != NULL) {
        const size_t scales = round64((size_t)xw->int8.m_pad * (size_t)(xw->int8.k / 32) * sizeof(float));
        out->int8_bytes += round64((size_t)xw->int8.m_pad * (size_t)xw->int8.k) + scales +
                           (xw->int8.mn != NULL ? scales : 0);
    }
    if (xw->x8.data != NULL) out->int8_bytes += round64(xw->x8.bytes); /* the AVX2 int8 GEMM's copy */
}

bool qmm_cpu_x86_fused_amx_has_type(qmm_type type) { return type != QMM_TYPE_F32; }

bool qmm_cpu_x86_fused_amx_f32_has_type(qmm_type type) { return type == QMM_TYPE_F32; }

/* The largest n for which fused_amx_bf16 decodes the GGUF blocks on the fly
 * (qmm_x86_gemm_bf16_otf_amx) rather than streaming the packed bf16 copy; both give the
 * same bits, so any switch point keeps batch invariance. 0 (packed for every n): the
 * on-the-fly kernel measured slower than the packed copy at every n tried (the commands and
 * numbers: bench/results/cpu-spr-crossovers.md). */
#ifndef QMM_X86_OTF_MAX_N /* -DQMM_X86_OTF_MAX_N=64 builds the variant to re-measure */
#define QMM_X86_OTF_MAX_N 0
#endif
static int64_t otf_max_n(qmm_type type) {
    return qmm_x86_gemm_bf16_otf_amx_has_type(type) ? QMM_X86_OTF_MAX_N : 0;
}

static qmm_status matmul_otf(qmm_context *ctx, const qmm_weights *w, int64_t n, const float *x,
                             int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    const qmm_cpu_weights *cw = w->backend;
    qmm_x86_weights *xw = NULL;
    qmm_status s = x86_record(w, &xw);
    if (s != QMM_OK) return s;
    /* the packed copy's scales follow the same rule: reuse them when it exists */
    const float *scale = xw->bf16.data != NULL ? xw->bf16.row_scale : xw->otf_row_scale;
    if (scale == NULL) {
        s = qmm_x86_bf16_otf_row_scales(w->type, w->m, w->k, cw->data, cw->stride, st->n_threads,
                                        &xw->otf_row_scale);
        if (s != QMM_OK) return s;
        scale = xw->otf_row_scale;
    }
    const qmm_x86_bf16_otf ow = {
        .type = w->type, .rows = cw->data, .row_stride = cw->stride, .row_scale = scale,
        .m = w->m, .k = w->k, .m_pad = (w->m + QMM_X86_TILE_M - 1) / QMM_X86_TILE_M * QMM_X86_TILE_M,
        .k_pad = (w->k + QMM_X86_TILE_K - 1) / QMM_X86_TILE_K * QMM_X86_TILE_K};
    s = qmm_cpu_scratch_grow(&st->shared, qmm_x86_gemm_bf16_otf_amx_scratch(&ow, n, st->n_threads));
    if (s != QMM_OK) return s;
    qmm_x86_gemm_bf16_otf_amx(&ow, n, x, ldx, y, ldy, st->shared.ptr, st->n_threads);
    return QMM_OK;
}

qmm_status qmm_cpu_x86_matmul_fused_amx(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    if (n <= otf_max_n(w->type)) return matmul_otf(ctx, w, n, x, ldx, y, ldy);
    const qmm_x86_weights *xw;
    qmm_status s = ensure_bf16_tiles(ctx, w, &xw);
    if (s != QMM_OK) return s;
    /* f32 weights holding Inf or NaN cannot be split into three bf16 parts (an Inf part times
     * a zero part of X gives NaN where w * x is +-Inf): the portable f32 GEMM computes them,
     * a property of W alone, so the choice never depends on X or n. */
    if (xw->bf16.parts == 3 && xw->bf16.nonfinite) return qmm_cpu_matmul_fused(ctx, w, n, x, ldx, y, ldy);
    s = qmm_cpu_scratch_grow(&st->shared, qmm_x86_gemm_bf16_amx_scratch(&xw->bf16, n, st->n_threads));
    if (s != QMM_OK) return s;
    qmm_x86_gemm_bf16_amx(&xw->bf16, n, x, ldx, y, ldy, st->shared.ptr, st->n_threads);
    return QMM_OK;
}

/* Decode sizes: VNNI gemv on the GGUF blocks (no int8 tiles), up to the measured n where it
 * beats AMX for the type. It rounds differently from the AMX kernel, so with
 * QMM_FLAG_BATCH_INVARIANT every n stays on AMX. Types without int8 tiles run the gemv for
 * every n (in groups of 8 X rows; row j's bits do not depend on n). */
static bool int8_uses_gemv(const qmm_context *ctx, qmm_type type, int64_t n) {
    return !qmm_x86_int8_tiles_has_type(type) ||
           (n <= qmm_x86_gemv_int8_avx512_max_n(type) &&
            (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) == 0);
}

const char *qmm_cpu_x86_int8_kernel(const qmm_context *ctx, qmm_type type, int64_t n) {
    return int8_uses_gemv(ctx, type, n) ? "int8_vnni_gemv" : "int8_amx";
}

/* Whether some element of W dequantizes to Inf or NaN (every row through the table's
 * dequantizer, once per weights object; the result is kept in the x86 record). */
static qmm_status weights_nonfinite(const qmm_context *ctx, const qmm_weights *w, bool *out) {
    qmm_x86_weights *xw = NULL;
    qmm_status s = x86_record(w, &xw);
    if (s != QMM_OK) return s;
    if (xw->nonfinite < 0) {
        const qmm_cpu_weights *cw = w->backend;
        const qmm_type_traits *t = qmm_type_traits_get(w->type);
        int found = 0, failed = 0;
        const int nt = ((const qmm_cpu_state *)ctx->backend)->n_threads;
#pragma omp parallel num_threads(nt < 1 ? 1 : nt) reduction(| : found, failed)
        {
            float *row = malloc((size_t)w->k * sizeof(float));
            if (row == NULL) failed = 1;
#pragma omp for schedule(static)
            for (int64_t i = 0; i < w->m; i++) {
                if (row == NULL || found) continue;
                t->to_float(cw->data + (size_t)i * cw->stride, row, w->k);
                for (int64_t e = 0; e < w->k; e++) found |= !isfinite(row[e]);
            }
            free(row);
        }
        if (failed) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "int8: cannot allocate a row buffer");
        xw->nonfinite = found != 0;
    }
    *out = xw->nonfinite == 1;
    return QMM_OK;
}

qmm_status qmm_cpu_x86_matmul_int8_amx(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                       const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    bool nonfinite = false;
    qmm_status nf = weights_nonfinite(ctx, w, &nonfinite);
    if (nf != QMM_OK) return nf;
    /* W holding Inf/NaN elements: the exact gemv computes them as the reference does (a
     * property of W alone, so the choice never depends on X or n) */
    if (nonfinite) return qmm_cpu_x86_matmul_gemv_avx512(ctx, w, n, x, ldx, y, ldy);
    if (int8_uses_gemv(ctx, w->type, n)) {
        const qmm_cpu_weights *cw = w->backend;
        qmm_status s =
            qmm_cpu_scratch_grow(&st->shared, qmm_x86_gemv_int8_avx512_scratch(n, w->k));
        if (s != QMM_OK) return s;
        qmm_x86_gemv_int8_avx512(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y, ldy,
                                 st->shared.ptr, st->n_threads);
        return QMM_OK;
    }
    const qmm_x86_weights *xw;
    qmm_status s = ensure_int8_tiles(ctx, w, &xw);
    if (s != QMM_OK) return s;
    s = qmm_cpu_scratch_grow(&st->shared, qmm_x86_gemm_int8_amx_scratch(&xw->int8, n));
    if (s != QMM_OK) return s;
    qmm_x86_gemm_int8_amx(&xw->int8, n, x, ldx, y, ldy, st->shared.ptr, st->n_threads);
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * int8 below AMX (levels avx2 and avx512): the int8 gemv on the native blocks for decode
 * sizes, on ymm (gemv_int8_avx2.c, or gemv_int8_avxvnni.c where the CPU has AVX-VNNI) or on
 * zmm at level avx512 (gemv_int8_avx512.c; all three give the same bits), and the AVX2 int8
 * GEMM (gemm_int8_avx2.h) on its 8-row interleaved copy of W for prefill sizes.
 * ------------------------------------------------------------------------------------- */

/*
 * THE dispatch point of the int8 strategy at levels avx2 and avx512: true when this call runs
 * the int8 gemv on the native blocks, false when it runs the int8 GEMM. The two round
 * differently, so with QMM_FLAG_BATCH_INVARIANT a type the GEMM has runs the GEMM at every n.
 */
static bool int8_avx2_uses_gemv(const qmm_context *ctx, qmm_type type, int64_t n) {
    if (!qmm_x86_gemm_int8_avx2_has_type(type)) return true;
    if (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) return false;
    return n < QMM_INT8_AVX2_GEMM_MIN_N;
}

const char *qmm_cpu_x86_int8_avx2_kernel(const qmm_context *ctx, qmm_type type, int64_t n) {
    const qmm_cpu_state *st = ctx->backend;
    if (!int8_avx2_uses_gemv(ctx, type, n)) return st->avx_vnni ? "int8_avx2_gemm_vnni" : "int8_avx2_gemm";
    if (st->isa >= QMM_CPU_ISA_AVX512) return "int8_vnni_gemv";
    return st->avx_vnni ? "int8_avxvnni_gemv" : "int8_avx2_gemv";
}

qmm_status qmm_cpu_x86_matmul_int8_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    const bool zmm = st->isa >= QMM_CPU_ISA_AVX512;
    bool nonfinite = false;
    qmm_status s = weights_nonfinite(ctx, w, &nonfinite);
    if (s != QMM_OK) return s;
    /* W holding Inf/NaN elements: the exact gemv of the level (as int8_amx does) */
    if (nonfinite)
        return zmm ? qmm_cpu_x86_matmul_gemv_avx512(ctx, w, n, x, ldx, y, ldy)
                   : qmm_cpu_x86_matmul_gemv_avx2(ctx, w, n, x, ldx, y, ldy);
    if (!int8_avx2_uses_gemv(ctx, w->type, n)) {
        const qmm_x86_weights *xw;
        s = ensure_int8_x8(ctx, w, &xw);
        if (s != QMM_OK) return s;
        s = qmm_cpu_scratch_grow(&st->shared,
                                 qmm_x86_gemm_int8_avx2_scratch(&xw->x8, n, st->n_threads));
        if (s != QMM_OK) return s;
        qmm_x86_gemm_int8_avx2(&xw->x8, n, x, ldx, y, ldy, st->shared.ptr, st->n_threads,
                               st->avx_vnni);
        return QMM_OK;
    }
    const qmm_cpu_weights *cw = w->backend;
    s = qmm_cpu_scratch_grow(&st->shared, zmm ? qmm_x86_gemv_int8_avx512_scratch(n, w->k)
                                              : qmm_x86_gemv_int8_avx2_scratch(n, w->k));
    if (s != QMM_OK) return s;
    if (zmm)
        qmm_x86_gemv_int8_avx512(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y, ldy,
                                 st->shared.ptr, st->n_threads);
    else if (st->avx_vnni)
        qmm_x86_gemv_int8_avxvnni(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y, ldy,
                                  st->shared.ptr, st->n_threads);
    else
        qmm_x86_gemv_int8_avx2(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y, ldy,
                               st->shared.ptr, st->n_threads);
    return QMM_OK;
}

qmm_status qmm_cpu_x86_matmul_gemv_avx512(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                          const float *x, int64_t ldx, float *y, int64_t ldy) {
    const qmm_cpu_state *st = ctx->backend;
    const qmm_cpu_weights *cw = w->backend;
    qmm_status s = qmm_x86_gemv_avx512(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y,
                                       ldy, st->n_threads);
    if (s != QMM_OK)
        return qmm_error(QMM_ERR_INTERNAL, "gemv_avx512: no kernel for type %d", (int)w->type);
    return QMM_OK;
}

qmm_status qmm_cpu_x86_matmul_gemv_avx2(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    const qmm_cpu_state *st = ctx->backend;
    const qmm_cpu_weights *cw = w->backend;
    qmm_status s = qmm_x86_gemv_avx2(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y,
                                     ldy, st->n_threads);
    if (s != QMM_OK)
        return qmm_error(QMM_ERR_INTERNAL, "gemv_avx2: no kernel for type %d", (int)w->type);
    return QMM_OK;
}

/* fused_avx2 in batch-invariant mode: up to the auto row's gemv_max_n the gemv kernels of
 * the same order (gemv_avx2, gemv_avx512: bit-identical to fused_avx2 for every W row, X
 * row and k), so one order serves every n at the speed of the decode path. */
bool qmm_cpu_x86_fused_avx2_uses_gemv(const qmm_context *ctx, qmm_type type, int64_t n) {
    const qmm_cpu_state *st = ctx->backend;
    return (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) != 0 &&
           n <= qmm_cpu_auto_lookup(NULL, st->isa, type, 0, 0, NULL).gemv_max_n && qmm_x86_gemv_avx2_has_type(type);
}

const char *qmm_cpu_x86_fused_avx2_kernel(const qmm_context *ctx, qmm_type type, int64_t n) {
    if (!qmm_cpu_x86_fused_avx2_uses_gemv(ctx, type, n)) return "fused_avx2";
    return ((const qmm_cpu_state *)ctx->backend)->isa >= QMM_CPU_ISA_AVX512 ? "gemv_avx512"
                                                                            : "gemv_avx2";
}
