/*
 * dev/gemv_avx512.c — time the AVX-512 gemv (src/cpu/x86/gemv_avx512.c) against the
 * machine's measured read bandwidth (2 threads summing a buffer of the same size), and
 * check it against qmm_matmul_ref on the first 64 W rows. Not part of the library. Build:
 *   gcc -O2 -mavx512f -fopenmp -I include -I src dev/gemv_avx512.c build-simd/libqmm.a \
 *       $(pkg-config --libs openblas) -lm -o build-simd/gemv_avx512
 * Run: build-simd/gemv_avx512 TYPE M K N [ITERS]      e.g. q4_0 14336 4096 1 20
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cpu/x86/x86_kernels.h"
#include "qmm.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    qmm_type type;
    if (qmm_type_from_name(argv[1], &type) != QMM_OK) return 2;
    int64_t m = atoll(argv[2]), k = atoll(argv[3]), n = atoll(argv[4]);
    int iters = argc > 5 ? atoi(argv[5]) : 20, th = omp_get_max_threads();
    size_t rb;
    qmm_row_bytes(type, k, &rb);
    float *wf = malloc(sizeof(float) * k * 64), *x = malloc(sizeof(float) * n * k);
    unsigned char *wq = aligned_alloc(64, (rb * m + 63) / 64 * 64);
    for (int64_t i = 0; i < n * k; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t r = 0; r < m; r += 64) { /* quantize 64 rows at a time */
        int64_t rows = m - r < 64 ? m - r : 64;
        for (int64_t i = 0; i < rows * k; i++) wf[i] = (float)rand() / RAND_MAX - 0.5f;
        qmm_quantize_rows(type, wf, wq + r * rb, rows, k);
    }
    float *y = malloc(sizeof(float) * n * m), *ref = malloc(sizeof(float) * n * 64);
    float *rowbuf = malloc(sizeof(float) * k * th);
    if (qmm_x86_gemv_avx512(type, m, k, wq, rb, n, x, k, y, m, rowbuf, th) != QMM_OK) return 1;
    float *y64 = malloc(sizeof(float) * n * 64);
    qmm_x86_gemv_avx512(type, 64, k, wq, rb, n, x, k, y64, 64, rowbuf, th);
    qmm_matmul_ref(type, 64, k, wq, rb, n, x, k, ref, 64);
    qmm_diff d;
    qmm_compare(n, 64, y64, 64, ref, 64, &d);
    printf("check %s nmse %.3g max_rel %.3g\n", qmm_diff_ok(&d, 1e-5, 1e-5) ? "PASS" : "FAIL",
           d.nmse, d.max_rel_err);
    double best = 1e30, bw_best = 1e30;
    for (int it = 0; it < iters; it++) {
        double t0 = now_ms();
        qmm_x86_gemv_avx512(type, m, k, wq, rb, n, x, k, y, m, rowbuf, th);
        double t = now_ms() - t0;
        if (t < best) best = t;
        t0 = now_ms();
        const size_t bytes = rb * m, nv = bytes / 64;
        __m512i acc_all = _mm512_setzero_si512();
#pragma omp parallel num_threads(th)
        {
            __m512i acc = _mm512_setzero_si512();
#pragma omp for schedule(static)
            for (size_t v = 0; v < nv; v++)
                acc = _mm512_xor_si512(acc, _mm512_load_si512((const void *)(wq + 64 * v)));
#pragma omp critical
            acc_all = _mm512_xor_si512(acc_all, acc);
        }
        t = now_ms() - t0;
        if (t < bw_best) bw_best = t;
        if (_mm512_reduce_add_epi32(acc_all) == 12345) printf(" ");
    }
    double gb = (double)rb * m / 1e9;
    printf("gemv_avx512 %s m=%lld k=%lld n=%lld threads=%d: best %.3f ms, %.1f GB/s, %.1f GFLOP/s; "
           "read bandwidth %.1f GB/s -> %.0f%%\n", argv[1], (long long)m, (long long)k,
           (long long)n, th, best, gb / best * 1e3, 2.0 * m * k * n / best / 1e6,
           gb / bw_best * 1e3, 100.0 * bw_best / best);
    return 0;
}
