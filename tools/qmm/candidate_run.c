/*
 * candidate_run.c — the GPU part of `qmm bench --candidate` (candidate.h, docs/BENCH.md).
 *
 * 1. No CUDA device: the candidate is still compiled (for sm_90a, every type asked for), so a
 *    compile error shows its NVRTC log anywhere; then the run stops with exit 1.
 * 2. Before anything runs: for every type, compile for the device's architecture, load the
 *    cubin with the runtime library API (cudaLibraryLoadData, cudaLibraryGetKernel,
 *    cudaLibraryGetGlobal: only cudart and nvrtc are linked, not libcuda), read the
 *    declared geometries (qmm_candidate_geometry), check each entry, pick the one the flags
 *    or environment ask for (it must be declared: a geometry the kernel does not declare is
 *    an error, never run), check it against the kernel's own limit (cudaFuncGetAttributes
 *    maxThreadsPerBlock, from __launch_bounds__ and registers) and check every shape's grid.
 * 3. Per (type, shape, n): W (bench fill, seeded) uploaded twice from the same host bytes:
 *    as a qmm_weights for production (qmm_matmul, strategy gemv, on a context given this
 *    tool's stream) and with qmm_buffer_alloc/qmm_buffer_upload for the candidate; the same
 *    X buffer for both. Outputs are poisoned with NaN and surrounded by guard bytes; both
 *    WHOLE outputs are downloaded and compared: bit-identical required (or within
 *    --tolerance: max|diff| / max|y_prod|), no NaN/Inf in either, guards untouched.
 * 4. Timing: warm-up, then `iters` calls of each kernel, each between two CUDA events on the
 *    stream (as qmm_timer_begin/end in qmm bench), median; W, X, Y rotated through copies
 *    covering 128 MiB (twice an H200's L2) as qmm bench does. The last timed output of
 *    each kernel must equal its verified output bit for bit (determinism).
 */
#ifdef QMM_WITH_CUDA

#include <cjson/cJSON.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "candidate_diff.h"

#define CAND_ROTATE_BYTES ((size_t)128 << 20)
#define CAND_MAX_COPIES 64

/* One compiled and loaded candidate per weight type. */
typedef struct cand_kernel {
    qmm_type type;
    cudaLibrary_t lib;
    cudaKernel_t fn;
    int rows_per_block, threads; /* the chosen geometry */
    bool usage_error;            /* the flags/env asked for an undeclared geometry */
} cand_kernel;

static bool cu_ok(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return true;
    fprintf(stderr, "qmm bench: --candidate: %s: %s (%s)\n", what, cudaGetErrorString(e),
            cudaGetErrorName(e));
    return false;
}

static bool q_ok(qmm_status st, const char *what) {
    if (st == QMM_OK) return true;
    fprintf(stderr, "qmm bench: --candidate: %s: %s: %s\n", what, qmm_status_str(st),
            qmm_last_error());
    return false;
}

/* ---------------------------------------------------------------------------------------
 * Loading and geometry
 * ------------------------------------------------------------------------------------- */

