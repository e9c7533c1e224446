/*
 * bench.c — `qmm bench`: time and verify Y[n][m] = X[n][k] * W[m][k]^T on model shapes
 * (a preset, custom MxK shapes, or every weight matrix of a GGUF file), for every weight
 * type, token count n and strategy asked for. docs/BENCH.md describes the method.
 *
 * For each (W, n, strategy): W, X and Y live in several copies (rotated, so the timed calls
 * do not find them in cache), warmup calls run first, then `iters` calls are timed one by
 * one with qmm_timer_begin/qmm_timer_end and the median is reported: the row's figure on the
 * CPU, its single-call latency on CUDA. On CUDA the main figure is the device time of
 * back-to-back calls: at least BENCH_GRAPH_MIN_CALLS calls over the copies recorded in a CUDA
 * graph (qmm_graph_begin/end), replayed `iters` times (qmm_graph_replay), the median replay
 * divided by its calls; on WebGPU it is the device time of back-to-back calls in regions
 * between GPU timestamp queries (gpu_regions.h). The last output is compared in full with
 * qmm_matmul_ref (parallel over blocks of W rows); a row that fails prints FAIL and no speed,
 * and the command exits 1.
 * Each row also reports what its first weights object holds (qmm_weights_memory); that object
 * is made anew for a row when an earlier row left copies in it, so that a row shows the
 * copies of its own path.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "candidate.h"
#include "commands.h"
#include "fill.h"
#include "gpu_regions.h"
#include "model.h"
#include "opts.h"
#include "presets.h"
#include "qmm.h"
#include "qmm_webgpu.h"
#include "report.h"
#include "sysinfo.h"
#include "verify.h"
#include "webgpu_geometry.h"

#define BENCH_DEFAULT_N 512
#define BENCH_DEFAULT_ITERS 3
#define BENCH_DEFAULT_WARMUP 1
#define BENCH_DEFAULT_SEED 1
#define BENCH_MAX_N 65536
#define BENCH_MAX_DIM (1 << 24)
#define BENCH_MAX_ITERS 1000000
#define BENCH_MAX_COPIES 64
/* CUDA: calls recorded in one replayed graph, at least (a multiple of the copies). */
#define BENCH_GRAPH_MIN_CALLS 16
/* Bytes of W/X/Y copies to rotate through at most (per matrix and n). */
#define BENCH_ROTATE_BUDGET ((size_t)1 << 30)
/* CUDA: the GPU's L2 is not flushed from the host; rotate through at least this many bytes
 * (twice the 50-60 MB L2 of an H100/H200). */
#define BENCH_GPU_ROTATE_BYTES ((size_t)128 << 20)
/* The CPU flush / bandwidth buffer: twice the last-level cache, within these bounds. */
#define BENCH_STREAM_MIN ((size_t)64 << 20)
#define BENCH_STREAM_MAX ((size_t)1 << 30)

/* ---------------------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------------------- */

typedef struct bench_opts {
    const bench_preset *preset;
    const char *model_path;
    bench_shape *shapes; /* --shape: custom shapes (label "custom") */
    int n_shapes;
    bool whole_model;
    qmm_type types[QMM_TYPE_COUNT];
    int n_types;
    bool types_given;
    int64_t *ns;
    size_t n_ns;
    int64_t iters, warmup, threads, seed;
    qmm_strategy strategies[QMM_STRATEGY_COUNT * 2];
    int n_strategies;
    bool strategies_given;
    qmm_backend backend;
    fill_kind fill;
    const char *json_path;
    bool csv, verify;
    bool batch_invariant; /* --batch-invariant: QMM_FLAG_BATCH_INVARIANT on the context */
    bool hot;             /* --caches hot: one W/X/Y copy reused, no flush */
    qmm_cache_policy cache; /* --cache */
    double cache_limit;
    char cache_text[48];  /* as the header prints it: "default", "none", "unlimited", "limit X" */
    webgpu_geometry geom; /* WebGPU fused geometry (environment, then flags) */
    bool shader_checks;   /* --shader-checks: qmm_context_params.webgpu_shader_checks */
} bench_opts;

static void usage(FILE *f) {
    fprintf(f,
        "usage: qmm bench [options]\n"
        "\n"
        "Time and verify Y[n][m] = X[n][k] * W[m][k]^T for quantized W on model shapes.\n"
        "Every timed result is checked over the whole output against qmm_matmul_ref.\n"
        "\n"
        "what to run:\n"
        "  --preset NAME      model shapes (default lfm2.5-350m: 4608x1024 ffn_gate/up,\n"
        "                     1024x4608 ffn_down, 3072x1024 conv_in_proj, 1024x1024\n"
        "                     conv_out/attn_q/attn_out, 512x1024 attn_k/v)\n"
        "  --whole-model      time all projection GEMMs of one forward pass of the preset\n"
        "                     (92 for lfm2.5-350m): each distinct shape once, times its count\n"
        "  --shape MxK[,...]  custom shapes instead of a preset (e.g. 64x256,128x512)\n"
        "  --model FILE.gguf  every 2-D weight tensor of a GGUF file with its real bytes,\n"
        "                     each timed and verified, rows grouped by (type, shape)\n"
        "  --types LIST       weight types, e.g. q4_0,q4_K (default: every weight type;\n"
        "                     env ONLY=LIST is the same); with --model, a filter\n"
        "  --n LIST           token counts n (default %d)\n"
        "  --strategy LIST    qmm strategies, e.g. fused or gemv,fused (default auto; the\n"
        "                     env QMM_STRATEGY replaces auto); rows show the resolved one\n"
        "  --backend cpu|cuda|webgpu  backend (default cpu); cuda and webgpu keep X and Y in\n"
        "                     device memory (webgpu: WebGPU buffers; times from timestamp\n"
        "                     queries)\n"
        "  --candidate FILE.cu|FILE.wgsl  compare a run-time compiled CUDA kernel with the\n"
        "                     production gemv kernel, or a WGSL kernel with the production\n"
        "                     fused or gemv kernel (qmm bench --candidate F --help; docs/BENCH.md)\n"
        "webgpu fused geometry (env WG_M, WG_N, TILE_K, TILE_M, TILE_N; flags replace them;\n"
        "checked against the kernel and the adapter's limits before anything runs):\n"
        "  --wg-m N, --wg-n N threads per workgroup along m and n (2, 4, 8, 16, 32; default 16)\n"
        "  --tile-k N         k per step through workgroup memory (8, 16, 32, 64; default 32)\n"
        "  --tile-m 4, --tile-n 4  the thread tile: only 4 (four named vec4 accumulators)\n"
        "  --shader-checks    compile the WGSL with wgpu's runtime checks (index clamps, loop\n"
        "                     bounds); default: trusted, without them (same bits)\n"
        "\n"
        "how:\n"
        "  --iters N          timed calls per row, median reported (default %d; env ITERS;\n"
        "                     CUDA: graph replays, WebGPU: regions of back-to-back calls)\n"
        "  --warmup N         untimed calls first (default %d; 0 allowed; WebGPU: with N > 0\n"
        "                     also back-to-back calls until the GPU's clocks settle, at least\n"
        "                     1 s: the header's timing line says how)\n"
        "  --threads N        CPU threads (default: all online cores)\n"
        "  --fill quantized|bytes  weights: normal(0,1) through the reference quantizer\n"
        "                     (default; types without one get random valid blocks), or\n"
        "                     random packed bytes with random finite scales of random sign\n"
        "  --seed N           random seed (default %d)\n"
        "  --verify, --no-verify   compare with the reference (default on)\n"
        "  --batch-invariant  run with QMM_FLAG_BATCH_INVARIANT (row j of Y depends only on\n"
        "                     row j of X, bit for bit, for every n)\n"
        "  --caches cold|hot  cold (default): every call on its own W, X, Y copy (up to 64\n"
        "                     copies, 1 GiB), the CPU caches flushed before each row (GPU:\n"
        "                     >= 128 MiB of copies): weights streamed from memory; hot: one\n"
        "                     copy reused, W stays in cache where it fits (as benchmarks\n"
        "                     timing one ggml tensor over and over do)\n"
        "  --cache default|none|unlimited|X  the context's qmm_cache_policy: which copies of\n"
        "                     W (f16, fp8, int8) CUDA weights may hold; X (a number >= 0):\n"
        "                     copies up to X times the GGUF bytes (default: default)\n"
        "\n"
        "output (CUDA, WebGPU: ms = device time of back-to-back calls, a replayed CUDA graph or\n"
        "regions between timestamp queries, and ms(1call) / latency_ms = one call alone;\n"
        "res_MiB = what the weights hold):\n"
        "  --json FILE        also write the header and rows as JSON\n"
        "  --csv              CSV on stdout instead of the table\n"
        "  --help             this text\n"
        "\n"
        "Exit status: 0 all rows passed (or ran unverified), 1 a row failed, every row was\n"
        "skipped or a runtime error, 2 bad usage.\n"
        "See docs/BENCH.md for the method (cache rotation, limits, checksums).\n",
        BENCH_DEFAULT_N, BENCH_DEFAULT_ITERS, BENCH_DEFAULT_WARMUP, BENCH_DEFAULT_SEED);
}

