/*
 * gemv_int8_driver.c — the driver every int8 gemv kernel shares (gemv_int8_common.h): the X
 * rows quantized and laid out in the ISA's order, then tasks of W rows on the threads.
 * Portable C (the quantizer and the row functions come from the kernel files).
 */
#include <emmintrin.h>
#include <string.h>

#include <omp.h>

#include "cpu/x86/gemv_int8_common.h"

static int64_t k_padded(int64_t k) { return (k + QMM_I8_CHUNK - 1) / QMM_I8_CHUNK * QMM_I8_CHUNK; }

static size_t row_bytes(int64_t k) {
    const int64_t kp = k_padded(k);
    return (size_t)kp * 2 + (size_t)(kp / QMM_I8_CHUNK) * QMM_I8_LANES * 3 * sizeof(float);
}

size_t qmm_i8_scratch(int64_t n, int64_t k) {
    return (size_t)n * row_bytes(k) + (n > QMM_I8_NMAX ? (size_t)n * sizeof(qmm_i8_xrow) : 0);
}

/* X row x (k elements) into base: the permuted copy (kp bytes), the natural one (kp bytes),
 * then per chunk and lane dx, s and the int32 sum. */
static void x_prepare(const qmm_i8_layout *lo, qmm_i8_quantize_fn quantize, const float *x,
                      int64_t k, unsigned char *base, qmm_i8_xrow *out) {
    const int64_t kp = k_padded(k), kc = k / 32, chunks = kp / QMM_I8_CHUNK;
    int8_t *q = (int8_t *)base, *nat = q + kp;
    float *dx = (float *)(base + 2 * kp), *s = dx + chunks * QMM_I8_LANES;
    int32_t *sum = (int32_t *)(s + chunks * QMM_I8_LANES);
    /* natural quants; the per-block dx and s (kp / 32 <= chunks * QMM_I8_LANES floats each) go
     * to s[] and sum[] first and are overwritten by the lane data below (dx[] from s[] first) */
    float *dx_block = s;
    quantize(x, k, nat, dx_block, (float *)sum, 1);
    memset(nat + kc * 32, 0, (size_t)(kp - kc * 32));
    for (int64_t c = kc; c < kp / 32; c++) dx_block[c] = 0.0f;
    for (int64_t ch = 0; ch < chunks; ch++)
        for (int l = 0; l < QMM_I8_LANES; l++) {
            const int64_t e0 = ch * QMM_I8_CHUNK + (int64_t)lo->lane_sub[l] * lo->sub_size;
            dx[ch * QMM_I8_LANES + l] = l < lo->lanes ? dx_block[e0 / 32] : 0.0f;
        }
    for (int64_t ch = 0; ch < chunks; ch++) {
        int32_t s16[QMM_I8_CHUNK / 16]; /* sums of 16 consecutive quants (SSE2 psadbw of the
                                         * quants + 128, less 16 * 128) */
        const __m128i b128 = _mm_set1_epi8((char)0x80), zero = _mm_setzero_si128();
        for (int g = 0; g < QMM_I8_CHUNK / 16; g++) {
            const __m128i v = _mm_loadu_si128((const __m128i *)(nat + ch * QMM_I8_CHUNK + 16 * g));
            const __m128i sad = _mm_sad_epu8(_mm_xor_si128(v, b128), zero);
            s16[g] = _mm_cvtsi128_si32(sad) + _mm_extract_epi16(sad, 4) - 16 * 128;
        }
        for (int l = 0; l < QMM_I8_LANES; l++) {
            int32_t t = 0;
            if (l < lo->lanes) {
                const int g = lo->lane_sub[l] * lo->sub_size / 16;
                t = lo->sub_size == 16 ? s16[g] : s16[g] + s16[g + 1];
            }
            sum[ch * QMM_I8_LANES + l] = t;
            s[ch * QMM_I8_LANES + l] = dx[ch * QMM_I8_LANES + l] * (float)t;
        }
    }
    uint64_t flip;
    memset(&flip, lo->flip, sizeof flip);
    for (int64_t ch = 0; ch < chunks; ch++)
        for (int r = 0; r < QMM_I8_CHUNK / QMM_I8_RUN; r++) {
            uint64_t v;
            memcpy(&v, nat + ch * QMM_I8_CHUNK + lo->run[r], sizeof v);
            v ^= flip;
            memcpy(q + ch * QMM_I8_CHUNK + QMM_I8_RUN * r, &v, sizeof v);
        }
    out->q = q;
    out->dx = dx;
    out->s = s;
    out->sum = sum;
}

void qmm_i8_drive(qmm_i8_rows_fn fn, const qmm_i8_layout *lo, qmm_i8_quantize_fn quantize,
                  int64_t m, int64_t k, const unsigned char *w, size_t row_stride, int64_t n,
                  const float *x, int64_t ldx, float *y, int64_t ldy, void *scratch,
                  int n_threads) {
    if (n <= 0 || m <= 0) return;
    qmm_i8_xrow xr_stack[QMM_I8_NMAX];
    /* n > QMM_I8_NMAX: the per-row records go after the X rows (the scratch size reserves them) */
    qmm_i8_xrow *xr = n <= QMM_I8_NMAX
                          ? xr_stack
                          : (qmm_i8_xrow *)((unsigned char *)scratch + (size_t)n * row_bytes(k));
    for (int64_t j = 0; j < n; j++)
        x_prepare(lo, quantize, x + j * ldx, k,
                  (unsigned char *)scratch + (size_t)j * row_bytes(k), &xr[j]);
    int threads = n_threads < 1 ? 1 : n_threads;
    const int64_t task_rows = qmm_x86_int8_task_rows(m, n, threads);
    const int64_t tasks = (m + task_rows - 1) / task_rows;
    if (threads > tasks) threads = (int)tasks;
    if (threads == 1) { /* no team for one thread */
        fn(0, m, m, k, w, row_stride, n, xr, lo, y, ldy);
        return;
    }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; t++) {
        const int64_t i0 = t * task_rows, i1 = i0 + task_rows < m ? i0 + task_rows : m;
        fn(i0, i1, m, k, w, row_stride, n, xr, lo, y, ldy);
    }
}