/* Reads and checks the declared geometries, then picks the one asked for. */
static bool choose_geometry(const candidate_opts *o, cand_kernel *ck) {
    void *dptr = NULL;
    size_t bytes = 0;
    cudaError_t e = cudaLibraryGetGlobal(&dptr, &bytes, ck->lib, "qmm_candidate_geometry");
    if (e != cudaSuccess) {
        cudaGetLastError();
        fprintf(stderr, "qmm bench: --candidate: '%s' declares no geometry (%s): define "
                        "extern \"C\" __device__ const int qmm_candidate_geometry[][2] = "
                        "{{rows_per_block, threads_per_block}, ...};\n",
                o->path, cudaGetErrorString(e));
        return false;
    }
    const size_t entry = 2 * sizeof(int);
    if (bytes == 0 || bytes % entry != 0 || bytes / entry > CANDIDATE_MAX_GEOMETRIES) {
        fprintf(stderr, "qmm bench: --candidate: qmm_candidate_geometry of '%s' is %zu bytes: "
                        "expected 1..%d pairs of int {rows_per_block, threads_per_block}\n",
                o->path, bytes, CANDIDATE_MAX_GEOMETRIES);
        return false;
    }
    int g[CANDIDATE_MAX_GEOMETRIES][2];
    const int count = (int)(bytes / entry);
    if (!cu_ok(cudaMemcpy(g, dptr, bytes, cudaMemcpyDeviceToHost), "reading qmm_candidate_geometry"))
        return false;
    for (int i = 0; i < count; i++) {
        if (g[i][0] < 1 || g[i][0] > 1024 || g[i][1] < 32 || g[i][1] > 1024 || g[i][1] % 32 != 0) {
            fprintf(stderr, "qmm bench: --candidate: qmm_candidate_geometry[%d] of '%s' is "
                            "{%d, %d}: rows_per_block must be in 1..1024 and threads_per_block "
                            "a multiple of 32 in 32..1024\n", i, o->path, g[i][0], g[i][1]);
            return false;
        }
    }
    struct cudaFuncAttributes attr;
    if (!cu_ok(cudaFuncGetAttributes(&attr, (const void *)ck->fn), "cudaFuncGetAttributes(qmm_candidate)"))
        return false;
    int pick = -1;
    for (int i = 0; i < count && pick < 0; i++)
        if ((o->rows_per_block == 0 || g[i][0] == o->rows_per_block) &&
            (o->threads == 0 || g[i][1] == o->threads))
            pick = i;
    if (pick < 0) {
        ck->usage_error = true;
        fprintf(stderr, "qmm bench: --candidate: '%s' does not support rows_per_block %s%lld "
                        "with threads_per_block %s%lld (from --rows-per-block/--block-threads "
                        "or QMM_CANDIDATE_ROWS_PER_BLOCK/QMM_CANDIDATE_THREADS); it declares",
                o->path, o->rows_per_block ? "" : "any ", (long long)o->rows_per_block,
                o->threads ? "" : "any ", (long long)o->threads);
        for (int i = 0; i < count; i++) fprintf(stderr, " {%d, %d}", g[i][0], g[i][1]);
        fprintf(stderr, "\n");
        return false;
    }
    if (g[pick][1] > attr.maxThreadsPerBlock) {
        fprintf(stderr, "qmm bench: --candidate: geometry {%d, %d} of '%s' needs %d threads per "
                        "block but the compiled kernel allows at most %d (__launch_bounds__ or "
                        "registers)\n", g[pick][0], g[pick][1], o->path, g[pick][1],
                attr.maxThreadsPerBlock);
        return false;
    }
    ck->rows_per_block = g[pick][0];
    ck->threads = g[pick][1];
    return true;
}

/* Grid of a launch; false (with a message) if it cannot cover every row of W. */
static bool candidate_grid(const candidate_opts *o, const cand_kernel *ck, int64_t m, int64_t n,
                           dim3 *grid) {
    const int64_t gx = (m + ck->rows_per_block - 1) / ck->rows_per_block;
    if (gx > 0x7FFFFFFF || gx * ck->rows_per_block < m) {
        fprintf(stderr, "qmm bench: --candidate: m = %lld rows at %d rows per block need %lld "
                        "blocks, more than a grid's 2^31-1: '%s' cannot cover every row\n",
                (long long)m, ck->rows_per_block, (long long)gx, o->path);
        return false;
    }
    const int64_t groups = (n + CANDIDATE_TOKENS - 1) / CANDIDATE_TOKENS;
    grid->x = (unsigned)gx;
    grid->y = (unsigned)(groups < 65535 ? groups : 65535);
    grid->z = 1;
    return true;
}

