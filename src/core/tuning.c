/*
 * tuning.c — choosing, reading and checking a context's tuning file (see tuning.h and
 * docs/TUNING.md for the format). JSON is parsed by cJSON; every object the library reads is
 * checked strictly (known keys only, each once, the right JSON kind, whole numbers in range),
 * so a file from a newer format or a damaged one is refused rather than half applied.
 */
#include "core/tuning.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"

#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), false)
/* The same, returning a status. */
#define FAIL(st, ...) (snprintf(why, why_len, __VA_ARGS__), (st))

void qmm_tuning_identity_id(const qmm_tuning_identity *ident, char out[17]) {
    char threads[16];
    snprintf(threads, sizeof threads, "%d", ident->threads);
    const char *parts[4] = {ident->backend, ident->device, ident->level, threads};
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 4; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            h = (h ^ *p) * 0x100000001b3ull;
        h = (h ^ '\n') * 0x100000001b3ull;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* ---------------------------------------------------------------------------------------
 * Strict JSON helpers
 * ------------------------------------------------------------------------------------- */

bool qmm_tune_json_keys(const cJSON *obj, const char *where, const char *const *known,
                        size_t n_known, char *why, size_t why_len) {
    if (!cJSON_IsObject(obj)) return WHY("%s is not a JSON object", where);
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        bool ok = false;
        for (size_t i = 0; i < n_known && !ok; i++) ok = strcmp(c->string, known[i]) == 0;
        if (!ok) return WHY("%s has an unknown field '%s'", where, c->string);
        for (const cJSON *d = obj->child; d != c; d = d->next)
            if (strcmp(d->string, c->string) == 0)
                return WHY("%s has the field '%s' twice", where, c->string);
    }
    return true;
}

bool qmm_tune_json_int(const cJSON *v, const char *where, long long lo, long long hi,
                       long long *out, char *why, size_t why_len) {
    if (!cJSON_IsNumber(v)) return WHY("%s is not a number", where);
    const double d = v->valuedouble;
    if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
        return WHY("%s (%.17g) is not a whole number in %lld..%lld", where, d, lo, hi);
    *out = (long long)d;
    return true;
}

bool qmm_tune_json_range(const cJSON *v, const char *where, long long min, long long max,
                         long long *lo, long long *hi, char *why, size_t why_len) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2)
        return WHY("%s is not an array [lo, hi] of two numbers", where);
    char w[96];
    snprintf(w, sizeof w, "%s[0]", where);
    if (!qmm_tune_json_int(v->child, w, min, max, lo, why, why_len)) return false;
    snprintf(w, sizeof w, "%s[1]", where);
    if (!qmm_tune_json_int(v->child->next, w, min, max, hi, why, why_len)) return false;
    if (*lo > *hi) return WHY("%s is [%lld, %lld]: lo > hi", where, *lo, *hi);
    return true;
}

/* Kinds of the informational fields (checked for their kind, never interpreted). */
typedef enum {
    K_STRING, K_NUMBER, K_BOOL, K_NUMBER_OR_NULL, K_NUMBERS, K_STRINGS, K_ANY_ARRAY
} kind;
typedef struct field { const char *name; kind kind; } field;

static bool kind_ok(const cJSON *v, kind k) {
    switch (k) {
    case K_STRING: return cJSON_IsString(v);
    case K_NUMBER: return cJSON_IsNumber(v) && isfinite(v->valuedouble);
    case K_BOOL: return cJSON_IsBool(v);
    case K_NUMBER_OR_NULL:
        return cJSON_IsNull(v) || (cJSON_IsNumber(v) && isfinite(v->valuedouble));
    case K_NUMBERS:
    case K_STRINGS:
        if (!cJSON_IsArray(v)) return false;
        for (const cJSON *c = v->child; c; c = c->next)
            if (!(k == K_NUMBERS ? cJSON_IsNumber(c) && isfinite(c->valuedouble)
                                 : cJSON_IsString(c)))
                return false;
        return true;
    case K_ANY_ARRAY: return cJSON_IsArray(v);
    }
    return false;
}

static const char *kind_name(kind k) {
    switch (k) {
    case K_STRING: return "a string";
    case K_NUMBER: return "a finite number";
    case K_BOOL: return "true or false";
    case K_NUMBER_OR_NULL: return "a number or null";
    case K_NUMBERS: return "an array of numbers";
    case K_STRINGS: return "an array of strings";
    case K_ANY_ARRAY: return "an array";
    }
    return "?";
}

