/*
 * candidate_wgsl.c — the WebGPU part of `qmm bench --candidate FILE.wgsl` (candidate.h,
 * docs/BENCH.md "Candidate kernels").
 *
 * 1. A WebGPU context (own device); the fused geometry from the environment and flags,
 *    checked by the library against the kernel and the adapter (a refusal is exit 2); the
 *    types: those asked for (one without a WGSL decoder is exit 2) or every type the backend
 *    has.
 * 2. Before anything runs: FILE is compiled for every type exactly as the production kernel
 *    is (qmm_wgpu_source: the file, the geometry constants, common.wgsl, the type's decoder)
 *    into a pipeline with the production layout; a WGSL error prints wgpu's message (line and
 *    column in FILE: it comes first in the module) and the run stops with exit 1.
 * 3. Per (type, shape, n): W (bench fill, seeded) as qmm_weights copies, shared by both
 *    kernels; X copies; outputs poisoned with NaN between guard bytes. Production runs through
 *    qmm_matmul (strategy fused, or gemv with --kernel gemv), the candidate through the same
 *    dispatch (qmm_wgpu_run: same grid, bind groups, parameters). Both WHOLE outputs are
 *    downloaded and compared (candidate_diff.c).
 * 4. Timing: for each, regions of back-to-back calls between qmm_timer_begin/end (timestamp
 *    queries around each compute pass) after a warm-up of such regions (gpu_regions.h),
 *    median per-call time over `iters` regions; W, X, Y rotated through copies of at least
 *    128 MiB. The last timed output of each must equal its verified one (determinism).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "candidate_diff.h"
#include "gpu_regions.h"
#include "qmm_webgpu.h"

#ifdef QMM_WITH_WEBGPU

#include "webgpu/webgpu_internal.h"

#define CAND_ROTATE_BYTES ((size_t)128 << 20)
#define CAND_MAX_COPIES 64

static bool q_ok(qmm_status st, const char *what) {
    if (st == QMM_OK) return true;
    fprintf(stderr, "qmm bench: --candidate: %s: %s: %s\n", what, qmm_status_str(st), qmm_last_error());
    return false;
}

typedef struct wgsl_env {
    const candidate_opts *o;
    qmm_context *ctx;
    qmm_wgpu_kernel kernel;
    int wg_m, wg_n, tile_k;
} wgsl_env;

/* Compile the candidate for `type`; false with wgpu's message printed. */
static bool compile(const wgsl_env *env, qmm_type type, WGPUComputePipeline *out) {
    char *src = qmm_wgpu_source(env->o->source, env->kernel, type, env->wg_m, env->wg_n, env->tile_k);
    if (src == NULL) {
        fprintf(stderr, "qmm bench: --candidate: no WGSL decoder for %s\n", qmm_type_name(type));
        return false;
    }
    char what[160], *log = NULL;
    snprintf(what, sizeof what, "compiling '%s' for %s", env->o->path, qmm_type_name(type));
    const qmm_status st = qmm_wgpu_compile(qmm_wgpu_ctx(env->ctx), src, what, out, &log);
    free(src);
    if (st != QMM_OK) {
        fprintf(stderr, "qmm bench: --candidate: '%s' does not compile for %s (the file comes first "
                        "in the module: line numbers are its own):\n%s\n", env->o->path,
                qmm_type_name(type), log ? log : qmm_last_error());
        free(log);
        return false;
    }
    free(log);
    return true;
}

/* One run of the candidate with the production dispatch. */
static qmm_status run_candidate(const wgsl_env *env, WGPUComputePipeline pl, const qmm_weights *w,
                                int64_t n, const float *x, int64_t k, float *y, int64_t m) {
    return qmm_wgpu_run(env->ctx, w, env->kernel, pl, env->wg_m, env->wg_n, n, x, k, y, m);
}

/* One call of production (qmm_matmul) or of the candidate on copy c, for gpu_regions_time. */
typedef struct cand_call_arg {
    const wgsl_env *env;
    WGPUComputePipeline pl;
    qmm_weights **w;
    void **x, **y;
    int64_t n, k, m;
    bool production;
} cand_call_arg;

static qmm_status cand_call(void *arg, int c) {
    const cand_call_arg *a = arg;
    if (a->production) return qmm_matmul(a->env->ctx, a->w[c], a->n, a->x[c], a->k, a->y[c], a->m);
    return run_candidate(a->env, a->pl, a->w[c], a->n, a->x[c], a->k, a->y[c], a->m);
}

