/*
 * gemv_float_neon.c — the f32-class gemv / fused of the aarch64 levels (gemv_neon,
 * fused_neon) for every weight type, with NEON FMA (base Armv8-A), in the summation order of
 * x86's gemv_avx512 (arm_kernels.h; src/cpu/x86/gemv_common.h): 16 lanes as four float32x4
 * per accumulator, two accumulators per (W row, X row), widened into 16 double lanes at the
 * end of each 1024-element panel.
 *
 * Decoding, exact (every value equals the type table's to_float bit for bit):
 *   - f32 as loaded;
 *   - f16 by FCVTL (base Armv8-A), exact for normals, subnormals, +-0 and +-Inf; a NaN keeps
 *     its sign and payload and is made quiet (FPCR.DN is clear on Linux), as qmm_fp16_to_fp32;
 *   - bf16 shifted into the high half (USHLL #16), as qmm_bf16_to_fp32;
 *   - every other type: a task's W rows converted by the type table's to_float into a
 *     per-thread tile of floats (as x86's fused_avx2 does), then the f32 row kernel on the
 *     tile. Every X row of the call meets the tile, so a W row is decoded once per call.
 * The block size of f32/f16/bf16 is 1, so k is any length: the last k % 16 elements are
 * copied into a zeroed group of 16 (nothing past the row or the X row is read) and only their
 * lanes take the FMA (BSL keeps the others), as the masked FMA of the AVX-512 kernel.
 * The order of an output depends only on k (not on n, the X rows beside it, the task or the
 * thread), so gemv and fused give the same bits at every n (batch invariance).
 * Error: the gemv_avx512 bound (docs/KERNELS.md): per panel at most 32 FMA roundings and one
 * add per lane, |err| <= 33 u sum |x w| to first order, plus the double sums and u/2 |y|.
 */
#include <arm_neon.h>
#include <omp.h>
#include <string.h>

#include "core/types.h"
#include "cpu/arm/arm_kernels.h"

#define PANEL 1024 /* elements per f32 panel (gemv_common.h QMM_GEMV_PANEL) */
#define NRF 2      /* X rows per pass over a W row */
#define TASK_ROWS 64
#define TILE_BYTES_MAX (256 * 1024) /* a task's tile of converted W rows, at most */
#define INL static inline __attribute__((always_inline))

enum kind { KIND_F32, KIND_F16, KIND_BF16 };

typedef struct lanes16 {
    float32x4_t v[4];
} lanes16;

INL lanes16 zero16(void) {
    lanes16 r;
    for (int i = 0; i < 4; i++) r.v[i] = vdupq_n_f32(0.0f);
    return r;
}

/* The 16 elements at p (bytes) as exact floats. */
INL lanes16 load16(enum kind kind, const unsigned char *p) {
    lanes16 r;
    if (kind == KIND_F32) {
        for (int i = 0; i < 4; i++) r.v[i] = vld1q_f32((const float *)p + 4 * i);
    } else {
        const uint16x8_t a = vld1q_u16((const uint16_t *)p), b = vld1q_u16((const uint16_t *)p + 8);
        if (kind == KIND_F16) {
            r.v[0] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(a)));
            r.v[1] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(a)));
            r.v[2] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(b)));
            r.v[3] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(b)));
        } else {
            r.v[0] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(a), 16));
            r.v[1] = vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(a), 16));
            r.v[2] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16));
            r.v[3] = vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(b), 16));
        }
    }
    return r;
}

/* acc += w * x lane by lane (one rounding each); lanes >= count keep acc (count <= 16). */
INL void fma16(lanes16 *acc, const lanes16 *w, const float *x, int count) {
    for (int i = 0; i < 4; i++) {
        const float32x4_t f = vfmaq_f32(acc->v[i], w->v[i], vld1q_f32(x + 4 * i));
        if (count >= 16) {
            acc->v[i] = f;
        } else {
            static const uint32_t idx[4] = {0, 1, 2, 3};
            const uint32x4_t lane = vaddq_u32(vld1q_u32(idx), vdupq_n_u32(4u * (uint32_t)i));
            acc->v[i] = vbslq_f32(vcltq_u32(lane, vdupq_n_u32((uint32_t)count)), f, acc->v[i]);
        }
    }
}

/* End of a panel: a0 + a1 widened and added into the 16 double lanes d; a0, a1 cleared. */
INL void flush(lanes16 *a0, lanes16 *a1, double d[16]) {
    for (int i = 0; i < 4; i++) {
        const float32x4_t v = vaddq_f32(a0->v[i], a1->v[i]);
        vst1q_f64(d + 4 * i, vaddq_f64(vld1q_f64(d + 4 * i), vcvt_f64_f32(vget_low_f32(v))));
        vst1q_f64(d + 4 * i + 2, vaddq_f64(vld1q_f64(d + 4 * i + 2), vcvt_high_f64_f32(v)));
    }
    *a0 = zero16();
    *a1 = zero16();
}

/* The fixed tree of gemv_avx512 (d[i] + d[i + 8], then + 4, + 2, + 1), rounded once. */
INL float store1(const double d[16]) {
    double s8[8], s4[4], s2[2];
    for (int i = 0; i < 8; i++) s8[i] = d[i] + d[i + 8];
    for (int i = 0; i < 4; i++) s4[i] = s8[i] + s8[i + 4];
    for (int i = 0; i < 2; i++) s2[i] = s4[i] + s4[i + 2];
    return (float)(s2[0] + s2[1]);
}