/* obj has only the listed fields, each of its kind (where present). */
static bool check_fields(const cJSON *obj, const char *where, const field *f, size_t nf,
                         char *why, size_t why_len) {
    const char *names[16];
    for (size_t i = 0; i < nf; i++) names[i] = f[i].name;
    if (!qmm_tune_json_keys(obj, where, names, nf, why, why_len)) return false;
    for (size_t i = 0; i < nf; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, f[i].name);
        if (v != NULL && !kind_ok(v, f[i].kind))
            return WHY("%s.%s is not %s", where, f[i].name, kind_name(f[i].kind));
    }
    return true;
}

/* ---------------------------------------------------------------------------------------
 * The document
 * ------------------------------------------------------------------------------------- */

static const char *const top_keys[] = {
    "format", "format_version", "qmm_version", "backend", "machine", "rows", "created",
    "command", "method", "load_average", "warnings", "measurements"};

static const field method_fields[] = {
    {"quick", K_BOOL}, {"reps", K_NUMBER}, {"n", K_NUMBERS}, {"shapes", K_ANY_ARRAY},
    {"copies", K_NUMBER}, {"cold", K_BOOL}, {"seconds", K_NUMBER}, {"seed", K_NUMBER},
    {"candidates", K_STRINGS}};

static const field measurement_fields[] = {
    {"type", K_STRING}, {"m", K_NUMBER}, {"k", K_NUMBER}, {"n", K_NUMBER},
    {"strategy", K_STRING}, {"kernel", K_STRING}, {"ms", K_NUMBER_OR_NULL},
    {"spread", K_NUMBER_OR_NULL}, {"status", K_STRING}};

static const char *json_string(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The informational fields: the right kinds, nothing unknown. */
static bool check_informational(const cJSON *root, char *why, size_t why_len) {
    static const field top[] = {{"created", K_STRING}, {"command", K_STRING},
                                {"load_average", K_NUMBERS}, {"warnings", K_STRINGS}};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, top[i].name);
        if (v != NULL && !kind_ok(v, top[i].kind))
            return WHY("field '%s' is not %s", top[i].name, kind_name(top[i].kind));
    }
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "method");
    if (method != NULL &&
        !check_fields(method, "method", method_fields,
                      sizeof method_fields / sizeof method_fields[0], why, why_len))
        return false;
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "measurements");
    if (ms != NULL) {
        if (!cJSON_IsArray(ms)) return WHY("field 'measurements' is not an array");
        int i = 0;
        for (const cJSON *c = ms->child; c; c = c->next, i++) {
            char where[48];
            snprintf(where, sizeof where, "measurements[%d]", i);
            if (!check_fields(c, where, measurement_fields,
                              sizeof measurement_fields / sizeof measurement_fields[0], why,
                              why_len))
                return false;
        }
    }
    return true;
}

