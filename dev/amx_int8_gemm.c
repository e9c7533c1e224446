/*
 * dev/amx_int8_gemm.c — time the AMX-INT8 GEMM (src/cpu/x86/gemm_int8_amx.c) on one type and
 * shape with warm caches (the same W, X, Y every call), best and median of ITERS calls, and
 * check the first min(n, 64) rows against qmm_matmul_ref (int8 limits: nmse <= 5e-4,
 * max_rel_err <= 2e-2). Not part of the library. Build (after building build-amx/libqmm.a):
 *   gcc -O3 -fopenmp -mavx512f -mavx512bw -mavx512vl -mavx512dq -mamx-tile -mamx-int8 \
 *       -I include -I src dev/amx_int8_gemm.c src/cpu/x86/gemm_int8_amx.c build-amx/libqmm.a -lm
 * (compiling the kernel here lets -D experiments replace parts of it).
 * Run: a.out TYPE M K N [ITERS]     e.g. q4_0 1024 1024 512 20
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cpu/cpu_features.h"
#include "cpu/x86/x86_kernels.h"
#include "qmm.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s TYPE M K N [ITERS]\n", argv[0]);
        return 2;
    }
    qmm_type type;
    if (qmm_type_from_name(argv[1], &type) != QMM_OK) return 2;
    int64_t m = atoll(argv[2]), k = atoll(argv[3]), n = atoll(argv[4]);
    int iters = argc > 5 ? atoi(argv[5]) : 10;
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AMX)) return 77;
    size_t rb;
    if (qmm_row_bytes(type, k, &rb) != QMM_OK) return 2;
    float *wf = malloc((size_t)m * k * sizeof(float)), *x = malloc((size_t)n * k * sizeof(float));
    unsigned char *wq = malloc((size_t)m * rb);
    srand(1);
    for (int64_t i = 0; i < m * k; i++) wf[i] = (float)rand() / RAND_MAX * 2 - 1;
    for (int64_t i = 0; i < n * k; i++) x[i] = (float)rand() / RAND_MAX * 2 - 1;
    qmm_quantize_rows(type, wf, wq, m, k);
    qmm_x86_int8_tiles t;
    if (qmm_x86_int8_tiles_pack(type, m, k, wq, rb, omp_get_max_threads(), &t) != QMM_OK) return 1;
    size_t sb = qmm_x86_gemm_int8_amx_scratch(&t, n);
    void *scratch = aligned_alloc(64, (sb + 63) / 64 * 64);
    float *y = malloc((size_t)n * m * sizeof(float));
    int threads = omp_get_max_threads();
    qmm_x86_gemm_int8_amx(&t, n, x, k, y, m, scratch, threads);
    int64_t nc = n < 64 ? n : 64;
    float *ref = malloc((size_t)nc * m * sizeof(float));
    qmm_matmul_ref(type, m, k, wq, rb, nc, x, k, ref, m);
    qmm_diff d;
    qmm_compare(nc, m, y, m, ref, m, &d);
    int ok = qmm_diff_ok(&d, 5e-4, 2e-2);
    double *ts = malloc(iters * sizeof(double));
    for (int it = 0; it < iters; it++) {
        double t0 = now_ms();
        qmm_x86_gemm_int8_amx(&t, n, x, k, y, m, scratch, threads);
        ts[it] = now_ms() - t0;
    }
    qsort(ts, iters, sizeof(double), cmp_d);
    double gf = 2.0 * m * k * n / 1e6;
    printf("int8 %s m=%lld k=%lld n=%lld threads=%d: %s nmse %.3g max_rel %.3g; best %.3f ms "
           "(%.0f GFLOP/s) median %.3f ms (%.0f GFLOP/s)\n", argv[1], (long long)m, (long long)k,
           (long long)n, threads, ok ? "PASS" : "FAIL", d.nmse, d.max_rel_err, ts[0], gf / ts[0],
           ts[iters / 2], gf / ts[iters / 2]);
    return ok ? 0 : 1;
}
