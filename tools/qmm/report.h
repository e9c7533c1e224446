/*
 * report.h — the output of `qmm bench`: a human table or CSV on stdout, row by row as
 * results arrive, and optionally a JSON file (cJSON) written at the end:
 *
 *   { "header": { "qmm_version", "date", "cpu", "features": [...], "backend", "threads",
 *                 "device", "command_line", "mem_read_gbps", "llc_bytes", "iters", "warmup",
 *                 "fill", "seed", "source", "verify", "batch_invariant", "caches" ("cold" or
 *                 "hot"), "cache", "auto_table",
 *                 "tuning": {"state", "path", "status", "reason"},
 *                 "timing": {"ms", "latency_ms"} (what each figure is, in words), and for CUDA
 *                 "gpu_copy_gbps", "gpu_peak_tflops": {"f32", "half", "int8", "fp8"}, for WebGPU
 *                 "webgpu": {"adapter", "backend_api", "adapter_type", "driver", "vendor",
 *                 "wgpu_version", "caller_device", "features": [...], "limits": {...},
 *                 "fused_geometry": {"wg_m", "wg_n", "tile_m", "tile_n", "tile_k"},
 *                 "timing"} },
 *     "rows": [ { "type", "label", "m", "k", "n", "count", "strategy", "ms", "latency_ms"
 *                 (CUDA, WebGPU; else null), "graph_calls" (CUDA: calls in the replayed graph;
 *                 WebGPU: calls per timed region), "gflops", "gbps", "roof_pct" (CUDA;
 *                 else null), "verified", "nmse", "max_rel_err", "max_abs_err", "n_nonfinite",
 *                 "x_sum", "w_sum", "y_sum", "copies", "resident_bytes", "resident": {"gguf",
 *                 "repacked", "f16", "fp8", "int8", "bf16"}, "status", "note" }, ... ],
 *     "notes": [ "...", ... ] }
 *
 * "ms" is the main figure: on the CPU one call timed alone, on CUDA the device time of one
 * call among back-to-back calls (a replayed CUDA graph), on WebGPU the same from regions of
 * back-to-back calls between timestamp queries (gpu_regions.h); "latency_ms" (CUDA, WebGPU)
 * one call timed alone. Speeds are computed from "ms" and are null for rows that failed verification or were
 * skipped; "verified" is null when verification was turned off. "resident_bytes": what the
 * row's weights object held after the row (qmm_weights_memory; totals: count x, summed).
 * Total rows (whole-model, model) have m = k = 0.
 */
#ifndef QMM_TOOL_REPORT_H
#define QMM_TOOL_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "qmm.h"
#include "qmm_webgpu.h"

typedef enum { ROW_PASS = 0, ROW_FAIL = 1, ROW_SKIP = 2, ROW_UNVERIFIED = 3 } row_status;

typedef struct bench_row {
    char type[16];
    char label[96];
    int64_t m, k, n;
    int64_t count;        /* matrices this row stands for (1 for a plain shape) */
    char requested[24];   /* the strategy --strategy asked for (e.g. "auto"); empty: none ran */
    char strategy[24];    /* the resolved strategy */
    char kernel[40];      /* the implementation that ran (qmm_path.kernel) */
    row_status status;
    bool is_total;        /* a sum over the rows above (whole-model / model) */
    double ms;            /* the main figure, median ms of one call (for totals: sum of count * ms):
                             CPU one call alone, CUDA device time in a replayed graph, WebGPU
                             device time in regions of back-to-back calls */
    double latency_ms;    /* CUDA, WebGPU: median ms of one call timed alone (totals: sum); < 0: none */
    int graph_calls;      /* CUDA: calls in the replayed graph; WebGPU: calls per timed region (0: none) */
    bool has_resident;    /* resident below is set */
    qmm_weights_memory_info resident; /* the weights after the row (totals: count x, summed) */
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
    bool hot;                       /* --caches hot: one W/X/Y copy reused, no flush */
    const char *cache;              /* the context's cache policy, e.g. "default", "limit 2" */
    int graph_min_calls;            /* CUDA: at least this many calls per replayed graph */
    const char *auto_table;         /* which table auto reads: "tuning file PATH ...", or the
                                     * compiled-in table (with why no file) */
    const qmm_tuning_info *tuning;  /* the context's tuning file (qmm_context_tuning) */
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
