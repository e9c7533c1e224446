/*
 * report.h — the output of `qmm bench`: a human table or CSV on stdout, row by row as
 * results arrive, and optionally a JSON file (cJSON) written at the end:
 *
 *   { "header": { "qmm_version", "date", "cpu", "features": [...], "backend", "threads",
 *                 "device", "command_line", "mem_read_gbps", "llc_bytes", "iters", "warmup",
 *                 "fill", "seed", "source", "verify", "batch_invariant", and for CUDA "gpu_copy_gbps",
 *                 "gpu_peak_tflops": {"f32", "half", "int8", "fp8"}, for WebGPU "webgpu":
 *                 {"adapter", "backend_api", "adapter_type", "driver", "vendor",
 *                 "wgpu_version", "caller_device", "features": [...], "limits": {...},
 *                 "fused_geometry": {"wg_m", "wg_n", "tile_m", "tile_n", "tile_k"},
 *                 "timing"} },
 *     "rows": [ { "type", "label", "m", "k", "n", "count", "strategy", "ms", "gflops",
 *                 "gbps", "roof_pct" (CUDA; else null), "verified", "nmse", "max_rel_err", "max_abs_err", "n_nonfinite",
 *                 "x_sum", "w_sum", "y_sum", "copies", "status", "note" }, ... ],
 *     "notes": [ "...", ... ] }
 *
 * Speeds are null for rows that failed verification or were skipped; "verified" is null
 * when verification was turned off. Total rows (whole-model, model) have m = k = 0.
 */
#ifndef QMM_TOOL_REPORT_H
#define QMM_TOOL_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "qmm_webgpu.h"

typedef enum { ROW_PASS = 0, ROW_FAIL = 1, ROW_SKIP = 2, ROW_UNVERIFIED = 3 } row_status;

typedef struct bench_row {
    char type[16];
    char label[96];
    int64_t m, k, n;
    int64_t count;        /* matrices this row stands for (1 for a plain shape) */
    char strategy[24];    /* the resolved strategy */
    char kernel[40];      /* the implementation that ran (qmm_path.kernel) */
    row_status status;
    bool is_total;        /* a sum over the rows above (whole-model / model) */
    double ms;            /* median ms of one call (for totals: sum of count * ms) */
    double gflops, gbps;
    double roof_pct;      /* CUDA: % of the roofline time (header's copy GB/s, class peak); < 0: none */
    double nmse, max_rel_err, max_abs_err;
    int64_t n_nonfinite;
    double x_sum, w_sum, y_sum; /* input and output checksums */
    int copies;           /* W/X/Y copies rotated through while timing */
    char note[256];       /* why a row failed or was skipped */
} bench_row;

typedef struct report_header {
    const char *qmm_version, *date, *cpu, *features, *backend, *device, *command_line;
    const char *fill, *source;
    int threads;
    double mem_read_gbps;
    double gpu_copy_gbps;           /* CUDA: measured device copy bandwidth (0: none) */
    const double *gpu_peak_tflops;  /* CUDA: dense peaks by qmm_precision (NULL: none) */
    long long llc_bytes, iters, warmup, seed;
    bool verify;
    bool batch_invariant;           /* the context ran with QMM_FLAG_BATCH_INVARIANT */
    const qmm_webgpu_info *webgpu;  /* WebGPU: the adapter, limits and features (NULL: none) */
    const int *webgpu_geometry;     /* WebGPU: fused WG_M, WG_N, TILE_K */
} report_header;

typedef struct report report;

/* A report printing a table (csv = false) or CSV (csv = true) to `out`. NULL if OOM. */
report *report_create(FILE *out, bool csv);
void report_free(report *r);

/* Print the machine header (table only) and keep it for the JSON. */
void report_header_set(report *r, const report_header *h);
/* Print one row and keep it for the JSON. */
void report_row(report *r, const bench_row *row);
/* Print a note line ("# ..." under the table; to stderr in CSV mode) and keep it. */
void report_note(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Write the JSON document to `path`. False (with a message on stderr) on failure. */
bool report_write_json(const report *r, const char *path);

#endif /* QMM_TOOL_REPORT_H */