static bool parse_types(const char *name, const char *s, bench_opts *o) {
    o->types_given = opt_weight_types(name, s, o->types, (int)(sizeof o->types / sizeof o->types[0]),
                                      &o->n_types);
    return o->types_given;
}

static bool parse_strategies(const char *s, bench_opts *o) {
    char **items;
    size_t n;
    if (!opt_split("--strategy", s, &items, &n)) return false;
    bool ok = n <= sizeof o->strategies / sizeof o->strategies[0];
    if (!ok) fprintf(stderr, "qmm bench: --strategy '%s' lists too many strategies\n", s);
    o->n_strategies = 0;
    for (size_t i = 0; i < n && ok; i++) {
        qmm_strategy st;
        if (qmm_strategy_from_name(items[i], &st) != QMM_OK) {
            fprintf(stderr, "qmm bench: --strategy: unknown strategy '%s' (expected auto, ref, "
                            "gemv, fused, int8, dequant_sgemm, cached_f16, fp8 or "
                            "dequant_hgemm)\n", items[i]);
            ok = false;
        } else {
            o->strategies[o->n_strategies++] = st;
        }
    }
    opt_list_free(items);
    o->strategies_given = ok;
    return ok;
}

static bool parse_shapes(const char *s, bench_opts *o) {
    char **items;
    size_t n;
    if (!opt_split("--shape", s, &items, &n)) return false;
    free(o->shapes);
    o->shapes = calloc(n, sizeof *o->shapes);
    bool ok = o->shapes != NULL;
    for (size_t i = 0; i < n && ok; i++) {
        ok = opt_shape("--shape", items[i], BENCH_MAX_DIM, &o->shapes[i].m, &o->shapes[i].k);
        o->shapes[i].label = "custom";
        o->shapes[i].count = 1;
    }
    o->n_shapes = ok ? (int)n : 0;
    opt_list_free(items);
    return ok;
}

enum {
    OPT_PRESET = 256, OPT_MODEL, OPT_SHAPE, OPT_WHOLE, OPT_TYPES, OPT_N, OPT_ITERS, OPT_WARMUP,
    OPT_THREADS, OPT_STRATEGY, OPT_BACKEND, OPT_FILL, OPT_SEED, OPT_JSON, OPT_CSV, OPT_VERIFY,
    OPT_NO_VERIFY, OPT_BATCH_INVARIANT, OPT_CACHE, OPT_CACHES, OPT_GEOM, OPT_SHADER_CHECKS
};

/* --cache: a policy name or a limit (a plain decimal number >= 0, at most 1e6). */
static bool parse_cache(const char *s, bench_opts *o) {
    o->cache_limit = 0.0;
    if (strcmp(s, "default") == 0) o->cache = QMM_CACHE_DEFAULT;
    else if (strcmp(s, "none") == 0) o->cache = QMM_CACHE_NONE;
    else if (strcmp(s, "unlimited") == 0) o->cache = QMM_CACHE_UNLIMITED;
    else {
        char *end = NULL;
        errno = 0;
        const double v = strtod(s, &end);
        if (s[0] < '0' || s[0] > '9' || end == s || *end != '\0' || errno != 0 || !(v >= 0.0) || v > 1e6) {
            fprintf(stderr, "qmm bench: --cache '%s' is not default, none, unlimited or a number "
                            "0..1e6 (copies up to that many times the GGUF bytes)\n", s);
            return false;
        }
        o->cache = QMM_CACHE_LIMIT;
        o->cache_limit = v;
        snprintf(o->cache_text, sizeof o->cache_text, "limit %g", v);
        return true;
    }
    snprintf(o->cache_text, sizeof o->cache_text, "%s", s);
    return true;
}

