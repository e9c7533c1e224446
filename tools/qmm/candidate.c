/*
 * candidate.c — options of `qmm bench --candidate FILE.cu | FILE.wgsl` and the checks that
 * need no GPU (candidate.h describes the contract, docs/BENCH.md "Candidate kernels" the use).
 *
 * Every value is parsed strictly before anything is compiled or run: the geometry flags and
 * their environment variables (CUDA: QMM_CANDIDATE_ROWS_PER_BLOCK, QMM_CANDIDATE_THREADS;
 * WebGPU: WG_M, WG_N, TILE_K, TILE_M, TILE_N; the environment sets the default, a flag
 * replaces it, as ITERS and --iters do), the tolerance, the shapes, types and token counts.
 * A value that is not whole and in range is a usage error (exit 2), never silently
 * defaulted; a geometry flag of the other backend is a usage error too.
 */
#include "candidate.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

#define CAND_DEFAULT_N 1
#define CAND_DEFAULT_N_FUSED 512
#define CAND_DEFAULT_ITERS 20
#define CAND_DEFAULT_WARMUP 3
#define CAND_MAX_N 65536
#define CAND_MAX_DIM (1 << 24)
#define CAND_MAX_ITERS 1000000
#define CAND_MAX_SOURCE ((long)16 << 20)

#ifndef QMM_CANDIDATE_SOURCE_DIR
#define QMM_CANDIDATE_SOURCE_DIR "."
#endif

bool candidate_requested(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--candidate") == 0 || strncmp(argv[i], "--candidate=", 12) == 0)
            return true;
    }
    return false;
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: qmm bench --candidate FILE.cu [options]\n"
        "       qmm bench --candidate FILE.wgsl [--backend webgpu] [--kernel fused|gemv] [options]\n"
        "\n"
        "CUDA: compile FILE.cu at run time (NVRTC) and compare its kernel qmm_candidate, over\n"
        "the whole output, with the production CUDA gemv kernel on the same device inputs; then\n"
        "time both (CUDA events after warm-up, median).\n"
        "WebGPU: compile FILE.wgsl (entry point main) with the production kernel's bindings,\n"
        "parameters and type decoder, dispatch it with the production fused (or gemv) kernel's\n"
        "grid on the same weights and X, compare the whole outputs, time both (timestamp\n"
        "queries). docs/BENCH.md \"Candidate kernels\" describes both contracts.\n"
        "\n"
        "verdict:\n"
        "  --tolerance X      accept max|y_cand - y_prod| / max|y_prod| <= X (default: the\n"
        "                     outputs must be bit-identical). Any NaN or Inf fails anyway.\n"
        "CUDA geometry (checked against the kernel's qmm_candidate_geometry before anything runs):\n"
        "  --rows-per-block R rows of W per thread block (env QMM_CANDIDATE_ROWS_PER_BLOCK)\n"
        "  --block-threads T  threads per block, a multiple of 32 (env QMM_CANDIDATE_THREADS)\n"
        "                     (bench's --threads is the CPU thread count, hence the name)\n"
        "WebGPU fused geometry (checked against the kernel and the adapter before anything runs):\n"
        "  --wg-m N, --wg-n N, --tile-k N (env WG_M, WG_N, TILE_K), --tile-m 4, --tile-n 4\n"
        "                     (env TILE_M, TILE_N: only 4); see qmm bench --help\n"
        "  --kernel fused|gemv  the production kernel to compare with (default fused)\n"
        "  --shader-checks    compile both kernels with wgpu's runtime checks (index clamps,\n"
        "                     loop bounds; default: trusted, as production runs): use it for\n"
        "                     a new candidate whose indices are not yet known to be in range\n"
        "what to run (as qmm bench):\n"
        "  --preset NAME, --shape MxK[,...], --types LIST (env ONLY), --n LIST (default %d;\n"
        "                     WebGPU fused %d)\n"
        "  --fill quantized|bytes, --seed N\n"
        "how:\n"
        "  --iters N          timed calls of each kernel, median reported (default %d; env ITERS;\n"
        "                     WebGPU: regions of back-to-back calls, per-call median)\n"
        "  --warmup N         untimed calls first (default %d; WebGPU: with N > 0 also\n"
        "                     back-to-back calls until the GPU's clocks settle, at least 1 s)\n"
        "  --json FILE        also write the rows as JSON\n"
        "\n"
        "Exit status: 0 every row matched, 1 a mismatch, a non-finite value, a compile or a\n"
        "runtime error, 2 bad usage.\n",
        CAND_DEFAULT_N, CAND_DEFAULT_N_FUSED, CAND_DEFAULT_ITERS, CAND_DEFAULT_WARMUP);
}

