/*
 * arm_backend.c — glue between the CPU backend and the aarch64 kernels: the weights record,
 * the int8 X preparation (portable C), the type lists the registry (src/cpu/backend.c)
 * reads, and the strategy entry points. Built without -march flags: it calls a kernel only
 * from an entry point registered at that kernel's level.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu/arm/arm_backend.h"
#include "cpu/int8_types.h"

qmm_status qmm_cpu_arm_weights_init(const qmm_context *ctx, qmm_weights *w) {
    (void)ctx;
    ((qmm_cpu_weights *)w->backend)->arm = NULL;
    return QMM_OK;
}

void qmm_cpu_arm_weights_release(qmm_weights *w) {
    qmm_cpu_weights *cw = w->backend;
    if (cw == NULL || cw->arm == NULL) return;
    qmm_arm_weights *aw = cw->arm;
    free(aw->i8mm);
    free(aw);
    cw->arm = NULL;
}

void qmm_cpu_arm_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out) {
    const qmm_cpu_weights *cw = w->backend;
    const qmm_arm_weights *aw = cw != NULL ? cw->arm : NULL;
    if (aw != NULL && aw->i8mm != NULL) out->int8_bytes += aw->i8mm_bytes;
}

/* The repacked copy for SMMLA, made on first use. */
static qmm_status ensure_i8mm_pack(const qmm_cpu_state *st, const qmm_weights *w, qmm_arm_weights *aw) {
    if (aw->i8mm != NULL) return QMM_OK;
    const qmm_cpu_weights *cw = w->backend;
    size_t bytes = 0;
    if (!qmm_mul_size((size_t)(w->m + 1) / 2, (size_t)(w->k / 32) * QMM_ARM_I8MM_REC, &bytes) ||
        bytes > SIZE_MAX - 63)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "int8_smmla_packed: %lld x %lld overflows size_t",
                         (long long)w->m, (long long)w->k);
    unsigned char *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "cannot allocate the SMMLA copy of W (%zu bytes)", bytes);
    qmm_arm_i8mm_pack(w->type, w->m, w->k, cw->data, cw->stride, p, st->n_threads);
    aw->i8mm = p;
    aw->i8mm_bytes = (bytes + 63) / 64 * 64;
    return QMM_OK;
}

