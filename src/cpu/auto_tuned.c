/*
 * auto_tuned.c — the CPU rows of a tuning file (docs/TUNING.md, "rows"), parsed strictly
 * into qmm_cpu_auto_tuned_row (cpu_internal.h). One row:
 *
 *   {"type": "q4_0", "int8_n": [1, 32] or null, "gemv_max_n": 4,
 *    "m": [lo, hi], "k": [lo, hi]}            m and k optional: the shape class
 *
 * int8 for int8_n[0] <= n <= int8_n[1] (null: never), else gemv for n <= gemv_max_n (0:
 * never), else fused; the same rule as the compiled-in rows. The first row of the type whose
 * shape class holds the weights' m x k applies, so a row whose shapes an earlier row of its
 * type all holds could never apply: that is an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tuning.h"
#include "cpu/cpu_internal.h"

static const char *const row_keys[] = {"type", "int8_n", "gemv_max_n", "m", "k"};

static qmm_status parse_row(const cJSON *r, int i, qmm_cpu_auto_tuned_row *out, char *why,
                            size_t why_len) {
    char where[64];
    snprintf(where, sizeof where, "rows[%d]", i);
    if (!qmm_tune_json_keys(r, where, row_keys, sizeof row_keys / sizeof row_keys[0], why, why_len))
        return QMM_ERR_FORMAT;
    memset(out, 0, sizeof *out);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(r, "type");
    qmm_type t;
    if (!cJSON_IsString(type)) {
        snprintf(why, why_len, "%s.type is missing or not a string", where);
        return QMM_ERR_FORMAT;
    }
    if (qmm_type_from_name(type->valuestring, &t) != QMM_OK || !qmm_type_is_weight(t)) {
        snprintf(why, why_len, "%s.type '%s' is not a weight type", where, type->valuestring);
        return QMM_ERR_FORMAT;
    }
    out->row.type = t;
    char w[80];
    const cJSON *int8 = cJSON_GetObjectItemCaseSensitive(r, "int8_n");
    long long lo = 1, hi = 0, v;
    snprintf(w, sizeof w, "%s.int8_n", where);
    if (int8 == NULL) {
        snprintf(why, why_len, "%s is missing (null: never int8)", w);
        return QMM_ERR_FORMAT;
    }
    if (!cJSON_IsNull(int8) &&
        !qmm_tune_json_range(int8, w, 1, QMM_TUNE_MAX_N, &lo, &hi, why, why_len))
        return QMM_ERR_FORMAT;
    out->row.int8_min_n = lo;
    out->row.int8_max_n = hi;
    snprintf(w, sizeof w, "%s.gemv_max_n", where);
    const cJSON *gemv = cJSON_GetObjectItemCaseSensitive(r, "gemv_max_n");
    if (gemv == NULL) {
        snprintf(why, why_len, "%s is missing (0: never gemv)", w);
        return QMM_ERR_FORMAT;
    }
    if (!qmm_tune_json_int(gemv, w, 0, QMM_TUNE_MAX_N, &v, why, why_len)) return QMM_ERR_FORMAT;
    out->row.gemv_max_n = v;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "m");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "k");
    if (m != NULL) {
        snprintf(w, sizeof w, "%s.m", where);
        if (!qmm_tune_json_range(m, w, 1, INT64_MAX / 2, &lo, &hi, why, why_len))
            return QMM_ERR_FORMAT;
        out->m_min = lo;
        out->m_max = hi;
    }
    if (k != NULL) {
        snprintf(w, sizeof w, "%s.k", where);
        if (!qmm_tune_json_range(k, w, 1, INT64_MAX / 2, &lo, &hi, why, why_len))
            return QMM_ERR_FORMAT;
        out->k_min = lo;
        out->k_max = hi;
    }
    return QMM_OK;
}

/* Whether the bound pair (lo, hi) (0 = none) holds every value that (ilo, ihi) holds. */
static bool bounds_hold(int64_t lo, int64_t hi, int64_t ilo, int64_t ihi) {
    return (lo == 0 || (ilo != 0 && ilo >= lo)) && (hi == 0 || (ihi != 0 && ihi <= hi));
}

/* Whether the shape class of `outer` holds every shape of `inner`'s. */
static bool box_holds(const qmm_cpu_auto_tuned_row *outer, const qmm_cpu_auto_tuned_row *inner) {
    return bounds_hold(outer->m_min, outer->m_max, inner->m_min, inner->m_max) &&
           bounds_hold(outer->k_min, outer->k_max, inner->k_min, inner->k_max);
}

qmm_status qmm_cpu_auto_rows_parse(const cJSON *rows, void *out, char *why, size_t why_len) {
    const int n = cJSON_GetArraySize(rows);
    qmm_cpu_auto_tuned_row *v = n > 0 ? calloc((size_t)n, sizeof *v) : NULL;
    if (n > 0 && v == NULL) {
        snprintf(why, why_len, "out of memory for %d rows", n);
        return QMM_ERR_OUT_OF_MEMORY;
    }
    int i = 0;
    for (const cJSON *r = rows->child; r != NULL; r = r->next, i++) {
        qmm_status st = parse_row(r, i, &v[i], why, why_len);
        for (int j = 0; st == QMM_OK && j < i; j++)
            if (v[j].row.type == v[i].row.type && box_holds(&v[j], &v[i])) {
                snprintf(why, why_len, "rows[%d] can never apply: rows[%d] before it is for %s "
                         "and every shape it holds", i, j, qmm_type_name(v[i].row.type));
                st = QMM_ERR_FORMAT;
            }
        if (st != QMM_OK) {
            free(v);
            return st;
        }
    }
    qmm_cpu_auto_rows *dst = out;
    dst->rows = v;
    dst->count = (size_t)n;
    return QMM_OK;
}

void qmm_cpu_auto_rows_free(qmm_cpu_auto_rows *rows) {
    free(rows->rows);
    rows->rows = NULL;
    rows->count = 0;
}
