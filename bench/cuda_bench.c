/*
 * cuda_bench.c — times the CUDA strategies on the LFM2.5-350M shapes (m x k = 4608x1024,
 * 1024x4608, 3072x1024, 1024x1024, 512x1024) at n = 1, 8, 512 and 2048, for q4_0, q4_K, q6_K and
 * f16, plus the decode shapes 4096x14336 and 14336x4096 at n = 1.
 *
 * Each (type, shape, n, strategy) is first verified against qmm_matmul_ref with the limits of
 * the precision class that qmm_matmul_path reports for the kernel (docs/CUDA.md); only a
 * verified result is timed. Timing: 20 warm-up runs, then 7
 * batches of 100 matmuls between CUDA events (qmm_timer_begin/end), rotating among 4 input
 * sets of random X (never zeros); the median batch gives microseconds per matmul ("stream":
 * includes the host's submission cost of each qmm_matmul). The same 100 matmuls are then
 * captured in a CUDA graph and its replays timed with events ("graph": device time, launch
 * gaps shrunk). Prints one line per case: type m k n strategy stream-us graph-us nmse.
 *
 * Build (bench/gpu_run.sh does this): nvcc -O2 -o cuda_bench bench/cuda_bench.c -Iinclude
 *   <build>/libqmm.a -lcublas -lcublasLt -lnvrtc -lopenblas -lcjson -lgomp -lm
 * Usage: cuda_bench [--quick] [--types T,T..] [--ns N,N..] [--strategies S,S..] [--shapes MxK,..]
 *                   [--decode-only] [--no-decode]
 *                   [--int8-sweep] [--int8-repack] [--fused-sweep] [--f16-groups] [--rotate-w R]
 *   --quick: first shape only; --types / --ns / --strategies: subsets (default
 *   q4_0,q4_K,q6_K,f16; 1,8,512,2048; every strategy and auto); --shapes: instead of the LFM
 *   shapes; --decode-only: only the two large n = 1 shapes; --no-decode: without them;
 *   --int8-sweep: int8 also with each forced GEMM tile configuration and
 *   split (qmm_cuda_int8_force; rows "int8[cC sS]", each verified; n <= 8: the split only);
 *   --int8-repack: at n <= 8 int8 also on the repack's skinny kernel instead of the GGUF rows
 *   (qmm_cuda_int8_force_gemv(0); row "int8(int8_repack_mma)", verified);
 *   --f16-groups: dequant_hgemm, besides the library's pick of W decoder for the type, also
 *   with W decoded to f16 by groups of 8 and by the unit decoders (qmm_cuda_f16_decoder(0)
 *   and (1); rows "dequant_hgemm(groups)" and "dequant_hgemm(units)", verified);
 *   --fused-sweep: fused also with each forced tile configuration C of its kernel on the int8
 *   repack and split-k S = 1, 2, 4 (qmm_cuda_half_force; rows "fused[cC sS]", each verified);
 *   --rotate-w R (1..8): R weights objects of the same W rotated through the timed calls (so
 *   that W is read from device memory when R * W bytes exceed the L2 cache; default 1).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "qmm.h"

static cudaStream_t g_stream;

#define SETS 4
#define WARMUP 20
#define BATCHES 7
#define PER_BATCH 100

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float urand(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        qmm_status s_ = (call);                                                            \
        if (s_ != QMM_OK) {                                                                \
            fprintf(stderr, "%s: %s: %s\n", #call, qmm_status_str(s_), qmm_last_error());   \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* The strategies timed per case (--strategies), in this order. */
static qmm_strategy g_strategies[QMM_STRATEGY_COUNT] = {
    QMM_STRATEGY_GEMV, QMM_STRATEGY_DEQUANT_SGEMM, QMM_STRATEGY_CACHED_F16, QMM_STRATEGY_DEQUANT_HGEMM,
    QMM_STRATEGY_FUSED, QMM_STRATEGY_FP8, QMM_STRATEGY_INT8, QMM_STRATEGY_AUTO};
static int g_n_strategies = 8;
static int g_int8_sweep = 0, g_fused_sweep = 0, g_rotate_w = 1, g_int8_repack = 0, g_f16_groups = 0;
#define MAX_ROTATE 8