static qmm_status arm_record(const qmm_weights *w, qmm_arm_weights **out) {
    qmm_cpu_weights *cw = w->backend;
    if (cw->arm == NULL) {
        qmm_arm_weights *aw = calloc(1, sizeof *aw);
        if (aw == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "cannot allocate the arm weights record");
        aw->nonfinite = -1;
        cw->arm = aw;
    }
    *out = cw->arm;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * X for the int8 kernels
 * ------------------------------------------------------------------------------------- */

static size_t round64(size_t v) { return (v + 63) / 64 * 64; }

/* Bytes of one prepared row: q (k), dx and s32 (k/32 doubles each), s16 (k/16 int32), and the
 * rule's float dx and s (k/32 each) before conversion. */
static size_t x_row_bytes(int64_t k) {
    return round64((size_t)k) + 2 * round64((size_t)(k / 32) * sizeof(double)) +
           round64((size_t)(k / 16) * sizeof(int32_t)) + 2 * round64((size_t)(k / 32) * sizeof(float));
}

size_t qmm_arm_int8_x_scratch(int64_t n, int64_t k) {
    return round64((size_t)n * sizeof(qmm_arm_int8_x)) + (size_t)n * x_row_bytes(k);
}

void qmm_arm_int8_x_prepare(const float *x, int64_t ldx, int64_t n, int64_t k, void *scratch,
                            int n_threads, qmm_arm_int8_x **out) {
    qmm_arm_int8_x *rec = scratch;
    unsigned char *base = (unsigned char *)scratch + round64((size_t)n * sizeof(qmm_arm_int8_x));
    const int64_t kc = k / 32;
    const int threads = n_threads < 1 ? 1 : n_threads;
#pragma omp parallel for num_threads(threads) schedule(static) if (n >= 16 && threads > 1)
    for (int64_t j = 0; j < n; j++) {
        unsigned char *p = base + (size_t)j * x_row_bytes(k);
        int8_t *q = (int8_t *)p;
        double *dx = (double *)(p + round64((size_t)k));
        int32_t *s16 = (int32_t *)((unsigned char *)dx + round64((size_t)kc * sizeof(double)));
        float *dxf = (float *)((unsigned char *)s16 + round64((size_t)(k / 16) * sizeof(int32_t)));
        float *sf = (float *)((unsigned char *)dxf + round64((size_t)kc * sizeof(float)));
        double *s32 = (double *)((unsigned char *)sf + round64((size_t)kc * sizeof(float)));
        qmm_cpu_int8_quantize_row(x + j * ldx, k, q, dxf, sf, 1);
        for (int64_t c = 0; c < kc; c++) dx[c] = (double)dxf[c];
        for (int64_t h = 0; h < k / 16; h++) {
            int32_t t = 0;
            for (int e = 0; e < 16; e++) t += q[16 * h + e];
            s16[h] = t;
        }
        for (int64_t c = 0; c < kc; c++) s32[c] = (double)(s16[2 * c] + s16[2 * c + 1]);
        rec[j] = (qmm_arm_int8_x){.q = q, .dx = dx, .s16 = s16, .s32 = s32};
    }
    *out = rec;
}

bool qmm_arm_int8_has_type(qmm_type type) { return qmm_i8_has_type(type); }

/* ---------------------------------------------------------------------------------------
 * Strategy entry points
 * ------------------------------------------------------------------------------------- */

typedef void (*int8_gemv_fn)(qmm_type, int64_t, int64_t, const unsigned char *, size_t, int64_t,
                             const qmm_arm_int8_x *, float *, int64_t, int);

/* gemv: the gemv kernel of the level; smmla: the i8mm kernel (n >= 2) instead, on the
 * repacked copy above QMM_CPU_ARM_I8MM_PACK_MIN_N. */
static qmm_status matmul_int8(qmm_context *ctx, const qmm_weights *w, int64_t n, const float *x,
                              int64_t ldx, float *y, int64_t ldy, int8_gemv_fn gemv, bool smmla) {
    qmm_cpu_state *st = ctx->backend;
    const qmm_cpu_weights *cw = w->backend;
    qmm_arm_weights *aw = NULL;
    qmm_status s = arm_record(w, &aw);
    if (s != QMM_OK) return s;
    if (aw->nonfinite < 0) {
        int found = 0;
        s = qmm_cpu_rows_nonfinite(w->type, w->m, w->k, cw->data, cw->stride, st->n_threads, &found);
        if (s != QMM_OK) return s;
        aw->nonfinite = found;
    }
    /* W holding Inf/NaN elements: the exact gemv forms them as the reference does */
    if (aw->nonfinite) return qmm_cpu_matmul_gemv(ctx, w, n, x, ldx, y, ldy);
    const bool packed = smmla && n > QMM_CPU_ARM_I8MM_PACK_MIN_N && qmm_cpu_arm_i8mm_packed_type(w->type);
    if (packed) {
        s = ensure_i8mm_pack(st, w, aw);
        if (s != QMM_OK) return s;
    }
    const size_t xbytes = (qmm_arm_int8_x_scratch(n, w->k) + 63) / 64 * 64;
    s = qmm_cpu_scratch_grow(&st->shared, xbytes + (smmla ? qmm_arm_gemm_int8_i8mm_scratch(n, w->k) : 0));
    if (s != QMM_OK) return s;
    qmm_arm_int8_x *xs = NULL;
    qmm_arm_int8_x_prepare(x, ldx, n, w->k, st->shared.ptr, st->n_threads, &xs);
    if (packed)
        qmm_arm_gemm_int8_i8mm_packed(w->type, w->m, w->k, aw->i8mm, n, xs,
                                      (unsigned char *)st->shared.ptr + xbytes, y, ldy, st->n_threads);
    else if (smmla)
        qmm_arm_gemm_int8_i8mm(w->type, w->m, w->k, cw->data, cw->stride, n, xs,
                               (unsigned char *)st->shared.ptr + xbytes, y, ldy, st->n_threads);
    else
        gemv(w->type, w->m, w->k, cw->data, cw->stride, n, xs, y, ldy, st->n_threads);
    return QMM_OK;
}

qmm_status qmm_cpu_arm_matmul_int8_neon(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    return matmul_int8(ctx, w, n, x, ldx, y, ldy, qmm_arm_gemv_int8_neon, false);
}

qmm_status qmm_cpu_arm_matmul_int8_dotprod(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                           const float *x, int64_t ldx, float *y, int64_t ldy) {
    return matmul_int8(ctx, w, n, x, ldx, y, ldy, qmm_arm_gemv_int8_dotprod, false);
}

/* The types whose SMMLA kernel on the repacked copy executes fewer instructions per 32-weight
 * block and X row than on the GGUF blocks (dev/arm64/count_insns.sh, docs/ARM64.md: 5-19%
 * fewer); q2_K's is not (17.3 against 17.0: its integer scales are loaded and widened per
 * block from the record, where the on-the-fly decode has them per super-block). */
bool qmm_cpu_arm_i8mm_packed_type(qmm_type type) {
    return qmm_arm_int8_has_type(type) && type != QMM_TYPE_Q2_K;
}

/* SMMLA multiplies pairs of X rows: a single row would leave half of it idle. Both kernels
 * give the same bits, so the switch keeps batch invariance. */
#define I8MM_MIN_N 2

qmm_status qmm_cpu_arm_matmul_int8_i8mm(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    return matmul_int8(ctx, w, n, x, ldx, y, ldy, qmm_arm_gemv_int8_dotprod, n >= I8MM_MIN_N);
}

const char *qmm_cpu_arm_int8_i8mm_kernel(const qmm_context *ctx, qmm_type type, int64_t n) {
    (void)ctx;
    return n > QMM_CPU_ARM_I8MM_PACK_MIN_N && qmm_cpu_arm_i8mm_packed_type(type) ? "int8_smmla_packed"
           : n >= I8MM_MIN_N                ? "int8_smmla"
                                            : "int8_dotprod_gemv";
}

qmm_status qmm_cpu_arm_matmul_gemv_neon(qmm_context *ctx, const qmm_weights *w, int64_t n,
                                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_cpu_state *st = ctx->backend;
    const qmm_cpu_weights *cw = w->backend;
    if (!qmm_arm_gemv_neon_has_type(w->type))
        return qmm_error(QMM_ERR_INTERNAL, "gemv_neon: no dequantizer for type %d", (int)w->type);
    /* the quantized types: one tile of converted W rows per thread */
    size_t bytes = 0;
    if (!qmm_mul_size(qmm_arm_gemv_neon_scratch(w->type, w->k), (size_t)st->n_threads, &bytes))
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "gemv_neon: tiles of k=%lld overflow size_t",
                         (long long)w->k);
    if (bytes > 0) {
        const qmm_status s = qmm_cpu_scratch_grow(&st->shared, bytes);
        if (s != QMM_OK) return s;
    }
    qmm_arm_gemv_neon(w->type, w->m, w->k, cw->data, cw->stride, n, x, ldx, y, ldy,
                      bytes > 0 ? st->shared.ptr : NULL, st->n_threads);
    return QMM_OK;
}
