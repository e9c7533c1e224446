/*
 * fuzz_tune.c — libFuzzer target: the tuning-file checker (docs/TUNING.md) on arbitrary bytes.
 *
 * The input is the text of a file for a fixed identity (cpu "Fuzz CPU", isa amx, 2 threads).
 * Either it is refused with a status and a non-empty reason, or it is accepted and then every
 * row is read and must hold what the format allows (a weight type, n bounds within range, a
 * shape class with lo <= hi), so a file the checker wrongly accepts shows up here or as a
 * sanitizer report. Build and run: fuzz/build.sh, fuzz/run_ci.sh (docs/TRUST.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tuning.h"
#include "cpu/cpu_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > QMM_TUNE_MAX_BYTES) return 0;
    char *text = malloc(size + 1);
    if (text == NULL) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    const qmm_tuning_identity ident = {.backend = "cpu", .device_key = "cpu",
                                       .device = "Fuzz CPU", .level_key = "isa",
                                       .level = "amx", .threads = 2};
    qmm_cpu_auto_rows rows = {0};
    int n_rows = -1;
    char why[768] = "";
    qmm_status st = qmm_tuning_parse_text(text, size, &ident, qmm_cpu_auto_rows_parse, &rows,
                                          &n_rows, why, sizeof why);
    if (st != QMM_OK) {
        if (why[0] == '\0' || rows.rows != NULL || rows.count != 0) abort();
    } else {
        if (n_rows < 0 || (size_t)n_rows != rows.count) abort();
        for (size_t i = 0; i < rows.count; i++) {
            const qmm_cpu_auto_tuned_row *r = &rows.rows[i];
            if (!qmm_type_is_weight(r->row.type)) abort();
            if (r->row.int8_min_n < 1 || r->row.gemv_max_n < 0 ||
                r->row.gemv_max_n > QMM_TUNE_MAX_N || r->row.int8_max_n > QMM_TUNE_MAX_N)
                abort();
            if ((r->m_min > r->m_max) || (r->k_min > r->k_max)) abort();
            /* the lookup finds a row for every type it holds */
            bool from_file = false;
            (void)qmm_cpu_auto_lookup(&rows, QMM_CPU_ISA_AMX, r->row.type,
                                      r->m_min ? r->m_min : 1, r->k_min ? r->k_min : 1,
                                      &from_file);
            if (!from_file) abort();
        }
        qmm_cpu_auto_rows_free(&rows);
    }
    free(text);
    return 0;
}
