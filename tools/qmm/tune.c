/*
 * tune.c — `qmm tune`: measure on this machine the crossovers the CPU backend's `auto` uses
 * (for each weight type: the n range of int8, the largest n of gemv, fused above) and write
 * them to a tuning file that contexts on this machine then read (docs/TUNING.md).
 *
 * For each type and shape (the LFM2.5-350M projection shapes by default) and each n of a
 * grid, every candidate strategy (gemv, int8, fused) is first run once and its whole output
 * compared with qmm_matmul_ref (within its precision class's limits, as `qmm bench` checks
 * it); a candidate that fails is never timed or chosen. Then the candidates are timed in
 * interleaved rounds (one call of each per round, the order rotated), each call on its own
 * copy of the weights, and the median of the rounds is kept. gemv, whose time grows with n,
 * is not timed at larger n once it is more than twice as slow as the best candidate. The fit
 * (tune_fit.c) picks the row that loses the least time against the best candidate at every
 * measured n, weighting the shapes by how often a forward pass runs them; a shape on which
 * that row is more than 10% slower than the best somewhere gets its own row if its own fit
 * does better.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "fill.h"
#include "opts.h"
#include "presets.h"
#include "qmm.h"
#include "sysinfo.h"
#include "tune_fit.h"
#include "verify.h"

#define TUNE_MAX_N 65536
#define TUNE_MAX_DIM (1 << 20)
#define TUNE_MAX_REPS 1000
#define TUNE_MAX_COPIES 64
#define TUNE_DEFAULT_SEED 1
/* A point whose rounds spread (max - min) / median more than this is counted as noisy. */
#define TUNE_NOISY_SPREAD 0.25
/* A point whose two fastest candidates' medians are within this factor of each other is a
 * near-tie: it gets up to TUNE_CLOSE_SETS more sets of rounds, so that run-to-run noise of the
 * size of their difference does not decide it. */
#define TUNE_CLOSE_RATIO 1.25
#define TUNE_CLOSE_SETS 2
/* A shape gets its own row when the shared row is slower than the best by more than this. */
#define TUNE_SHAPE_SLACK 1.10

static const int64_t grid_full[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 512};
static const int64_t grid_quick[] = {1, 2, 4, 8, 16, 32, 64, 512};
static const qmm_strategy cand_strategy[TUNE_CAND] = {QMM_STRATEGY_GEMV, QMM_STRATEGY_INT8,
                                                      QMM_STRATEGY_FUSED};
static const char *const cand_name[TUNE_CAND] = {"gemv", "int8", "fused"};

/* ---------------------------------------------------------------------------------------
 * Options
 * ------------------------------------------------------------------------------------- */

typedef struct tune_opts {
    const char *backend;
    qmm_type types[QMM_TYPE_COUNT];
    int n_types;
    bool quick;
    const char *out;
    int64_t threads, reps, seed, copies;
    int64_t *ns;
    size_t n_ns;
    bench_shape *shapes;
    int n_shapes;
    bool cold;
} tune_opts;

static void usage(FILE *f) {
    fprintf(f,
        "usage: qmm tune [options]\n"
        "\n"
        "Measure on this machine where auto should switch between the CPU strategies (int8,\n"
        "gemv, fused) for each weight type, and write a tuning file that contexts on this\n"
        "machine (same CPU, ISA level and thread count) then use. Every candidate is checked\n"
        "against qmm_matmul_ref before it is timed. docs/TUNING.md has the file format.\n"
        "\n"
        "  --backend cpu|cuda|webgpu  the backend to tune (default cpu; cuda and webgpu: not\n"
        "                     yet implemented)\n"
        "  --types LIST       weight types, e.g. q4_0,q4_K (default: every weight type)\n"
        "  --quick            a short run (n %s, %d rounds, one copy of W per strategy,\n"
        "                     not flushed from the caches); about a minute for every type\n"
        "  --out FILE         where to write (default: this machine's default location,\n"
        "                     $XDG_CACHE_HOME/qmm/tune-<id>.json, else ~/.cache/qmm/...)\n"
        "  --threads N        CPU threads (default: all online cores; part of the identity)\n"
        "  --n LIST           the grid of n (default %s)\n"
        "  --shape MxK[,...]  shapes instead of the LFM2.5-350M projections\n"
        "  --reps N           timed rounds per point, median kept (default 7; --quick 3);\n"
        "                     a point whose rounds spread over 25%% gets as many again,\n"
        "                     and one whose two fastest candidates are within 1.25x of\n"
        "                     each other up to twice as many more (a near-tie; both\n"
        "                     only with N >= 3)\n"
        "  --seed N           random seed of W and X (default %d)\n"
        "  --help             this text\n"
        "\n"
        "Progress goes to stderr when it is a terminal; the table of the chosen rows to\n"
        "stdout. A busy machine (load average, rounds that disagree) is warned about: run on\n"
        "a quiet machine. Exit status: 0 written, 1 a runtime error or a candidate that\n"
        "failed verification (the file is still written without it), 2 bad usage.\n",
        "1,2,4,8,16,32,64,512", 3, "1,2,3,4,6,8,12,16,24,32,48,64,128,512",
        TUNE_DEFAULT_SEED);
}

enum { OPT_BACKEND = 256, OPT_TYPES, OPT_QUICK, OPT_OUT, OPT_THREADS, OPT_N, OPT_SHAPE, OPT_REPS,
       OPT_SEED };

static bool parse_shapes(const char *s, tune_opts *o) {
    char **items;
    size_t n;
    if (!opt_split("--shape", s, &items, &n)) return false;
    free(o->shapes);
    o->shapes = calloc(n, sizeof *o->shapes);
    bool ok = o->shapes != NULL;
    for (size_t i = 0; i < n && ok; i++) {
        ok = opt_shape("--shape", items[i], TUNE_MAX_DIM, &o->shapes[i].m, &o->shapes[i].k);
        o->shapes[i].label = "custom";
        o->shapes[i].count = 1;
    }
    for (size_t i = 0; i < n && ok; i++)
        for (size_t j = 0; j < i && ok; j++)
            if (o->shapes[i].m == o->shapes[j].m && o->shapes[i].k == o->shapes[j].k) {
                fprintf(stderr, "qmm tune: --shape lists %lldx%lld twice\n",
                        (long long)o->shapes[i].m, (long long)o->shapes[i].k);
                ok = false;
            }
    o->n_shapes = ok ? (int)n : 0;
    opt_list_free(items);
    return ok;
}

