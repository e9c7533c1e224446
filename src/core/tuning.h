/*
 * tuning.h — tuning files (docs/TUNING.md): which file a context reads, reading and checking
 * it, and the strict JSON helpers a backend's row parser uses. A backend calls
 * qmm_tuning_load from its context_init once its identity (device, ISA level or GPU class,
 * threads) is known; the rows themselves are the backend's (src/cpu/auto_tuned.c).
 */
#ifndef QMM_CORE_TUNING_H
#define QMM_CORE_TUNING_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "qmm.h"

#define QMM_TUNE_FORMAT "qmm-tune"
#define QMM_TUNE_FORMAT_VERSION 1
/* Files larger than this are refused (a full CPU tuning file is about 1 MiB). */
#define QMM_TUNE_MAX_BYTES ((size_t)16 << 20)
/* Largest n a row may name. */
#define QMM_TUNE_MAX_N ((long long)1 << 30)

/* What a file must have been made for. The machine object of the file holds exactly the
 * keys "id", device_key, level_key, "threads" (and optionally "features", not compared). */
typedef struct qmm_tuning_identity {
    const char *backend;    /* "cpu" */
    const char *device_key; /* "cpu" */
    const char *device;     /* the CPU model (qmm_cpu_brand) */
    const char *level_key;  /* "isa" */
    const char *level;      /* the context's ISA level name */
    int threads;
} qmm_tuning_identity;

/* The identity's id: FNV-1a 64 of "backend\ndevice\nlevel\nthreads\n", 16 lower-case hex
 * digits (the <id> of the default file name tune-<id>.json). */
void qmm_tuning_identity_id(const qmm_tuning_identity *ident, char out[17]);

/* Parse the file's "rows" array (a JSON array, never NULL) into the backend's own form at
 * *out. On failure return QMM_ERR_FORMAT (or QMM_ERR_OUT_OF_MEMORY) with the reason in why
 * (a phrase, e.g. "rows[3]: unknown type 'q9_9'") and leave *out as it was. */
typedef qmm_status (*qmm_tuning_rows_fn)(const cJSON *rows, void *out, char *why, size_t why_len);

/*
 * Choose the context's tuning file and read it. `param` is qmm_context_params.tune_file.
 * Fills *info (identity, default path, state, reason). A file named by `param` or by the
 * environment QMM_TUNE_FILE that cannot be used is an error (its status, the sentence names
 * the file and why); one at the default location that cannot be used is ignored
 * (QMM_TUNING_IGNORED, the reason in info). On QMM_TUNING_APPLIED, parse_rows has filled
 * *rows_out and info->n_rows is the number of rows.
 */
qmm_status qmm_tuning_load(const char *param, const qmm_tuning_identity *ident,
                           qmm_tuning_rows_fn parse_rows, void *rows_out, qmm_tuning_info *info);

/* Check a file's text (size bytes, then a NUL at text[size]) as qmm_tuning_load checks a
 * file: QMM_OK with the rows parsed into *rows_out and *n_rows set, or a status with the
 * reason in why. What the fuzz target fuzz/fuzz_tune.c calls. */
qmm_status qmm_tuning_parse_text(const char *text, size_t size, const qmm_tuning_identity *ident,
                                 qmm_tuning_rows_fn parse_rows, void *rows_out, int *n_rows,
                                 char *why, size_t why_len);

/* Strict JSON helpers. Each returns false with a phrase in why on failure. */

/* `obj` is an object whose keys are all in known[0 .. n_known-1], each at most once. */
bool qmm_tune_json_keys(const cJSON *obj, const char *where, const char *const *known,
                        size_t n_known, char *why, size_t why_len);
/* A whole number in [lo, hi]. */
bool qmm_tune_json_int(const cJSON *v, const char *where, long long lo, long long hi,
                       long long *out, char *why, size_t why_len);
/* An array [lo, hi] of two whole numbers with min <= lo <= hi <= max. */
bool qmm_tune_json_range(const cJSON *v, const char *where, long long min, long long max,
                         long long *lo, long long *hi, char *why, size_t why_len);

#endif /* QMM_CORE_TUNING_H */