/* The CUDA backend's int8 test and bench aid (src/cuda/cuda_internal.h): force the GEMM tile
 * configuration and split (-1: the library's choice). */
void qmm_cuda_int8_force(int cfg, int split);
/* n <= 8: 0 keeps int8 on the repack's skinny kernel, -1 the library's choice (the GGUF-row
 * kernel where it takes the shape). */
void qmm_cuda_int8_force_gemv(int mode);
/* dequant_hgemm's W to f16: 0 by groups of 8, 1 by the unit decoders, -1 the library's choice. */
void qmm_cuda_f16_decoder(int mode);
/* The same for fused on the int8 repack (tile configuration, split; -1: the library's choice). */
void qmm_cuda_half_force(int cfg, int split);
int qmm_cuda_half_configs(void);
int qmm_cuda_half_config_wgmma(int cfg);
int qmm_cuda_half_wgmma_available(void);

static void force(qmm_strategy strategy, int variant) {
    /* int8 variant -2: the library's choice, but n <= 8 on the repack's skinny kernel */
    qmm_cuda_int8_force_gemv(strategy == QMM_STRATEGY_INT8 && variant == -2 ? 0 : -1);
    /* dequant_hgemm variants -2, -3: W to f16 by groups of 8, by the unit decoders */
    const bool hg = strategy == QMM_STRATEGY_DEQUANT_HGEMM;
    qmm_cuda_f16_decoder(hg && variant == -2 ? 0 : hg && variant == -3 ? 1 : -1);
    const bool i8 = strategy == QMM_STRATEGY_INT8 && variant >= 0;
    qmm_cuda_int8_force(i8 ? variant / 2 : -1, i8 ? variant % 2 : -1);
    /* fused variants: configuration variant % 16, split variant / 16 (0: the library's); the
     * environment's QMM_BENCH_FUSED_CFG forces the configuration of the plain fused rows (for
     * ncu, which selects kernels by name) */
    const bool fu = strategy == QMM_STRATEGY_FUSED && variant >= 0;
    const char *env = getenv("QMM_BENCH_FUSED_CFG");
    const int env_cfg = strategy == QMM_STRATEGY_FUSED && env != NULL ? atoi(env) : -1;
    qmm_cuda_half_force(fu ? variant % 16 : env_cfg, fu && variant / 16 > 0 ? variant / 16 : -1);
}

/* The kernel qmm_matmul_path names for (w, n) under the context's strategy. */
static const char *path_kernel(qmm_context *ctx, const qmm_weights *w, int64_t n) {
    qmm_path path;
    return qmm_matmul_path(ctx, w, n, &path) == QMM_OK ? path.kernel : "?";
}

/* Verifies and times one strategy (int8: `variant` -1 for the library's choice, else the
 * forced (cfg, split) = (variant / 2, variant % 2); fused: the forced configuration) on W (ws[0..g_rotate_w-1], rotated) and
 * prints its line. */