/* 0 = run, 1 = --help printed, 2 = usage error (message printed). */
static int parse_args(int argc, char **argv, bench_opts *o) {
    static const struct option long_opts[] = {
        {"preset", required_argument, NULL, OPT_PRESET},
        {"model", required_argument, NULL, OPT_MODEL},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"whole-model", no_argument, NULL, OPT_WHOLE},
        {"types", required_argument, NULL, OPT_TYPES},
        {"n", required_argument, NULL, OPT_N},
        {"iters", required_argument, NULL, OPT_ITERS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"fill", required_argument, NULL, OPT_FILL},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", required_argument, NULL, OPT_JSON},
        {"csv", no_argument, NULL, OPT_CSV},
        {"verify", no_argument, NULL, OPT_VERIFY},
        {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
        {"batch-invariant", no_argument, NULL, OPT_BATCH_INVARIANT},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"caches", required_argument, NULL, OPT_CACHES},
        {"wg-m", required_argument, NULL, OPT_GEOM},
        {"wg-n", required_argument, NULL, OPT_GEOM},
        {"tile-k", required_argument, NULL, OPT_GEOM},
        {"tile-m", required_argument, NULL, OPT_GEOM},
        {"tile-n", required_argument, NULL, OPT_GEOM},
        {"shader-checks", no_argument, NULL, OPT_SHADER_CHECKS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->iters = BENCH_DEFAULT_ITERS;
    o->warmup = BENCH_DEFAULT_WARMUP;
    o->seed = BENCH_DEFAULT_SEED;
    o->backend = QMM_BACKEND_CPU;
    o->fill = FILL_QUANTIZED;
    o->verify = true;
    o->cache = QMM_CACHE_DEFAULT;
    snprintf(o->cache_text, sizeof o->cache_text, "default");
    bool iters_given = false, preset_given = false;

    /* Environment first (flags override), each parsed strictly whenever it is set. */
    int64_t env_iters;
    bool set;
    if (!opt_env_i64("ITERS", 1, BENCH_MAX_ITERS, &env_iters, &set)) return 2;
    if (set) o->iters = env_iters;
    const char *only = getenv("ONLY");
    if (only != NULL && !parse_types("environment variable ONLY", only, o)) return 2;
    const char *env_strategy = getenv("QMM_STRATEGY");
    if (env_strategy != NULL) {
        qmm_strategy s;
        if (qmm_strategy_from_name(env_strategy, &s) != QMM_OK) {
            fprintf(stderr, "qmm bench: environment variable QMM_STRATEGY '%s' is not a strategy "
                            "name (expected auto, ref, gemv, fused, int8, dequant_sgemm, "
                            "cached_f16, fp8 or dequant_hgemm)\n", env_strategy);
            return 2;
        }
    }

    webgpu_geometry flags;
    memset(&flags, 0, sizeof flags);
    opterr = 0;
    optind = 0; /* GNU: full re-initialization */
    int c, li = -1;
    while ((c = getopt_long(argc, argv, ":h", long_opts, &li)) != -1) {
        int64_t v;
        switch (c) {
        case OPT_GEOM:
            if (webgpu_geometry_flag(&flags, long_opts[li].name, optarg) != 1) return 2;
            break;
        case OPT_PRESET:
            o->preset = bench_preset_find(optarg);
            if (o->preset == NULL) {
                fprintf(stderr, "qmm bench: --preset: unknown preset '%s' (known:", optarg);
                for (int i = 0; bench_preset_at(i); i++)
                    fprintf(stderr, " %s", bench_preset_at(i)->name);
                fprintf(stderr, ")\n");
                return 2;
            }
            preset_given = true;
            break;
        case OPT_MODEL: o->model_path = optarg; break;
        case OPT_SHAPE: if (!parse_shapes(optarg, o)) return 2; break;
        case OPT_WHOLE: o->whole_model = true; break;
        case OPT_TYPES: if (!parse_types("--types", optarg, o)) return 2; break;
        case OPT_N:
            free(o->ns);
            o->ns = NULL;
            if (!opt_i64_list("--n", optarg, 1, BENCH_MAX_N, &o->ns, &o->n_ns)) return 2;
            break;
        case OPT_ITERS:
            if (!opt_i64("--iters", optarg, 1, BENCH_MAX_ITERS, &o->iters)) return 2;
            iters_given = true;
            break;
        case OPT_WARMUP:
            if (!opt_i64("--warmup", optarg, 0, BENCH_MAX_ITERS, &o->warmup)) return 2;
            break;
        case OPT_THREADS:
            if (!opt_i64("--threads", optarg, 1, 4096, &o->threads)) return 2;
            break;
        case OPT_STRATEGY: if (!parse_strategies(optarg, o)) return 2; break;
        case OPT_BACKEND:
            if (strcmp(optarg, "cpu") == 0) o->backend = QMM_BACKEND_CPU;
            else if (strcmp(optarg, "cuda") == 0) o->backend = QMM_BACKEND_CUDA;
            else if (strcmp(optarg, "webgpu") == 0) o->backend = QMM_BACKEND_WEBGPU;
            else {
                fprintf(stderr, "qmm bench: --backend: unknown backend '%s' (expected cpu, cuda "
                                "or webgpu)\n", optarg);
                return 2;
            }
            break;
        case OPT_FILL:
            if (!fill_kind_parse(optarg, &o->fill)) return 2;
            break;
        case OPT_SEED:
            if (!opt_i64("--seed", optarg, 0, INT64_MAX, &v)) return 2;
            o->seed = v;
            break;
        case OPT_JSON:
            /* a runtime error (exit 1), as when the write fails at the end */
            if (!opt_writable_file("--json", optarg)) return 3;
            o->json_path = optarg;
            break;
        case OPT_CSV: o->csv = true; break;
        case OPT_VERIFY: o->verify = true; break;
        case OPT_NO_VERIFY: o->verify = false; break;
        case OPT_BATCH_INVARIANT: o->batch_invariant = true; break;
        case OPT_SHADER_CHECKS: o->shader_checks = true; break;
        case OPT_CACHES:
            if (strcmp(optarg, "cold") == 0) o->hot = false;
            else if (strcmp(optarg, "hot") == 0) o->hot = true;
            else {
                fprintf(stderr, "qmm bench: --caches: unknown state '%s' (expected cold or hot)\n",
                        optarg);
                return 2;
            }
            break;
        case OPT_CACHE: if (!parse_cache(optarg, o)) return 2; break;
        case 'h': usage(stdout); return 1;
        case ':':
            fprintf(stderr, "qmm bench: option '%s' needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "qmm bench: unknown option '%s' (see qmm bench --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    (void)iters_given;
    /* The WebGPU geometry: the environment, then the flags; only for --backend webgpu. */
    if (o->shader_checks && o->backend != QMM_BACKEND_WEBGPU) {
        fprintf(stderr, "qmm bench: --shader-checks applies to --backend webgpu only\n");
        return 2;
    }
    if (flags.from_flags && o->backend != QMM_BACKEND_WEBGPU) {
        fprintf(stderr, "qmm bench: --wg-m/--wg-n/--tile-k/--tile-m/--tile-n apply to --backend "
                        "webgpu only\n");
        return 2;
    }
    if (o->backend == QMM_BACKEND_WEBGPU) {
        if (!webgpu_geometry_env(&o->geom)) return 2;
        if (flags.wg_m) o->geom.wg_m = flags.wg_m;
        if (flags.wg_n) o->geom.wg_n = flags.wg_n;
        if (flags.tile_k) o->geom.tile_k = flags.tile_k;
        if (flags.tile_m) o->geom.tile_m = flags.tile_m;
        if (flags.tile_n) o->geom.tile_n = flags.tile_n;
        o->geom.from_flags = flags.from_flags;
        if (!webgpu_geometry_check_tiles(&o->geom)) return 2;
    }
    if (optind < argc) {
        fprintf(stderr, "qmm bench: unexpected argument '%s' (see qmm bench --help)\n",
                argv[optind]);
        return 2;
    }
    int sources = (preset_given ? 1 : 0) + (o->model_path ? 1 : 0) + (o->n_shapes ? 1 : 0);
    if (sources > 1) {
        fprintf(stderr, "qmm bench: --preset, --shape and --model exclude each other\n");
        return 2;
    }
    if (o->whole_model && (o->model_path || o->n_shapes)) {
        fprintf(stderr, "qmm bench: --whole-model applies to a preset, not to --%s\n",
                o->model_path ? "model" : "shape");
        return 2;
    }
    if (!o->model_path && !o->n_shapes && o->preset == NULL) o->preset = bench_preset_default();
    if (o->ns == NULL) {
        o->ns = malloc(sizeof *o->ns);
        if (o->ns == NULL) return 2;
        o->ns[0] = BENCH_DEFAULT_N;
        o->n_ns = 1;
    }
    if (!o->strategies_given) {
        o->strategies[0] = QMM_STRATEGY_AUTO;
        o->n_strategies = 1;
    }
    if (!o->types_given && !o->model_path) {
        for (int t = 0; t < QMM_TYPE_COUNT; t++)
            if (qmm_type_is_supported(t) && qmm_type_is_weight((qmm_type)t))
                o->types[o->n_types++] = (qmm_type)t;
    }
    /* Every shape must hold whole blocks of every type (presets and custom shapes). */
    const bench_shape *shapes = o->n_shapes ? o->shapes : o->preset ? o->preset->shapes : NULL;
    int n_shapes = o->n_shapes ? o->n_shapes : o->preset ? o->preset->n_shapes : 0;
    for (int i = 0; i < n_shapes; i++) {
        for (int t = 0; t < o->n_types; t++) {
            int64_t bs = qmm_type_block_size(o->types[t]);
            if (shapes[i].k % bs != 0) {
                fprintf(stderr, "qmm bench: --shape %lldx%lld: k=%lld is not a multiple of the "
                                "block size %lld of %s\n", (long long)shapes[i].m,
                        (long long)shapes[i].k, (long long)shapes[i].k, (long long)bs,
                        qmm_type_name(o->types[t]));
                return 2;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * The run: context, report, cache flushing, progress, totals
 * ------------------------------------------------------------------------------------- */

typedef struct bench_total {
    double ms, flops, bytes, max_nmse, max_rel;
    double latency_ms;      /* sum of count x latency (CUDA, WebGPU); n_latency rows had one */
    int n_latency;
    qmm_weights_memory_info resident; /* sum of count x each row's resident bytes */
    int n_resident;
    int64_t count;
    int n_fail, n_skip, n_unverified, n_rows;
    char strategy[24];
    char kernel[40];
} bench_total;

typedef struct bench_run {
    const bench_opts *o;
    qmm_context *ctx;
    report *rep;
    int threads;            /* OpenMP threads for the reference and the flush */
    void *stream;           /* CPU: buffer read between timed calls to evict the caches */
    size_t stream_bytes;
    bool any_fail;
    bool runtime_error;
    int n_status[4];        /* rows emitted per row_status (pass, fail, skip, unverified) */
    bench_total *totals;    /* [n_ns][n_strategies], for whole-model and model totals */
    bool have_gpu;          /* CUDA: gpu describes the device (roofline per row) */
    qmm_device_info gpu;
    /* progress */
    bool tty, progress_shown;
    double t_start;
    int done, total_work;
} bench_run;

static void progress_clear(bench_run *r) {
    if (r->progress_shown) {
        fputs("\r\033[K", stderr);
        r->progress_shown = false;
    }
}

static void progress(bench_run *r, const char *type, const char *label, int64_t n,
                     const char *strategy) {
    if (!r->tty || sysinfo_now() - r->t_start < 1.0) return;
    fprintf(stderr, "\r\033[K[%d/%d %.0fs] %s %s n=%lld %s", r->done + 1, r->total_work,
            sysinfo_now() - r->t_start, type, label, (long long)n, strategy);
    fflush(stderr);
    r->progress_shown = true;
}

static void emit(bench_run *r, const bench_row *row) {
    progress_clear(r);
    report_row(r->rep, row);
    if (row->status == ROW_FAIL) r->any_fail = true;
    if ((unsigned)row->status < 4) r->n_status[row->status]++;
}

static uint64_t seed_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    fill_rng rng;
    fill_rng_seed(&rng, seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^
                            (c * 0x165667B19E3779F9ull));
    return fill_rng_next(&rng);
}

static double median(double *v, int64_t n) {
    for (int64_t i = 1; i < n; i++) { /* insertion sort: n is small */
        double x = v[i];
        int64_t j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One weight matrix to bench. */
typedef struct bench_matrix {
    const char *label;
    qmm_type type;
    int64_t m, k, count;
    const void *w;      /* m packed rows on the host */
    int index;          /* for seeding X: shape index */
} bench_matrix;

static void row_init(bench_row *row, const bench_matrix *bm, int64_t n) {
    memset(row, 0, sizeof *row);
    snprintf(row->type, sizeof row->type, "%s", qmm_type_name(bm->type));
    snprintf(row->label, sizeof row->label, "%s", bm->label);
    row->m = bm->m;
    row->k = bm->k;
    row->n = n;
    row->count = bm->count;
    row->roof_pct = -1.0;
    row->latency_ms = -1.0;
    snprintf(row->strategy, sizeof row->strategy, "-");
    row->nmse = -1; /* no comparison made */
}

static void row_fail(bench_row *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void row_fail(bench_row *row, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->note, sizeof row->note, fmt, ap);
    va_end(ap);
    row->status = ROW_FAIL;
}

/* The strategy to set on the context for a requested one: AUTO takes QMM_STRATEGY. */
static qmm_strategy effective_strategy(qmm_strategy s) {
    const char *env = getenv("QMM_STRATEGY");
    qmm_strategy e;
    if (s == QMM_STRATEGY_AUTO && env != NULL && qmm_strategy_from_name(env, &e) == QMM_OK)
        return e;
    return s;
}

/* How many W/X/Y copies to rotate through for a working set of `ws` bytes per call. */
static int copies_for(const bench_run *r, size_t ws) {
    const int64_t calls = r->o->warmup + r->o->iters;
    if (r->o->hot) return 1; /* --caches hot: one copy, warmed by the warmup calls */
    int64_t want = calls; /* CPU: each call on its own copy, caches flushed before the first */
    if (r->o->backend == QMM_BACKEND_CUDA || r->o->backend == QMM_BACKEND_WEBGPU) {
        int64_t cover = (int64_t)((BENCH_GPU_ROTATE_BYTES + ws - 1) / ws);
        want = cover > calls ? cover : calls;
    }
    int64_t budget = (int64_t)(BENCH_ROTATE_BUDGET / (ws ? ws : 1));
    if (want > budget) want = budget;
    if (want > BENCH_MAX_COPIES) want = BENCH_MAX_COPIES;
    return want < 1 ? 1 : (int)want;
}

/* Device time of back-to-back calls (CUDA): `calls` calls over the copies recorded in a graph,
 * replayed max(warmup, 1) times untimed, then `iters` times timed; *ms = the median replay /
 * calls. The capture is always ended. On failure `err` gets the library's sentence. */
static qmm_status time_graph(bench_run *r, const bench_matrix *bm, int64_t n, qmm_weights **w,
                             float **x, float **y, int copies, int calls, double *ms, char *err,
                             size_t err_size) {
    const bench_opts *o = r->o;
    qmm_context *ctx = r->ctx;
    qmm_status st = qmm_graph_begin(ctx);
    for (int i = 0; i < calls && st == QMM_OK; i++)
        st = qmm_matmul(ctx, w[i % copies], n, x[i % copies], bm->k, y[i % copies], bm->m);
    if (st != QMM_OK) {
        snprintf(err, err_size, "%s", qmm_last_error());
        qmm_graph_end(ctx); /* the error above is the one to report */
        return st;
    }
    st = qmm_graph_end(ctx);
    double *t = st == QMM_OK ? malloc((size_t)o->iters * sizeof *t) : NULL;
    if (st == QMM_OK && t == NULL) {
        snprintf(err, err_size, "out of memory");
        return QMM_ERR_OUT_OF_MEMORY;
    }
    const int64_t warm = o->warmup > 0 ? o->warmup : 1;
    double one = 0.0;
    for (int64_t i = 0; i < warm && st == QMM_OK; i++) st = qmm_graph_replay(ctx, 1, &one);
    for (int64_t i = 0; i < o->iters && st == QMM_OK; i++) {
        st = qmm_graph_replay(ctx, 1, &one);
        t[i] = one / (double)calls;
    }
    if (st == QMM_OK) *ms = median(t, o->iters);
    else snprintf(err, err_size, "%s", qmm_last_error());
    free(t);
    return st;
}

/* The calls recorded in one graph: a multiple of the copies, at least BENCH_GRAPH_MIN_CALLS. */
static int graph_calls_for(int copies) {
    return copies * ((BENCH_GRAPH_MIN_CALLS + copies - 1) / copies);
}

/* WebGPU: one call on copy c, for gpu_regions_time. */
typedef struct webgpu_call_arg {
    qmm_context *ctx;
    const bench_matrix *bm;
    int64_t n;
    qmm_weights **w;
    float **x, **y;
} webgpu_call_arg;

static qmm_status webgpu_call(void *arg, int c) {
    const webgpu_call_arg *a = arg;
    return qmm_matmul(a->ctx, a->w[c], a->n, a->x[c], a->bm->k, a->y[c], a->bm->m);
}

/* Time and verify one strategy on prepared copies; fills row (status, speeds, diff). */
static void time_strategy(bench_run *r, const bench_matrix *bm, int64_t n, qmm_strategy want,
                          qmm_weights **w, float **x, float **y, int copies,
                          const float *y_ref, float *y_host, bench_row *row) {
    const bench_opts *o = r->o;
    qmm_context *ctx = r->ctx;
    const bool cuda = o->backend == QMM_BACKEND_CUDA;
    const size_t y_bytes = (size_t)n * (size_t)bm->m * sizeof(float);
    snprintf(row->strategy, sizeof row->strategy, "%s", qmm_strategy_name(want));
    snprintf(row->requested, sizeof row->requested, "%s", qmm_strategy_name(want));
    qmm_status st = qmm_context_set_strategy(ctx, effective_strategy(want));
    qmm_path path;
    if (st == QMM_OK) st = qmm_matmul_path(ctx, w[0], n, &path);
    if (st == QMM_ERR_UNSUPPORTED) {
        row->status = ROW_SKIP;
        snprintf(row->note, sizeof row->note, "skipped: %s", qmm_last_error());
        return;
    }
    if (st != QMM_OK) {
        row_fail(row, "%s: %s", qmm_status_str(st), qmm_last_error());
        return;
    }
    /* One untimed call per weights copy first: a backend may build a cached layout of the
     * weights on their first matmul (the CPU's AMX tiles, the CUDA copies of qmm_cache_policy),
     * a one-time cost per matrix that is not what a row measures. Done before the poisoning
     * below. */
    for (int c = 0; c < copies && st == QMM_OK; c++)
        st = qmm_matmul(ctx, w[c], n, x[c], bm->k, y[c], bm->m);
    if (st == QMM_OK) st = qmm_context_synchronize(ctx);
    if (st != QMM_OK) {
        row_fail(row, "qmm_matmul (first call): %s: %s", qmm_status_str(st), qmm_last_error());
        return;
    }
    /* The path after the first calls (auto may have taken its next choice, e.g. when a copy
     * did not fit in device memory). */
    st = qmm_matmul_path(ctx, w[0], n, &path);
    if (st != QMM_OK) {
        row_fail(row, "qmm_matmul_path: %s: %s", qmm_status_str(st), qmm_last_error());
        return;
    }
    snprintf(row->strategy, sizeof row->strategy, "%s", qmm_strategy_name(path.strategy));
    snprintf(row->kernel, sizeof row->kernel, "%s", path.kernel);
    /* Poison every output copy: an output the matmul did not write fails verification. */
    for (size_t i = 0; i < (size_t)n * (size_t)bm->m; i++) y_host[i] = NAN;
    for (int c = 0; c < copies && st == QMM_OK; c++)
        st = qmm_buffer_upload(ctx, y[c], y_host, y_bytes);
    if (st != QMM_OK) {
        row_fail(row, "poisoning Y: %s", qmm_last_error());
        return;
    }
    if (r->stream && !o->hot) { /* evict W, X, Y copies from the CPU caches (untimed) */
        volatile unsigned long long sink = sysinfo_stream_read(r->stream, r->stream_bytes, r->threads);
        (void)sink;
    }
    double *ms = malloc((size_t)o->iters * sizeof *ms);
    if (ms == NULL) {
        row_fail(row, "out of memory");
        return;
    }
    const int64_t calls = o->warmup + o->iters;
    int last = 0;
    for (int64_t call = 0; call < calls && st == QMM_OK; call++) {
        const int c = (int)(call % copies);
        last = c;
        if (call < o->warmup) {
            st = qmm_matmul(ctx, w[c], n, x[c], bm->k, y[c], bm->m);
            if (st == QMM_OK) st = qmm_context_synchronize(ctx);
            continue;
        }
        st = qmm_timer_begin(ctx);
        if (st != QMM_OK) break; /* its message stands (no end without a begin) */
        st = qmm_matmul(ctx, w[c], n, x[c], bm->k, y[c], bm->m);
        double t = 0;
        qmm_status st2 = qmm_timer_end(ctx, &t); /* ends the region even after a failed call */
        if (st == QMM_OK) st = st2;
        ms[call - o->warmup] = t;
    }
    if (st != QMM_OK) {
        row_fail(row, "qmm_matmul: %s: %s", qmm_status_str(st), qmm_last_error());
        free(ms);
        return;
    }
    const double single = median(ms, o->iters);
    free(ms);
    row->ms = single;
    row->latency_ms = -1.0;
    if (cuda) { /* the main figure: device time of back-to-back calls */
        const int gcalls = graph_calls_for(copies);
        char err[512] = "";
        double dev = 0.0;
        st = time_graph(r, bm, n, w, x, y, copies, gcalls, &dev, err, sizeof err);
        if (st != QMM_OK) {
            row_fail(row, "graph of %d calls: %s: %s", gcalls, qmm_status_str(st), err);
            return;
        }
        row->ms = dev;
        row->latency_ms = single;
        row->graph_calls = gcalls;
        last = (gcalls - 1) % copies;
    } else if (o->backend == QMM_BACKEND_WEBGPU) { /* the main figure: back-to-back regions */
        ms = malloc((size_t)o->iters * sizeof *ms);
        if (ms == NULL) {
            row_fail(row, "out of memory");
            return;
        }
        webgpu_call_arg a = {ctx, bm, n, w, x, y};
        gpu_regions_info gi;
        st = gpu_regions_time(ctx, webgpu_call, &a, copies, o->warmup, o->iters, ms, &gi);
        if (st != QMM_OK) {
            row_fail(row, "back-to-back calls: %s: %s", qmm_status_str(st), qmm_last_error());
            free(ms);
            return;
        }
        row->ms = median(ms, o->iters);
        free(ms);
        row->latency_ms = single;
        row->graph_calls = gi.calls;
        last = gi.last;
        if (!gi.settled) {
            char why[160];
            gpu_regions_unsettled(why, sizeof why, &gi);
            report_note(r->rep, "warning: %s %lldx%lld n=%lld %s: %s", qmm_type_name(bm->type),
                        (long long)bm->m, (long long)bm->k, (long long)n, row->strategy, why);
        }
    }
    st = qmm_buffer_download(ctx, y_host, y[last], y_bytes);
    if (st != QMM_OK) {
        row_fail(row, "reading Y: %s", qmm_last_error());
        return;
    }
    qmm_weights_memory_info mem;
    if (qmm_weights_memory(w[0], &mem) == QMM_OK) {
        row->resident = mem;
        row->has_resident = true;
    }
    const double flops = 2.0 * (double)bm->m * (double)bm->k * (double)n;
    size_t w_bytes = 0;
    qmm_row_bytes(bm->type, bm->k, &w_bytes);
    const double bytes = (double)w_bytes * (double)bm->m + 4.0 * (double)n * (double)(bm->k + bm->m);
    row->gflops = row->ms > 0 ? flops / (row->ms * 1e6) : INFINITY;
    row->gbps = row->ms > 0 ? bytes / (row->ms * 1e6) : INFINITY;
    row->roof_pct = -1.0;
    if (r->have_gpu && r->gpu.copy_gbps > 0 && row->ms > 0) {
        /* Roofline time: the bytes at the measured copy bandwidth, or the FLOPs at the
         * class's dense peak (memory roof only when the architecture's peak is unknown). */
        const double peak = (unsigned)path.precision < sizeof r->gpu.peak_tflops / sizeof r->gpu.peak_tflops[0]
                                ? r->gpu.peak_tflops[path.precision] : 0.0;
        double t_roof = bytes / (r->gpu.copy_gbps * 1e9);
        if (peak > 0 && flops / (peak * 1e12) > t_roof) t_roof = flops / (peak * 1e12);
        row->roof_pct = 100.0 * t_roof / (row->ms * 1e-3);
    }
    if (!o->verify) {
        bool nz;
        row->y_sum = verify_float_sum(y_host, (size_t)n * (size_t)bm->m, &nz);
        row->status = ROW_UNVERIFIED;
        return;
    }
    qmm_diff d;
    st = qmm_compare(n, bm->m, y_host, bm->m, y_ref, bm->m, &d);
    if (st != QMM_OK) {
        row_fail(row, "qmm_compare: %s", qmm_last_error());
        return;
    }
    /* Each kernel is held to the limits of its precision class (qmm_matmul_path). */
    verify_limits lim = {path.max_nmse, path.max_rel_err};
    row->nmse = d.nmse;
    row->max_rel_err = d.max_rel_err;
    row->max_abs_err = d.max_abs_err;
    row->n_nonfinite = d.n_nonfinite;
    row->y_sum = d.checksum_out;
    if (qmm_diff_ok(&d, lim.max_nmse, lim.max_rel)) {
        row->status = ROW_PASS;
    } else {
        row_fail(row, "vs reference: nmse %.3g (limit %.0e), max_rel %.3g (limit %.0e), "
                      "%lld non-finite, worst at row %lld col %lld",
                 d.nmse, lim.max_nmse, d.max_rel_err, lim.max_rel, (long long)d.n_nonfinite,
                 (long long)d.worst_row, (long long)d.worst_col);
    }
}

static void total_add(bench_total *t, const bench_row *row) {
    t->n_rows++;
    t->count += row->count;
    if (!t->kernel[0]) snprintf(t->kernel, sizeof t->kernel, "%s", row->kernel);
    else if (strcmp(t->kernel, row->kernel) != 0) snprintf(t->kernel, sizeof t->kernel, "mixed");
    if (!t->strategy[0]) snprintf(t->strategy, sizeof t->strategy, "%s", row->strategy);
    else if (strcmp(t->strategy, row->strategy) != 0)
        snprintf(t->strategy, sizeof t->strategy, "mixed");
    if (row->status == ROW_FAIL) t->n_fail++;
    if (row->status == ROW_SKIP) t->n_skip++;
    if (row->status == ROW_UNVERIFIED) t->n_unverified++;
    if (row->status != ROW_PASS && row->status != ROW_UNVERIFIED) return;
    const double c = (double)row->count;
    t->ms += c * row->ms;
    if (row->latency_ms >= 0) {
        t->latency_ms += c * row->latency_ms;
        t->n_latency++;
    }
    if (row->has_resident) {
        const size_t cc = (size_t)row->count;
        t->resident.backend = row->resident.backend;
        t->resident.gguf_bytes += cc * row->resident.gguf_bytes;
        t->resident.repacked_bytes += cc * row->resident.repacked_bytes;
        t->resident.f16_bytes += cc * row->resident.f16_bytes;
        t->resident.fp8_bytes += cc * row->resident.fp8_bytes;
        t->resident.int8_bytes += cc * row->resident.int8_bytes;
        t->resident.bf16_bytes += cc * row->resident.bf16_bytes;
        t->resident.total_bytes += cc * row->resident.total_bytes;
        t->n_resident++;
    }
    t->flops += c * 2.0 * (double)row->m * (double)row->k * (double)row->n;
    t->bytes += c * row->ms * row->gbps * 1e6;
    if (row->status == ROW_PASS) {
        if (row->nmse > t->max_nmse) t->max_nmse = row->nmse;
        if (row->max_rel_err > t->max_rel) t->max_rel = row->max_rel_err;
    }
}

static void total_emit(bench_run *r, bench_total *t, const char *type, const char *label,
                       int64_t n) {
    bench_row row;
    memset(&row, 0, sizeof row);
    snprintf(row.type, sizeof row.type, "%s", type);
    snprintf(row.label, sizeof row.label, "%s", label);
    snprintf(row.strategy, sizeof row.strategy, "%s", t->strategy[0] ? t->strategy : "-");
    snprintf(row.kernel, sizeof row.kernel, "%s", t->kernel[0] ? t->kernel : "-");
    row.n = n;
    row.count = t->count;
    row.is_total = true;
    row.roof_pct = -1.0;
    row.latency_ms = -1.0;
    row.nmse = -1;
    if (t->n_fail > 0 || t->n_skip > 0) {
        row.status = t->n_fail > 0 ? ROW_FAIL : ROW_SKIP;
        snprintf(row.note, sizeof row.note, "no total: %d of %d rows %s", t->n_fail + t->n_skip,
                 t->n_rows, t->n_fail > 0 ? "failed or were skipped" : "were skipped");
    } else {
        row.status = t->n_unverified > 0 ? ROW_UNVERIFIED : ROW_PASS;
        row.ms = t->ms;
        if (t->n_latency == t->n_rows) row.latency_ms = t->latency_ms;
        if (t->n_resident == t->n_rows) {
            row.resident = t->resident;
            row.has_resident = true;
        }
        row.gflops = t->ms > 0 ? t->flops / (t->ms * 1e6) : INFINITY;
        row.gbps = t->ms > 0 ? t->bytes / (t->ms * 1e6) : INFINITY;
        if (row.status == ROW_PASS) {
            row.nmse = t->max_nmse;
            row.max_rel_err = t->max_rel;
            snprintf(row.note, sizeof row.note, "sum of count x median ms%s; nmse/max_rel: worst row",
                     t->n_latency > 0 ? " (device time; latency_ms: sum of count x latency)" : "");
        }
    }
    /* a total of failed rows is not itself a new failure */
    progress_clear(r);
    report_row(r->rep, &row);
    memset(t, 0, sizeof *t);
}

/* A failure that stands for every n and strategy of a matrix: one row, counted in every
 * total it belongs to (so a whole-model or model total is never silently partial). */
static void fail_matrix(bench_run *r, bench_row *row) {
    const bench_opts *o = r->o;
    emit(r, row);
    for (size_t ni = 0; ni < o->n_ns; ni++)
        for (int si = 0; si < o->n_strategies; si++) {
            if (r->totals) total_add(&r->totals[ni * (size_t)o->n_strategies + (size_t)si], row);
            r->done++;
        }
}

/* Create weights objects w[*n_w .. copies-1] from bm's host bytes (*n_w counts those made). */
static qmm_status weights_make(qmm_context *ctx, const bench_matrix *bm, size_t row_bytes,
                               qmm_weights **w, int *n_w, int copies) {
    qmm_status st = QMM_OK;
    for (; *n_w < copies && st == QMM_OK; (*n_w)++) {
        st = qmm_weights_create(ctx, bm->type, bm->m, bm->k, bm->w, row_bytes, &w[*n_w]);
        if (st != QMM_OK) break;
    }
    return st;
}

/* True if the weights hold copies made after creation (qmm_weights_memory). */
static bool weights_have_copies(const qmm_weights *w) {
    qmm_weights_memory_info m;
    return w != NULL && qmm_weights_memory(w, &m) == QMM_OK &&
           m.total_bytes > m.gguf_bytes + m.repacked_bytes;
}

/* Bench one weight matrix for every n and strategy; rows go to the report. */
static void bench_matrix_run(bench_run *r, const bench_matrix *bm) {
    const bench_opts *o = r->o;
    qmm_context *ctx = r->ctx;
    size_t row_bytes = 0;
    qmm_status st = qmm_row_bytes(bm->type, bm->k, &row_bytes);
    bench_row row;
    row_init(&row, bm, o->ns[0]);
    if (st != QMM_OK) {
        row_fail(&row, "%s", qmm_last_error());
        fail_matrix(r, &row);
        return;
    }
    const size_t w_bytes = row_bytes * (size_t)bm->m;
    double w_sum = 0.0;
    bool w_nonzero = false;
    st = verify_weight_sum(bm->type, bm->m, bm->k, bm->w, row_bytes, &w_sum, &w_nonzero);
    if (st != QMM_OK || !w_nonzero) {
        row_fail(&row, st != QMM_OK ? "dequantizing W: %s" : "%srefusing all-zero weights",
                 st != QMM_OK ? qmm_last_error() : "");
        fail_matrix(r, &row);
        return;
    }
    qmm_weights *w[BENCH_MAX_COPIES] = {0};
    int n_w = 0;
    for (size_t ni = 0; ni < o->n_ns; ni++) {
        const int64_t n = o->ns[ni];
        const size_t x_bytes = (size_t)n * (size_t)bm->k * sizeof(float);
        const size_t y_bytes = (size_t)n * (size_t)bm->m * sizeof(float);
        float *x_host = malloc(x_bytes), *y_host = malloc(y_bytes);
        float *y_ref = o->verify ? malloc(y_bytes) : NULL;
        float *x[BENCH_MAX_COPIES] = {0}, *y[BENCH_MAX_COPIES] = {0};
        const int copies = copies_for(r, w_bytes + x_bytes + y_bytes);
        row_init(&row, bm, n);
        if (x_host == NULL || y_host == NULL || (o->verify && y_ref == NULL)) {
            row_fail(&row, "out of memory for n=%lld", (long long)n);
            goto next_n;
        }
        fill_rng rng;
        fill_rng_seed(&rng, seed_mix((uint64_t)o->seed, 2, (uint64_t)bm->k, (uint64_t)n));
        fill_normal(&rng, x_host, (size_t)n * (size_t)bm->k);
        bool x_nonzero;
        const double x_sum = verify_float_sum(x_host, (size_t)n * (size_t)bm->k, &x_nonzero);
        if (!x_nonzero) {
            row_fail(&row, "refusing all-zero activations");
            goto next_n;
        }
        progress(r, qmm_type_name(bm->type), bm->label, n, "(reference)");
        if (o->verify) {
            char err[512] = "";
            st = verify_reference(bm->type, bm->m, bm->k, bm->w, row_bytes, n, x_host, y_ref,
                                  r->threads, err, sizeof err);
            if (st != QMM_OK) {
                row_fail(&row, "qmm_matmul_ref: %s: %s", qmm_status_str(st), err);
                goto next_n;
            }
        }
        st = weights_make(ctx, bm, row_bytes, w, &n_w, copies);
        for (int c = 0; c < copies && st == QMM_OK; c++) {
            st = qmm_buffer_alloc(ctx, x_bytes, (void **)&x[c]);
            if (st == QMM_OK) st = qmm_buffer_alloc(ctx, y_bytes, (void **)&y[c]);
            if (st == QMM_OK) st = qmm_buffer_upload(ctx, x[c], x_host, x_bytes);
        }
        if (st == QMM_ERR_UNSUPPORTED) {
            row.status = ROW_SKIP;
            snprintf(row.note, sizeof row.note, "skipped: %s", qmm_last_error());
            goto next_n;
        }
        if (st != QMM_OK) {
            row_fail(&row, "preparing %d copies: %s: %s", copies, qmm_status_str(st),
                     qmm_last_error());
            goto next_n;
        }
        for (int si = 0; si < o->n_strategies; si++) {
            progress(r, qmm_type_name(bm->type), bm->label, n,
                     qmm_strategy_name(o->strategies[si]));
            row_init(&row, bm, n);
            row.x_sum = x_sum;
            row.w_sum = w_sum;
            row.copies = copies;
            /* w[0], whose memory the row reports, is made anew when an earlier row left copies
             * in it: a row shows what its own path holds (the other copies keep theirs) */
            st = QMM_OK;
            if (w[0] == NULL || weights_have_copies(w[0])) {
                qmm_weights_free(w[0]);
                w[0] = NULL;
                st = qmm_weights_create(ctx, bm->type, bm->m, bm->k, bm->w, row_bytes, &w[0]);
            }
            if (st != QMM_OK)
                row_fail(&row, "making the weights again: %s: %s", qmm_status_str(st), qmm_last_error());
            else
                time_strategy(r, bm, n, o->strategies[si], w, x, y, copies, y_ref, y_host, &row);
            emit(r, &row);
            if (r->totals) total_add(&r->totals[ni * (size_t)o->n_strategies + (size_t)si], &row);
            r->done++;
        }
        row.status = ROW_PASS; /* all rows of this n were emitted above */
        row.note[0] = '\0';
    next_n:
        if (row.status == ROW_FAIL || row.status == ROW_SKIP) {
            /* a failure before the strategy loop stands for every strategy of this n */
            emit(r, &row);
            for (int si = 0; si < o->n_strategies; si++) {
                if (r->totals) total_add(&r->totals[ni * (size_t)o->n_strategies + (size_t)si], &row);
                r->done++;
            }
        }
        for (int c = 0; c < copies; c++) {
            qmm_buffer_free(ctx, x[c]);
            qmm_buffer_free(ctx, y[c]);
        }
        free(x_host);
        free(y_host);
        free(y_ref);
    }
    for (int i = 0; i < n_w; i++) qmm_weights_free(w[i]);
}

/* ---------------------------------------------------------------------------------------
 * Sources: preset / custom shapes, or a GGUF model
 * ------------------------------------------------------------------------------------- */

static void run_shapes(bench_run *r, const bench_shape *shapes, int n_shapes) {
    const bench_opts *o = r->o;
    for (int t = 0; t < o->n_types; t++) {
        const qmm_type type = o->types[t];
        for (int s = 0; s < n_shapes; s++) {
            const bench_shape *sh = &shapes[s];
            size_t row_bytes;
            if (qmm_row_bytes(type, sh->k, &row_bytes) != QMM_OK) continue; /* checked earlier */
            void *w = malloc(row_bytes * (size_t)sh->m);
            bench_matrix bm = {.label = sh->label, .type = type, .m = sh->m, .k = sh->k,
                               .count = o->whole_model ? sh->count : 1, .w = w, .index = s};
            if (w == NULL) {
                bench_row row;
                row_init(&row, &bm, o->ns[0]);
                row_fail(&row, "out of memory for %zu bytes of weights", row_bytes * (size_t)sh->m);
                fail_matrix(r, &row);
                continue;
            }
            fill_rng rng;
            fill_rng_seed(&rng, seed_mix((uint64_t)o->seed, 1, (uint64_t)type, (uint64_t)s));
            qmm_status st = fill_weights(&rng, o->fill, type, sh->m, sh->k, w);
            if (st != QMM_OK) {
                bench_row row;
                row_init(&row, &bm, o->ns[0]);
                row_fail(&row, "making %s weights: %s: %s", o->fill == FILL_BYTES ? "byte" : "quantized",
                         qmm_status_str(st), o->fill == FILL_BYTES ? "" : qmm_last_error());
                fail_matrix(r, &row);
            } else {
                bench_matrix_run(r, &bm);
            }
            free(w);
        }
        if (o->whole_model) {
            char label[96];
            for (size_t ni = 0; ni < o->n_ns; ni++)
                for (int si = 0; si < o->n_strategies; si++) {
                    snprintf(label, sizeof label, "whole-model total");
                    total_emit(r, &r->totals[ni * (size_t)o->n_strategies + (size_t)si],
                               qmm_type_name(type), label, o->ns[ni]);
                }
        }
    }
}

static int run_model(bench_run *r) {
    const bench_opts *o = r->o;
    model_file mf;
    qmm_status st = model_open(o->model_path, &mf);
    if (st != QMM_OK) {
        fprintf(stderr, "qmm bench: --model '%s': %s: %s\n", o->model_path, qmm_status_str(st),
                qmm_last_error());
        return 1;
    }
    report_note(r->rep, "model %s: %lld tensors, %d (type, shape) groups of 2-D weights; "
                        "%lld tensors skipped (not 2-D or not a weight type); every weight "
                        "tensor timed and verified with its own bytes, rows grouped by "
                        "(type, shape)",
                o->model_path, (long long)mf.n_tensors, mf.n_groups, (long long)mf.n_not_matrix);
    int used = 0;
    for (int i = 0; i < mf.n_groups; i++) {
        const model_group *g = &mf.groups[i];
        bool want = !o->types_given;
        for (int t = 0; t < o->n_types && !want; t++) want = o->types[t] == g->type;
        if (!want) continue;
        for (int64_t ti = 0; ti < mf.n_tensors; ti++) {
            qmm_gguf_tensor t;
            if (qmm_gguf_get_tensor(mf.g, ti, &t) != QMM_OK || t.n_dims != 2 ||
                t.type != g->type || t.ne[1] != g->m || t.ne[0] != g->k)
                continue;
            used++;
            bench_matrix bm = {.label = t.name, .type = g->type, .m = g->m, .k = g->k,
                               .count = 1, .w = t.data, .index = i};
            bench_matrix_run(r, &bm);
        }
    }
    if (used == 0) {
        fprintf(stderr, "qmm bench: --model '%s': no weight matrix of the requested types\n",
                o->model_path);
        model_close(&mf);
        return 1;
    }
    for (size_t ni = 0; ni < o->n_ns && used > 0; ni++)
        for (int si = 0; si < o->n_strategies; si++)
            total_emit(r, &r->totals[ni * (size_t)o->n_strategies + (size_t)si], "all",
                       "model total", o->ns[ni]);
    model_close(&mf);
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * The command
 * ------------------------------------------------------------------------------------- */

static char *join_args(int argc, char **argv) {
    size_t len = 4;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 3;
    char *s = malloc(len), *p = s;
    if (s == NULL) return NULL;
    p += sprintf(p, "qmm");
    for (int i = 0; i < argc; i++) p += sprintf(p, " %s", argv[i]);
    return s;
}

int qmm_cmd_bench(int argc, char **argv) {
    if (candidate_requested(argc, argv)) return qmm_cmd_bench_candidate(argc, argv);
    bench_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 0) {
        free(o.ns);
        free(o.shapes);
        return pr == 1 ? 0 : pr == 3 ? 1 : 2; /* 1: --help; 3: runtime error; else usage */
    }
    if (o.model_path) { /* before the header and the bandwidth measurement */
        struct stat st;
        const char *why = NULL;
        if (stat(o.model_path, &st) != 0) {
            why = strerror(errno);
        } else if (!S_ISREG(st.st_mode)) {
            why = "not a regular file";
        } else {
            FILE *mf = fopen(o.model_path, "rb");
            if (mf == NULL) why = strerror(errno);
            else fclose(mf);
        }
        if (why != NULL) {
            fprintf(stderr, "qmm bench: --model '%s': cannot open: %s\n", o.model_path, why);
            free(o.ns);
            free(o.shapes);
            return 1;
        }
    }
    int rc = 0;
    bench_run r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.t_start = sysinfo_now();
    r.tty = isatty(2);
    char *cmdline = join_args(argc, argv);

    if (o.backend == QMM_BACKEND_CUDA && !qmm_backend_available(QMM_BACKEND_CUDA)) {
        fprintf(stderr, "qmm bench: --backend cuda: not available (this build has no CUDA "
                        "backend or no GPU was found)\n");
        rc = 1;
        goto out;
    }
    if (o.backend == QMM_BACKEND_WEBGPU && qmm_backend_check(QMM_BACKEND_WEBGPU) != QMM_OK) {
        fprintf(stderr, "qmm bench: --backend webgpu: not available: %s\n", qmm_last_error());
        rc = 1;
        goto out;
    }
    qmm_context_params p = qmm_context_default_params();
    p.backend = o.backend;
    p.n_threads = (int)o.threads;
    if (o.batch_invariant) p.flags |= QMM_FLAG_BATCH_INVARIANT;
    p.webgpu_shader_checks = o.shader_checks;
    p.cache = o.cache;
    p.cache_limit = o.cache_limit;
    qmm_status st = qmm_context_create(&p, &r.ctx);
    if (st != QMM_OK) {
        fprintf(stderr, "qmm bench: cannot create a %s context: %s: %s\n",
                qmm_backend_name(o.backend), qmm_status_str(st), qmm_last_error());
        rc = 1;
        goto out;
    }
    if (o.backend == QMM_BACKEND_WEBGPU && !webgpu_geometry_apply(r.ctx, &o.geom)) {
        rc = 2; /* a geometry this kernel or adapter cannot run: usage, before anything runs */
        goto out;
    }
    const qmm_context_params got = qmm_context_get_params(r.ctx);
    r.threads = o.backend == QMM_BACKEND_CPU && got.n_threads > 0 ? got.n_threads
                : o.threads > 0 ? (int)o.threads : omp_get_num_procs();

    /* Memory bandwidth (and, on the CPU, the buffer that flushes the caches). */
    const size_t llc = sysinfo_llc_bytes();
    size_t sb = 2 * llc;
    if (sb < BENCH_STREAM_MIN) sb = BENCH_STREAM_MIN;
    if (sb > BENCH_STREAM_MAX) sb = BENCH_STREAM_MAX;
    void *stream = sysinfo_stream_buffer_alloc(sb, r.threads);
    double gbps = stream ? sysinfo_read_bandwidth(stream, sb, r.threads, 0.2) : 0.0;
    if (o.backend == QMM_BACKEND_CUDA) {
        qmm_status ist = qmm_context_device_info(r.ctx, &r.gpu);
        if (ist != QMM_OK) {
            fprintf(stderr, "qmm bench: describing the GPU: %s: %s\n", qmm_status_str(ist),
                    qmm_last_error());
            rc = 1;
            goto out;
        }
        r.have_gpu = true;
    }
    if (o.backend == QMM_BACKEND_CPU) {
        r.stream = stream;
        r.stream_bytes = sb;
    } else {
        free(stream);
    }

    r.rep = report_create(stdout, o.csv);
    if (r.rep == NULL) {
        fprintf(stderr, "qmm bench: out of memory\n");
        rc = 1;
        goto out;
    }
    char cpu[256], features[512], date[64], device[1024], source[512];
    sysinfo_cpu_name(cpu, sizeof cpu);
    sysinfo_cpu_features(features, sizeof features);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (o.backend == QMM_BACKEND_CPU)
        snprintf(device, sizeof device, "%s (isa %s)", cpu, sysinfo_cpu_isa());
    else if (o.backend == QMM_BACKEND_WEBGPU)
        webgpu_describe(r.ctx, device, sizeof device);
    else
        snprintf(device, sizeof device, "cuda:%d %s (sm_%d, %d SMs, %.0f MHz; memory %.0f MHz x "
                 "%d bit, %.1f GiB; L2 %.0f MiB)", got.cuda_device, r.gpu.name,
                 r.gpu.compute_capability, r.gpu.sm_count, r.gpu.sm_clock_mhz,
                 r.gpu.mem_clock_mhz, r.gpu.mem_bus_bits, (double)r.gpu.mem_bytes / 1073741824.0,
                 (double)r.gpu.l2_bytes / 1048576.0);
    if (o.model_path) snprintf(source, sizeof source, "model %s", o.model_path);
    else if (o.n_shapes) snprintf(source, sizeof source, "custom shapes");
    else snprintf(source, sizeof source, "preset %s%s", o.preset->name,
                  o.whole_model ? " (whole model)" : "");
    /* which table auto reads (the header names a tuning file in use, or why none is) */
    qmm_tuning_info tuning;
    qmm_context_tuning(r.ctx, &tuning);
    char auto_table[6144];
    if (o.backend != QMM_BACKEND_CPU)
        snprintf(auto_table, sizeof auto_table, "compiled-in thresholds of the %s backend",
                 qmm_backend_name(o.backend));
    else if (tuning.state == QMM_TUNING_APPLIED)
        snprintf(auto_table, sizeof auto_table, "tuning file %s (%d rows; a type without a row: "
                 "compiled-in table for %s)", tuning.path, tuning.n_rows, tuning.level);
    else
        snprintf(auto_table, sizeof auto_table, "compiled-in table for %s; %s", tuning.level,
                 tuning.reason);
    report_header h = {
        .qmm_version = qmm_version(), .date = date, .cpu = cpu, .features = features,
        .backend = qmm_backend_name(o.backend), .device = device,
        .command_line = cmdline ? cmdline : "qmm bench", .fill = o.model_path ? "model bytes" : o.fill == FILL_BYTES ? "bytes" : "quantized (random valid blocks for types without a quantizer)",
        .source = source, .threads = got.n_threads, .mem_read_gbps = gbps,
        .gpu_copy_gbps = r.have_gpu ? r.gpu.copy_gbps : 0.0,
        .gpu_peak_tflops = r.have_gpu ? r.gpu.peak_tflops : NULL,
        .llc_bytes = (long long)llc, .iters = o.iters, .warmup = o.warmup, .seed = o.seed,
        .verify = o.verify, .batch_invariant = o.batch_invariant, .cache = o.cache_text,
        .hot = o.hot,
        .graph_min_calls = BENCH_GRAPH_MIN_CALLS,
        .auto_table = auto_table, .tuning = &tuning,
    };
    qmm_webgpu_info winfo;
    int wg[3] = {0, 0, 0};
    if (o.backend == QMM_BACKEND_WEBGPU && qmm_webgpu_get_info(r.ctx, &winfo) == QMM_OK &&
        qmm_webgpu_get_fused_geometry(r.ctx, &wg[0], &wg[1], &wg[2]) == QMM_OK) {
        h.webgpu = &winfo;
        h.webgpu_geometry = wg;
    }
    report_header_set(r.rep, &h);
    if (o.backend == QMM_BACKEND_WEBGPU)
        report_note(r.rep, o.hot ? "webgpu times: GPU timestamps at the start and end of each compute "
                                   "pass (qmm_timer_begin/end); one W, X, Y copy reused (--caches hot)"
                                 : "webgpu times: GPU timestamps at the start and end of each compute "
                                   "pass (qmm_timer_begin/end); W, X, Y rotated through copies of at "
                                   "least 128 MiB");
    if (o.backend == QMM_BACKEND_WEBGPU) {
        int tk = 0;
        int64_t minw = 0;
        if (qmm_webgpu_fused_tile_k(r.ctx, (int64_t)1 << 20, (int64_t)1 << 20, &tk, &minw) == QMM_OK && minw > 0) {
            char note[160];
            snprintf(note, sizeof note, "webgpu fused: TILE_K %d for dispatches of at least %lld workgroups "
                     "(src/webgpu/auto_table.c; the same bits at every TILE_K)", tk, (long long)minw);
            report_note(r.rep, "%s", note);
        }
    }
    if (o.whole_model || o.model_path) {
        r.totals = calloc(o.n_ns * (size_t)o.n_strategies, sizeof *r.totals);
        if (r.totals == NULL) {
            fprintf(stderr, "qmm bench: out of memory\n");
            rc = 1;
            goto out;
        }
    }

    {
        /* Timings are only meaningful on an otherwise idle machine: say so when it is busy. */
        double load1 = 0.0;
        FILE *la = fopen("/proc/loadavg", "r");
        if (la != NULL) {
            if (fscanf(la, "%lf", &load1) != 1) load1 = 0.0;
            fclose(la);
        }
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (cpus > 0 && o.backend == QMM_BACKEND_CPU && got.n_threads > cpus)
            report_note(r.rep, "warning: %d threads on %ld online CPUs: threads share cores, "
                               "timings are not of this machine's best", got.n_threads, cpus);
        if (cpus > 0 && load1 > 0.5 * (double)cpus)
            report_note(r.rep, "warning: load average %.2f on %ld CPUs before the run: other "
                               "work competes for the cores, timings may be far too slow",
                        load1, cpus);
    }
    if (o.model_path) {
        r.total_work = 0; /* unknown until the file is read; progress shows done/0 */
        rc = run_model(&r);
    } else {
        const bench_shape *shapes = o.n_shapes ? o.shapes : o.preset->shapes;
        const int n_shapes = o.n_shapes ? o.n_shapes : o.preset->n_shapes;
        r.total_work = o.n_types * n_shapes * (int)o.n_ns * o.n_strategies;
        if (o.whole_model) {
            int64_t gemms = 0;
            for (int s = 0; s < n_shapes; s++) gemms += shapes[s].count;
            report_note(r.rep, "whole-model: the %lld projection GEMMs of one forward pass of "
                               "%s; each distinct shape is timed once per type and strategy "
                               "and its median is multiplied by its count (column count)",
                        (long long)gemms, o.preset->name);
        }
        run_shapes(&r, shapes, n_shapes);
    }
    progress_clear(&r);
    if (rc == 0 && o.json_path && !report_write_json(r.rep, o.json_path)) rc = 1;
    if (rc == 0 && r.any_fail) rc = 1;
    const int ran = r.n_status[ROW_PASS] + r.n_status[ROW_FAIL] + r.n_status[ROW_UNVERIFIED];
    if (rc == 0 && ran == 0 && r.n_status[ROW_SKIP] > 0) {
        /* nothing was measured: not a pass */
        fprintf(stderr, "qmm bench: every row was skipped (the note column says why); nothing "
                        "was measured\n");
        rc = 1;
    }
    if (!o.csv && r.rep) {
        printf("\n%d rows: %d passed, %d failed, %d skipped, %d not verified\n",
               ran + r.n_status[ROW_SKIP], r.n_status[ROW_PASS], r.n_status[ROW_FAIL],
               r.n_status[ROW_SKIP], r.n_status[ROW_UNVERIFIED]);
        if (r.any_fail) printf("FAILED: at least one row did not match the reference\n");
    }
out:
    progress_clear(&r);
    report_free(r.rep);
    free(r.totals);
    free(r.stream);
    qmm_context_free(r.ctx);
    free(cmdline);
    free(o.ns);
    free(o.shapes);
    return rc;
}
