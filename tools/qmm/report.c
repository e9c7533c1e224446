/* report.c — table, CSV and JSON output of qmm bench (see report.h). */
#include "report.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_regions.h"

struct report {
    FILE *out;
    bool csv;
    bool gpu;             /* the header has a CUDA GPU: rows carry roof% */
    bool two;             /* two time columns: CUDA (graph) or WebGPU (back-to-back regions) */
    const char *col;      /* the main time column's name */
    bool printed_columns;
    cJSON *header, *rows, *notes;
};

report *report_create(FILE *out, bool csv) {
    report *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->out = out;
    r->csv = csv;
    r->rows = cJSON_CreateArray();
    r->notes = cJSON_CreateArray();
    if (r->rows == NULL || r->notes == NULL) {
        report_free(r);
        return NULL;
    }
    return r;
}

void report_free(report *r) {
    if (r == NULL) return;
    cJSON_Delete(r->header);
    cJSON_Delete(r->rows);
    cJSON_Delete(r->notes);
    free(r);
}

static cJSON *features_array(const char *features) {
    cJSON *a = cJSON_CreateArray();
    const char *p = features;
    while (a && p && *p) {
        size_t n = strcspn(p, " ");
        if (n > 0) {
            char word[64];
            snprintf(word, sizeof word, "%.*s", (int)n, p);
            cJSON_AddItemToArray(a, cJSON_CreateString(word));
        }
        p += n;
        while (*p == ' ') p++;
    }
    return a;
}