static bool load_kernel(const candidate_opts *o, qmm_type type, const char *arch, cand_kernel *ck) {
    memset(ck, 0, sizeof *ck);
    ck->type = type;
    candidate_image img;
    if (!candidate_compile(o, type, arch, &img)) return false;
    cudaError_t e = cudaLibraryLoadData(&ck->lib, img.cubin, NULL, NULL, 0, NULL, NULL, 0);
    candidate_image_free(&img);
    if (!cu_ok(e, "cudaLibraryLoadData (the compiled candidate)")) {
        ck->lib = NULL;
        return false;
    }
    e = cudaLibraryGetKernel(&ck->fn, ck->lib, "qmm_candidate");
    if (e != cudaSuccess) {
        cudaGetLastError();
        fprintf(stderr, "qmm bench: --candidate: '%s' has no kernel qmm_candidate (%s): define "
                        "extern \"C\" __global__ void qmm_candidate(const uint8_t *w, size_t "
                        "row_bytes, int64_t m, int64_t k, int64_t n, const float *x, int64_t "
                        "ldx, float *y, int64_t ldy)\n", o->path, cudaGetErrorString(e));
        return false;
    }
    return choose_geometry(o, ck);
}

/* ---------------------------------------------------------------------------------------
 * One (type, shape, n)
 * ------------------------------------------------------------------------------------- */

typedef struct cand_env {
    const candidate_opts *o;
    qmm_context *ctx;
    cudaStream_t stream;
    cudaEvent_t ev0, ev1;
} cand_env;

static cudaError_t launch(const cand_env *env, const cand_kernel *ck, dim3 grid,
                          const uint8_t *w, size_t row_bytes, int64_t m, int64_t k, int64_t n,
                          const float *x, float *y) {
    int64_t ldx = k, ldy = m;
    void *args[] = {&w, &row_bytes, &m, &k, &n, &x, &ldx, &y, &ldy};
    const dim3 block = {(unsigned)ck->threads, 1, 1};
    cudaError_t e = cudaLaunchKernel((const void *)ck->fn, grid, block, args, 0, env->stream);
    return e != cudaSuccess ? e : cudaGetLastError();
}

