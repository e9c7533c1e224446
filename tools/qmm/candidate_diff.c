/* candidate_diff.c — the verdict and the report rows of qmm bench --candidate (see the header). */
#include "candidate_diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"

void cand_image_init(uint8_t *g, size_t g_bytes) {
    memset(g, CAND_GUARD_BYTE, g_bytes);
    float *y = (float *)(g + CAND_GUARD_BYTES);
    const size_t count = (g_bytes - 2 * CAND_GUARD_BYTES) / sizeof(float);
    for (size_t i = 0; i < count; i++) y[i] = NAN; /* poison */
}

void cand_compare(bool has_tolerance, double tolerance, const uint8_t *gp, const uint8_t *gc,
                  int64_t n, int64_t m, cand_result *res) {
    const float *yp = (const float *)(gp + CAND_GUARD_BYTES);
    const float *yc = (const float *)(gc + CAND_GUARD_BYTES);
    const size_t count = (size_t)n * (size_t)m, y_bytes = count * sizeof(float);
    for (size_t i = 0; i < CAND_GUARD_BYTES; i++) {
        const bool before = gc[i] != CAND_GUARD_BYTE;
        const bool after = gc[CAND_GUARD_BYTES + y_bytes + i] != CAND_GUARD_BYTE;
        if (before || after) {
            snprintf(res->note, sizeof res->note, "candidate wrote outside Y (%s it, byte %zu)",
                     before ? "before" : "after", before ? CAND_GUARD_BYTES - i : i);
            res->pass = false;
            return;
        }
    }
    int64_t first = -1;
    for (size_t i = 0; i < count; i++) {
        uint32_t bp, bc;
        memcpy(&bp, &yp[i], 4);
        memcpy(&bc, &yc[i], 4);
        const bool fp = isfinite(yp[i]), fc = isfinite(yc[i]);
        res->nonfinite_prod += !fp;
        res->nonfinite_cand += !fc;
        if (bp != bc) {
            res->mismatches++;
            if (first < 0) first = (int64_t)i;
        }
        if (fp) {
            if (fabs((double)yp[i]) > res->max_abs_prod) res->max_abs_prod = fabs((double)yp[i]);
            if (fc && fabs((double)yc[i] - (double)yp[i]) > res->max_abs_diff)
                res->max_abs_diff = fabs((double)yc[i] - (double)yp[i]);
        }
    }
    res->rel = res->max_abs_prod > 0 ? res->max_abs_diff / res->max_abs_prod
               : res->max_abs_diff > 0 ? INFINITY : 0.0;
    char where[160] = "";
    if (first >= 0)
        snprintf(where, sizeof where, "; first at token %lld row %lld: production %.9g, "
                                      "candidate %.9g", (long long)(first / m),
                 (long long)(first % m), (double)yp[first], (double)yc[first]);
    if (res->nonfinite_cand > 0 || res->nonfinite_prod > 0) {
        res->pass = false;
        snprintf(res->note, sizeof res->note, "non-finite outputs: %lld of the candidate, %lld "
                 "of production%s", (long long)res->nonfinite_cand, (long long)res->nonfinite_prod,
                 where);
    } else if (has_tolerance) {
        res->pass = res->rel <= tolerance;
        snprintf(res->note, sizeof res->note, "%lld values differ, max|diff|/max|y| %.3g %s "
                 "tolerance %.3g%s", (long long)res->mismatches, res->rel,
                 res->pass ? "<=" : ">", tolerance, res->pass ? "" : where);
    } else {
        res->pass = res->mismatches == 0;
        if (res->pass) snprintf(res->note, sizeof res->note, "bit-identical");
        else snprintf(res->note, sizeof res->note, "%lld of %zu values differ (bit-identity "
                      "required; max|diff|/max|y| %.3g)%s", (long long)res->mismatches, count,
                      res->rel, where);
    }
}

uint64_t cand_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    fill_rng r;
    fill_rng_seed(&r, seed ^ (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^
                          (c * 0x165667B19E3779F9ull));
    return fill_rng_next(&r);
}

double cand_median_us(double *ms, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        double v = ms[i];
        int64_t j = i - 1;
        for (; j >= 0 && ms[j] > v; j--) ms[j + 1] = ms[j];
        ms[j + 1] = v;
    }
    return 1000.0 * (n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]));
}

void cand_print_columns(const char *g1, const char *g2) {
    printf("%-6s %-13s %6s %5s %5s %10s %10s %7s  %-4s %s\n", "type", "shape", "n", g1, g2,
           "prod_us", "cand_us", "speedup", "ok", "detail");
    fflush(stdout);
}

void cand_print_row(qmm_type type, const bench_shape *sh, int64_t n, long g1, long g2,
                    const cand_result *r) {
    char shape[32], pu[16] = "-", cu[16] = "-", sp[16] = "-";
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)sh->m, (long long)sh->k);
    if (r->pass) {
        snprintf(pu, sizeof pu, "%.2f", r->prod_us);
        snprintf(cu, sizeof cu, "%.2f", r->cand_us);
        snprintf(sp, sizeof sp, "%.2fx", r->cand_us > 0 ? r->prod_us / r->cand_us : 0.0);
    }
    printf("%-6s %-13s %6lld %5ld %5ld %10s %10s %7s  %-4s %s\n", qmm_type_name(type), shape,
           (long long)n, g1, g2, pu, cu, sp, r->pass ? "PASS" : "FAIL", r->note);
    fflush(stdout);
}

cJSON *cand_json_row(cJSON *rows, qmm_type type, const bench_shape *sh, int64_t n,
                     const cand_result *r) {
    cJSON *j = cJSON_CreateObject();
    if (j == NULL) return NULL;
    cJSON_AddStringToObject(j, "type", qmm_type_name(type));
    cJSON_AddStringToObject(j, "label", sh->label);
    cJSON_AddNumberToObject(j, "m", (double)sh->m);
    cJSON_AddNumberToObject(j, "k", (double)sh->k);
    cJSON_AddNumberToObject(j, "n", (double)n);
    if (r->pass) {
        cJSON_AddNumberToObject(j, "production_us", r->prod_us);
        cJSON_AddNumberToObject(j, "candidate_us", r->cand_us);
    } else { /* a speed is reported only for a result that passed */
        cJSON_AddNullToObject(j, "production_us");
        cJSON_AddNullToObject(j, "candidate_us");
    }
    cJSON_AddStringToObject(j, "status", r->pass ? "PASS" : "FAIL");
    cJSON_AddNumberToObject(j, "mismatches", (double)r->mismatches);
    cJSON_AddNumberToObject(j, "nonfinite_candidate", (double)r->nonfinite_cand);
    cJSON_AddNumberToObject(j, "nonfinite_production", (double)r->nonfinite_prod);
    cJSON_AddNumberToObject(j, "max_abs_diff", r->max_abs_diff);
    if (isfinite(r->rel)) cJSON_AddNumberToObject(j, "max_rel_diff", r->rel);
    else cJSON_AddNullToObject(j, "max_rel_diff");
    cJSON_AddStringToObject(j, "note", r->note);
    cJSON_AddItemToArray(rows, j);
    return j;
}

bool cand_write_json(const char *path, cJSON *doc) {
    char *text = cJSON_Print(doc);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f != NULL && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f != NULL && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "qmm bench: --json: cannot write '%s'\n", path);
    free(text);
    return ok;
}