void report_header_set(report *r, const report_header *h) {
    cJSON_Delete(r->header);
    cJSON *j = r->header = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "qmm_version", h->qmm_version);
    cJSON_AddStringToObject(j, "date", h->date);
    cJSON_AddStringToObject(j, "cpu", h->cpu);
    cJSON_AddItemToObject(j, "features", features_array(h->features));
    cJSON_AddStringToObject(j, "backend", h->backend);
    cJSON_AddNumberToObject(j, "threads", h->threads);
    cJSON_AddStringToObject(j, "device", h->device);
    cJSON_AddStringToObject(j, "command_line", h->command_line);
    cJSON_AddNumberToObject(j, "mem_read_gbps", h->mem_read_gbps);
    cJSON_AddNumberToObject(j, "llc_bytes", (double)h->llc_bytes);
    cJSON_AddNumberToObject(j, "iters", (double)h->iters);
    cJSON_AddNumberToObject(j, "warmup", (double)h->warmup);
    cJSON_AddStringToObject(j, "fill", h->fill);
    cJSON_AddNumberToObject(j, "seed", (double)h->seed);
    cJSON_AddStringToObject(j, "source", h->source);
    cJSON_AddBoolToObject(j, "verify", h->verify);
    cJSON_AddBoolToObject(j, "batch_invariant", h->batch_invariant);
    cJSON_AddStringToObject(j, "caches", h->hot ? "hot" : "cold");
    cJSON_AddStringToObject(j, "cache", h->cache ? h->cache : "default");
    cJSON_AddStringToObject(j, "auto_table", h->auto_table ? h->auto_table : "");
    if (h->tuning != NULL) {
        static const char *const states[3] = {"none", "applied", "ignored"};
        cJSON *t = cJSON_AddObjectToObject(j, "tuning");
        if (t != NULL) {
            cJSON_AddStringToObject(t, "state", (unsigned)h->tuning->state < 3
                                                    ? states[h->tuning->state] : "?");
            cJSON_AddStringToObject(t, "path", h->tuning->path);
            cJSON_AddStringToObject(t, "status", qmm_status_str(h->tuning->status));
            cJSON_AddStringToObject(t, "reason", h->tuning->reason);
        }
    }
    r->gpu = h->gpu_copy_gbps > 0;
    r->two = r->gpu || h->webgpu != NULL;
    r->col = r->gpu ? "ms(graph)" : "ms(b2b)";
    char ms_text[640], lat_text[200];
    if (r->gpu) {
        snprintf(ms_text, sizeof ms_text, "device time of one call among back-to-back calls: at least "
                 "%d calls (%s) recorded in a CUDA graph (qmm_graph_begin/end) and "
                 "replayed; median over the iters replays of replay ms / calls", h->graph_min_calls,
                 h->hot ? "one W/X/Y copy, --caches hot" : "W/X/Y copies rotated");
        snprintf(lat_text, sizeof lat_text, "single-call latency: one call alone between CUDA events "
                 "on the stream (host submission included), median of the iters");
    } else if (h->webgpu != NULL) {
        snprintf(ms_text, sizeof ms_text, "device time of one call among back-to-back calls: regions "
                 "of up to %d back-to-back calls (about %.0f ms of GPU work; %s) between GPU "
                 "timestamp queries (qmm_timer_begin/end: the calls' compute passes, not the host's "
                 "gaps), after a warm-up of such regions (with --warmup > 0: at least %.0f ms, until %d in a "
                 "row agree within %.0f%%, at most %.0f ms); median over the iters regions of "
                 "region time / calls (a row's graph_calls: its calls per region)",
                 GPU_REGION_MAX_CALLS, GPU_REGION_MS,
                 h->hot ? "one W/X/Y copy, --caches hot" : "W/X/Y copies rotated", GPU_WARM_MS,
                 GPU_WARM_STABLE, 100.0 * GPU_WARM_SPREAD, GPU_WARM_MAX_MS);
        snprintf(lat_text, sizeof lat_text, "single-call latency: one call alone between GPU timestamp "
                 "queries (the host waits for each; the GPU idles between calls), median of the iters");
    } else {
        snprintf(ms_text, sizeof ms_text, "one call timed alone (monotonic clock), median of the "
                 "iters; %s", h->hot ? "one W/X/Y copy reused, caches not flushed (--caches hot)"
                                     : "caches flushed before the timed calls");
        snprintf(lat_text, sizeof lat_text, "none (on the CPU ms is the single-call time)");
    }
    cJSON *tj = cJSON_AddObjectToObject(j, "timing");
    if (tj) {
        cJSON_AddStringToObject(tj, "ms", ms_text);
        cJSON_AddStringToObject(tj, "latency_ms", lat_text);
    }
    if (r->gpu) {
        cJSON_AddNumberToObject(j, "gpu_copy_gbps", h->gpu_copy_gbps);
        cJSON *pk = cJSON_AddObjectToObject(j, "gpu_peak_tflops");
        static const char *names[4] = {"f32", "half", "int8", "fp8"};
        for (int i = 0; pk && h->gpu_peak_tflops && i < 4; i++)
            cJSON_AddNumberToObject(pk, names[i], h->gpu_peak_tflops[i]);
    }
    if (h->webgpu != NULL) {
        const qmm_webgpu_info *i = h->webgpu;
        cJSON *w = cJSON_AddObjectToObject(j, "webgpu");
        if (w != NULL) {
            cJSON_AddStringToObject(w, "adapter", i->adapter);
            cJSON_AddStringToObject(w, "backend_api", i->backend_api);
            cJSON_AddStringToObject(w, "adapter_type", i->adapter_type);
            cJSON_AddStringToObject(w, "driver", i->driver);
            cJSON_AddStringToObject(w, "vendor", i->vendor);
            char v[16];
            snprintf(v, sizeof v, "0x%08x", i->wgpu_version);
            cJSON_AddStringToObject(w, "wgpu_version", v);
            cJSON_AddBoolToObject(w, "caller_device", i->caller_device);
            cJSON_AddBoolToObject(w, "shader_checks", i->shader_checks);
            cJSON *f = cJSON_AddArrayToObject(w, "features");
            if (f && i->timestamp_query) cJSON_AddItemToArray(f, cJSON_CreateString("timestamp-query"));
            if (f && i->shader_f16) cJSON_AddItemToArray(f, cJSON_CreateString("shader-f16"));
            cJSON *l = cJSON_AddObjectToObject(w, "limits");
            if (l != NULL) {
                cJSON_AddNumberToObject(l, "maxStorageBufferBindingSize", (double)i->max_storage_buffer_binding_size);
                cJSON_AddNumberToObject(l, "maxBufferSize", (double)i->max_buffer_size);
                cJSON_AddNumberToObject(l, "maxComputeWorkgroupStorageSize", i->max_compute_workgroup_storage_size);
                cJSON_AddNumberToObject(l, "maxComputeInvocationsPerWorkgroup", i->max_compute_invocations_per_workgroup);
                cJSON_AddNumberToObject(l, "maxComputeWorkgroupsPerDimension", i->max_compute_workgroups_per_dimension);
                cJSON_AddNumberToObject(l, "minStorageBufferOffsetAlignment", i->min_storage_buffer_offset_alignment);
            }
            cJSON *g = cJSON_AddObjectToObject(w, "fused_geometry");
            if (g != NULL && h->webgpu_geometry != NULL) {
                cJSON_AddNumberToObject(g, "wg_m", h->webgpu_geometry[0]);
                cJSON_AddNumberToObject(g, "wg_n", h->webgpu_geometry[1]);
                cJSON_AddNumberToObject(g, "tile_m", 4);
                cJSON_AddNumberToObject(g, "tile_n", 4);
                cJSON_AddNumberToObject(g, "tile_k", h->webgpu_geometry[2]);
            }
            cJSON_AddNumberToObject(w, "timestamp_period_ns", i->timestamp_period_ns);
            cJSON_AddStringToObject(w, "timing", "timestamp queries at the start and end of each "
                                                 "compute pass of a call, summed");
        }
    }
    if (r->csv) return;
    fprintf(r->out, "qmm %s bench  %s\n", h->qmm_version, h->date);
    fprintf(r->out, "cpu:      %s\n", h->cpu);
    fprintf(r->out, "features: %s\n", h->features[0] ? h->features : "(none)");
    fprintf(r->out, "backend:  %s, %d threads, device %s\n", h->backend, h->threads, h->device);
    fprintf(r->out, "memory:   %.1f GB/s read (measured), last-level cache %.1f MiB\n",
            h->mem_read_gbps, (double)h->llc_bytes / 1048576.0);
    if (r->gpu) {
        fprintf(r->out, "gpu:      %.0f GB/s device copy (measured, read + write)", h->gpu_copy_gbps);
        if (h->gpu_peak_tflops && h->gpu_peak_tflops[0] > 0)
            fprintf(r->out, "; dense peaks (TFLOP/s) f32 %.0f, f16 %.0f, int8 %.0f, fp8 %.0f",
                    h->gpu_peak_tflops[0], h->gpu_peak_tflops[1], h->gpu_peak_tflops[2],
                    h->gpu_peak_tflops[3]);
        fprintf(r->out, "\n          roof%% = roofline time (bytes at the copy bandwidth or FLOPs at "
                        "the kernel class's peak, the larger) / measured time\n");
    }
    fprintf(r->out, "run:      %s; fill %s, seed %lld, warmup %lld, median of %lld iters, %s%s\n",
            h->source, h->fill, h->seed, h->warmup, h->iters,
            h->verify ? "verified vs qmm_matmul_ref" : "NOT verified (--no-verify)",
            h->batch_invariant ? "; batch-invariant context" : "");
    fprintf(r->out, "caches:   %s\n",
            h->hot ? "hot (--caches hot): one W, X, Y copy reused by every call, no flush; W is "
                     "read from cache where it fits"
                   : "cold: each call on its own W, X, Y copy, not touched since a flush (CPU) or "
                     "evicted by later copies (GPU)");
    if (r->two)
        fprintf(r->out, "timing:   %s = %s\n          ms(1call) = %s; GFLOP/s, GB/s%s from %s\n",
                r->col, ms_text, lat_text, r->gpu ? ", roof%" : "", r->col);
    if (r->two)
        fprintf(r->out, "resident: res_MiB = device bytes the row's weights object holds after the row "
                        "(qmm_weights_memory: GGUF rows + the copies its path made), xGGUF = res / "
                        "GGUF bytes; cache policy %s\n", h->cache ? h->cache : "default");
    else
        fprintf(r->out, "resident: res_MiB = host bytes the row's weights object holds after the row "
                        "(qmm_weights_memory: GGUF rows + the AMX tiles its path made), xGGUF = res / "
                        "GGUF bytes\n");
    if (h->auto_table != NULL) fprintf(r->out, "auto:     %s\n", h->auto_table);
    fprintf(r->out, "command:  %s\n\n", h->command_line);
}