static void time_one(qmm_context *ctx, qmm_weights **ws, qmm_type type, int64_t m, int64_t k, int64_t n,
                     size_t rb, float *dx, float *dy, float *out, const float *ref, qmm_strategy strategy,
                     int variant) {
    qmm_weights *w = ws[0];
    force(strategy, variant);
    CHECK(qmm_context_set_strategy(ctx, strategy));
    qmm_strategy chosen;
    if (qmm_matmul_strategy(ctx, w, n, &chosen) != QMM_OK) return;
    char name[40];
    snprintf(name, sizeof name, "%s%s%s", qmm_strategy_name(strategy), strategy == QMM_STRATEGY_AUTO ? "->" : "",
             strategy == QMM_STRATEGY_AUTO ? qmm_strategy_name(chosen) : "");
    if (variant >= 0 && strategy == QMM_STRATEGY_INT8) snprintf(name, sizeof name, "int8[c%d s%d]", variant / 2, variant % 2);
    if (variant >= 0 && strategy == QMM_STRATEGY_FUSED) snprintf(name, sizeof name, "fused[c%d s%d]", variant % 16, variant / 16);
    if (variant < 0 && strategy == QMM_STRATEGY_FUSED) snprintf(name, sizeof name, "fused(%s)", path_kernel(ctx, w, n));
    if (variant < 0 && strategy == QMM_STRATEGY_INT8) snprintf(name, sizeof name, "int8(%s)", path_kernel(ctx, w, n));
    if (variant == -2 && strategy == QMM_STRATEGY_DEQUANT_HGEMM) snprintf(name, sizeof name, "dequant_hgemm(groups)");
    if (variant == -3 && strategy == QMM_STRATEGY_DEQUANT_HGEMM) snprintf(name, sizeof name, "dequant_hgemm(units)");
    CHECK(qmm_matmul(ctx, w, n, dx, k, dy, m));
    CHECK(qmm_buffer_download(ctx, out, dy, (size_t)(n * m) * sizeof(float)));
    qmm_diff d;
    CHECK(qmm_compare(n, m, out, m, ref, m, &d));
    qmm_path path;
    CHECK(qmm_matmul_path(ctx, w, n, &path));
    if (!qmm_diff_ok(&d, path.max_nmse, path.max_rel_err)) {
        printf("%-5s %5lld %5lld %4lld %-24s   FAILED verification nmse %.3g max_rel %.3g\n", qmm_type_name(type),
               (long long)m, (long long)k, (long long)n, name, d.nmse, d.max_rel_err);
        force(strategy, -1);
        return;
    }
    const int R = g_rotate_w;
    for (int i = 0; i < WARMUP; i++) CHECK(qmm_matmul(ctx, ws[i % R], n, dx + (i % SETS) * n * k, k, dy, m));
    double ms[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        CHECK(qmm_timer_begin(ctx));
        for (int i = 0; i < PER_BATCH; i++) CHECK(qmm_matmul(ctx, ws[i % R], n, dx + (i % SETS) * n * k, k, dy, m));
        CHECK(qmm_timer_end(ctx, &ms[b]));
    }
    qsort(ms, BATCHES, sizeof ms[0], cmp_double);
    const double us = ms[BATCHES / 2] * 1000.0 / PER_BATCH;
    /* graph of PER_BATCH matmuls, replays timed with events */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaEvent_t e0, e1;
    if (cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal) != cudaSuccess) exit(1);
    for (int i = 0; i < PER_BATCH; i++) CHECK(qmm_matmul(ctx, ws[i % R], n, dx + (i % SETS) * n * k, k, dy, m));
    if (cudaStreamEndCapture(g_stream, &graph) != cudaSuccess || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess ||
        cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess ||
        cudaGraphLaunch(exec, g_stream) != cudaSuccess) {
        fprintf(stderr, "graph capture failed\n");
        exit(1);
    }
    double gms[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        float f;
        cudaEventRecord(e0, g_stream);
        cudaGraphLaunch(exec, g_stream);
        cudaEventRecord(e1, g_stream);
        if (cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&f, e0, e1) != cudaSuccess) exit(1);
        gms[b] = f;
    }
    qsort(gms, BATCHES, sizeof gms[0], cmp_double);
    const double gus = gms[BATCHES / 2] * 1000.0 / PER_BATCH;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    force(strategy, -1);
    printf("%-5s %5lld %5lld %4lld %-24s %9.2f %9.2f  verified nmse %.2e  graph: %.0f GB/s-of-W %.2f TFLOP/s%s\n",
           qmm_type_name(type), (long long)m, (long long)k, (long long)n, name, us, gus, d.nmse,
           (double)(rb * (size_t)m) / (gus * 1e3), 2.0 * m * k * n / (gus * 1e6), R > 1 ? "  (W rotated)" : "");
    fflush(stdout);
}