/* 0 = run, 1 = --help printed, 2 = usage error (message printed). */
static int parse_args(int argc, char **argv, tune_opts *o) {
    static const struct option long_opts[] = {
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"types", required_argument, NULL, OPT_TYPES},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"out", required_argument, NULL, OPT_OUT},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"n", required_argument, NULL, OPT_N},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"reps", required_argument, NULL, OPT_REPS},
        {"seed", required_argument, NULL, OPT_SEED},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->backend = "cpu";
    o->seed = TUNE_DEFAULT_SEED;
    bool types_given = false;
    opterr = 0;
    optind = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        switch (c) {
        case OPT_BACKEND:
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0 &&
                strcmp(optarg, "webgpu") != 0) {
                fprintf(stderr, "qmm tune: --backend: unknown backend '%s' (expected cpu, cuda "
                                "or webgpu)\n", optarg);
                return 2;
            }
            o->backend = optarg;
            break;
        case OPT_TYPES:
            if (!opt_weight_types("--types", optarg, o->types, QMM_TYPE_COUNT, &o->n_types))
                return 2;
            types_given = true;
            break;
        case OPT_QUICK: o->quick = true; break;
        case OPT_OUT:
            if (optarg[0] == '\0') {
                fprintf(stderr, "qmm tune: --out is empty\n");
                return 2;
            }
            o->out = optarg;
            break;
        case OPT_THREADS:
            if (!opt_i64("--threads", optarg, 1, 4096, &o->threads)) return 2;
            break;
        case OPT_N:
            free(o->ns);
            o->ns = NULL;
            if (!opt_i64_list("--n", optarg, 1, TUNE_MAX_N, &o->ns, &o->n_ns)) return 2;
            for (size_t i = 1; i < o->n_ns; i++)
                if (o->ns[i] <= o->ns[i - 1]) {
                    fprintf(stderr, "qmm tune: --n '%s' must be increasing\n", optarg);
                    return 2;
                }
            break;
        case OPT_SHAPE: if (!parse_shapes(optarg, o)) return 2; break;
        case OPT_REPS:
            if (!opt_i64("--reps", optarg, 1, TUNE_MAX_REPS, &o->reps)) return 2;
            break;
        case OPT_SEED:
            if (!opt_i64("--seed", optarg, 0, INT64_MAX, &o->seed)) return 2;
            break;
        case 'h': usage(stdout); return 1;
        case ':':
            fprintf(stderr, "qmm tune: option '%s' needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "qmm tune: unknown option '%s' (see qmm tune --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "qmm tune: unexpected argument '%s' (see qmm tune --help)\n",
                argv[optind]);
        return 2;
    }
    if (!types_given)
        for (int t = 0; t < QMM_TYPE_COUNT; t++)
            if (qmm_type_is_supported(t) && qmm_type_is_weight((qmm_type)t))
                o->types[o->n_types++] = (qmm_type)t;
    if (o->ns == NULL) {
        const int64_t *g = o->quick ? grid_quick : grid_full;
        const size_t n = o->quick ? sizeof grid_quick / sizeof grid_quick[0]
                                  : sizeof grid_full / sizeof grid_full[0];
        o->ns = malloc(n * sizeof *o->ns);
        if (o->ns == NULL) return 2;
        memcpy(o->ns, g, n * sizeof *o->ns);
        o->n_ns = n;
    }
    if (o->n_ns > 63) {
        fprintf(stderr, "qmm tune: --n lists %zu values (at most 63)\n", o->n_ns);
        return 2;
    }
    if (o->reps == 0) o->reps = o->quick ? 3 : 7;
    o->cold = !o->quick;
    /* cold: every timed call on a copy not touched since the flush; quick: one copy */
    o->copies = o->cold ? o->reps : 1;
    if (o->copies > TUNE_MAX_COPIES) o->copies = TUNE_MAX_COPIES;
    if (o->n_shapes == 0) {
        const bench_preset *p = bench_preset_default();
        o->shapes = calloc((size_t)p->n_shapes, sizeof *o->shapes);
        if (o->shapes == NULL) return 2;
        memcpy(o->shapes, p->shapes, (size_t)p->n_shapes * sizeof *o->shapes);
        o->n_shapes = p->n_shapes;
    }
    if (o->n_shapes > 63) {
        fprintf(stderr, "qmm tune: --shape lists %d shapes (at most 63)\n", o->n_shapes);
        return 2;
    }
    for (int s = 0; s < o->n_shapes; s++)
        for (int t = 0; t < o->n_types; t++)
            if (o->shapes[s].k % qmm_type_block_size(o->types[t]) != 0) {
                fprintf(stderr, "qmm tune: --shape %lldx%lld: k=%lld is not a multiple of the "
                                "block size %lld of %s\n", (long long)o->shapes[s].m,
                        (long long)o->shapes[s].k, (long long)o->shapes[s].k,
                        (long long)qmm_type_block_size(o->types[t]), qmm_type_name(o->types[t]));
                return 2;
            }
    return 0;
}

/* ---------------------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------------------- */

enum { PT_NONE = 0, PT_OK, PT_PRUNED, PT_FAILED };

typedef struct tune_run {
    const tune_opts *o;
    qmm_context *ctx;       /* no tuning file: forced strategies, and the compiled-in choices */
    int threads;
    void *stream;           /* cold runs: read between points to evict the caches */
    size_t stream_bytes;
    cJSON *measurements;
    int n_points, n_noisy, n_failed, n_retimed, n_close;
    bool tty, progress_shown;
    double t_start;
    int type_index;
} tune_run;