static const char *status_word(row_status s) {
    switch (s) {
    case ROW_PASS: return "ok";
    case ROW_FAIL: return "FAIL";
    case ROW_SKIP: return "skip";
    case ROW_UNVERIFIED: return "unverified";
    }
    return "?";
}

static bool has_speed(const bench_row *row) {
    return row->status == ROW_PASS || row->status == ROW_UNVERIFIED;
}

static bool has_diff(const bench_row *row) {
    return row->status == ROW_PASS || (row->status == ROW_FAIL && row->nmse >= 0);
}

static void csv_field(FILE *f, const char *s) {
    if (strpbrk(s, ",\"\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void print_csv(report *r, const bench_row *row) {
    FILE *f = r->out;
    if (!r->printed_columns) {
        fputs("type,label,m,k,n,count,requested,strategy,kernel,status,ms,gflops,gbps,verified,nmse,max_rel_err,"
              "n_nonfinite,x_sum,w_sum,y_sum,copies,note,roof_pct,latency_ms,graph_calls,"
              "resident_bytes,gguf_bytes\n", f);
        r->printed_columns = true;
    }
    csv_field(f, row->type);
    fputc(',', f);
    csv_field(f, row->label);
    fprintf(f, ",%lld,%lld,%lld,%lld,", (long long)row->m, (long long)row->k, (long long)row->n,
            (long long)row->count);
    csv_field(f, row->requested[0] ? row->requested : "-");
    fputc(',', f);
    csv_field(f, row->strategy);
    fputc(',', f);
    csv_field(f, row->kernel);
    fprintf(f, ",%s,", status_word(row->status));
    if (has_speed(row)) fprintf(f, "%.6g,%.6g,%.6g,", row->ms, row->gflops, row->gbps);
    else fputs(",,,", f);
    fputs(row->status == ROW_PASS ? "true" : row->status == ROW_FAIL ? "false" : "", f);
    if (has_diff(row)) fprintf(f, ",%.6g,%.6g,%lld,", row->nmse, row->max_rel_err,
                               (long long)row->n_nonfinite);
    else fputs(",,,,", f);
    if (!row->is_total && row->status != ROW_SKIP)
        fprintf(f, "%.9g,%.9g,%.9g,%d,", row->x_sum, row->w_sum, row->y_sum, row->copies);
    else fputs(",,,,", f);
    csv_field(f, row->note);
    if (has_speed(row) && row->roof_pct >= 0) fprintf(f, ",%.4g", row->roof_pct);
    else fputc(',', f);
    if (has_speed(row) && row->latency_ms >= 0) fprintf(f, ",%.6g", row->latency_ms);
    else fputc(',', f);
    if (row->graph_calls > 0 && !row->is_total) fprintf(f, ",%d", row->graph_calls);
    else fputc(',', f);
    if (row->has_resident)
        fprintf(f, ",%.0f,%.0f", (double)row->resident.total_bytes, (double)row->resident.gguf_bytes);
    else fputs(",,", f);
    fputc('\n', f);
    fflush(f);
}

static void print_table(report *r, const bench_row *row) {
    FILE *f = r->out;
    if (!r->printed_columns) {
        fprintf(f, "%-6s %-26s %6s %6s %5s %5s %-22s ", "type", "label", "m", "k", "n", "count",
                "kernel");
        if (r->two) fprintf(f, "%10s %10s ", r->col, "ms(1call)");
        else fprintf(f, "%10s ", "ms");
        fprintf(f, "%9s %8s ", "GFLOP/s", "GB/s");
        if (r->gpu) fprintf(f, "%6s ", "roof%");
        fprintf(f, "%9s %6s ", "res_MiB", "xGGUF");
        fprintf(f, "%-5s %9s %9s %13s %13s %13s\n", "check", "nmse", "max_rel", "x_sum", "w_sum",
                "y_sum");
        r->printed_columns = true;
    }
    char m[24] = "-", k[24] = "-";
    if (!row->is_total) {
        snprintf(m, sizeof m, "%lld", (long long)row->m);
        snprintf(k, sizeof k, "%lld", (long long)row->k);
    }
    fprintf(f, "%-6s %-26s %6s %6s %5lld %5lld %-22s ", row->type, row->label, m, k,
            (long long)row->n, (long long)row->count, row->kernel[0] ? row->kernel : row->strategy);
    if (has_speed(row)) {
        fprintf(f, r->two ? "%10.4f " : "%10.3f ", row->ms);
        if (r->two && row->latency_ms >= 0) fprintf(f, "%10.4f ", row->latency_ms);
        else if (r->two) fprintf(f, "%10s ", "-");
        fprintf(f, "%9.1f %8.1f ", row->gflops, row->gbps);
    } else {
        fprintf(f, "%10s ", "-");
        if (r->two) fprintf(f, "%10s ", "-");
        fprintf(f, "%9s %8s ", "-", "-");
    }
    if (r->gpu) {
        if (has_speed(row) && row->roof_pct >= 0) fprintf(f, "%6.1f ", row->roof_pct);
        else fprintf(f, "%6s ", "-");
    }
    if (row->has_resident && row->resident.gguf_bytes > 0)
        fprintf(f, "%9.2f %5.2fx ", (double)row->resident.total_bytes / 1048576.0,
                (double)row->resident.total_bytes / (double)row->resident.gguf_bytes);
    else fprintf(f, "%9s %6s ", "-", "-");
    fprintf(f, "%-5s ", status_word(row->status));
    if (has_diff(row)) fprintf(f, "%9.2e %9.2e ", row->nmse, row->max_rel_err);
    else fprintf(f, "%9s %9s ", "-", "-");
    if (!row->is_total && row->status != ROW_SKIP)
        fprintf(f, "%13.6g %13.6g %13.6g", row->x_sum, row->w_sum, row->y_sum);
    fputc('\n', f);
    if (row->note[0]) fprintf(f, "       ^ %s\n", row->note);
    fflush(f);
}

void report_row(report *r, const bench_row *row) {
    if (r->csv) print_csv(r, row);
    else print_table(r, row);
    cJSON *j = cJSON_CreateObject();
    if (j == NULL) return;
    cJSON_AddStringToObject(j, "type", row->type);
    cJSON_AddStringToObject(j, "label", row->label);
    cJSON_AddNumberToObject(j, "m", (double)(row->is_total ? 0 : row->m));
    cJSON_AddNumberToObject(j, "k", (double)(row->is_total ? 0 : row->k));
    cJSON_AddNumberToObject(j, "n", (double)row->n);
    cJSON_AddNumberToObject(j, "count", (double)row->count);
    cJSON_AddStringToObject(j, "requested", row->requested[0] ? row->requested : "-");
    cJSON_AddStringToObject(j, "strategy", row->strategy);
    if (!row->is_total) cJSON_AddStringToObject(j, "kernel", row->kernel);
    cJSON_AddStringToObject(j, "status", status_word(row->status));
    cJSON_AddBoolToObject(j, "total", row->is_total);
    if (has_speed(row)) {
        cJSON_AddNumberToObject(j, "ms", row->ms);
        cJSON_AddNumberToObject(j, "gflops", row->gflops);
        cJSON_AddNumberToObject(j, "gbps", row->gbps);
        if (row->roof_pct >= 0) cJSON_AddNumberToObject(j, "roof_pct", row->roof_pct);
        else cJSON_AddNullToObject(j, "roof_pct");
        if (row->latency_ms >= 0) cJSON_AddNumberToObject(j, "latency_ms", row->latency_ms);
        else cJSON_AddNullToObject(j, "latency_ms");
    } else {
        cJSON_AddNullToObject(j, "roof_pct");
        cJSON_AddNullToObject(j, "ms");
        cJSON_AddNullToObject(j, "latency_ms");
        cJSON_AddNullToObject(j, "gflops");
        cJSON_AddNullToObject(j, "gbps");
    }
    if (row->graph_calls > 0 && !row->is_total) cJSON_AddNumberToObject(j, "graph_calls", row->graph_calls);
    else cJSON_AddNullToObject(j, "graph_calls");
    if (row->has_resident) {
        const qmm_weights_memory_info *m = &row->resident;
        cJSON_AddNumberToObject(j, "resident_bytes", (double)m->total_bytes);
        cJSON *rj = cJSON_AddObjectToObject(j, "resident");
        if (rj) {
            cJSON_AddNumberToObject(rj, "gguf", (double)m->gguf_bytes);
            cJSON_AddNumberToObject(rj, "repacked", (double)m->repacked_bytes);
            cJSON_AddNumberToObject(rj, "f16", (double)m->f16_bytes);
            cJSON_AddNumberToObject(rj, "fp8", (double)m->fp8_bytes);
            cJSON_AddNumberToObject(rj, "int8", (double)m->int8_bytes);
            cJSON_AddNumberToObject(rj, "bf16", (double)m->bf16_bytes);
        }
    } else {
        cJSON_AddNullToObject(j, "resident_bytes");
        cJSON_AddNullToObject(j, "resident");
    }
    if (row->status == ROW_PASS || row->status == ROW_FAIL)
        cJSON_AddBoolToObject(j, "verified", row->status == ROW_PASS);
    else cJSON_AddNullToObject(j, "verified");
    if (has_diff(row)) {
        cJSON_AddNumberToObject(j, "nmse", row->nmse);
        cJSON_AddNumberToObject(j, "max_rel_err", row->max_rel_err);
        cJSON_AddNumberToObject(j, "max_abs_err", row->max_abs_err);
        cJSON_AddNumberToObject(j, "n_nonfinite", (double)row->n_nonfinite);
    } else {
        cJSON_AddNullToObject(j, "nmse");
        cJSON_AddNullToObject(j, "max_rel_err");
        cJSON_AddNullToObject(j, "max_abs_err");
        cJSON_AddNullToObject(j, "n_nonfinite");
    }
    if (!row->is_total && row->status != ROW_SKIP) {
        cJSON_AddNumberToObject(j, "x_sum", row->x_sum);
        cJSON_AddNumberToObject(j, "w_sum", row->w_sum);
        cJSON_AddNumberToObject(j, "y_sum", row->y_sum);
        cJSON_AddNumberToObject(j, "copies", row->copies);
    }
    cJSON_AddStringToObject(j, "note", row->note);
    cJSON_AddItemToArray(r->rows, j);
}

void report_note(report *r, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(r->csv ? stderr : r->out, "# %s\n", buf);
    cJSON_AddItemToArray(r->notes, cJSON_CreateString(buf));
}

bool report_write_json(const report *r, const char *path) {
    cJSON *doc = cJSON_CreateObject();
    if (doc == NULL) return false;
    cJSON_AddItemReferenceToObject(doc, "header", r->header);
    cJSON_AddItemReferenceToObject(doc, "rows", r->rows);
    cJSON_AddItemReferenceToObject(doc, "notes", r->notes);
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    if (text == NULL) {
        fprintf(stderr, "qmm bench: out of memory writing JSON\n");
        return false;
    }
    FILE *f = fopen(path, "w");
    bool ok = f != NULL && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f != NULL && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "qmm bench: --json: cannot write '%s'\n", path);
    free(text);
    return ok;
}
