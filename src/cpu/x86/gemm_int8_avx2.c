/*
 * gemm_int8_avx2.c — the AVX2 int8 GEMM (gemm_int8_avx2.h): X quantization into quad records
 * (gemm_int8_avx2_layout.h), the threaded driver, and the vpmaddubsw kernel
 * (gemm_int8_avx2_impl.h with QMM_X8_VNNI 0; the AVX-VNNI one is gemm_int8_avxvnni.c).
 *
 * Per call, tasks of (a tile of W groups) x (a chunk of X quads), about 128 KiB of records
 * each, are handed out with schedule(dynamic, 1). X is quantized per quad by the first task
 * that needs it (an atomic flag per quad, as int8_amx does per tile; no barrier, so a thread
 * that the OS does not schedule never holds the others up): every row by
 * qmm_x86_int8_quantize_row_avx2 (the int8 strategy's rule, bit for bit as int8_amx and the gemv)
 * into its quad record, with the block sums the kernels need (exact int32: -offset * sum(q),
 * and the two 16-element halves as int16). Each output belongs to one tile of one task and is
 * summed over k in block order by the same instructions whatever the task, so neither n, the
 * tiling, the thread count nor which thread quantized a quad changes a bit.
 */
#define QMM_X8_VNNI 0
#define QMM_X8_TASK qmm_x8_task_avx2
#include "cpu/x86/gemm_int8_avx2_impl.h"

#include <stdatomic.h>

#include <omp.h>

#include "cpu/x86/x86_kernels.h"

/* Bytes of the quantized X: nq quads of kc records. */
static size_t xq_bytes(int64_t n, int64_t kc) {
    const int64_t nq = (n + QMM_X8_XROWS - 1) / QMM_X8_XROWS;
    return (size_t)nq * (size_t)kc * QMM_X8_XREC;
}

static size_t row_tmp_bytes(int64_t k) { return ((size_t)k + 63) / 64 * 64; }

static size_t flag_bytes(int64_t n) {
    return ((size_t)((n + QMM_X8_XROWS - 1) / QMM_X8_XROWS) * sizeof(atomic_int) + 63) / 64 * 64;
}

/* Scratch: the quantized X (quad records), one flag per quad, one row buffer per thread. */
size_t qmm_x86_gemm_int8_avx2_scratch(const qmm_x86_int8_x8 *w, int64_t n, int n_threads) {
    const int threads = n_threads < 1 ? 1 : n_threads;
    return xq_bytes(n, w->k / 32) + flag_bytes(n) + (size_t)threads * row_tmp_bytes(w->k);
}

/* X row j (of the padded 4 * nq) into lane j % 4 of its quad's records; rows >= n are zero.
 * The quantizer writes q into tmp (k bytes) and dx, s straight into the records (stride
 * QMM_X8_XREC / 4 floats). */
static void prep_row(const float *x, int64_t ldx, int64_t n, int64_t k, int offset, int64_t j,
                     unsigned char *xq, int8_t *tmp) {
    const int64_t kc = k / 32;
    const int jj = (int)(j % QMM_X8_XROWS);
    unsigned char *base = xq + (size_t)(j / QMM_X8_XROWS) * (size_t)kc * QMM_X8_XREC;
    if (j >= n) {
        for (int64_t c = 0; c < kc; c++) {
            unsigned char *rec = base + (size_t)c * QMM_X8_XREC;
            memset(rec + 32 * jj, 0, 32);
            memset(rec + QMM_X8_XR_DX + 4 * jj, 0, 4);
            memset(rec + QMM_X8_XR_S + 4 * jj, 0, 4);
            memset(rec + QMM_X8_XR_OFF + 4 * jj, 0, 4);
            memset(rec + QMM_X8_XR_SX + 4 * jj, 0, 4);
        }
        return;
    }
    qmm_x86_int8_quantize_row_avx2(x + j * ldx, k, tmp, (float *)(base + QMM_X8_XR_DX + 4 * jj),
                              (float *)(base + QMM_X8_XR_S + 4 * jj), QMM_X8_XREC / 4);
    const __m256i flip = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    for (int64_t c = 0; c < kc; c++) {
        unsigned char *rec = base + (size_t)c * QMM_X8_XREC;
        const __m256i q = _mm256_loadu_si256((const __m256i *)(tmp + 32 * c));
        _mm256_storeu_si256((__m256i *)(rec + 32 * jj), q);
        /* sums of 8 bytes of q + 128 in the 4 qwords: halves = qwords 0+1, 2+3 */
        const __m256i sad = _mm256_sad_epu8(_mm256_xor_si256(q, flip), zero);
        int64_t part[4];
        _mm256_storeu_si256((__m256i *)part, sad);
        const int32_t s0 = (int32_t)(part[0] + part[1]) - 16 * 128;
        const int32_t s1 = (int32_t)(part[2] + part[3]) - 16 * 128;
        const int32_t off = -offset * (s0 + s1);
        const uint32_t sx = (uint32_t)(uint16_t)(int16_t)s0 | (uint32_t)(uint16_t)(int16_t)s1 << 16;
        memcpy(rec + QMM_X8_XR_OFF + 4 * jj, &off, 4);
        memcpy(rec + QMM_X8_XR_SX + 4 * jj, &sx, 4);
    }
}