/* One W row (k elements at w) against nr <= NRF X rows: y[j * ldy]. */
INL void row(enum kind kind, const unsigned char *w, int64_t k, const float *x, int64_t ldx,
             int nr, float *y, int64_t ldy) {
    const size_t esz = kind == KIND_F32 ? 4 : 2;
    lanes16 a[NRF][2];
    double d[NRF][16];
    for (int j = 0; j < nr; j++) {
        a[j][0] = a[j][1] = zero16();
        memset(d[j], 0, sizeof d[j]);
    }
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
        const lanes16 wv = load16(kind, w + (size_t)p * esz);
        const int par = (int)((p >> 4) & 1);
        for (int j = 0; j < nr; j++) fma16(&a[j][par], &wv, x + j * ldx + p, 16);
        if ((p + 16) % PANEL == 0)
            for (int j = 0; j < nr; j++) flush(&a[j][0], &a[j][1], d[j]);
    }
    if (p < k) { /* the last k % 16 elements, zero-padded copies */
        const int count = (int)(k - p);
        unsigned char wb[64] = {0};
        memcpy(wb, w + (size_t)p * esz, (size_t)count * esz);
        const lanes16 wv = load16(kind, wb);
        const int par = (int)((p >> 4) & 1);
        for (int j = 0; j < nr; j++) {
            float xb[16] = {0};
            memcpy(xb, x + j * ldx + p, (size_t)count * sizeof(float));
            fma16(&a[j][par], &wv, xb, count);
        }
    }
    for (int j = 0; j < nr; j++) {
        flush(&a[j][0], &a[j][1], d[j]);
        y[j * ldy] = store1(d[j]);
    }
}

bool qmm_arm_gemv_float_has_type(qmm_type type) {
    return type == QMM_TYPE_F32 || type == QMM_TYPE_F16 || type == QMM_TYPE_BF16;
}

bool qmm_arm_gemv_neon_has_type(qmm_type type) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    return t != NULL && t->is_weight && t->to_float != NULL;
}

/* Floats between tile rows, and tile rows per task (1..TASK_ROWS, within TILE_BYTES_MAX). */
static int64_t tile_ld(int64_t k) { return (k + 3) / 4 * 4; }

static int64_t tile_rows(int64_t k) {
    const int64_t r = TILE_BYTES_MAX / ((int64_t)sizeof(float) * tile_ld(k));
    return r < 1 ? 1 : r > TASK_ROWS ? TASK_ROWS : r;
}

size_t qmm_arm_gemv_neon_scratch(qmm_type type, int64_t k) {
    if (qmm_arm_gemv_float_has_type(type) || k <= 0) return 0;
    const size_t bytes = (size_t)tile_rows(k) * (size_t)tile_ld(k) * sizeof(float);
    return (bytes + 63) / 64 * 64;
}

void qmm_arm_gemv_neon(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                       size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                       int64_t ldy, void *scratch, int n_threads) {
    if (!qmm_arm_gemv_neon_has_type(type) || m <= 0 || n <= 0) return;
    const bool tiled = !qmm_arm_gemv_float_has_type(type);
    if (tiled && scratch == NULL) return;
    const enum kind kind = type == QMM_TYPE_F16 ? KIND_F16 : type == QMM_TYPE_BF16 ? KIND_BF16 : KIND_F32;
    const qmm_to_float_fn to_float = qmm_type_traits_get(type)->to_float;
    const int64_t rows_per = tiled ? tile_rows(k) : TASK_ROWS, ldt = tile_ld(k);
    const size_t per_thread = qmm_arm_gemv_neon_scratch(type, k);
    const int64_t tasks = (m + rows_per - 1) / rows_per;
    int threads = n_threads < 1 ? 1 : n_threads;
    if (threads > tasks) threads = (int)tasks;
    /* below 2^18 multiply-adds per thread, fewer threads (as gemv_avx512) */
    const double work = (double)m * (double)k * (double)n;
    if (work < (double)threads * (1 << 18)) threads = work < (1 << 18) ? 1 : (int)(work / (1 << 18));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t i0 = t * rows_per, i1 = i0 + rows_per < m ? i0 + rows_per : m;
        if (tiled) {
            /* the task's rows as exact floats; then per pair of X rows every tile row (the
             * pair stays in L1, the tile in L2) */
            float *tile = (float *)((unsigned char *)scratch + (size_t)omp_get_thread_num() * per_thread);
            for (int64_t i = i0; i < i1; i++)
                to_float(w + (size_t)i * row_stride, tile + (i - i0) * ldt, k);
            for (int64_t g = 0; g < n; g += NRF) {
                const int nr = n - g < NRF ? (int)(n - g) : NRF;
                for (int64_t i = i0; i < i1; i++)
                    row(KIND_F32, (const unsigned char *)(tile + (i - i0) * ldt), k, x + g * ldx,
                        ldx, nr, y + g * ldy + i, ldy);
            }
            continue;
        }
        for (int64_t i = i0; i < i1; i++)
            for (int64_t g = 0; g < n; g += NRF) {
                const int nr = n - g < NRF ? (int)(n - g) : NRF;
                const unsigned char *wr = w + (size_t)i * row_stride;
                const float *xg = x + g * ldx;
                float *yg = y + g * ldy + i;
                if (kind == KIND_F32) row(KIND_F32, wr, k, xg, ldx, nr, yg, ldy);
                else if (kind == KIND_F16) row(KIND_F16, wr, k, xg, ldx, nr, yg, ldy);
                else row(KIND_BF16, wr, k, xg, ldx, nr, yg, ldy);
            }
    }
}

void qmm_arm_gemv_float_neon(qmm_type type, int64_t m, int64_t k, const unsigned char *w,
                             size_t row_stride, int64_t n, const float *x, int64_t ldx, float *y,
                             int64_t ldy, int n_threads) {
    if (!qmm_arm_gemv_float_has_type(type)) return;
    qmm_arm_gemv_neon(type, m, k, w, row_stride, n, x, ldx, y, ldy, NULL, n_threads);
}
