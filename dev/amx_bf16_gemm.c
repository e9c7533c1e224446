/*
 * dev/amx_bf16_gemm.c — check and time the AMX-BF16 GEMM (src/cpu/x86/gemm_bf16_amx.c) on
 * one type and shape, next to OpenBLAS SGEMM on the dequantized f32 weights.
 * Not part of the library. Build (after building build-simd/libqmm.a):
 *   gcc -O2 -fopenmp -I include -I src dev/amx_bf16_gemm.c build-simd/libqmm.a \
 *       $(pkg-config --libs openblas) -lm -o build-simd/amx_bf16_gemm
 * Blocking experiments: compile the kernel into the program with other constants, e.g.
 *   gcc -O2 -fopenmp -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mamx-tile \
 *       -mamx-bf16 -DKB=512 -DGROUP_W=4 -I include -I src dev/amx_bf16_gemm.c \
 *       src/cpu/x86/gemm_bf16_amx.c build-amx/libqmm.a $(pkg-config --libs openblas) -lm
 * (the archive's copy of the kernel is then not linked).
 * Run: build-simd/amx_bf16_gemm TYPE M K N [ITERS]     e.g. q4_0 4608 1024 512 20
 * Checks the first min(n, 64) output rows against qmm_matmul_ref (bf16 path limits:
 * nmse <= 1e-5, max_rel_err <= 1e-2), then prints the best and median time of ITERS runs.
 */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AMX)) {
        fprintf(stderr, "no AMX here\n");
        return 77;
    }
    size_t rb;
    if (qmm_row_bytes(type, k, &rb) != QMM_OK) return 2;
    float *wf = malloc((size_t)m * k * sizeof(float));
    float *x = malloc((size_t)n * k * sizeof(float));
    unsigned char *wq = malloc((size_t)m * rb);
    srand(1);
    for (int64_t i = 0; i < m * k; i++) wf[i] = (float)rand() / RAND_MAX * 2 - 1;
    for (int64_t i = 0; i < n * k; i++) x[i] = (float)rand() / RAND_MAX * 2 - 1;
    qmm_quantize_rows(type, wf, wq, m, k);
    qmm_x86_bf16_tiles tiles;
    double t0 = now_ms();
    if (qmm_x86_bf16_tiles_pack(type, m, k, wq, rb, omp_get_max_threads(), &tiles) != QMM_OK) return 1;
    printf("pack: %.1f ms, %.1f MiB\n", now_ms() - t0, tiles.m_pad * tiles.k_pad * 2 / 1048576.0);
    size_t sb = qmm_x86_gemm_bf16_amx_scratch(&tiles, n, omp_get_max_threads());
    void *scratch = aligned_alloc(64, (sb + 63) / 64 * 64);
    float *y = malloc((size_t)n * m * sizeof(float));
    int threads = omp_get_max_threads();
    qmm_x86_gemm_bf16_amx(&tiles, n, x, k, y, m, scratch, threads);
    int64_t nc = n < 64 ? n : 64;
    float *ref = malloc((size_t)nc * m * sizeof(float));
    qmm_matmul_ref(type, m, k, wq, rb, nc, x, k, ref, m);
    qmm_diff d;
    qmm_compare(nc, m, y, m, ref, m, &d);
    int ok = qmm_diff_ok(&d, 1e-5, 1e-2);
    printf("check %s: nmse %.3g max_rel %.3g nonfinite %lld\n", ok ? "PASS" : "FAIL", d.nmse,
           d.max_rel_err, (long long)d.n_nonfinite);
    double *ts = malloc(iters * sizeof(double));
    for (int it = 0; it < iters; it++) {
        t0 = now_ms();
        qmm_x86_gemm_bf16_amx(&tiles, n, x, k, y, m, scratch, threads);
        ts[it] = now_ms() - t0;
    }
    qsort(ts, iters, sizeof(double), cmp_d);
    double gf = 2.0 * m * k * n / 1e6;
    printf("amx_bf16 %s m=%lld k=%lld n=%lld threads=%d: best %.3f ms (%.0f GFLOP/s) median %.3f ms (%.0f GFLOP/s)\n",
           argv[1], (long long)m, (long long)k, (long long)n, threads, ts[0], gf / ts[0],
           ts[iters / 2], gf / ts[iters / 2]);
    qmm_dequantize_rows(type, wq, wf, m, k);
    for (int it = 0; it < iters; it++) {
        t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, k, 1.0f, x, k, wf, k, 0.0f,
                    y, m);
        ts[it] = now_ms() - t0;
    }
    qsort(ts, iters, sizeof(double), cmp_d);
    printf("openblas sgemm: best %.3f ms (%.0f GFLOP/s) median %.3f ms\n", ts[0], gf / ts[0],
           ts[iters / 2]);
    return ok ? 0 : 1;
}
