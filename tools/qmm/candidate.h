/*
 * candidate.h — `qmm bench --candidate FILE.cu | FILE.wgsl`: a kernel compiled at run time
 * and diffed over its whole output against a production kernel on the same device inputs,
 * then timed next to it. docs/BENCH.md "Candidate kernels" is the user's manual.
 *
 * Two backends (--backend; the default follows the file name: .wgsl is webgpu, else cuda):
 *
 * WebGPU (candidate_wgsl.c): FILE.wgsl is a kernel in the form of src/webgpu/wgsl/fused.wgsl
 * (or gemv.wgsl with --kernel gemv): an entry point `main`, compiled exactly as production
 * is — the file first, then the geometry constants (WG_M, WG_N, TILE_K; GV_ROWS, GV_LANES,
 * GV_TOKENS), common.wgsl (bindings W, X, Y, the parameter block P, load_w8) and the type's
 * decoder (qmm_dec8) — into a pipeline with the production bind group layout, and dispatched
 * with the production kernel's grid on the same weights buffers and X; WGSL errors are
 * printed with their line and column in FILE. Geometry from WG_M, WG_N, TILE_K (TILE_M,
 * TILE_N only 4) and the --wg-m ... flags, as qmm bench takes them (webgpu_geometry.h).
 *
 * CUDA (candidate_run.c, candidate_nvrtc.c): the candidate file defines, in CUDA C++
 * (compiled by NVRTC, device code only):
 *
 *   extern "C" __global__ void qmm_candidate(const uint8_t *w, size_t row_bytes, int64_t m,
 *       int64_t k, int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy);
 *   extern "C" __device__ const int qmm_candidate_geometry[][2] = {{R, T}, ...};
 *
 * the production gemv kernel's arguments (W: m packed rows of row_bytes; X: n rows of k
 * floats, stride ldx; Y: n rows of m floats, stride ldy; all device memory) and the launch
 * geometries it supports: R rows of W per block with T threads per block. The tool launches
 * grid = (ceil(m / R), min(ceil(n / QMM_CANDIDATE_TOKENS), 65535)), block = (T): block x
 * owns rows [x*R, x*R + R) ∩ [0, m), blockIdx.y strides (by gridDim.y) over groups of
 * QMM_CANDIDATE_TOKENS tokens. It is compiled once per weight type with the macros
 * QMM_CANDIDATE_TYPE (the qmm_type id, e.g. 12 for q4_K) and QMM_CANDIDATE_TOKENS, and may
 * include "cuda/dequant.cuh" (the production decoders) and "formats/blocks.h".
 *
 * Files: candidate.c (options, strict checks that need no GPU, dispatch), candidate_nvrtc.c
 * (the compiler), candidate_run.c (load, geometry, run, compare, time, report).
 */
#ifndef QMM_TOOL_CANDIDATE_H
#define QMM_TOOL_CANDIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fill.h"
#include "presets.h"
#include "qmm.h"
#include "webgpu_geometry.h"

/* Tokens per blockIdx.y group (the production gemv's largest token group). */
#define CANDIDATE_TOKENS 8
/* Most geometry entries a candidate may declare. */
#define CANDIDATE_MAX_GEOMETRIES 64

/* True if argv (a bench command line) asks for a candidate run (--candidate[=FILE]). */
bool candidate_requested(int argc, char **argv);

/* `qmm bench --candidate ...`: argv starts at "bench". Exit status as qmm_cmd_bench:
 * 0 every row bit-identical (or within --tolerance) and finite, 1 a mismatch or runtime
 * error, 2 bad usage. */
int qmm_cmd_bench_candidate(int argc, char **argv);

/* Parsed options of a candidate run. rows_per_block / threads are 0 when not asked for
 * (the first declared geometry that matches the other one, or the first of all, is used). */
typedef struct candidate_opts {
    qmm_backend backend;       /* QMM_BACKEND_CUDA or QMM_BACKEND_WEBGPU */
    const char *path;          /* the candidate .cu / .wgsl file */
    char *source;              /* its text (NUL-terminated) */
    const char *source_dir;    /* repository root whose src/ and include/ NVRTC searches */
    bool has_tolerance;
    double tolerance;          /* max |y_cand - y_prod| / max |y_prod| allowed */
    int64_t rows_per_block, threads; /* CUDA geometry */
    webgpu_geometry geom;      /* WebGPU: the fused geometry (environment, then flags) */
    bool gemv;                 /* WebGPU: --kernel gemv (default fused) */
    bool shader_checks;        /* WebGPU: --shader-checks */
    const bench_shape *shapes;
    int n_shapes;
    qmm_type types[QMM_TYPE_COUNT];
    int n_types;
    bool types_given;          /* --types or ONLY (else every type the backend has) */
    int64_t *ns;
    size_t n_ns;
    int64_t iters, warmup, seed;
    fill_kind fill;
    const char *json_path;
    char *command_line;
} candidate_opts;

/* Candidate compiled for one weight type: a cubin image (malloc'ed), or the NVRTC log. */
typedef struct candidate_image {
    void *cubin;
    size_t cubin_bytes;
    char *log; /* NVRTC's log (may be empty), malloc'ed */
} candidate_image;

/* Compile o->source for `type` and the GPU architecture `arch` ("sm_90a"); on a compile
 * error prints the NVRTC log to stderr with the file name and returns false. */
bool candidate_compile(const candidate_opts *o, qmm_type type, const char *arch,
                       candidate_image *img);
void candidate_image_free(candidate_image *img);

/* The whole GPU part: returns the exit status (0; 1; 2 for a geometry the kernel does not
 * declare). */
int candidate_run(const candidate_opts *o);
/* The WebGPU candidate run (candidate_wgsl.c): exit status 0, 1, or 2 for a geometry the
 * kernel or adapter cannot run or a type the backend has no decoder for. */
int candidate_wgsl_run(const candidate_opts *o);

#endif /* QMM_TOOL_CANDIDATE_H */
