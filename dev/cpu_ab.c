/*
 * dev/cpu_ab.c — time CPU strategies against each other on one type and shape, the calls
 * alternated in one process (strategy A, B, A, B, ...), by CPU time as well as wall time.
 * Not part of the library. For a machine other work is loading: wall times there are
 * quantized to scheduler slices and a descheduled OpenMP thread makes its team wait, but the
 * CPU time of a 1-thread call and the comparison of calls made side by side stay usable
 * (`qmm bench` is the tool for a quiet machine).
 * Build (after building build/libqmm.a):
 *   gcc -O2 -std=c11 -fopenmp -I include dev/cpu_ab.c build/libqmm.a \
 *       $(pkg-config --libs openblas) -lm -o build/cpu_ab
 * Run: build/cpu_ab TYPE M K N STRATEGIES [ITERS [THREADS]]
 *   e.g. QMM_CPU_ISA=avx2 build/cpu_ab f32 4608 1024 8 gemv,fused 9 1
 * A strategy name prefixed with "bi-" runs with QMM_FLAG_BATCH_INVARIANT. Every strategy's
 * last output is compared with qmm_matmul_ref (max |diff| / max |ref| printed); the X and W
 * values are a fixed pattern (never all zero), W quantized with the reference quantizer (or
 * random valid blocks). Prints per strategy the kernel, the best and median wall time and
 * the median CPU time as GFLOP/s (2 m k n flops).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qmm.h"

#define MAX_S 8
#define MAX_ITERS 1000

static double clock_s(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s TYPE M K N STRATEGIES [ITERS [THREADS]]\n", argv[0]);
        return 2;
    }
    const int64_t m = atol(argv[2]), k = atol(argv[3]), n = atol(argv[4]);
    const int iters = argc > 6 ? atoi(argv[6]) : 15, threads = argc > 7 ? atoi(argv[7]) : 0;
    qmm_type type = QMM_TYPE_COUNT;
    for (int t = 0; t < QMM_TYPE_COUNT; t++)
        if (qmm_type_is_supported(t) && strcmp(qmm_type_name((qmm_type)t), argv[1]) == 0)
            type = (qmm_type)t;
    if (type == QMM_TYPE_COUNT || m < 1 || k < 1 || n < 1 || iters < 1 || iters > MAX_ITERS) {
        fprintf(stderr, "bad type, shape or iteration count\n");
        return 2;
    }
    size_t rb;
    if (qmm_row_bytes(type, k, &rb) != QMM_OK) {
        fprintf(stderr, "%s\n", qmm_last_error());
        return 2;
    }
    float *x = malloc(sizeof(float) * (size_t)(n * k)), *wf = malloc(sizeof(float) * (size_t)(m * k));
    float *y = malloc(sizeof(float) * (size_t)(n * m)), *ref = malloc(sizeof(float) * (size_t)(n * m));
    unsigned char *wq = malloc(rb * (size_t)m);
    if (!x || !wf || !y || !ref || !wq) return 1;
    for (int64_t i = 0; i < n * k; i++) x[i] = (float)((uint32_t)(i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (int64_t i = 0; i < m * k; i++) wf[i] = (float)((uint32_t)(i * 40503u + 7) % 997) / 498.0f - 1.0f;
    qmm_status st = qmm_type_has_quantizer(type) ? qmm_quantize_rows(type, wf, wq, m, k)
                                                 : qmm_random_rows(type, 1, 0.5, wq, m, k);
    if (st == QMM_OK) st = qmm_matmul_ref(type, m, k, wq, rb, n, x, k, ref, m);
    if (st != QMM_OK) {
        fprintf(stderr, "%s\n", qmm_last_error());
        return 1;
    }
    char list[256];
    snprintf(list, sizeof list, "%s", argv[5]);
    const char *names[MAX_S];
    int ns = 0;
    for (char *tok = strtok(list, ","); tok != NULL && ns < MAX_S; tok = strtok(NULL, ",")) names[ns++] = tok;
    qmm_context *ctx[MAX_S];
    qmm_weights *w[MAX_S];
    qmm_path path[MAX_S];
    for (int s = 0; s < ns; s++) {
        qmm_context_params p = qmm_context_default_params();
        p.n_threads = threads;
        const char *name = names[s];
        if (strncmp(name, "bi-", 3) == 0) {
            p.flags |= QMM_FLAG_BATCH_INVARIANT;
            name += 3;
        }
        if (qmm_strategy_from_name(name, &p.strategy) != QMM_OK ||
            qmm_context_create(&p, &ctx[s]) != QMM_OK ||
            qmm_weights_create(ctx[s], type, m, k, wq, rb, &w[s]) != QMM_OK ||
            qmm_matmul_path(ctx[s], w[s], n, &path[s]) != QMM_OK) {
            fprintf(stderr, "%s: %s\n", names[s], qmm_last_error());
            return 1;
        }
    }
    static double tw[MAX_S][MAX_ITERS], tc[MAX_S][MAX_ITERS];
    double max_diff[MAX_S] = {0}, max_ref = 0;
    for (int64_t i = 0; i < n * m; i++) max_ref = fmax(max_ref, fabs(ref[i]));
    for (int it = -2; it < iters; it++)
        for (int s = 0; s < ns; s++) {
            const double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            if (qmm_matmul(ctx[s], w[s], n, x, k, y, m) != QMM_OK) {
                fprintf(stderr, "%s: %s\n", names[s], qmm_last_error());
                return 1;
            }
            if (it >= 0) {
                tc[s][it] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
                tw[s][it] = clock_s(CLOCK_MONOTONIC) - w0;
            }
            if (it == iters - 1)
                for (int64_t i = 0; i < n * m; i++) max_diff[s] = fmax(max_diff[s], fabs((double)y[i] - ref[i]));
        }
    const double flops = 2.0 * (double)m * (double)k * (double)n;
    for (int s = 0; s < ns; s++) {
        qsort(tw[s], (size_t)iters, sizeof(double), cmp);
        qsort(tc[s], (size_t)iters, sizeof(double), cmp);
        printf("%-6s %5lldx%-5lld n=%-4lld %-10s %-16s wall best %8.3f ms %7.1f GFLOP/s, median %8.3f ms"
               " %7.1f | cpu median %7.1f GFLOP/s | max|diff|/max|ref| %.2e\n",
               argv[1], (long long)m, (long long)k, (long long)n, names[s], path[s].kernel,
               tw[s][0] * 1e3, flops / tw[s][0] * 1e-9, tw[s][iters / 2] * 1e3,
               flops / tw[s][iters / 2] * 1e-9, flops / tc[s][iters / 2] * 1e-9,
               max_diff[s] / (max_ref > 0 ? max_ref : 1));
        qmm_weights_free(w[s]);
        qmm_context_free(ctx[s]);
    }
    free(x);
    free(wf);
    free(y);
    free(ref);
    free(wq);
    return 0;
}