static void progress_clear(tune_run *r) {
    if (r->progress_shown) {
        fputs("\r\033[K", stderr);
        r->progress_shown = false;
    }
}

static void progress(tune_run *r, qmm_type type, const bench_shape *sh, int64_t n) {
    if (!r->tty) return;
    fprintf(stderr, "\r\033[K[type %d/%d %.0fs] %s %lldx%lld n=%lld", r->type_index + 1,
            r->o->n_types, sysinfo_now() - r->t_start, qmm_type_name(type), (long long)sh->m,
            (long long)sh->k, (long long)n);
    fflush(stderr);
    r->progress_shown = true;
}

/* Cold runs: read the stream buffer (twice the last-level cache) so that W comes from memory. */
static void flush_caches(tune_run *r) {
    if (r->stream == NULL) return;
    volatile unsigned long long sink = sysinfo_stream_read(r->stream, r->stream_bytes, r->threads);
    (void)sink;
}

static void say(tune_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(tune_run *r, const char *fmt, ...) {
    progress_clear(r);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The spread (max - min) / median of v[0..n) (n >= 1; v is not changed, tmp holds n), and the
 * median in *med (may be NULL). */
static double median_spread(const double *v, int64_t n, double *tmp, double *med) {
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    const double m = n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
    if (med != NULL) *med = m;
    return m > 0 ? (tmp[n - 1] - tmp[0]) / m : 0.0;
}

static uint64_t seed_mix(uint64_t seed, uint64_t a, uint64_t b) {
    fill_rng rng;
    fill_rng_seed(&rng, seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full));
    return fill_rng_next(&rng);
}

/* What one (type, shape) run leaves: per grid n and candidate. */
typedef struct shape_result {
    double t[64][TUNE_CAND];      /* median ms, INFINITY where not measured */
    int status[64][TUNE_CAND];
    bool avail[TUNE_CAND];
    int compiled[64];             /* the compiled-in table's choice (a TUNE_ candidate) */
} shape_result;

static int cand_of(qmm_strategy s) {
    for (int c = 0; c < TUNE_CAND; c++)
        if (cand_strategy[c] == s) return c;
    return -1;
}

static void add_measurement(tune_run *r, qmm_type type, const bench_shape *sh, int64_t n, int c,
                            const char *kernel, int status, double ms, double spread) {
    cJSON *m = cJSON_CreateObject();
    if (m == NULL) return;
    cJSON_AddStringToObject(m, "type", qmm_type_name(type));
    cJSON_AddNumberToObject(m, "m", (double)sh->m);
    cJSON_AddNumberToObject(m, "k", (double)sh->k);
    cJSON_AddNumberToObject(m, "n", (double)n);
    cJSON_AddStringToObject(m, "strategy", cand_name[c]);
    cJSON_AddStringToObject(m, "kernel", kernel ? kernel : "");
    if (status == PT_OK) {
        cJSON_AddNumberToObject(m, "ms", ms);
        cJSON_AddNumberToObject(m, "spread", spread);
    } else {
        cJSON_AddNullToObject(m, "ms");
        cJSON_AddNullToObject(m, "spread");
    }
    cJSON_AddStringToObject(m, "status", status == PT_OK ? "ok" : status == PT_PRUNED ? "pruned"
                                                                                       : "failed");
    cJSON_AddItemToArray(r->measurements, m);
}

/* Compare one output with the reference under the path's limits; a sentence in note if not. */
static bool output_ok(int64_t n, int64_t m, const float *y, const float *y_ref,
                      const qmm_path *path, char *note, size_t len) {
    qmm_diff d;
    if (qmm_compare(n, m, y, m, y_ref, m, &d) != QMM_OK) {
        snprintf(note, len, "qmm_compare: %s", qmm_last_error());
        return false;
    }
    if (qmm_diff_ok(&d, path->max_nmse, path->max_rel_err)) return true;
    snprintf(note, len, "vs reference: nmse %.3g (limit %.0e), max_rel %.3g (limit %.0e), %lld "
             "non-finite", d.nmse, path->max_nmse, d.max_rel_err, path->max_rel_err,
             (long long)d.n_nonfinite);
    return false;
}

/* Measure every candidate of one (type, shape) over the grid into *res. */
static void measure_shape(tune_run *r, qmm_type type, int si, shape_result *res) {
    const tune_opts *o = r->o;
    const bench_shape *sh = &o->shapes[si];
    qmm_context *ctx = r->ctx;
    const int64_t m = sh->m, k = sh->k, n_max = o->ns[o->n_ns - 1];
    const int copies = (int)o->copies;
    for (size_t i = 0; i < o->n_ns; i++)
        for (int c = 0; c < TUNE_CAND; c++) {
            res->t[i][c] = INFINITY;
            res->status[i][c] = PT_NONE;
        }
    size_t row_bytes = 0;
    qmm_row_bytes(type, k, &row_bytes);
    void *w_host = malloc(row_bytes * (size_t)m);
    float *x = malloc((size_t)n_max * (size_t)k * sizeof *x);
    float *y = malloc((size_t)n_max * (size_t)m * sizeof *y);
    float *y_ref = malloc((size_t)n_max * (size_t)m * sizeof *y_ref);
    qmm_weights *w[TUNE_CAND][TUNE_MAX_COPIES] = {{0}};
    bool failed[TUNE_CAND] = {false}, pruned[TUNE_CAND] = {false};
    char verified[TUNE_CAND][4][48] = {{{0}}};
    /* rounds of each candidate: o->reps, as many again at a noisy point, and up to
     * TUNE_CLOSE_SETS sets more at a near-tie (below) */
    const int64_t max_rounds = (2 + TUNE_CLOSE_SETS) * o->reps;
    double *ms = malloc((size_t)max_rounds * TUNE_CAND * sizeof *ms);
    double *tmp = malloc((size_t)max_rounds * sizeof *tmp);
    qmm_status st = w_host && x && y && y_ref && ms && tmp ? QMM_OK : QMM_ERR_OUT_OF_MEMORY;
    fill_rng rng;
    if (st == QMM_OK) {
        fill_rng_seed(&rng, seed_mix((uint64_t)o->seed, (uint64_t)type, (uint64_t)si));
        /* random valid blocks (cheap to make; the kernels' speed does not depend on the
         * values) and uniform X in [-1, 1) */
        st = fill_weights(&rng, FILL_BYTES, type, m, k, w_host);
        for (size_t e = 0; e < (size_t)n_max * (size_t)k; e++)
            x[e] = (float)((double)(fill_rng_next(&rng) >> 40) * 0x1p-23 - 1.0);
    }
    /* the candidates this type has, each with its own weights copies */
    for (int c = 0; c < TUNE_CAND && st == QMM_OK; c++) {
        st = qmm_weights_create(ctx, type, m, k, w_host, row_bytes, &w[c][0]);
        qmm_strategy got;
        if (st == QMM_OK) qmm_context_set_strategy(ctx, cand_strategy[c]);
        res->avail[c] = st == QMM_OK && qmm_matmul_strategy(ctx, w[c][0], 1, &got) == QMM_OK;
        for (int j = 1; j < copies && st == QMM_OK && res->avail[c]; j++)
            st = qmm_weights_create(ctx, type, m, k, w_host, row_bytes, &w[c][j]);
    }
    if (st != QMM_OK) {
        say(r, "qmm tune: %s %lldx%lld: %s: %s\n", qmm_type_name(type), (long long)m,
            (long long)k, qmm_status_str(st), qmm_last_error());
        r->n_failed++;
        goto out;
    }
    qmm_context_set_strategy(ctx, QMM_STRATEGY_AUTO);
    for (size_t i = 0; i < o->n_ns; i++) {
        qmm_strategy s;
        res->compiled[i] = qmm_matmul_strategy(ctx, w[0][0], o->ns[i], &s) == QMM_OK
                               ? cand_of(s) : -1;
    }
    for (size_t i = 0; i < o->n_ns; i++) {
        const int64_t n = o->ns[i];
        progress(r, type, sh, n);
        bool have_ref = false;
        int act[TUNE_CAND], n_act = 0;
        char kernel[TUNE_CAND][48];
        for (int c = 0; c < TUNE_CAND; c++) {
            kernel[c][0] = '\0';
            if (!res->avail[c]) continue;
            if (failed[c] || pruned[c]) {
                res->status[i][c] = failed[c] ? PT_FAILED : PT_PRUNED;
                add_measurement(r, type, sh, n, c, NULL, res->status[i][c], 0, 0);
                continue;
            }
            qmm_path path;
            qmm_context_set_strategy(ctx, cand_strategy[c]);
            st = qmm_matmul_path(ctx, w[c][0], n, &path);
            char note[512] = "";
            if (st == QMM_OK) snprintf(kernel[c], sizeof kernel[c], "%s", path.kernel);
            /* verify: --quick once per kernel and shape, else at every n */
            int slot = -1;
            for (int v = 0; v < 4 && st == QMM_OK; v++)
                if (strcmp(verified[c][v], kernel[c]) == 0) slot = v;
            if (st == QMM_OK && (slot < 0 || !o->quick)) {
                if (!have_ref) {
                    progress(r, type, sh, n);
                    st = verify_reference(type, m, k, w_host, row_bytes, n, x, y_ref, r->threads,
                                          note, sizeof note);
                    have_ref = st == QMM_OK;
                }
                for (int64_t e = 0; st == QMM_OK && e < n * m; e++) y[e] = NAN;
                if (st == QMM_OK) st = qmm_matmul(ctx, w[c][0], n, x, k, y, m);
                if (st == QMM_OK && !output_ok(n, m, y, y_ref, &path, note, sizeof note))
                    st = QMM_ERR_INTERNAL;
                for (int v = 0; v < 4 && st == QMM_OK; v++)
                    if (verified[c][v][0] == '\0') {
                        memcpy(verified[c][v], kernel[c], sizeof verified[c][v]);
                        break;
                    }
            }
            if (st != QMM_OK) {
                say(r, "qmm tune: FAIL %s %lldx%lld n=%lld %s (%s): %s%s%s\n",
                    qmm_type_name(type), (long long)m, (long long)k, (long long)n, cand_name[c],
                    kernel[c][0] ? kernel[c] : "?", note[0] ? note : qmm_status_str(st),
                    note[0] ? "" : ": ", note[0] ? "" : qmm_last_error());
                failed[c] = true;
                r->n_failed++;
                res->status[i][c] = PT_FAILED;
                add_measurement(r, type, sh, n, c, kernel[c], PT_FAILED, 0, 0);
                st = QMM_OK;
                continue;
            }
            act[n_act++] = c;
        }
        /* untimed calls: layouts made on first use, scratch grown for this n */
        for (int a = 0; a < n_act && st == QMM_OK; a++) {
            qmm_context_set_strategy(ctx, cand_strategy[act[a]]);
            for (int j = 0; j < (i == 0 ? copies : 1) && st == QMM_OK; j++)
                st = qmm_matmul(ctx, w[act[a]][j], n, x, k, y, m);
        }
        flush_caches(r);
        /* o->reps rounds; where a candidate's rounds spread more than TUNE_NOISY_SPREAD (a
         * burst of other work), o->reps more; then, while the two fastest candidates are within
         * TUNE_CLOSE_RATIO of each other, up to TUNE_CLOSE_SETS sets more. The median is taken
         * over all of them. */
        int64_t rounds = 0;
        bool close_counted = false;
        for (int pass = 0; pass < 2 + TUNE_CLOSE_SETS && st == QMM_OK; pass++) {
            if (pass > 0 && o->reps < 3) break;
            if (pass == 1) {
                bool noisy = false;
                for (int a = 0; a < n_act && !noisy; a++)
                    noisy = median_spread(&ms[(size_t)act[a] * (size_t)max_rounds], rounds, tmp,
                                          NULL) > TUNE_NOISY_SPREAD;
                if (!noisy) continue;
                r->n_retimed++;
                flush_caches(r); /* cold: W from memory again for the second set */
            } else if (pass > 1) {
                double b1 = INFINITY, b2 = INFINITY; /* the two fastest medians so far */
                for (int a = 0; a < n_act; a++) {
                    double med;
                    median_spread(&ms[(size_t)act[a] * (size_t)max_rounds], rounds, tmp, &med);
                    if (med < b1) {
                        b2 = b1;
                        b1 = med;
                    } else if (med < b2) {
                        b2 = med;
                    }
                }
                if (!(n_act >= 2 && b2 < TUNE_CLOSE_RATIO * b1)) break;
                if (!close_counted) r->n_close++;
                close_counted = true;
                flush_caches(r);
            }
            for (int64_t rep = rounds; rep < rounds + o->reps && st == QMM_OK; rep++)
                for (int a = 0; a < n_act && st == QMM_OK; a++) {
                    const int c = act[(a + rep) % n_act];
                    qmm_context_set_strategy(ctx, cand_strategy[c]);
                    double t = 0.0;
                    st = qmm_timer_begin(ctx);
                    if (st == QMM_OK) st = qmm_matmul(ctx, w[c][rep % copies], n, x, k, y, m);
                    qmm_status st2 = qmm_timer_end(ctx, &t);
                    if (st == QMM_OK) st = st2;
                    ms[(size_t)c * (size_t)max_rounds + (size_t)rep] = t;
                }
            rounds += o->reps;
        }
        if (st != QMM_OK) {
            say(r, "qmm tune: %s %lldx%lld n=%lld: qmm_matmul: %s: %s\n", qmm_type_name(type),
                (long long)m, (long long)k, (long long)n, qmm_status_str(st), qmm_last_error());
            r->n_failed++;
            goto out;
        }
        double best = INFINITY;
        for (int a = 0; a < n_act; a++) {
            const int c = act[a];
            /* the median over every round; the spread of the last set timed (a retimed or
             * near-tie point is judged noisy only if that set is too) */
            double med;
            const double *v = &ms[(size_t)c * (size_t)max_rounds];
            median_spread(v, rounds, tmp, &med);
            const double spread = median_spread(v + (rounds - o->reps), o->reps, tmp, NULL);
            res->t[i][c] = med;
            res->status[i][c] = PT_OK;
            r->n_points++;
            if (o->reps >= 3 && spread > TUNE_NOISY_SPREAD) r->n_noisy++;
            add_measurement(r, type, sh, n, c, kernel[c], PT_OK, med, spread);
            if (med < best) best = med;
        }
        if (res->status[i][TUNE_GEMV] == PT_OK && res->t[i][TUNE_GEMV] > 2.0 * best)
            pruned[TUNE_GEMV] = true;
    }
out:
    qmm_context_set_strategy(ctx, QMM_STRATEGY_AUTO);
    for (int c = 0; c < TUNE_CAND; c++)
        for (int j = 0; j < copies; j++) qmm_weights_free(w[c][j]);
    free(w_host);
    free(x);
    free(y);
    free(y_ref);
    free(ms);
    free(tmp);
}

/* ---------------------------------------------------------------------------------------
 * Rows, the file, the summary
 * ------------------------------------------------------------------------------------- */

static void rule_text(const tune_rule *r, char *buf, size_t len) {
    char i8[48], gv[32];
    if (r->int8_lo > r->int8_hi) snprintf(i8, sizeof i8, "never");
    else if (r->int8_hi >= TUNE_N_OPEN) snprintf(i8, sizeof i8, "%lld..", (long long)r->int8_lo);
    else snprintf(i8, sizeof i8, "%lld..%lld", (long long)r->int8_lo, (long long)r->int8_hi);
    if (r->gemv_max == 0) snprintf(gv, sizeof gv, "never");
    else if (r->gemv_max >= TUNE_N_OPEN) snprintf(gv, sizeof gv, "always");
    else snprintf(gv, sizeof gv, "<= %lld", (long long)r->gemv_max);
    snprintf(buf, len, "int8 %-8s gemv %-8s", i8, gv);
}

static cJSON *rule_json(qmm_type type, const tune_rule *r, const bench_shape *shape) {
    cJSON *j = cJSON_CreateObject();
    if (j == NULL) return NULL;
    cJSON_AddStringToObject(j, "type", qmm_type_name(type));
    if (shape != NULL) {
        const double mm[2] = {(double)shape->m, (double)shape->m};
        const double kk[2] = {(double)shape->k, (double)shape->k};
        cJSON_AddItemToObject(j, "m", cJSON_CreateDoubleArray(mm, 2));
        cJSON_AddItemToObject(j, "k", cJSON_CreateDoubleArray(kk, 2));
    }
    if (r->int8_lo > r->int8_hi) {
        cJSON_AddNullToObject(j, "int8_n");
    } else {
        const double v[2] = {(double)r->int8_lo, (double)r->int8_hi};
        cJSON_AddItemToObject(j, "int8_n", cJSON_CreateDoubleArray(v, 2));
    }
    cJSON_AddNumberToObject(j, "gemv_max_n", (double)r->gemv_max);
    return j;
}

static double load_average(void) {
    double l = 0.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf", &l) != 1) l = 0.0;
        fclose(f);
    }
    return l;
}