/* Returns false on a runtime error that ends the whole run. */
static bool run_case(const wgsl_env *env, qmm_type type, WGPUComputePipeline pl, const bench_shape *sh,
                     int shape_index, int64_t n, cand_result *res) {
    const candidate_opts *o = env->o;
    qmm_context *ctx = env->ctx;
    const int64_t m = sh->m, k = sh->k;
    memset(res, 0, sizeof *res);
    size_t row_bytes = 0;
    if (!q_ok(qmm_row_bytes(type, k, &row_bytes), "qmm_row_bytes")) return false;
    const size_t w_bytes = row_bytes * (size_t)m, x_bytes = (size_t)n * (size_t)k * sizeof(float);
    const size_t y_bytes = (size_t)n * (size_t)m * sizeof(float);
    const size_t g_bytes = y_bytes + 2 * CAND_GUARD_BYTES;
    size_t cover = (CAND_ROTATE_BYTES + w_bytes + x_bytes + 2 * y_bytes - 1) / (w_bytes + x_bytes + 2 * y_bytes);
    const int copies = cover > CAND_MAX_COPIES ? CAND_MAX_COPIES : cover < 1 ? 1 : (int)cover;
    void *w_host = malloc(w_bytes);
    float *x_host = malloc(x_bytes), *y_last = malloc(y_bytes);
    uint8_t *gp_host = malloc(g_bytes), *gc_host = malloc(g_bytes), *g_init = malloc(g_bytes);
    double *ms = malloc((size_t)o->iters * sizeof *ms);
    qmm_weights *wq[CAND_MAX_COPIES] = {0};
    void *xd[CAND_MAX_COPIES] = {0}, *ypd[CAND_MAX_COPIES] = {0}, *ycd[CAND_MAX_COPIES] = {0};
    uint8_t *gp = NULL, *gc = NULL;
    bool ok = w_host && x_host && gp_host && gc_host && g_init && y_last && ms;
    if (!ok) fprintf(stderr, "qmm bench: --candidate: out of host memory\n");
    fill_rng rng;
    if (ok) {
        fill_rng_seed(&rng, cand_mix((uint64_t)o->seed, 1, (uint64_t)type, (uint64_t)shape_index));
        ok = q_ok(fill_weights(&rng, o->fill, type, m, k, w_host), "making weights");
    }
    if (ok) {
        fill_rng_seed(&rng, cand_mix((uint64_t)o->seed, 2, (uint64_t)k, (uint64_t)n));
        fill_normal(&rng, x_host, (size_t)n * (size_t)k);
        cand_image_init(g_init, g_bytes);
    }
    for (int c = 0; c < copies && ok; c++)
        ok = q_ok(qmm_weights_create(ctx, type, m, k, w_host, row_bytes, &wq[c]), "qmm_weights_create") &&
             q_ok(qmm_buffer_alloc(ctx, x_bytes, &xd[c]), "qmm_buffer_alloc(X)") &&
             q_ok(qmm_buffer_upload(ctx, xd[c], x_host, x_bytes), "qmm_buffer_upload(X)") &&
             q_ok(qmm_buffer_alloc(ctx, y_bytes, &ypd[c]), "qmm_buffer_alloc(Y)") &&
             q_ok(qmm_buffer_alloc(ctx, y_bytes, &ycd[c]), "qmm_buffer_alloc(Y)");
    if (ok)
        ok = q_ok(qmm_buffer_alloc(ctx, g_bytes, (void **)&gp), "qmm_buffer_alloc(Y)") &&
             q_ok(qmm_buffer_alloc(ctx, g_bytes, (void **)&gc), "qmm_buffer_alloc(Y)") &&
             q_ok(qmm_buffer_upload(ctx, gp, g_init, g_bytes), "poisoning Y") &&
             q_ok(qmm_buffer_upload(ctx, gc, g_init, g_bytes), "poisoning Y");
    /* verification: copy 0 of W and X, guarded outputs */
    if (ok)
        ok = q_ok(qmm_matmul(ctx, wq[0], n, xd[0], k, (float *)(gp + CAND_GUARD_BYTES), m),
                  "qmm_matmul (production)") &&
             q_ok(run_candidate(env, pl, wq[0], n, xd[0], k, (float *)(gc + CAND_GUARD_BYTES), m),
                  "running the candidate") &&
             q_ok(qmm_buffer_download(ctx, gp_host, gp, g_bytes), "reading Y") &&
             q_ok(qmm_buffer_download(ctx, gc_host, gc, g_bytes), "reading Y");
    if (ok) cand_compare(o->has_tolerance, o->tolerance, gp_host, gc_host, n, m, res);
    /* timing: production, then the candidate, each on the rotated copies, in regions of
     * back-to-back calls (gpu_regions.h) */
    for (int which = 0; which < 2 && ok; which++) {
        cand_call_arg a = {env, pl, wq, xd, which == 0 ? ypd : ycd, n, k, m, which == 0};
        gpu_regions_info gi;
        ok = q_ok(gpu_regions_time(ctx, cand_call, &a, copies, o->warmup, o->iters, ms, &gi),
                  which == 0 ? "timing production" : "timing the candidate");
        if (!ok) break;
        const int last = gi.last;
        if (!gi.settled) {
            char why[160];
            gpu_regions_unsettled(why, sizeof why, &gi);
            fprintf(stderr, "qmm bench: --candidate: warning: %s %lldx%lld n=%lld, %s: %s\n",
                    qmm_type_name(type), (long long)m, (long long)k, (long long)n,
                    which == 0 ? "production" : "the candidate", why);
        }
        if (which == 0) res->prod_us = cand_median_us(ms, o->iters);
        else res->cand_us = cand_median_us(ms, o->iters);
        ok = q_ok(qmm_buffer_download(ctx, y_last, which == 0 ? ypd[last] : ycd[last], y_bytes), "reading Y");
        const uint8_t *ref = (which == 0 ? gp_host : gc_host) + CAND_GUARD_BYTES;
        if (ok && res->pass && memcmp(y_last, ref, y_bytes) != 0) {
            res->pass = false;
            snprintf(res->note, sizeof res->note, "%s is not deterministic: a timed call's output "
                     "differs from the verified one (same inputs)", which == 0 ? "production" : "the candidate");
        }
    }
    for (int c = 0; c < copies; c++) {
        qmm_weights_free(wq[c]);
        qmm_buffer_free(ctx, xd[c]);
        qmm_buffer_free(ctx, ypd[c]);
        qmm_buffer_free(ctx, ycd[c]);
    }
    qmm_buffer_free(ctx, gp);
    qmm_buffer_free(ctx, gc);
    free(w_host);
    free(x_host);
    free(gp_host);
    free(gc_host);
    free(g_init);
    free(y_last);
    free(ms);
    if (!ok && res->note[0] == '\0') snprintf(res->note, sizeof res->note, "runtime error (above)");
    return ok;
}