/* Quad q quantized unless done: the first task that needs it quantizes it, others wait for
 * it (0 not started, 1 in progress, 2 done). */
static void need_quad(atomic_int *flags, int64_t q, const float *x, int64_t ldx, int64_t n,
                      int64_t k, int offset, unsigned char *xq, int8_t *tmp) {
    if (atomic_load_explicit(&flags[q], memory_order_acquire) == 2) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&flags[q], &expected, 1, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        while (atomic_load_explicit(&flags[q], memory_order_acquire) != 2) _mm_pause();
        return;
    }
    for (int64_t j = q * QMM_X8_XROWS; j < (q + 1) * QMM_X8_XROWS; j++)
        prep_row(x, ldx, n, k, offset, j, xq, tmp);
    atomic_store_explicit(&flags[q], 2, memory_order_release);
}

/* Records per task side: about this many bytes of W (a tile of groups) and of X (a chunk of
 * quads), so that both stay in L2 while the tile's groups pass over the chunk. */
#define TASK_SIDE_BYTES (128 * 1024)

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

void qmm_x86_gemm_int8_avx2(const qmm_x86_int8_x8 *w, int64_t n, const float *x, int64_t ldx,
                            float *y, int64_t ldy, void *scratch, int n_threads, bool vnni) {
    const int64_t k = w->k, kc = k / 32;
    const int64_t nq = (n + QMM_X8_XROWS - 1) / QMM_X8_XROWS, groups = w->m_pad / QMM_X8_ROWS;
    unsigned char *xq = scratch;
    atomic_int *flags = (atomic_int *)((unsigned char *)scratch + xq_bytes(n, kc));
    unsigned char *tmp_base = (unsigned char *)flags + flag_bytes(n);
    int64_t tg = clamp64(TASK_SIDE_BYTES / ((int64_t)kc * (int64_t)w->rec_bytes), 1, 16);
    const int64_t qc = clamp64(TASK_SIDE_BYTES / (kc * QMM_X8_XREC), 1, 16);
    const int64_t x_chunks = (nq + qc - 1) / qc;
    int threads = n_threads < 1 ? 1 : n_threads;
    /* at least 4 tasks per thread where the W side allows it (load balance) */
    while (tg > 1 && (groups + tg - 1) / tg * x_chunks < 4 * (int64_t)threads) tg /= 2;
    const int64_t w_tiles = (groups + tg - 1) / tg, tasks = w_tiles * x_chunks;
    if (threads > tasks) threads = (int)tasks;
    void (*task_fn)(const qmm_x86_int8_x8 *, const unsigned char *, int64_t, int64_t, int64_t,
                    int64_t, int64_t, float *, int64_t) = vnni ? qmm_x8_task_avxvnni
                                                               : qmm_x8_task_avx2;
    for (int64_t q = 0; q < nq; q++) atomic_init(&flags[q], 0);
    /* tasks in X-chunk-major order within a W tile: the first x_chunks tasks (W tile 0) touch
     * every X chunk once, so the threads share the quantization */
#pragma omp parallel num_threads(threads)
    {
        int8_t *tmp = (int8_t *)(tmp_base + (size_t)omp_get_thread_num() * row_tmp_bytes(k));
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t t = 0; t < tasks; t++) {
            const int64_t wt = t / x_chunks, xc = t % x_chunks;
            const int64_t g0 = wt * tg, g1 = g0 + tg < groups ? g0 + tg : groups;
            const int64_t q0 = xc * qc, q1 = q0 + qc < nq ? q0 + qc : nq;
            for (int64_t q = q0; q < q1; q++) need_quad(flags, q, x, ldx, n, k, w->offset, xq, tmp);
            task_fn(w, xq, n, g0, g1, q0, q1, y, ldy);
        }
    }
}