/* A whole finite non-negative decimal number (strtod syntax, no leading space or sign '+'). */
static bool parse_tolerance(const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    double v = (s && *s && *s != ' ' && *s != '+') ? strtod(s, &end) : NAN;
    if (end == NULL || end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0.0) {
        fprintf(stderr, "qmm bench: --tolerance '%s' is not a finite number >= 0\n", s ? s : "");
        return false;
    }
    *out = v;
    return true;
}

/* Threads per block: 32..1024 and a multiple of 32 (whole warps). */
static bool check_threads(const char *name, int64_t t) {
    if (t % 32 != 0) {
        fprintf(stderr, "qmm bench: %s %lld is not a multiple of 32 (a block is whole warps)\n",
                name, (long long)t);
        return false;
    }
    return true;
}

static bool parse_types(const char *name, const char *s, candidate_opts *o) {
    o->types_given = opt_weight_types(name, s, o->types, (int)(sizeof o->types / sizeof o->types[0]),
                                      &o->n_types);
    return o->types_given;
}

static bool ends_with(const char *s, const char *tail) {
    const size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "qmm bench: --candidate: cannot open '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    char *s = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len < 0 || len > CAND_MAX_SOURCE || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "qmm bench: --candidate: '%s' is not a readable file of at most %ld "
                        "bytes\n", path, CAND_MAX_SOURCE);
    } else if ((s = malloc((size_t)len + 1)) == NULL) {
        fprintf(stderr, "qmm bench: out of memory reading '%s'\n", path);
    } else if (fread(s, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "qmm bench: --candidate: cannot read '%s'\n", path);
        free(s);
        s = NULL;
    } else {
        s[len] = '\0';
        if (strlen(s) != (size_t)len || len == 0) {
            fprintf(stderr, "qmm bench: --candidate: '%s' is %s\n", path,
                    len == 0 ? "empty" : "not a text file (it holds a NUL byte)");
            free(s);
            s = NULL;
        }
    }
    fclose(f);
    return s;
}

static char *join_args(int argc, char **argv) {
    size_t len = 4;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *s = malloc(len), *p = s;
    if (s == NULL) return NULL;
    p += sprintf(p, "qmm");
    for (int i = 0; i < argc; i++) p += sprintf(p, " %s", argv[i]);
    return s;
}

enum {
    OPT_CANDIDATE = 256, OPT_TOLERANCE, OPT_RPB, OPT_BLOCK_THREADS, OPT_PRESET, OPT_SHAPE,
    OPT_TYPES, OPT_N, OPT_ITERS, OPT_WARMUP, OPT_FILL, OPT_SEED, OPT_JSON, OPT_BACKEND,
    OPT_KERNEL, OPT_GEOM, OPT_SHADER_CHECKS, OPT_OTHER
};