/* mkdir -p of the directory part of `path`. */
static bool make_parent_dirs(const char *path) {
    char *p = strdup(path);
    if (p == NULL) return false;
    bool ok = true;
    for (char *s = p + 1; *s && ok; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) ok = false;
        *s = '/';
    }
    free(p);
    return ok;
}

static char *join_args(int argc, char **argv) {
    size_t len = 4;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 3;
    char *s = malloc(len), *p = s;
    if (s == NULL) return NULL;
    p += sprintf(p, "qmm");
    for (int i = 0; i < argc; i++) p += sprintf(p, " %s", argv[i]);
    return s;
}

/* Write doc to `path` through a temporary file renamed into place (an old file stays whole
 * until the new one is complete). */
static bool write_file(const cJSON *doc, const char *path) {
    char *text = cJSON_Print(doc);
    if (text == NULL) {
        fprintf(stderr, "qmm tune: out of memory printing the JSON\n");
        return false;
    }
    const size_t len = strlen(path) + 32;
    char *tmp = malloc(len);
    bool ok = tmp != NULL;
    if (ok) snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
    FILE *f = ok ? fopen(tmp, "w") : NULL;
    if (f == NULL) {
        fprintf(stderr, "qmm tune: cannot write '%s': %s\n", tmp ? tmp : path, strerror(errno));
        ok = false;
    } else {
        ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
        ok = (fclose(f) == 0) && ok;
        if (ok && rename(tmp, path) != 0) ok = false;
        if (!ok) {
            fprintf(stderr, "qmm tune: writing '%s' failed: %s\n", path, strerror(errno));
            remove(tmp);
        }
    }
    free(tmp);
    free(text);
    return ok;
}