/* Returns false on a runtime error that ends the whole run (a CUDA fault). */
static bool run_case(const cand_env *env, const cand_kernel *ck, const bench_shape *sh,
                     int shape_index, int64_t n, cand_result *res) {
    const candidate_opts *o = env->o;
    const int64_t m = sh->m, k = sh->k;
    memset(res, 0, sizeof *res);
    size_t row_bytes = 0;
    if (!q_ok(qmm_row_bytes(ck->type, k, &row_bytes), "qmm_row_bytes")) return false;
    const size_t w_bytes = row_bytes * (size_t)m, x_bytes = (size_t)n * (size_t)k * sizeof(float);
    const size_t y_bytes = (size_t)n * (size_t)m * sizeof(float);
    const size_t g_bytes = y_bytes + 2 * CAND_GUARD_BYTES;
    dim3 grid;
    if (!candidate_grid(o, ck, m, n, &grid)) return false;

    size_t cover = (CAND_ROTATE_BYTES + w_bytes + x_bytes + 2 * y_bytes - 1) /
                   (w_bytes + x_bytes + 2 * y_bytes);
    const int copies = cover > CAND_MAX_COPIES ? CAND_MAX_COPIES : cover < 1 ? 1 : (int)cover;
    void *w_host = malloc(w_bytes);
    float *x_host = malloc(x_bytes);
    uint8_t *gp_host = malloc(g_bytes), *gc_host = malloc(g_bytes), *g_init = malloc(g_bytes);
    float *y_last = malloc(y_bytes);
    double *ms = malloc((size_t)o->iters * sizeof *ms);
    qmm_weights *wq[CAND_MAX_COPIES] = {0};
    void *wd[CAND_MAX_COPIES] = {0}, *xd[CAND_MAX_COPIES] = {0}, *ypd[CAND_MAX_COPIES] = {0},
         *ycd[CAND_MAX_COPIES] = {0};
    uint8_t *gp = NULL, *gc = NULL;
    bool ok = w_host && x_host && gp_host && gc_host && g_init && y_last && ms;
    if (!ok) fprintf(stderr, "qmm bench: --candidate: out of host memory\n");

    fill_rng rng;
    if (ok) {
        fill_rng_seed(&rng, cand_mix((uint64_t)o->seed, 1, (uint64_t)ck->type, (uint64_t)shape_index));
        ok = q_ok(fill_weights(&rng, o->fill, ck->type, m, k, w_host), "making weights");
    }
    if (ok) {
        fill_rng_seed(&rng, cand_mix((uint64_t)o->seed, 2, (uint64_t)k, (uint64_t)n));
        fill_normal(&rng, x_host, (size_t)n * (size_t)k);
        cand_image_init(g_init, g_bytes);
    }
    for (int c = 0; c < copies && ok; c++) {
        ok = q_ok(qmm_weights_create(env->ctx, ck->type, m, k, w_host, row_bytes, &wq[c]),
                  "qmm_weights_create") &&
             q_ok(qmm_buffer_alloc(env->ctx, w_bytes, &wd[c]), "qmm_buffer_alloc(W)") &&
             q_ok(qmm_buffer_upload(env->ctx, wd[c], w_host, w_bytes), "qmm_buffer_upload(W)") &&
             q_ok(qmm_buffer_alloc(env->ctx, x_bytes, &xd[c]), "qmm_buffer_alloc(X)") &&
             q_ok(qmm_buffer_upload(env->ctx, xd[c], x_host, x_bytes), "qmm_buffer_upload(X)") &&
             q_ok(qmm_buffer_alloc(env->ctx, y_bytes, &ypd[c]), "qmm_buffer_alloc(Y)") &&
             q_ok(qmm_buffer_alloc(env->ctx, y_bytes, &ycd[c]), "qmm_buffer_alloc(Y)");
    }
    if (ok)
        ok = q_ok(qmm_buffer_alloc(env->ctx, g_bytes, (void **)&gp), "qmm_buffer_alloc(Y)") &&
             q_ok(qmm_buffer_alloc(env->ctx, g_bytes, (void **)&gc), "qmm_buffer_alloc(Y)") &&
             q_ok(qmm_buffer_upload(env->ctx, gp, g_init, g_bytes), "poisoning Y") &&
             q_ok(qmm_buffer_upload(env->ctx, gc, g_init, g_bytes), "poisoning Y");

    /* Verification: copy 0 of W and X, guarded outputs. */
    if (ok) {
        qmm_status st = qmm_matmul(env->ctx, wq[0], n, xd[0], k, (float *)(gp + CAND_GUARD_BYTES), m);
        if (st == QMM_ERR_UNSUPPORTED) { /* gemv not offered for this type/n: not comparable */
            snprintf(res->note, sizeof res->note, "production gemv unsupported: %s",
                     qmm_last_error());
            res->pass = false;
            ok = false;
        } else {
            ok = q_ok(st, "qmm_matmul (production gemv)") &&
                 cu_ok(launch(env, ck, grid, wd[0], row_bytes, m, k, n, xd[0],
                              (float *)(gc + CAND_GUARD_BYTES)), "launching qmm_candidate") &&
                 cu_ok(cudaStreamSynchronize(env->stream), "running qmm_candidate") &&
                 q_ok(qmm_buffer_download(env->ctx, gp_host, gp, g_bytes), "reading Y") &&
                 q_ok(qmm_buffer_download(env->ctx, gc_host, gc, g_bytes), "reading Y");
        }
    }
    if (ok) cand_compare(o->has_tolerance, o->tolerance, gp_host, gc_host, n, m, res);

    /* Timing: production, then the candidate, each on the rotated copies. */
    const int64_t calls = o->warmup + o->iters;
    for (int which = 0; which < 2 && ok; which++) {
        int last = 0;
        for (int64_t call = 0; call < calls && ok; call++) {
            const int c = (int)(call % copies);
            last = c;
            const bool timed = call >= o->warmup;
            if (timed) ok = cu_ok(cudaEventRecord(env->ev0, env->stream), "cudaEventRecord");
            if (ok && which == 0)
                ok = q_ok(qmm_matmul(env->ctx, wq[c], n, xd[c], k, ypd[c], m), "qmm_matmul");
            else if (ok)
                ok = cu_ok(launch(env, ck, grid, wd[c], row_bytes, m, k, n, xd[c], ycd[c]),
                           "launching qmm_candidate");
            if (ok && timed) {
                float t = 0;
                ok = cu_ok(cudaEventRecord(env->ev1, env->stream), "cudaEventRecord") &&
                     cu_ok(cudaEventSynchronize(env->ev1), "running the timed kernel") &&
                     cu_ok(cudaEventElapsedTime(&t, env->ev0, env->ev1), "cudaEventElapsedTime");
                ms[call - o->warmup] = t;
            } else if (ok) {
                ok = cu_ok(cudaStreamSynchronize(env->stream), "running a warm-up call");
            }
        }
        if (!ok) break;
        if (which == 0) res->prod_us = cand_median_us(ms, o->iters);
        else res->cand_us = cand_median_us(ms, o->iters);
        /* determinism: the last timed output equals the verified one, bit for bit */
        ok = q_ok(qmm_buffer_download(env->ctx, y_last, which == 0 ? ypd[last] : ycd[last],
                                      y_bytes), "reading Y");
        const uint8_t *ref = (which == 0 ? gp_host : gc_host) + CAND_GUARD_BYTES;
        if (ok && res->pass && memcmp(y_last, ref, y_bytes) != 0) {
            res->pass = false;
            snprintf(res->note, sizeof res->note, "%s is not deterministic: a timed call's "
                     "output differs from the verified one (same inputs)",
                     which == 0 ? "production" : "the candidate");
        }
    }

    for (int c = 0; c < copies; c++) {
        qmm_weights_free(wq[c]);
        qmm_buffer_free(env->ctx, wd[c]);
        qmm_buffer_free(env->ctx, xd[c]);
        qmm_buffer_free(env->ctx, ypd[c]);
        qmm_buffer_free(env->ctx, ycd[c]);
    }
    qmm_buffer_free(env->ctx, gp);
    qmm_buffer_free(env->ctx, gc);
    free(w_host);
    free(x_host);
    free(gp_host);
    free(gc_host);
    free(g_init);
    free(y_last);
    free(ms);
    if (!ok && res->note[0] == '\0') snprintf(res->note, sizeof res->note, "runtime error (above)");
    /* an unsupported production path is a failed row, not the end of the run */
    return ok || strncmp(res->note, "production gemv unsupported", 27) == 0;
}