static void run_case(qmm_context *ctx, qmm_type type, int64_t m, int64_t k, int64_t n) {
    size_t rb;
    CHECK(qmm_row_bytes(type, k, &rb));
    float *wf = malloc((size_t)(m * k) * sizeof(float));
    unsigned char *wq = malloc(rb * (size_t)m);
    float *x = malloc((size_t)(SETS * n * k) * sizeof(float));
    float *ref = malloc((size_t)(n * m) * sizeof(float)), *out = malloc((size_t)(n * m) * sizeof(float));
    if (!wf || !wq || !x || !ref || !out) exit(1);
    for (int64_t i = 0; i < m * k; i++) wf[i] = urand();
    for (int64_t i = 0; i < SETS * n * k; i++) x[i] = urand();
    /* types without a reference quantizer (most i-quants): random valid blocks */
    if (qmm_type_has_quantizer(type)) CHECK(qmm_quantize_rows(type, wf, wq, m, k));
    else CHECK(qmm_random_rows(type, 1, 1.0, wq, m, k));
    /* reference for input set 0, rows in parallel chunks */
#pragma omp parallel for schedule(dynamic)
    for (int64_t t0 = 0; t0 < n; t0 += 8) {
        const int64_t nc = n - t0 < 8 ? n - t0 : 8;
        if (qmm_matmul_ref(type, m, k, wq, rb, nc, x + t0 * k, k, ref + t0 * m, m) != QMM_OK) exit(1);
    }
    qmm_weights *ws[MAX_ROTATE];
    for (int r = 0; r < g_rotate_w; r++) CHECK(qmm_weights_create(ctx, type, m, k, wq, rb, &ws[r]));
    float *dx, *dy;
    CHECK(qmm_buffer_alloc(ctx, (size_t)(SETS * n * k) * sizeof(float), (void **)&dx));
    CHECK(qmm_buffer_alloc(ctx, (size_t)(n * m) * sizeof(float), (void **)&dy));
    CHECK(qmm_buffer_upload(ctx, dx, x, (size_t)(SETS * n * k) * sizeof(float)));
    for (int si = 0; si < g_n_strategies; si++) {
        time_one(ctx, ws, type, m, k, n, rb, dx, dy, out, ref, g_strategies[si], -1);
        if (g_int8_repack && g_strategies[si] == QMM_STRATEGY_INT8 && n <= 8)
            time_one(ctx, ws, type, m, k, n, rb, dx, dy, out, ref, g_strategies[si], -2);
        if (g_f16_groups && g_strategies[si] == QMM_STRATEGY_DEQUANT_HGEMM)
            for (int v = -2; v >= -3; v--) time_one(ctx, ws, type, m, k, n, rb, dx, dy, out, ref, g_strategies[si], v);
        if (g_int8_sweep && g_strategies[si] == QMM_STRATEGY_INT8)
            for (int v = 0; v < (n <= 8 ? 2 : 6); v++) time_one(ctx, ws, type, m, k, n, rb, dx, dy, out, ref, g_strategies[si], v);
        if (g_fused_sweep && g_strategies[si] == QMM_STRATEGY_FUSED)
            for (int sp = 1; sp <= 4; sp *= 2) /* split 1, 2, 4 */
                for (int v = 0; v < qmm_cuda_half_configs(); v++)
                    /* a wgmma configuration where wgmma cannot run would time mma.sync under its label */
                    if (qmm_cuda_half_config_wgmma(v) != 1 || qmm_cuda_half_wgmma_available())
                        time_one(ctx, ws, type, m, k, n, rb, dx, dy, out, ref, g_strategies[si], 16 * sp + v);
    }
    qmm_buffer_free(ctx, dx);
    qmm_buffer_free(ctx, dy);
    for (int r = 0; r < g_rotate_w; r++) qmm_weights_free(ws[r]);
    free(wf);
    free(wq);
    free(x);
    free(ref);
    free(out);
}

/* Parse a comma-separated list with `parse` into out[0..max-1]; returns the count (0: bad). */
static int parse_list(const char *arg, int max, int (*parse)(const char *, void *, int), void *out) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    int count = 0;
    for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
        if (count == max || !parse(tok, out, count)) return 0;
        count++;
    }
    return count;
}

static int parse_type(const char *s, void *out, int i) {
    return qmm_type_from_name(s, &((qmm_type *)out)[i]) == QMM_OK;
}

static int parse_strategy(const char *s, void *out, int i) {
    return qmm_strategy_from_name(s, &((qmm_strategy *)out)[i]) == QMM_OK;
}