/* With the file applied (ctx), auto must choose what the rows say at every grid n and shape
 * (where the row's candidate runs for the type). False, with a message, if not. */
static bool check_choices(qmm_context *ctx, const tune_opts *o, const tune_rule *chosen,
                          const bool *has_rule, const char *file) {
    bool ok = true;
    for (int ti = 0; ti < o->n_types && ok; ti++) {
        if (!has_rule[ti]) continue;
        const qmm_type type = o->types[ti];
        for (int s = 0; s < o->n_shapes && ok; s++) {
            const bench_shape *sh = &o->shapes[s];
            size_t row_bytes = 0;
            qmm_row_bytes(type, sh->k, &row_bytes);
            void *w_host = malloc(row_bytes * (size_t)sh->m);
            qmm_weights *w = NULL;
            if (w_host == NULL ||
                qmm_random_rows(type, 1, 1.0, w_host, sh->m, sh->k) != QMM_OK ||
                qmm_weights_create(ctx, type, sh->m, sh->k, w_host, row_bytes, &w) != QMM_OK) {
                fprintf(stderr, "qmm tune: checking the file: %s\n", qmm_last_error());
                ok = false;
            }
            const tune_rule *rule = &chosen[(size_t)ti * (size_t)o->n_shapes + (size_t)s];
            for (size_t i = 0; i < o->n_ns && ok; i++) {
                qmm_path pa;
                if (qmm_matmul_path(ctx, w, o->ns[i], &pa) != QMM_OK) {
                    fprintf(stderr, "qmm tune: checking the file: %s\n", qmm_last_error());
                    ok = false;
                    break;
                }
                const int want = tune_rule_choice(rule, o->ns[i]);
                const bool from_file =
                    pa.auto_table != NULL && strstr(pa.auto_table, file) != NULL;
                if (pa.strategy != cand_strategy[want] || !from_file) {
                    fprintf(stderr, "qmm tune: with %s applied, auto takes %s (%s) for %s "
                                    "%lldx%lld n=%lld; the row says %s\n", file,
                            qmm_strategy_name(pa.strategy),
                            pa.auto_table ? pa.auto_table : "?", qmm_type_name(type),
                            (long long)sh->m, (long long)sh->k, (long long)o->ns[i],
                            cand_name[want]);
                    ok = false;
                }
            }
            qmm_weights_free(w);
            free(w_host);
        }
    }
    return ok;
}