int candidate_wgsl_run(const candidate_opts *o) {
    if (qmm_backend_check(QMM_BACKEND_WEBGPU) != QMM_OK) {
        fprintf(stderr, "qmm bench: --candidate: the WebGPU backend is not available: %s\n", qmm_last_error());
        return 1;
    }
    wgsl_env env;
    memset(&env, 0, sizeof env);
    env.o = o;
    env.kernel = o->gemv ? QMM_WGPU_KERNEL_GEMV : QMM_WGPU_KERNEL_FUSED;
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_WEBGPU;
    p.strategy = o->gemv ? QMM_STRATEGY_GEMV : QMM_STRATEGY_FUSED;
    p.webgpu_shader_checks = o->shader_checks;
    if (!q_ok(qmm_context_create(&p, &env.ctx), "creating the WebGPU context")) return 1;
    int rc = 1;
    WGPUComputePipeline pl[QMM_TYPE_COUNT] = {0};
    qmm_type types[QMM_TYPE_COUNT];
    int n_types = 0;
    cJSON *doc = NULL, *rows = NULL;
    if (!webgpu_geometry_apply(env.ctx, &o->geom)) {
        rc = 2;
        goto out;
    }
    qmm_webgpu_get_fused_geometry(env.ctx, &env.wg_m, &env.wg_n, &env.tile_k);
    /* production at the candidate's geometry on every call: set it explicitly, so that the
     * library's per-call TILE_K rule (src/webgpu/auto_table.c) does not apply */
    if (qmm_webgpu_set_fused_geometry(env.ctx, env.wg_m, env.wg_n, env.tile_k) != QMM_OK) {
        fprintf(stderr, "qmm bench: %s\n", qmm_last_error());
        rc = 2;
        goto out;
    }
    for (int t = 0; t < o->n_types; t++) {
        if (qmm_wgpu_has_type(o->types[t])) types[n_types++] = o->types[t];
        else if (o->types_given) {
            fprintf(stderr, "qmm bench: --candidate: the WebGPU backend has no WGSL decoder for %s "
                            "(docs/WEBGPU.md lists its types)\n", qmm_type_name(o->types[t]));
            rc = 2;
            goto out;
        }
    }
    /* compile for every type before anything runs */
    for (int t = 0; t < n_types; t++)
        if (!compile(&env, types[t], &pl[t])) goto out;

    char device[1024];
    webgpu_describe(env.ctx, device, sizeof device);
    printf("# qmm bench --candidate %s (WebGPU, compared with the production %s kernel)\n", o->path,
           o->gemv ? "gemv" : "fused");
    printf("# device %s\n# verdict: %s\n", device,
           o->has_tolerance ? "max|diff|/max|y_prod| <= tolerance, all finite" : "bit-identical, all finite");
    printf("# times: per-call median over %lld regions of up to %d back-to-back calls (about %.0f ms "
           "each) after a warm-up of such regions (at least %lld calls; if that is > 0, at least %.0f "
           "ms, until %d in a row agree within %.0f%%, at most %.0f ms), GPU timestamp queries around "
           "each compute pass, W/X/Y rotated through 128 MiB\n", (long long)o->iters,
           GPU_REGION_MAX_CALLS, GPU_REGION_MS, (long long)o->warmup, GPU_WARM_MS, GPU_WARM_STABLE,
           100.0 * GPU_WARM_SPREAD, GPU_WARM_MAX_MS);
    const long g1 = o->gemv ? QMM_WGPU_GEMV_ROWS : env.wg_m, g2 = o->gemv ? QMM_WGPU_GEMV_LANES : env.wg_n;
    cand_print_columns(o->gemv ? "rows" : "wg_m", o->gemv ? "lanes" : "wg_n");
    doc = cJSON_CreateObject();
    if (doc != NULL) {
        cJSON *h = cJSON_AddObjectToObject(doc, "header");
        if (h != NULL) {
            qmm_webgpu_info info;
            qmm_webgpu_get_info(env.ctx, &info);
            cJSON_AddStringToObject(h, "qmm_version", qmm_version());
            cJSON_AddStringToObject(h, "command_line", o->command_line ? o->command_line : "");
            cJSON_AddStringToObject(h, "candidate", o->path);
            cJSON_AddStringToObject(h, "backend", "webgpu");
            cJSON_AddStringToObject(h, "production_kernel", o->gemv ? "gemv_wgsl" : "fused_regtile_wgsl");
            cJSON_AddStringToObject(h, "device", info.adapter);
            cJSON_AddStringToObject(h, "backend_api", info.backend_api);
            cJSON_AddStringToObject(h, "driver", info.driver);
            cJSON_AddStringToObject(h, "device_line", device);
            cJSON_AddNumberToObject(h, "wg_m", env.wg_m);
            cJSON_AddNumberToObject(h, "wg_n", env.wg_n);
            cJSON_AddNumberToObject(h, "tile_k", env.tile_k);
            if (o->has_tolerance) cJSON_AddNumberToObject(h, "tolerance", o->tolerance);
            else cJSON_AddNullToObject(h, "tolerance");
            cJSON_AddNumberToObject(h, "iters", (double)o->iters);
            cJSON_AddNumberToObject(h, "warmup", (double)o->warmup);
            cJSON_AddNumberToObject(h, "seed", (double)o->seed);
            cJSON_AddStringToObject(h, "fill", o->fill == FILL_BYTES ? "bytes" : "quantized");
        }
        rows = cJSON_AddArrayToObject(doc, "rows");
    }
    bool all_pass = true, alive = true;
    for (int t = 0; t < n_types && alive; t++)
        for (int s = 0; s < o->n_shapes && alive; s++)
            for (size_t i = 0; i < o->n_ns && alive; i++) {
                cand_result r;
                alive = run_case(&env, types[t], pl[t], &o->shapes[s], s, o->ns[i], &r);
                all_pass &= r.pass && alive;
                cand_print_row(types[t], &o->shapes[s], o->ns[i], g1, g2, &r);
                cJSON *j = rows ? cand_json_row(rows, types[t], &o->shapes[s], o->ns[i], &r) : NULL;
                if (j) {
                    cJSON_AddStringToObject(j, "kernel", o->gemv ? "gemv" : "fused");
                    cJSON_AddNumberToObject(j, "wg_m", env.wg_m);
                    cJSON_AddNumberToObject(j, "wg_n", env.wg_n);
                    cJSON_AddNumberToObject(j, "tile_k", env.tile_k);
                }
            }
    if (!alive) printf("\nstopped: a runtime error ended the run (message above)\n");
    else if (!all_pass) printf("\nFAILED: the candidate does not match production on every row\n");
    rc = all_pass && alive ? 0 : 1;
    if (o->json_path && doc && !cand_write_json(o->json_path, doc)) rc = 1;
out:
    cJSON_Delete(doc);
    for (int t = 0; t < n_types; t++)
        if (pl[t]) W.wgpuComputePipelineRelease(pl[t]);
    qmm_context_free(env.ctx);
    return rc;
}

#else

int candidate_wgsl_run(const candidate_opts *o) {
    (void)o;
    fprintf(stderr, "qmm bench: --candidate: this qmm was built without the WebGPU backend (run "
                    "scripts/deps.sh, then configure with -DQMM_WEBGPU=ON)\n");
    return 1;
}

#endif
