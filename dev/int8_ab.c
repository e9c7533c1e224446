/*
 * dev/int8_ab.c — time strategies and ISA configurations against each other through the public
 * API, interleaved call by call (so a burst of load hits every variant alike), and print the
 * best and the median time of ITERS calls per (type, shape, n, variant) as CSV. W is rotated
 * over COPIES weights objects of the same bytes (COPIES = 1: warm caches, as ggml's
 * ggml_mmbench; more: colder, as qmm bench; every copy gets one untimed call first, as in
 * qmm bench). Used where `qmm bench` medians are not usable
 * (a loaded 2-core machine: two-thread medians land on multiples of the scheduler tick); the
 * best time of many calls is the figure then. Not part of the library. Build (after
 * `cmake --build build --target qmm_static`):
 *   gcc -O2 -fopenmp -I include -I src dev/int8_ab.c build/libqmm.a \
 *       $(pkg-config --libs openblas) -lm -o build/int8_ab
 * Run: build/int8_ab TYPES SHAPES NS VARIANTS ITERS [THREADS [COPIES]]
 *   TYPES q4_0,q4_K   SHAPES 4608x1024,1024x4608 (m x k)   NS 1,16
 *   VARIANTS name=isa:avxvnni:strategy,...  e.g. i8=avx2:off:int8,vn=avx2:auto:int8,
 *            g=avx2:off:gemv,f=avx2:off:fused (QMM_CPU_ISA, QMM_CPU_AVX_VNNI, strategy)
 * Weights: qmm_random_rows (valid blocks of every type, elements about 0.5); X in [-1, 1).
 * Output columns: type, m, k, n, variant, kernel (qmm_matmul_path), min_ms, med_ms,
 * gflops_min, gflops_med. Results are not verified here (qmm bench and the tests do that).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qmm.h"

#define MAX_V 16
#define MAX_COPIES 64

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + 1e-6 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct variant {
    char name[32], isa[16], vnni[16];
    qmm_strategy strategy;
} variant;

static int split(char *s, char **out, int max) {
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        out[n++] = t;
    return n;
}

static qmm_type type_by_name(const char *name) {
    for (int i = 0; i < QMM_TYPE_COUNT; i++)
        if (qmm_type_name((qmm_type)i) && strcmp(qmm_type_name((qmm_type)i), name) == 0)
            return (qmm_type)i;
    return QMM_TYPE_COUNT;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s TYPES SHAPES NS VARIANTS ITERS [THREADS [COPIES]]\n", argv[0]);
        return 2;
    }
    const int iters = atoi(argv[5]), threads = argc > 6 ? atoi(argv[6]) : 2;
    int copies = argc > 7 ? atoi(argv[7]) : 16;
    if (copies < 1) copies = 1;
    if (copies > MAX_COPIES) copies = MAX_COPIES;
    char *vs[MAX_V], *ts[64], *ss[32], *ns_s[64];
    const int nv = split(argv[4], vs, MAX_V), nt = split(argv[1], ts, 64);
    const int nshape = split(argv[2], ss, 32), nn = split(argv[3], ns_s, 64);
    variant v[MAX_V];
    qmm_context *ctx[MAX_V];
    for (int i = 0; i < nv; i++) {
        char strat[32] = "";
        if (sscanf(vs[i], "%31[^=]=%15[^:]:%15[^:]:%31s", v[i].name, v[i].isa, v[i].vnni, strat) != 4 ||
            qmm_strategy_from_name(strat, &v[i].strategy) != QMM_OK) {
            fprintf(stderr, "bad variant '%s' (name=isa:avxvnni:strategy)\n", vs[i]);
            return 2;
        }
        setenv("QMM_CPU_ISA", v[i].isa, 1);
        setenv("QMM_CPU_AVX_VNNI", v[i].vnni, 1);
        qmm_context_params p = qmm_context_default_params();
        p.n_threads = threads;
        p.strategy = v[i].strategy;
        if (qmm_context_create(&p, &ctx[i]) != QMM_OK) {
            fprintf(stderr, "%s: %s\n", v[i].name, qmm_last_error());
            return 1;
        }
    }
    unsetenv("QMM_CPU_ISA");
    unsetenv("QMM_CPU_AVX_VNNI");
    printf("type,m,k,n,variant,kernel,min_ms,med_ms,gflops_min,gflops_med\n");
    for (int ti = 0; ti < nt; ti++) {
        const qmm_type type = type_by_name(ts[ti]);
        if (type == QMM_TYPE_COUNT) {
            fprintf(stderr, "unknown type %s\n", ts[ti]);
            return 2;
        }
        for (int si = 0; si < nshape; si++) {
            long long m = 0, k = 0;
            if (sscanf(ss[si], "%lldx%lld", &m, &k) != 2) return 2;
            size_t rb;
            if (qmm_row_bytes(type, k, &rb) != QMM_OK) return 2;
            unsigned char *wq = malloc(rb * (size_t)m);
            if (!wq || qmm_random_rows(type, 7, 0.5, wq, m, k) != QMM_OK) return 1;
            static qmm_weights *w[MAX_V][MAX_COPIES];
            for (int i = 0; i < nv; i++)
                for (int c = 0; c < copies; c++)
                    if (qmm_weights_create(ctx[i], type, m, k, wq, rb, &w[i][c]) != QMM_OK) return 1;
            long long nmax = 1;
            for (int ni = 0; ni < nn; ni++)
                if (atoll(ns_s[ni]) > nmax) nmax = atoll(ns_s[ni]);
            float *x = malloc(sizeof(float) * (size_t)(nmax * k)), *y = malloc(sizeof(float) * (size_t)(nmax * m));
            double *t = malloc(sizeof(double) * (size_t)(iters * nv));
            if (!x || !y || !t) return 1;
            for (long long i = 0; i < nmax * k; i++) x[i] = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
            for (int ni = 0; ni < nn; ni++) {
                const long long n = atoll(ns_s[ni]);
                for (int i = 0; i < nv; i++) /* untimed first call on every copy (one-time work
                                              * per weights object: packing, checks) */
                    for (int c = 0; c < (ni == 0 ? copies : 1); c++)
                        if (qmm_matmul(ctx[i], w[i][c], n, x, k, y, m) != QMM_OK) {
                            fprintf(stderr, "%s: %s\n", v[i].name, qmm_last_error());
                            return 1;
                        }
                for (int it = 0; it < iters; it++)
                    for (int i = 0; i < nv; i++) {
                        const double t0 = now_ms();
                        (void)qmm_matmul(ctx[i], w[i][(it + 1) % copies], n, x, k, y, m);
                        t[i * iters + it] = now_ms() - t0;
                    }
                for (int i = 0; i < nv; i++) {
                    double *ti_ = t + i * iters;
                    qsort(ti_, (size_t)iters, sizeof(double), cmp_double);
                    qmm_path path;
                    const char *kernel = qmm_matmul_path(ctx[i], w[i][0], n, &path) == QMM_OK ? path.kernel : "?";
                    const double fl = 2.0 * (double)m * (double)k * (double)n;
                    printf("%s,%lld,%lld,%lld,%s,%s,%.4f,%.4f,%.1f,%.1f\n", ts[ti], m, k, n, v[i].name,
                           kernel, ti_[0], ti_[iters / 2], fl / ti_[0] / 1e6, fl / ti_[iters / 2] / 1e6);
                }
                fflush(stdout);
            }
            for (int i = 0; i < nv; i++)
                for (int c = 0; c < copies; c++) qmm_weights_free(w[i][c]);
            free(wq);
            free(x);
            free(y);
            free(t);
        }
    }
    for (int i = 0; i < nv; i++) qmm_context_free(ctx[i]);
    return 0;
}