int qmm_cmd_tune(int argc, char **argv) {
    opt_command = "qmm tune";
    tune_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 0) {
        free(o.ns);
        free(o.shapes);
        return pr == 1 ? 0 : 2;
    }
    int rc = 0;
    tune_run r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.t_start = sysinfo_now();
    r.tty = isatty(2);
    char *cmdline = join_args(argc, argv);
    cJSON *doc = NULL, *rows = NULL, *warnings = NULL;
    shape_result *res = NULL;
    double *t = NULL;
    tune_rule *chosen = NULL;   /* [type][shape]: the row each shape gets */
    bool *has_rule = NULL;      /* [type] */
    char out_path[4096];

    if (strcmp(o.backend, "cpu") != 0) {
        fprintf(stderr, "qmm tune: --backend %s: not yet implemented (tuning files are made and "
                        "read for the cpu backend only)\n", o.backend);
        rc = 1;
        goto done;
    }
    qmm_context_params p = qmm_context_default_params();
    p.n_threads = (int)o.threads;
    p.tune_file = ""; /* measure without a tuning file; the compiled-in table for comparison */
    qmm_status st = qmm_context_create(&p, &r.ctx);
    if (st != QMM_OK) {
        fprintf(stderr, "qmm tune: cannot create a cpu context: %s: %s\n", qmm_status_str(st),
                qmm_last_error());
        rc = 1;
        goto done;
    }
    qmm_tuning_info id;
    qmm_context_tuning(r.ctx, &id);
    r.threads = id.threads;
    if (o.out != NULL) {
        snprintf(out_path, sizeof out_path, "%s", o.out);
    } else if (id.default_path[0] == '\0') {
        fprintf(stderr, "qmm tune: no default location (neither XDG_CACHE_HOME nor HOME is "
                        "set): give --out FILE\n");
        rc = 1;
        goto done;
    } else {
        snprintf(out_path, sizeof out_path, "%s", id.default_path);
        if (!make_parent_dirs(out_path)) {
            fprintf(stderr, "qmm tune: cannot create the directory of '%s': %s\n", out_path,
                    strerror(errno));
            rc = 1;
            goto done;
        }
    }
    { /* fail now, not after the run, when the file cannot be written */
        char *dir = strdup(out_path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        const char *d = slash == NULL ? "." : slash == dir ? "/" : (*slash = '\0', dir);
        const bool w_ok = dir != NULL && access(d, W_OK) == 0;
        if (!w_ok)
            fprintf(stderr, "qmm tune: --out '%s': cannot write in '%s': %s\n", out_path, d,
                    strerror(errno));
        free(dir);
        if (!w_ok) {
            rc = 1;
            goto done;
        }
    }
    if (o.cold) {
        const size_t llc = sysinfo_llc_bytes();
        size_t sb = 2 * llc;
        if (sb < ((size_t)64 << 20)) sb = (size_t)64 << 20;
        if (sb > ((size_t)1 << 30)) sb = (size_t)1 << 30;
        r.stream = sysinfo_stream_buffer_alloc(sb, r.threads);
        r.stream_bytes = r.stream ? sb : 0;
    }

    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const double load_before = load_average();
    doc = cJSON_CreateObject();
    r.measurements = cJSON_CreateArray();
    rows = cJSON_CreateArray();
    warnings = cJSON_CreateArray();
    res = calloc((size_t)o.n_shapes, sizeof *res);
    t = malloc((size_t)o.n_shapes * o.n_ns * TUNE_CAND * sizeof *t);
    chosen = calloc((size_t)o.n_types * (size_t)o.n_shapes, sizeof *chosen);
    has_rule = calloc((size_t)o.n_types, sizeof *has_rule);
    if (doc == NULL || r.measurements == NULL || rows == NULL || warnings == NULL || res == NULL ||
        t == NULL || chosen == NULL || has_rule == NULL) {
        fprintf(stderr, "qmm tune: out of memory\n");
        rc = 1;
        goto done;
    }
    char warn[512];
    if (cpus > 0 && load_before > 0.5 * (double)cpus) {
        snprintf(warn, sizeof warn, "load average %.2f on %ld CPUs before the run: other work "
                 "competes for the cores, the crossovers may be wrong", load_before, cpus);
        cJSON_AddItemToArray(warnings, cJSON_CreateString(warn));
        fprintf(stderr, "qmm tune: warning: %s\n", warn);
    }

    char ns_text[512] = "";
    for (size_t i = 0, used = 0; i < o.n_ns && used < sizeof ns_text - 24; i++)
        used += (size_t)snprintf(ns_text + used, sizeof ns_text - used, "%s%lld", i ? "," : "",
                                 (long long)o.ns[i]);
    printf("qmm %s tune: %s, isa %s, %d threads (machine id %s)\n", qmm_version(), id.device,
           id.level, id.threads, id.machine_id);
    printf("method: %d shapes, n %s, %lld interleaved rounds per point (median), W in %lld "
           "cop%s per strategy%s; every candidate verified first\n", o.n_shapes, ns_text,
           (long long)o.reps, (long long)o.copies, o.copies == 1 ? "y" : "ies",
           o.cold ? ", caches flushed before each point" : " (not flushed: quick)");
    printf("\n%-8s %-31s %-22s %s\n", "type", "auto row (else fused)", "worst vs best (tuned)",
           "compiled-in worst");

    double weight[64];
    for (int s = 0; s < o.n_shapes; s++) weight[s] = (double)o.shapes[s].count;
    const uint64_t all = o.n_shapes >= 64 ? ~0ull : ((1ull << o.n_shapes) - 1);
    for (int ti = 0; ti < o.n_types; ti++) {
        const qmm_type type = o.types[ti];
        r.type_index = ti;
        for (int s = 0; s < o.n_shapes; s++) measure_shape(&r, type, s, &res[s]);
        bool int8_ok = true;
        for (int s = 0; s < o.n_shapes; s++) int8_ok = int8_ok && res[s].avail[TUNE_INT8];
        for (int s = 0; s < o.n_shapes; s++)
            for (size_t i = 0; i < o.n_ns; i++)
                for (int c = 0; c < TUNE_CAND; c++)
                    t[((size_t)s * o.n_ns + i) * TUNE_CAND + (size_t)c] =
                        c == TUNE_INT8 && !int8_ok ? INFINITY : res[s].t[i][c];
        const tune_data d = {.ns = o.ns, .n_ns = (int)o.n_ns, .n_shapes = o.n_shapes,
                             .weight = weight, .t = t, .int8_ok = int8_ok};
        tune_rule rule;
        progress_clear(&r);
        if (!tune_fit(&d, all, &rule)) {
            printf("%-8s (no row: nothing was measured at some n)\n", qmm_type_name(type));
            continue;
        }
        /* shapes where the shared row loses more than the slack get their own row */
        double worst = 1.0, compiled_worst = 1.0;
        cJSON *shape_rows[64];
        int n_shape_rows = 0;
        char text[96], shape_text[4096] = "";
        size_t shape_used = 0;
        for (int s = 0; s < o.n_shapes; s++) {
            tune_rule own = rule;
            const double w_shared = tune_rule_worst(&d, &rule, s);
            double w_s = w_shared;
            chosen[(size_t)ti * (size_t)o.n_shapes + (size_t)s] = rule;
            if (w_shared > TUNE_SHAPE_SLACK && tune_fit(&d, 1ull << s, &own) &&
                tune_rule_loss(&d, &own, 1ull << s) < tune_rule_loss(&d, &rule, 1ull << s) &&
                memcmp(&own, &rule, sizeof own) != 0) {
                chosen[(size_t)ti * (size_t)o.n_shapes + (size_t)s] = own;
                shape_rows[n_shape_rows++] = rule_json(type, &own, &o.shapes[s]);
                w_s = tune_rule_worst(&d, &own, s);
                rule_text(&own, text, sizeof text);
                if (shape_used < sizeof shape_text)
                    shape_used += (size_t)snprintf(
                        shape_text + shape_used, sizeof shape_text - shape_used,
                        "  %lldx%lld: own row %s (worst %.2fx; with the shared row %.2fx)\n",
                        (long long)o.shapes[s].m, (long long)o.shapes[s].k, text, w_s, w_shared);
            }
            if (w_s > worst) worst = w_s;
            for (size_t i = 0; i < o.n_ns; i++) {
                const int c = res[s].compiled[i];
                double best = INFINITY;
                for (int q = 0; q < TUNE_CAND; q++)
                    if (res[s].t[i][q] < best) best = res[s].t[i][q];
                if (c >= 0 && isfinite(best) && best > 0) {
                    const double ratio = res[s].t[i][c] / best;
                    if (ratio > compiled_worst) compiled_worst = ratio;
                }
            }
        }
        has_rule[ti] = true;
        for (int q = 0; q < n_shape_rows; q++) cJSON_AddItemToArray(rows, shape_rows[q]);
        cJSON_AddItemToArray(rows, rule_json(type, &rule, NULL));
        rule_text(&rule, text, sizeof text);
        printf("%-8s %-31s %-22.2f %.2f%s\n%s", qmm_type_name(type), text, worst, compiled_worst,
               isfinite(compiled_worst) ? "" : " (it picks a path pruned as too slow)",
               shape_text);
        fflush(stdout);
    }
    progress_clear(&r);
    if (r.n_close > 0)
        printf("\n%d (type, shape, n) points were near-ties (the two fastest within %.2fx) and "
               "got up to %d more sets of rounds\n", r.n_close, TUNE_CLOSE_RATIO, TUNE_CLOSE_SETS);
    const double load_after = load_average();
    fflush(stdout);
    if (r.n_noisy > 0) {
        snprintf(warn, sizeof warn, "%d of %d points varied by more than %.0f%% between rounds "
                 "(a busy machine?) in their last set of rounds; %d (type, shape, n) points were "
                 "timed with a second set: run again on a quiet machine", r.n_noisy, r.n_points,
                 100.0 * TUNE_NOISY_SPREAD, r.n_retimed);
        cJSON_AddItemToArray(warnings, cJSON_CreateString(warn));
        fprintf(stderr, "qmm tune: warning: %s\n", warn);
    }
    if (cpus > 0 && load_after > 0.5 * (double)cpus + (double)r.threads) {
        snprintf(warn, sizeof warn, "load average %.2f on %ld CPUs after the run (this run adds "
                 "up to %d)", load_after, cpus, r.threads);
        cJSON_AddItemToArray(warnings, cJSON_CreateString(warn));
        fprintf(stderr, "qmm tune: warning: %s\n", warn);
    }
    if (r.n_failed > 0) rc = 1;

    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char features[512];
    sysinfo_cpu_features(features, sizeof features);
    cJSON_AddStringToObject(doc, "format", "qmm-tune");
    cJSON_AddNumberToObject(doc, "format_version", 1);
    cJSON_AddStringToObject(doc, "qmm_version", qmm_version());
    cJSON_AddStringToObject(doc, "backend", "cpu");
    cJSON *mach = cJSON_AddObjectToObject(doc, "machine");
    if (mach != NULL) {
        cJSON_AddStringToObject(mach, "id", id.machine_id);
        cJSON_AddStringToObject(mach, "cpu", id.device);
        cJSON_AddStringToObject(mach, "isa", id.level);
        cJSON_AddNumberToObject(mach, "threads", id.threads);
        cJSON_AddStringToObject(mach, "features", features);
    }
    cJSON_AddStringToObject(doc, "created", date);
    cJSON_AddStringToObject(doc, "command", cmdline ? cmdline : "qmm tune");
    cJSON *method = cJSON_AddObjectToObject(doc, "method");
    if (method != NULL) {
        double nv[64];
        for (size_t i = 0; i < o.n_ns; i++) nv[i] = (double)o.ns[i];
        cJSON_AddBoolToObject(method, "quick", o.quick);
        cJSON_AddNumberToObject(method, "reps", (double)o.reps);
        cJSON_AddItemToObject(method, "n", cJSON_CreateDoubleArray(nv, (int)o.n_ns));
        cJSON *shapes = cJSON_AddArrayToObject(method, "shapes");
        for (int s = 0; shapes && s < o.n_shapes; s++) {
            const double v[3] = {(double)o.shapes[s].m, (double)o.shapes[s].k,
                                 (double)o.shapes[s].count};
            cJSON_AddItemToArray(shapes, cJSON_CreateDoubleArray(v, 3));
        }
        cJSON_AddNumberToObject(method, "copies", (double)o.copies);
        cJSON_AddBoolToObject(method, "cold", o.cold);
        cJSON_AddNumberToObject(method, "seconds", sysinfo_now() - r.t_start);
        cJSON_AddNumberToObject(method, "seed", (double)o.seed);
        const char *cands[TUNE_CAND] = {cand_name[0], cand_name[1], cand_name[2]};
        cJSON_AddItemToObject(method, "candidates", cJSON_CreateStringArray(cands, TUNE_CAND));
    }
    const double ldv[2] = {load_before, load_after};
    cJSON_AddItemToObject(doc, "load_average", cJSON_CreateDoubleArray(ldv, 2));
    cJSON_AddItemToObject(doc, "warnings", warnings);
    cJSON_AddItemToObject(doc, "rows", rows);
    cJSON_AddItemToObject(doc, "measurements", r.measurements);
    warnings = rows = r.measurements = NULL; /* doc owns them */
    if (!write_file(doc, out_path)) {
        rc = 1;
        goto done;
    }
    /* The library must take the file as written, and choose as the rows say. */
    qmm_context *check = NULL;
    p.tune_file = out_path;
    st = qmm_context_create(&p, &check);
    qmm_tuning_info got;
    if (st == QMM_OK) qmm_context_tuning(check, &got);
    if (st != QMM_OK || got.state != QMM_TUNING_APPLIED) {
        fprintf(stderr, "qmm tune: the library does not apply the file it wrote (%s): %s\n",
                out_path, st != QMM_OK ? qmm_last_error() : got.reason);
        rc = 1;
    } else if (!check_choices(check, &o, chosen, has_rule, out_path)) {
        rc = 1;
    } else {
        printf("\nwrote %s (%d rows; %.0f s)\n", out_path, got.n_rows, sysinfo_now() - r.t_start);
    }
    qmm_context_free(check);
done:
    progress_clear(&r);
    cJSON_Delete(doc);
    cJSON_Delete(rows);
    cJSON_Delete(warnings);
    cJSON_Delete(r.measurements);
    free(chosen);
    free(has_rule);
    qmm_context_free(r.ctx);
    free(r.stream);
    free(res);
    free(t);
    free(cmdline);
    free(o.ns);
    free(o.shapes);
    return rc;
}
