/*
 * dev/gemv_avx512.c — time the AVX-512 gemv (src/cpu/x86/gemv_*avx512.c) against the machine's
 * read bandwidth measured in the same loop (the threads sum a copy of W), interleaved call by
 * call so both see the same load; copies of W (1 GiB in all) are used in turn so that neither
 * finds W in a cache. Checks the first 64 rows against
 * qmm_matmul_ref. Not part of the library. Build (after building qmm_static):
 *   gcc -O2 -mavx512f -fopenmp -I include -I src dev/gemv_avx512.c build-gemv/libqmm.a \
 *       $(pkg-config --libs openblas) -lm -o build-gemv/gemv_avx512
 * Run: build-gemv/gemv_avx512 TYPES M K N [ITERS]   e.g. q4_0,q4_K 14336 4096 1 21
 * GEMV_HOT=1 uses one copy (W stays in cache: the kernel's compute rate).
 * With OMP_NUM_THREADS=1 the times are the thread's CPU time (preemption not counted).
 * Prints best and median of ITERS for the gemv and for the read, and median gemv GB/s as a
 * percentage of the median read GB/s.
 */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/x86/x86_kernels.h"
#include "qmm.h"

/* With one thread (OMP_NUM_THREADS=1) the clock is the thread's CPU time, so that time the
 * thread spends preempted by other tenants of a shared machine is not counted. */
static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sum W's bytes on th threads (the read bandwidth reference). */
static unsigned read_all(const unsigned char *w, size_t bytes, int th) {
    const size_t nv = bytes / 64;
    unsigned total = 0;
#pragma omp parallel num_threads(th) reduction(^ : total)
    {
        __m512i acc = _mm512_setzero_si512();
#pragma omp for schedule(static)
        for (size_t v = 0; v < nv; v++)
            acc = _mm512_add_epi32(acc, _mm512_load_si512((const void *)(w + 64 * v)));
        total ^= (unsigned)_mm512_reduce_add_epi32(acc);
    }
    return total;
}

static int run_type(const char *name, int64_t m, int64_t k, int64_t n, int iters, int th) {
    qmm_type type;
    if (qmm_type_from_name(name, &type) != QMM_OK) return 2;
    size_t rb;
    if (qmm_row_bytes(type, k, &rb) != QMM_OK) return 2;
    float *wf = malloc(sizeof(float) * k * 64), *x = malloc(sizeof(float) * n * k);
    unsigned char *wq = aligned_alloc(64, (rb * m + 63) / 64 * 64);
    srand(1);
    for (int64_t i = 0; i < n * k; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t r = 0; r < m; r += 64) {
        const int64_t rows = m - r < 64 ? m - r : 64;
        for (int64_t i = 0; i < rows * k; i++) wf[i] = (float)rand() / RAND_MAX - 0.5f;
        qmm_quantize_rows(type, wf, wq + r * rb, rows, k);
    }
    float *y = malloc(sizeof(float) * n * m), *ref = malloc(sizeof(float) * n * 64);
    float *y64 = malloc(sizeof(float) * n * 64);
    if (qmm_x86_gemv_avx512(type, 64, k, wq, rb, n, x, k, y64, 64, th) != QMM_OK) return 1;
    qmm_matmul_ref(type, 64, k, wq, rb, n, x, k, ref, 64);
    qmm_diff d;
    qmm_compare(n, 64, y64, 64, ref, 64, &d);
    double *tg = malloc(sizeof(double) * iters), *tr = malloc(sizeof(double) * iters);
    unsigned sink = 0;
    /* Copies of W, 1 GiB in all, used in turn so that no call finds W in a cache. */
    const size_t wbytes = (rb * m + 63) / 64 * 64;
    int copies = getenv("GEMV_HOT") ? 1 : (int)(((size_t)1 << 30) / wbytes) + 2;
    unsigned char **cp = malloc(sizeof *cp * copies);
    for (int c = 0; c < copies; c++) {
        cp[c] = aligned_alloc(64, wbytes);
        memcpy(cp[c], wq, rb * m);
    }
    for (int it = -1, c = 0; it < iters; it++) { /* it = -1: warm-up */
        double t0 = now_ms();
        qmm_x86_gemv_avx512(type, m, k, cp[c], rb, n, x, k, y, m, th);
        c = (c + 1) % copies;
        double t1 = now_ms();
        sink ^= read_all(cp[c], rb * m, th);
        c = (c + 1) % copies;
        double t2 = now_ms();
        if (it >= 0) {
            tg[it] = t1 - t0;
            tr[it] = t2 - t1;
        }
    }
    qsort(tg, iters, sizeof *tg, cmp_d);
    qsort(tr, iters, sizeof *tr, cmp_d);
    const double gb = (double)rb * m / 1e9, mg = tg[iters / 2], mr = tr[iters / 2];
    printf("%-5s m=%lld k=%lld n=%lld th=%d  gemv best %.3f med %.3f ms = %.1f GB/s | read best "
           "%.3f med %.3f ms = %.1f GB/s | median %.0f%% of read (best %.0f%%)  nmse %.2g "
           "max_rel %.2g%s\n", name, (long long)m, (long long)k, (long long)n, th, tg[0], mg,
           gb / mg * 1e3, tr[0], mr, gb / mr * 1e3, 100.0 * mr / mg, 100.0 * tr[0] / tg[0],
           d.nmse, d.max_rel_err, sink == 1 ? " " : "");
    for (int c = 0; c < copies; c++) free(cp[c]);
    free(cp);
    free(wf); free(x); free(wq); free(y); free(ref); free(y64); free(tg); free(tr);
    return qmm_diff_ok(&d, 1e-10, 1e-5) ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s TYPES M K N [ITERS]\n", argv[0]);
        return 2;
    }
    const int64_t m = atoll(argv[2]), k = atoll(argv[3]), n = atoll(argv[4]);
    const int iters = argc > 5 ? atoi(argv[5]) : 21, th = omp_get_max_threads();
    if (th == 1) clock_id = CLOCK_THREAD_CPUTIME_ID;
    char *types = strdup(argv[1]);
    int rc = 0;
    for (char *t = strtok(types, ","); t != NULL; t = strtok(NULL, ","))
        rc |= run_type(t, m, k, n, iters, th);
    free(types);
    return rc;
}
