/*
 * info.c — `qmm info [--json] FILE.gguf`: a GGUF file's version, alignment, metadata and
 * tensor table, as text or JSON (cJSON). The file is opened with the validating reader, so
 * a malformed file is reported with the reader's sentence and exit status 1.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "commands.h"
#include "qmm.h"
#include "qmm_gguf.h"

enum { SHOW_ELEMS = 4, SHOW_CHARS = 64 };

static void usage(FILE *f) {
    fprintf(f,
            "usage: qmm info [--json] FILE.gguf\n"
            "\n"
            "Print a GGUF file's version, alignment, metadata and tensor table. The file is\n"
            "fully validated first; a malformed file is an error (exit status 1).\n"
            "\n"
            "Metadata arrays are shown as element type, length and the first %d elements.\n"
            "Tensor shapes are GGUF ne order: [k (elements per row), m (rows), ...].\n"
            "Offsets are bytes from the start of the data section.\n"
            "\n"
            "options:\n"
            "  --json     print one JSON object instead of text\n"
            "  -h, --help this text\n",
            SHOW_ELEMS);
}

/* ---- text ---- */

/* Append printf output to buf (of cap bytes) at *len, truncating quietly. */
static void app(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void app(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    if (*len >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0) *len = (size_t)n >= cap - *len ? cap : *len + (size_t)n;
}

static void app_string(char *buf, size_t cap, size_t *len, const char *s, size_t n) {
    app(buf, cap, len, "\"");
    for (size_t i = 0; i < n && i < SHOW_CHARS; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') app(buf, cap, len, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) app(buf, cap, len, "\\x%02x", c);
        else app(buf, cap, len, "%c", c);
    }
    app(buf, cap, len, n > SHOW_CHARS ? "\"..." : "\"");
}

static void app_value(char *buf, size_t cap, size_t *len, const qmm_gguf_value *v) {
    uint64_t u;
    int64_t i;
    double d;
    const char *s;
    size_t n;
    switch (v->type) {
    case QMM_GGUF_TYPE_FLOAT32:
    case QMM_GGUF_TYPE_FLOAT64:
        qmm_gguf_value_float(v, &d);
        app(buf, cap, len, "%.9g", d);
        return;
    case QMM_GGUF_TYPE_BOOL:
        qmm_gguf_value_uint(v, &u);
        app(buf, cap, len, u ? "true" : "false");
        return;
    case QMM_GGUF_TYPE_STRING:
        qmm_gguf_value_string(v, &s, &n);
        app_string(buf, cap, len, s, n);
        return;
    case QMM_GGUF_TYPE_ARRAY:
        app(buf, cap, len, "%s[%" PRIu64 "] [", qmm_gguf_value_type_name(v->elem_type), v->n);
        for (uint64_t j = 0; j < v->n && j < SHOW_ELEMS; j++) {
            qmm_gguf_value e;
            qmm_gguf_array_get(v, j, &e);
            if (j) app(buf, cap, len, ", ");
            app_value(buf, cap, len, &e);
        }
        app(buf, cap, len, v->n > SHOW_ELEMS ? ", ...]" : "]");
        return;
    case QMM_GGUF_TYPE_UINT8: case QMM_GGUF_TYPE_UINT16: case QMM_GGUF_TYPE_UINT32:
    case QMM_GGUF_TYPE_UINT64:
        qmm_gguf_value_uint(v, &u);
        app(buf, cap, len, "%" PRIu64, u);
        return;
    default:
        qmm_gguf_value_int(v, &i);
        app(buf, cap, len, "%" PRId64, i);
        return;
    }
}

static void shape_text(const qmm_gguf_tensor *t, char *buf, size_t cap) {
    size_t len = 0;
    app(buf, cap, &len, "[");
    for (uint32_t d = 0; d < t->n_dims; d++)
        app(buf, cap, &len, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    app(buf, cap, &len, "]");
}

static void print_text(const char *path, const qmm_gguf *g) {
    printf("file:       %s\n", path);
    printf("version:    %u\n", qmm_gguf_version(g));
    printf("alignment:  %zu\n", qmm_gguf_alignment(g));
    printf("size:       %" PRIu64 " bytes, data section at offset %" PRIu64 "\n",
           qmm_gguf_file_size(g), qmm_gguf_data_offset(g));
    int64_t n_kv = qmm_gguf_n_kv(g), n_t = qmm_gguf_n_tensors(g);
    printf("\nmetadata (%" PRId64 " keys):\n", n_kv);
    size_t kw = 0;
    for (int64_t i = 0; i < n_kv; i++) {
        size_t l = strlen(qmm_gguf_kv_key(g, i));
        if (l > kw) kw = l;
    }
    char buf[1024];
    for (int64_t i = 0; i < n_kv; i++) {
        qmm_gguf_value v;
        qmm_gguf_get_kv(g, i, &v);
        size_t len = 0;
        app_value(buf, sizeof buf, &len, &v);
        printf("  %-*s %-4s %s\n", (int)kw, qmm_gguf_kv_key(g, i),
               qmm_gguf_value_type_name(v.type), buf);
    }
    printf("\ntensors (%" PRId64 "):\n", n_t);
    size_t nw = 4, tw = 5; /* widest tensor name, widest type name */
    for (int64_t i = 0; i < n_t; i++) {
        qmm_gguf_tensor t;
        qmm_gguf_get_tensor(g, i, &t);
        if (strlen(t.name) > nw) nw = strlen(t.name);
        if (strlen(qmm_type_name(t.type)) > tw) tw = strlen(qmm_type_name(t.type));
    }
    printf("  %5s  %-*s %-*s %-22s %12s %12s\n", "#", (int)nw, "name", (int)tw, "type", "shape",
           "bytes", "offset");
    uint64_t total = 0;
    for (int64_t i = 0; i < n_t; i++) {
        qmm_gguf_tensor t;
        qmm_gguf_get_tensor(g, i, &t);
        char shape[128];
        shape_text(&t, shape, sizeof shape);
        printf("  %5" PRId64 "  %-*s %-*s %-22s %12zu %12" PRIu64 "\n", i, (int)nw, t.name,
               (int)tw, qmm_type_name(t.type), shape, t.nbytes, t.offset);
        total += t.nbytes;
    }
    printf("\ntensor bytes: %" PRIu64 "\n", total);
}

/* ---- JSON ---- */

/* Integers beyond 2^53 do not survive a JSON double: they become decimal strings. */
static cJSON *json_int(int64_t v, bool neg_ok, uint64_t u) {
    char s[32];
    if (neg_ok) {
        if (v > -(INT64_C(1) << 53) && v < (INT64_C(1) << 53)) return cJSON_CreateNumber((double)v);
        snprintf(s, sizeof s, "%" PRId64, v);
    } else {
        if (u < (UINT64_C(1) << 53)) return cJSON_CreateNumber((double)u);
        snprintf(s, sizeof s, "%" PRIu64, u);
    }
    return cJSON_CreateString(s);
}

static cJSON *json_value(const qmm_gguf_value *v) {
    uint64_t u;
    int64_t i;
    double d;
    const char *s;
    size_t n;
    switch (v->type) {
    case QMM_GGUF_TYPE_FLOAT32:
    case QMM_GGUF_TYPE_FLOAT64:
        qmm_gguf_value_float(v, &d);
        return cJSON_CreateNumber(d); /* cJSON prints non-finite values as null */
    case QMM_GGUF_TYPE_BOOL:
        qmm_gguf_value_uint(v, &u);
        return cJSON_CreateBool(u != 0);
    case QMM_GGUF_TYPE_STRING:
        qmm_gguf_value_string(v, &s, &n);
        return cJSON_CreateString(s); /* up to an inner NUL, if any */
    case QMM_GGUF_TYPE_ARRAY: {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "elem_type", qmm_gguf_value_type_name(v->elem_type));
        cJSON_AddItemToObject(o, "n", json_int(0, false, v->n));
        cJSON *first = cJSON_AddArrayToObject(o, "first");
        for (uint64_t j = 0; j < v->n && j < SHOW_ELEMS; j++) {
            qmm_gguf_value e;
            qmm_gguf_array_get(v, j, &e);
            cJSON_AddItemToArray(first, json_value(&e));
        }
        return o;
    }
    case QMM_GGUF_TYPE_UINT8: case QMM_GGUF_TYPE_UINT16: case QMM_GGUF_TYPE_UINT32:
    case QMM_GGUF_TYPE_UINT64:
        qmm_gguf_value_uint(v, &u);
        return json_int(0, false, u);
    default:
        qmm_gguf_value_int(v, &i);
        return json_int(i, true, 0);
    }
}

static int print_json(const char *path, const qmm_gguf *g) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "file", path);
    cJSON_AddNumberToObject(root, "version", qmm_gguf_version(g));
    cJSON_AddNumberToObject(root, "alignment", (double)qmm_gguf_alignment(g));
    cJSON_AddItemToObject(root, "file_size", json_int(0, false, qmm_gguf_file_size(g)));
    cJSON_AddItemToObject(root, "data_offset", json_int(0, false, qmm_gguf_data_offset(g)));
    cJSON *meta = cJSON_AddArrayToObject(root, "metadata");
    for (int64_t i = 0; i < qmm_gguf_n_kv(g); i++) {
        qmm_gguf_value v;
        qmm_gguf_get_kv(g, i, &v);
        cJSON *kv = cJSON_CreateObject();
        cJSON_AddStringToObject(kv, "key", qmm_gguf_kv_key(g, i));
        cJSON_AddStringToObject(kv, "type", qmm_gguf_value_type_name(v.type));
        cJSON_AddItemToObject(kv, "value", json_value(&v));
        cJSON_AddItemToArray(meta, kv);
    }
    cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
    for (int64_t i = 0; i < qmm_gguf_n_tensors(g); i++) {
        qmm_gguf_tensor t;
        qmm_gguf_get_tensor(g, i, &t);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", t.name);
        cJSON_AddStringToObject(o, "type", qmm_type_name(t.type));
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (uint32_t d = 0; d < t.n_dims; d++)
            cJSON_AddItemToArray(shape, json_int(t.ne[d], true, 0));
        cJSON_AddItemToObject(o, "bytes", json_int(0, false, t.nbytes));
        cJSON_AddItemToObject(o, "offset", json_int(0, false, t.offset));
        cJSON_AddItemToArray(tensors, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (text == NULL) {
        fprintf(stderr, "qmm info: out of memory printing JSON\n");
        return 1;
    }
    puts(text);
    cJSON_free(text);
    return 0;
}

int qmm_cmd_info(int argc, char **argv) {
    static const struct option long_opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    int c;
    optind = 0; /* GNU: full re-initialization */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr, "qmm info: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "qmm info: expected exactly one FILE.gguf, got %d arguments\n",
                argc - optind);
        usage(stderr);
        return 2;
    }
    const char *path = argv[optind];
    qmm_gguf *g = NULL;
    qmm_status s = qmm_gguf_open(path, &g);
    if (s != QMM_OK) {
        fprintf(stderr, "qmm info: %s: %s (%s)\n", path, qmm_last_error(), qmm_status_str(s));
        return 1;
    }
    int rc = 0;
    if (json) rc = print_json(path, g);
    else print_text(path, g);
    qmm_gguf_close(g);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