/* Check a parsed document against the identity and hand its rows to parse_rows. */
static qmm_status check_document(const cJSON *root, const qmm_tuning_identity *ident,
                                 qmm_tuning_rows_fn parse_rows, void *rows_out, int *n_rows,
                                 char *why, size_t why_len) {
    if (!cJSON_IsObject(root)) return FAIL(QMM_ERR_FORMAT, "the file is not a JSON object");
    const char *format = json_string(root, "format");
    if (format == NULL || strcmp(format, QMM_TUNE_FORMAT) != 0)
        return FAIL(QMM_ERR_FORMAT, "not a qmm tuning file (its field 'format' is not \"%s\")",
                    QMM_TUNE_FORMAT);
    long long version;
    if (!qmm_tune_json_int(cJSON_GetObjectItemCaseSensitive(root, "format_version"),
                           "field 'format_version'", 0, INT32_MAX, &version, why, why_len))
        return QMM_ERR_FORMAT;
    if (version != QMM_TUNE_FORMAT_VERSION)
        return FAIL(QMM_ERR_FORMAT,
                    "format version %lld; this qmm reads version %d (run qmm tune again)",
                   version, QMM_TUNE_FORMAT_VERSION);
    const char *made_by = json_string(root, "qmm_version");
    if (made_by == NULL)
        return FAIL(QMM_ERR_FORMAT, "field 'qmm_version' is missing or not a string");
    if (strcmp(made_by, qmm_version()) != 0)
        return FAIL(QMM_ERR_UNSUPPORTED, "made by qmm %s; this is qmm %s (run qmm tune again)",
                    made_by, qmm_version());
    if (!qmm_tune_json_keys(root, "the file", top_keys, sizeof top_keys / sizeof top_keys[0],
                            why, why_len))
        return QMM_ERR_FORMAT;
    const char *backend = json_string(root, "backend");
    if (backend == NULL) return FAIL(QMM_ERR_FORMAT, "field 'backend' is missing or not a string");
    if (strcmp(backend, ident->backend) != 0)
        return FAIL(QMM_ERR_UNSUPPORTED, "made for the %s backend, not %s", backend,
                    ident->backend);

    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(root, "machine");
    const char *const mkeys[] = {"id", ident->device_key, ident->level_key, "threads", "features"};
    if (machine == NULL) return FAIL(QMM_ERR_FORMAT, "field 'machine' is missing");
    if (!qmm_tune_json_keys(machine, "machine", mkeys, 5, why, why_len)) return QMM_ERR_FORMAT;
    const char *id = json_string(machine, "id"), *device = json_string(machine, ident->device_key),
               *level = json_string(machine, ident->level_key);
    const cJSON *features = cJSON_GetObjectItemCaseSensitive(machine, "features");
    long long threads;
    if (id == NULL || device == NULL || level == NULL)
        return FAIL(QMM_ERR_FORMAT, "machine.id, machine.%s and machine.%s must be strings",
                    ident->device_key,
                   ident->level_key);
    if (features != NULL && !cJSON_IsString(features))
        return FAIL(QMM_ERR_FORMAT, "machine.features is not a string");
    if (!qmm_tune_json_int(cJSON_GetObjectItemCaseSensitive(machine, "threads"),
                           "machine.threads", 1, 4096, &threads, why, why_len))
        return QMM_ERR_FORMAT;
    if (strcmp(device, ident->device) != 0)
        return FAIL(QMM_ERR_UNSUPPORTED, "made for another machine: %s '%s' (this machine: '%s')",
                    ident->device_key,
                   device, ident->device);
    if (strcmp(level, ident->level) != 0)
        return FAIL(QMM_ERR_UNSUPPORTED,
                    "made at ISA level %s; this context runs at %s (QMM_CPU_ISA)", level,
                   ident->level);
    if (threads != ident->threads)
        return FAIL(QMM_ERR_UNSUPPORTED, "made for %lld threads; this context has %d", threads,
                    ident->threads);
    char want[17];
    qmm_tuning_identity_id(ident, want);
    if (strcmp(id, want) != 0)
        return FAIL(QMM_ERR_FORMAT, "machine.id '%s' does not match its fields (expected '%s')",
                    id, want);
    if (!check_informational(root, why, why_len)) return QMM_ERR_FORMAT;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    if (!cJSON_IsArray(rows))
        return FAIL(QMM_ERR_FORMAT, "field 'rows' is missing or not an array");
    qmm_status st = parse_rows(rows, rows_out, why, why_len);
    if (st == QMM_OK) *n_rows = cJSON_GetArraySize(rows);
    return st;
}

/* Read and check the file at `path`. */
static qmm_status load_file(const char *path, const qmm_tuning_identity *ident,
                            qmm_tuning_rows_fn parse_rows, void *rows_out, int *n_rows,
                            char *why, size_t why_len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return FAIL(QMM_ERR_IO, "cannot open it: %s", strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return FAIL(QMM_ERR_IO, "not a regular file");
    }
    if ((unsigned long long)sb.st_size > QMM_TUNE_MAX_BYTES) {
        fclose(f);
        return FAIL(QMM_ERR_FORMAT, "%lld bytes, more than a tuning file may have (%zu)",
                    (long long)sb.st_size,
                   QMM_TUNE_MAX_BYTES);
    }
    const size_t size = (size_t)sb.st_size;
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        fclose(f);
        return FAIL(QMM_ERR_OUT_OF_MEMORY, "out of memory for %zu bytes", size);
    }
    const size_t got = fread(buf, 1, size, f);
    const bool read_error = ferror(f) != 0;
    fclose(f);
    if (read_error || got != size) {
        free(buf);
        return FAIL(QMM_ERR_IO, "read %zu of %zu bytes", got, size);
    }
    buf[size] = '\0';
    qmm_status st = qmm_tuning_parse_text(buf, size, ident, parse_rows, rows_out, n_rows, why,
                                          why_len);
    free(buf);
    return st;
}