/* 0 = run, 1 = --help printed, 2 = usage error, 3 = runtime error (message printed). */
static int parse_args(int argc, char **argv, candidate_opts *o, bench_shape **shapes_owned) {
    static const struct option long_opts[] = {
        {"candidate", required_argument, NULL, OPT_CANDIDATE},
        {"tolerance", required_argument, NULL, OPT_TOLERANCE},
        {"rows-per-block", required_argument, NULL, OPT_RPB},
        {"block-threads", required_argument, NULL, OPT_BLOCK_THREADS},
        {"preset", required_argument, NULL, OPT_PRESET},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"types", required_argument, NULL, OPT_TYPES},
        {"n", required_argument, NULL, OPT_N},
        {"iters", required_argument, NULL, OPT_ITERS},
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"fill", required_argument, NULL, OPT_FILL},
        {"seed", required_argument, NULL, OPT_SEED},
        {"json", required_argument, NULL, OPT_JSON},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"kernel", required_argument, NULL, OPT_KERNEL},
        {"wg-m", required_argument, NULL, OPT_GEOM},
        {"wg-n", required_argument, NULL, OPT_GEOM},
        {"tile-k", required_argument, NULL, OPT_GEOM},
        {"tile-m", required_argument, NULL, OPT_GEOM},
        {"tile-n", required_argument, NULL, OPT_GEOM},
        {"shader-checks", no_argument, NULL, OPT_SHADER_CHECKS},
        /* bench options that mean nothing here: refused by name rather than ignored */
        {"model", required_argument, NULL, OPT_OTHER},
        {"whole-model", no_argument, NULL, OPT_OTHER},
        {"strategy", required_argument, NULL, OPT_OTHER},
        {"threads", required_argument, NULL, OPT_OTHER},
        {"csv", no_argument, NULL, OPT_OTHER},
        {"verify", no_argument, NULL, OPT_OTHER},
        {"no-verify", no_argument, NULL, OPT_OTHER},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    o->iters = CAND_DEFAULT_ITERS;
    o->warmup = CAND_DEFAULT_WARMUP;
    o->seed = 1;
    o->fill = FILL_QUANTIZED;

    /* Environment first (flags replace it), each value parsed strictly whenever it is set;
     * the geometry variables of the backend that runs (known after the flags). */
    bool set;
    if (!opt_env_i64("ITERS", 1, CAND_MAX_ITERS, &o->iters, &set)) return 2;
    int64_t env_rpb = 0, env_thr = 0, flag_rpb = 0, flag_thr = 0;
    bool backend_given = false, kernel_given = false;
    webgpu_geometry gflags;
    memset(&gflags, 0, sizeof gflags);
    const char *only = getenv("ONLY");
    if (only != NULL && !parse_types("environment variable ONLY", only, o)) return 2;
    const bench_preset *preset = NULL;

    opterr = 0;
    optind = 0; /* GNU: full re-initialization */
    int c, li = -1;
    while ((c = getopt_long(argc, argv, ":h", long_opts, &li)) != -1) {
        switch (c) {
        case OPT_GEOM:
            if (webgpu_geometry_flag(&gflags, long_opts[li].name, optarg) != 1) return 2;
            break;
        case OPT_SHADER_CHECKS: o->shader_checks = true; break;
        case OPT_KERNEL:
            if (strcmp(optarg, "fused") == 0) o->gemv = false;
            else if (strcmp(optarg, "gemv") == 0) o->gemv = true;
            else {
                fprintf(stderr, "qmm bench: --kernel '%s' (expected fused or gemv)\n", optarg);
                return 2;
            }
            kernel_given = true;
            break;
        case OPT_CANDIDATE:
            if (o->path != NULL) {
                fprintf(stderr, "qmm bench: --candidate is given twice\n");
                return 2;
            }
            o->path = optarg;
            break;
        case OPT_TOLERANCE:
            if (!parse_tolerance(optarg, &o->tolerance)) return 2;
            o->has_tolerance = true;
            break;
        case OPT_RPB:
            if (!opt_i64("--rows-per-block", optarg, 1, 1024, &flag_rpb)) return 2;
            break;
        case OPT_BLOCK_THREADS:
            if (!opt_i64("--block-threads", optarg, 32, 1024, &flag_thr)) return 2;
            if (!check_threads("--block-threads", flag_thr)) return 2;
            break;
        case OPT_PRESET:
            preset = bench_preset_find(optarg);
            if (preset == NULL) {
                fprintf(stderr, "qmm bench: --preset: unknown preset '%s'\n", optarg);
                return 2;
            }
            break;
        case OPT_SHAPE: {
            char **items;
            size_t n;
            if (!opt_split("--shape", optarg, &items, &n)) return 2;
            free(*shapes_owned);
            *shapes_owned = calloc(n, sizeof **shapes_owned);
            bool ok = *shapes_owned != NULL;
            for (size_t i = 0; i < n && ok; i++) {
                ok = opt_shape("--shape", items[i], CAND_MAX_DIM, &(*shapes_owned)[i].m,
                               &(*shapes_owned)[i].k);
                (*shapes_owned)[i].label = "custom";
                (*shapes_owned)[i].count = 1;
            }
            opt_list_free(items);
            if (!ok) return 2;
            o->shapes = *shapes_owned;
            o->n_shapes = (int)n;
            break;
        }
        case OPT_TYPES: if (!parse_types("--types", optarg, o)) return 2; break;
        case OPT_N:
            free(o->ns);
            o->ns = NULL;
            if (!opt_i64_list("--n", optarg, 1, CAND_MAX_N, &o->ns, &o->n_ns)) return 2;
            break;
        case OPT_ITERS:
            if (!opt_i64("--iters", optarg, 1, CAND_MAX_ITERS, &o->iters)) return 2;
            break;
        case OPT_WARMUP:
            if (!opt_i64("--warmup", optarg, 0, CAND_MAX_ITERS, &o->warmup)) return 2;
            break;
        case OPT_FILL:
            if (!fill_kind_parse(optarg, &o->fill)) return 2;
            break;
        case OPT_SEED:
            if (!opt_i64("--seed", optarg, 0, INT64_MAX, &o->seed)) return 2;
            break;
        case OPT_JSON:
            if (!opt_writable_file("--json", optarg)) return 3;
            o->json_path = optarg;
            break;
        case OPT_BACKEND:
            if (strcmp(optarg, "cuda") == 0) o->backend = QMM_BACKEND_CUDA;
            else if (strcmp(optarg, "webgpu") == 0) o->backend = QMM_BACKEND_WEBGPU;
            else {
                fprintf(stderr, "qmm bench: --candidate runs on the CUDA or the WebGPU backend "
                                "(--backend '%s')\n", optarg);
                return 2;
            }
            backend_given = true;
            break;
        case OPT_OTHER:
            fprintf(stderr, "qmm bench: %s does not apply to --candidate (see qmm bench "
                            "--candidate X --help)\n", argv[optind - 1]);
            return 2;
        case 'h': usage(stdout); return 1;
        case ':':
            fprintf(stderr, "qmm bench: option '%s' needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "qmm bench: unknown option '%s' (see qmm bench --candidate X "
                            "--help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "qmm bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o->path == NULL || o->path[0] == '\0') {
        fprintf(stderr, "qmm bench: --candidate needs a file name\n");
        return 2;
    }
    if (!backend_given) o->backend = ends_with(o->path, ".wgsl") ? QMM_BACKEND_WEBGPU : QMM_BACKEND_CUDA;
    if (o->backend == QMM_BACKEND_CUDA) {
        if (gflags.from_flags || kernel_given || o->shader_checks) {
            fprintf(stderr, "qmm bench: --wg-m/--wg-n/--tile-k/--tile-m/--tile-n, --kernel and --shader-checks "
                            "apply to a WebGPU candidate (--backend webgpu), not to CUDA\n");
            return 2;
        }
        if (!opt_env_i64("QMM_CANDIDATE_ROWS_PER_BLOCK", 1, 1024, &env_rpb, &set)) return 2;
        if (!opt_env_i64("QMM_CANDIDATE_THREADS", 32, 1024, &env_thr, &set)) return 2;
        if (set && !check_threads("environment variable QMM_CANDIDATE_THREADS", env_thr)) return 2;
        o->rows_per_block = flag_rpb ? flag_rpb : env_rpb;
        o->threads = flag_thr ? flag_thr : env_thr;
    } else {
        if (flag_rpb || flag_thr) {
            fprintf(stderr, "qmm bench: --rows-per-block/--block-threads apply to a CUDA "
                            "candidate; a WebGPU one takes --wg-m/--wg-n/--tile-k\n");
            return 2;
        }
        if (!webgpu_geometry_env(&o->geom)) return 2;
        if (gflags.wg_m) o->geom.wg_m = gflags.wg_m;
        if (gflags.wg_n) o->geom.wg_n = gflags.wg_n;
        if (gflags.tile_k) o->geom.tile_k = gflags.tile_k;
        if (gflags.tile_m) o->geom.tile_m = gflags.tile_m;
        if (gflags.tile_n) o->geom.tile_n = gflags.tile_n;
        o->geom.from_flags = gflags.from_flags;
        if (!webgpu_geometry_check_tiles(&o->geom)) return 2;
    }
    if (preset != NULL && o->n_shapes > 0) {
        fprintf(stderr, "qmm bench: --preset and --shape exclude each other\n");
        return 2;
    }
    if (o->n_shapes == 0) {
        if (preset == NULL) preset = bench_preset_default();
        o->shapes = preset->shapes;
        o->n_shapes = preset->n_shapes;
    }
    if (o->ns == NULL) {
        o->ns = malloc(sizeof *o->ns);
        if (o->ns == NULL) return 3;
        o->ns[0] = o->backend == QMM_BACKEND_WEBGPU && !o->gemv ? CAND_DEFAULT_N_FUSED : CAND_DEFAULT_N;
        o->n_ns = 1;
    }
    if (o->n_types == 0)
        for (int t = 0; t < QMM_TYPE_COUNT; t++)
            if (qmm_type_is_supported(t) && qmm_type_is_weight((qmm_type)t))
                o->types[o->n_types++] = (qmm_type)t;
    for (int i = 0; i < o->n_shapes; i++)
        for (int t = 0; t < o->n_types; t++) {
            const int64_t bs = qmm_type_block_size(o->types[t]);
            if (o->shapes[i].k % bs != 0) {
                fprintf(stderr, "qmm bench: shape %lldx%lld: k=%lld is not a multiple of the "
                                "block size %lld of %s\n", (long long)o->shapes[i].m,
                        (long long)o->shapes[i].k, (long long)o->shapes[i].k, (long long)bs,
                        qmm_type_name(o->types[t]));
                return 2;
            }
        }
    return 0;
}

int qmm_cmd_bench_candidate(int argc, char **argv) {
    candidate_opts o;
    memset(&o, 0, sizeof o);
    bench_shape *shapes_owned = NULL;
    int rc;
    const int pr = parse_args(argc, argv, &o, &shapes_owned);
    if (pr != 0) {
        rc = pr == 1 ? 0 : pr == 3 ? 1 : 2;
        goto out;
    }
    o.source = read_file(o.path);
    if (o.source == NULL) {
        rc = 1;
        goto out;
    }
    const char *dir = getenv("QMM_SOURCE_DIR");
    o.source_dir = dir != NULL && dir[0] != '\0' ? dir : QMM_CANDIDATE_SOURCE_DIR;
    o.command_line = join_args(argc, argv);
    if (o.backend == QMM_BACKEND_WEBGPU) {
        rc = candidate_wgsl_run(&o);
        goto out;
    }
#ifdef QMM_WITH_CUDA
    rc = candidate_run(&o);
#else
    fprintf(stderr, "qmm bench: --candidate: this qmm was built without CUDA (configure with "
                    "nvcc present or -DQMM_CUDA=ON)\n");
    rc = 1;
#endif
out:
    free(o.source);
    free(o.ns);
    free(o.command_line);
    free(shapes_owned);
    return rc;
}