static int parse_shape(const char *s, void *out, int i) {
    long long m, k;
    char extra;
    if (sscanf(s, "%lldx%lld%c", &m, &k, &extra) != 2 || m < 1 || k < 1 || m > (1 << 20) || k > (1 << 20)) return 0;
    ((int64_t(*)[2])out)[i][0] = m;
    ((int64_t(*)[2])out)[i][1] = k;
    return 1;
}

static int parse_n(const char *s, void *out, int i) {
    char *end;
    const long long v = strtoll(s, &end, 10);
    if (*end != '\0' || v < 1 || v > 65536) return 0;
    ((int64_t *)out)[i] = v;
    return 1;
}

int main(int argc, char **argv) {
    int quick = 0, decode_only = 0, no_decode = 0;
    qmm_type types[QMM_TYPE_COUNT] = {QMM_TYPE_Q4_0, QMM_TYPE_Q4_K, QMM_TYPE_Q6_K, QMM_TYPE_F16};
    int n_types = 4;
    int64_t ns[16] = {1, 8, 512, 2048};
    int n_ns = 4;
    int64_t shapes[16][2];
    int n_shapes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--decode-only") == 0) decode_only = 1;
        else if (strcmp(argv[i], "--no-decode") == 0) no_decode = 1;
        else if (strcmp(argv[i], "--int8-sweep") == 0) g_int8_sweep = 1;
        else if (strcmp(argv[i], "--fused-sweep") == 0) g_fused_sweep = 1;
        else if (strcmp(argv[i], "--int8-repack") == 0) g_int8_repack = 1;
        else if (strcmp(argv[i], "--f16-groups") == 0) g_f16_groups = 1;
        else if (strcmp(argv[i], "--shapes") == 0 && i + 1 < argc &&
                 (n_shapes = parse_list(argv[++i], 16, parse_shape, shapes)) > 0) {
        }
        else if (strcmp(argv[i], "--rotate-w") == 0 && i + 1 < argc && atoi(argv[i + 1]) >= 1 &&
                 atoi(argv[i + 1]) <= MAX_ROTATE) g_rotate_w = atoi(argv[++i]);
        else if (strcmp(argv[i], "--types") == 0 && i + 1 < argc &&
                 (n_types = parse_list(argv[++i], QMM_TYPE_COUNT, parse_type, types)) > 0) {
        } else if (strcmp(argv[i], "--strategies") == 0 && i + 1 < argc &&
                   (g_n_strategies = parse_list(argv[++i], QMM_STRATEGY_COUNT, parse_strategy, g_strategies)) > 0) {
        } else if (strcmp(argv[i], "--ns") == 0 && i + 1 < argc &&
                   (n_ns = parse_list(argv[++i], 16, parse_n, ns)) > 0) {
        } else {
            fprintf(stderr, "usage: cuda_bench [--quick] [--types T,T..] [--ns N,N..] [--strategies S,S..] "
                            "[--shapes MxK,..] [--decode-only] [--no-decode] [--int8-sweep] [--int8-repack] [--fused-sweep] [--f16-groups] "
                            "[--rotate-w R]\n");
            return 2;
        }
    }
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_CUDA;
    if (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
    p.cuda_stream = g_stream;
    qmm_context *ctx;
    CHECK(qmm_context_create(&p, &ctx));
    if (n_shapes == 0) {
        const int64_t lfm[][2] = {{4608, 1024}, {1024, 4608}, {3072, 1024}, {1024, 1024}, {512, 1024}};
        memcpy(shapes, lfm, sizeof lfm);
        n_shapes = 5;
    }
    const int64_t decode_shapes[][2] = {{4096, 14336}, {14336, 4096}};
    printf("type      m     k    n strategy                 stream-us  graph-us\n");
    for (int ti = 0; ti < n_types; ti++) {
        if (!decode_only)
            for (int si = 0; si < (quick ? 1 : n_shapes); si++)
                for (int ni = 0; ni < n_ns; ni++) run_case(ctx, types[ti], shapes[si][0], shapes[si][1], ns[ni]);
        if (!quick && !no_decode)
            for (size_t si = 0; si < 2; si++) run_case(ctx, types[ti], decode_shapes[si][0], decode_shapes[si][1], 1);
    }
    qmm_context_free(ctx);
    return 0;
}