qmm_status qmm_tuning_parse_text(const char *text, size_t size, const qmm_tuning_identity *ident,
                                 qmm_tuning_rows_fn parse_rows, void *rows_out, int *n_rows,
                                 char *why, size_t why_len) {
    if (size == 0) return FAIL(QMM_ERR_FORMAT, "the file is empty");
    if (memchr(text, '\0', size) != NULL)
        return FAIL(QMM_ERR_FORMAT, "the file holds a NUL byte (not a JSON text)");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, size + 1, &end, 1);
    if (root == NULL) {
        const size_t at =
            end != NULL && end >= text && end <= text + size ? (size_t)(end - text) : size;
        return FAIL(QMM_ERR_FORMAT, "not valid JSON at byte %zu of %zu (truncated or corrupt)",
                    at, size);
    }
    qmm_status st = check_document(root, ident, parse_rows, rows_out, n_rows, why, why_len);
    cJSON_Delete(root);
    return st;
}

/* $XDG_CACHE_HOME/qmm/tune-<id>.json (an absolute XDG_CACHE_HOME only, as the XDG base
 * directory specification says), else $HOME/.cache/qmm/tune-<id>.json; "" if neither. */
static void default_path(const char *id, char *out, size_t len) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int w = -1;
    if (xdg != NULL && xdg[0] == '/') w = snprintf(out, len, "%s/qmm/tune-%s.json", xdg, id);
    else if (home != NULL && home[0] != '\0')
        w = snprintf(out, len, "%s/.cache/qmm/tune-%s.json", home, id);
    if (w < 0 || (size_t)w >= len) out[0] = '\0';
}

qmm_status qmm_tuning_load(const char *param, const qmm_tuning_identity *ident,
                           qmm_tuning_rows_fn parse_rows, void *rows_out, qmm_tuning_info *info) {
    memset(info, 0, sizeof *info);
    info->state = QMM_TUNING_NONE;
    info->status = QMM_OK;
    qmm_tuning_identity_id(ident, info->machine_id);
    snprintf(info->device, sizeof info->device, "%s", ident->device);
    snprintf(info->level, sizeof info->level, "%s", ident->level);
    info->threads = ident->threads;
    default_path(info->machine_id, info->default_path, sizeof info->default_path);

    const char *env = getenv("QMM_TUNE_FILE");
    const char *path = param != NULL ? param : env != NULL ? env : info->default_path;
    const char *named_by = param != NULL ? "the context parameter tune_file"
                           : env != NULL ? "the environment QMM_TUNE_FILE" : NULL;
    if (path[0] == '\0') {
        if (named_by != NULL)
            snprintf(info->reason, sizeof info->reason, "no tuning file (turned off by %s = \"\")",
                     named_by);
        else
            snprintf(info->reason, sizeof info->reason, "no tuning file (no default location: "
                     "neither XDG_CACHE_HOME nor HOME is set)");
        return QMM_OK;
    }
    if (strlen(path) >= sizeof info->path)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "tuning file named by %s: the path is longer "
                         "than %zu bytes", named_by ? named_by : "the default location",
                         sizeof info->path - 1);
    struct stat sb;
    if (named_by == NULL && stat(path, &sb) != 0 && errno == ENOENT) {
        snprintf(info->reason, sizeof info->reason, "no tuning file at the default location %s "
                 "(`qmm tune` writes one)", path);
        return QMM_OK;
    }
    char why[768] = "";
    int n_rows = 0;
    qmm_status st = load_file(path, ident, parse_rows, rows_out, &n_rows, why, sizeof why);
    snprintf(info->path, sizeof info->path, "%s", path);
    if (st == QMM_OK) {
        info->state = QMM_TUNING_APPLIED;
        info->n_rows = n_rows;
        snprintf(info->reason, sizeof info->reason, "tuning file %s (%s) applied: %d rows for "
                 "%s, %s, %d threads", path, named_by ? named_by : "default location", n_rows,
                 ident->device, ident->level, ident->threads);
        qmm_log(1, "%s", info->reason);
        return QMM_OK;
    }
    if (named_by != NULL || st == QMM_ERR_OUT_OF_MEMORY)
        return qmm_error(st, "tuning file %s (named by %s): %s", path,
                         named_by ? named_by : "the default location", why);
    info->state = QMM_TUNING_IGNORED;
    info->status = st;
    snprintf(info->reason, sizeof info->reason, "ignored the tuning file at the default location "
             "%s: %s", path, why);
    qmm_log(1, "%s", info->reason);
    return QMM_OK;
}