/* ---------------------------------------------------------------------------------------
 * The command
 * ------------------------------------------------------------------------------------- */

/* No device: compile for sm_90a to check the source, then stop. */
static int compile_only(const candidate_opts *o, const char *why) {
    for (int t = 0; t < o->n_types; t++) {
        candidate_image img;
        if (!candidate_compile(o, o->types[t], "sm_90a", &img)) return 1;
        candidate_image_free(&img);
    }
    fprintf(stderr, "qmm bench: --candidate: '%s' compiles (sm_90a, %d types), but no CUDA "
                    "device is available (%s): nothing was run\n", o->path, o->n_types, why);
    return 1;
}

int candidate_run(const candidate_opts *o) {
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        const char *why = e != cudaSuccess ? cudaGetErrorString(e) : "no device";
        cudaGetLastError();
        return compile_only(o, why);
    }
    struct cudaDeviceProp prop;
    if (!cu_ok(cudaSetDevice(0), "cudaSetDevice(0)") ||
        !cu_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"))
        return 1;
    int major = 0, minor = 0;
    if (!cu_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "compute capability") ||
        !cu_ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), "compute capability"))
        return 1;
    char arch[32];
    /* sm_90a: Hopper's architecture-specific features (wgmma) for candidates that use them */
    snprintf(arch, sizeof arch, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");

    int rc = 1;
    cand_kernel ck[QMM_TYPE_COUNT];
    int n_ck = 0;
    cand_env env = {.o = o};
    cJSON *doc = NULL, *rows = NULL;
    /* Everything that can be checked before a run: compile, load, geometry, grids. */
    for (int t = 0; t < o->n_types; t++) {
        if (!load_kernel(o, o->types[t], arch, &ck[n_ck])) {
            if (ck[n_ck].lib) cudaLibraryUnload(ck[n_ck].lib);
            if (ck[n_ck].usage_error) rc = 2;
            goto out;
        }
        n_ck++;
        for (int s = 0; s < o->n_shapes; s++)
            for (size_t i = 0; i < o->n_ns; i++) {
                dim3 grid;
                if (!candidate_grid(o, &ck[n_ck - 1], o->shapes[s].m, o->ns[i], &grid)) goto out;
            }
    }
    if (!cu_ok(cudaStreamCreateWithFlags(&env.stream, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !cu_ok(cudaEventCreate(&env.ev0), "cudaEventCreate") ||
        !cu_ok(cudaEventCreate(&env.ev1), "cudaEventCreate"))
        goto out;
    qmm_context_params p = qmm_context_default_params();
    p.backend = QMM_BACKEND_CUDA;
    p.strategy = QMM_STRATEGY_GEMV;
    p.cuda_device = 0;
    p.cuda_stream = env.stream;
    if (!q_ok(qmm_context_create(&p, &env.ctx), "creating the CUDA context")) goto out;

    printf("# qmm bench --candidate %s\n", o->path);
    printf("# device %s (sm_%d%d, %d SMs), compiled for %s by NVRTC; production: qmm_matmul "
           "strategy gemv; verdict: %s\n", prop.name, major, minor, prop.multiProcessorCount,
           arch, o->has_tolerance ? "max|diff|/max|y_prod| <= tolerance, all finite"
                                  : "bit-identical, all finite");
    printf("# times: median of %lld calls after %lld warm-up calls, CUDA events, W/X/Y rotated "
           "through 128 MiB\n", (long long)o->iters, (long long)o->warmup);
    cand_print_columns("rows", "thr");
    doc = cJSON_CreateObject();
    if (doc != NULL) {
        cJSON *h = cJSON_AddObjectToObject(doc, "header");
        if (h != NULL) {
            cJSON_AddStringToObject(h, "qmm_version", qmm_version());
            cJSON_AddStringToObject(h, "command_line", o->command_line ? o->command_line : "");
            cJSON_AddStringToObject(h, "candidate", o->path);
            cJSON_AddStringToObject(h, "device", prop.name);
            cJSON_AddStringToObject(h, "arch", arch);
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
    for (int t = 0; t < n_ck && alive; t++)
        for (int s = 0; s < o->n_shapes && alive; s++)
            for (size_t i = 0; i < o->n_ns && alive; i++) {
                cand_result r;
                alive = run_case(&env, &ck[t], &o->shapes[s], s, o->ns[i], &r);
                all_pass &= r.pass && alive;
                cand_print_row(ck[t].type, &o->shapes[s], o->ns[i], ck[t].rows_per_block,
                               ck[t].threads, &r);
                cJSON *j = rows ? cand_json_row(rows, ck[t].type, &o->shapes[s], o->ns[i], &r) : NULL;
                if (j) {
                    cJSON_AddNumberToObject(j, "rows_per_block", ck[t].rows_per_block);
                    cJSON_AddNumberToObject(j, "threads_per_block", ck[t].threads);
                }
            }
    if (!alive) printf("\nstopped: a runtime error ended the run (message above)\n");
    else if (!all_pass) printf("\nFAILED: the candidate does not match production on every row\n");
    rc = all_pass && alive ? 0 : 1;
    if (o->json_path && doc && !cand_write_json(o->json_path, doc)) rc = 1;
out:
    cJSON_Delete(doc);
    qmm_context_free(env.ctx);
    if (env.ev0) cudaEventDestroy(env.ev0);
    if (env.ev1) cudaEventDestroy(env.ev1);
    if (env.stream) cudaStreamDestroy(env.stream);
    for (int t = 0; t < n_ck; t++) cudaLibraryUnload(ck[t].lib);
    return rc;
}

#else
typedef int candidate_run_unused; /* built without CUDA: nothing here (ISO C: no empty file) */
#endif
