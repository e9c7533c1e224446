/*
 * writer.c — build a GGUF file (format: include/qmm_gguf.h) for test fixtures and tools.
 *
 * Metadata is encoded to bytes as it is added; tensors are referenced and laid out at
 * aligned offsets in the order added. The file is version 3 (or 2), little-endian.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/types.h"
#include "qmm_gguf.h"

#define GGUF_KEY_ALIGNMENT "general.alignment"

typedef struct bytes {
    uint8_t *p;
    size_t len, cap;
} bytes;

typedef struct open_array {
    qmm_gguf_value_type elem_type;
    uint64_t expected, added;
} open_array;

typedef struct wtensor {
    char *name;
    qmm_type type;
    uint32_t n_dims;
    int64_t ne[4];
    const void *data;
    size_t nbytes;
    uint64_t offset;
} wtensor;

struct qmm_gguf_writer {
    uint32_t version;
    size_t alignment;
    bytes kv;                 /* encoded KV pairs */
    uint64_t n_kv;
    char **keys;              /* for duplicate checks */
    size_t cap_keys;
    bool has_alignment_key;   /* the caller added general.alignment itself */
    open_array stack[QMM_GGUF_MAX_DEPTH];
    int depth;                /* open arrays */
    wtensor *tensors;
    size_t n_tensors, cap_tensors;
    uint64_t data_size;       /* running size of the data section (each tensor padded) */
};

static qmm_status oom(void) {
    return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF writer: out of memory");
}

static qmm_status put(bytes *b, const void *src, size_t n) {
    if (n > SIZE_MAX - b->len) return oom();
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) {
            if (!qmm_mul_size(cap, 2, &cap)) return oom();
        }
        uint8_t *p = realloc(b->p, cap);
        if (p == NULL) return oom();
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return QMM_OK;
}

/* Append the low `size` bytes of v little-endian. */
static qmm_status put_le(bytes *b, uint64_t v, size_t size) {
    uint8_t t[8];
    for (size_t i = 0; i < size; i++) t[i] = (uint8_t)(v >> (8 * i));
    return put(b, t, size);
}

static qmm_status put_string(bytes *b, const char *s, size_t len) {
    qmm_status st = put_le(b, len, 8);
    return st ? st : put(b, s, len);
}

qmm_status qmm_gguf_writer_create(qmm_gguf_writer **out) {
    if (out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_writer_create: out is NULL");
    qmm_gguf_writer *w = calloc(1, sizeof *w);
    if (w == NULL) return oom();
    w->version = 3;
    w->alignment = QMM_GGUF_DEFAULT_ALIGNMENT;
    *out = w;
    return QMM_OK;
}

void qmm_gguf_writer_free(qmm_gguf_writer *w) {
    if (w == NULL) return;
    free(w->kv.p);
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    free(w->keys);
    for (size_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->tensors);
    free(w);
}

qmm_status qmm_gguf_writer_set_alignment(qmm_gguf_writer *w, size_t alignment) {
    if (w == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer is NULL");
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > ((size_t)1 << 31))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: alignment %zu is not a power of two in [1, 2^31]",
                         alignment);
    if (w->n_tensors)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: alignment must be set before the first tensor is added");
    w->alignment = alignment;
    return QMM_OK;
}

qmm_status qmm_gguf_writer_set_version(qmm_gguf_writer *w, uint32_t version) {
    if (w == NULL || (version != 2 && version != 3))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: version %u is not 2 or 3",
                         version);
    w->version = version;
    return QMM_OK;
}

/*
 * Start a value of `type`: with a key, a new top-level pair (writes key and type id);
 * without, the next element of the innermost open array (writes nothing).
 */
static qmm_status begin_value(qmm_gguf_writer *w, const char *key, qmm_gguf_value_type type) {
    if (w == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer is NULL");
    if ((int)type < 0 || type >= QMM_GGUF_TYPE_COUNT)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: unknown value type %d",
                         (int)type);
    if (key == NULL) {
        if (w->depth == 0)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                             "GGUF writer: key is NULL but no array is open");
        open_array *a = &w->stack[w->depth - 1];
        if (a->elem_type != type)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                             "GGUF writer: element of type %s added to an array of %s",
                             qmm_gguf_value_type_name(type),
                             qmm_gguf_value_type_name(a->elem_type));
        if (a->added >= a->expected)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                             "GGUF writer: array already holds its %llu elements",
                             (unsigned long long)a->expected);
        a->added++;
        return QMM_OK;
    }
    if (w->depth != 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: key '%s' given while an array is open", key);
    size_t len = strlen(key);
    if (len == 0) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: empty key");
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: duplicate key '%s'", key);
    if (w->n_kv == w->cap_keys) {
        size_t cap = w->cap_keys ? 2 * w->cap_keys : 16;
        char **k = realloc(w->keys, cap * sizeof *k);
        if (k == NULL) return oom();
        w->keys = k;
        w->cap_keys = cap;
    }
    char *copy = strdup(key);
    if (copy == NULL) return oom();
    qmm_status s;
    if ((s = put_string(&w->kv, key, len)) || (s = put_le(&w->kv, (uint64_t)type, 4))) {
        free(copy);
        return s;
    }
    w->keys[w->n_kv++] = copy;
    if (strcmp(key, GGUF_KEY_ALIGNMENT) == 0) w->has_alignment_key = true;
    return QMM_OK;
}

/* The bits of a C scalar of `type` at `value`. */
static uint64_t scalar_bits(qmm_gguf_value_type type, const void *value) {
    switch (qmm_gguf_value_type_size(type)) {
    case 1: return *(const uint8_t *)value;
    case 2: return *(const uint16_t *)value;
    case 4: return *(const uint32_t *)value;
    case 8: return *(const uint64_t *)value;
    }
    return 0;
}

/* Refuse bool values other than 0 and 1 before anything is written. */
static qmm_status check_bools(qmm_gguf_value_type type, const uint8_t *values, uint64_t n) {
    if (type != QMM_GGUF_TYPE_BOOL) return QMM_OK;
    for (uint64_t j = 0; j < n; j++)
        if (values[j] > 1)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                             "GGUF writer: bool value %u (element %llu) is not 0 or 1",
                             values[j], (unsigned long long)j);
    return QMM_OK;
}

static qmm_status put_scalar(bytes *b, qmm_gguf_value_type type, const void *value) {
    return put_le(b, scalar_bits(type, value), qmm_gguf_value_type_size(type));
}

static bool is_scalar(qmm_gguf_value_type t) { return qmm_gguf_value_type_size(t) != 0; }

qmm_status qmm_gguf_writer_add_scalar(qmm_gguf_writer *w, const char *key,
                                      qmm_gguf_value_type type, const void *value) {
    if (value == NULL || !is_scalar(type))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: add_scalar needs a value of a scalar type (got %d)",
                         (int)type);
    qmm_status s = check_bools(type, value, 1);
    if (s == QMM_OK) s = begin_value(w, key, type);
    return s ? s : put_scalar(&w->kv, type, value);
}

qmm_status qmm_gguf_writer_add_u32(qmm_gguf_writer *w, const char *key, uint32_t v) {
    return qmm_gguf_writer_add_scalar(w, key, QMM_GGUF_TYPE_UINT32, &v);
}

qmm_status qmm_gguf_writer_add_string(qmm_gguf_writer *w, const char *key, const char *s,
                                      size_t len) {
    if (s == NULL && len != 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: string is NULL");
    qmm_status st = begin_value(w, key, QMM_GGUF_TYPE_STRING);
    return st ? st : put_string(&w->kv, s, len);
}

qmm_status qmm_gguf_writer_begin_array(qmm_gguf_writer *w, const char *key,
                                       qmm_gguf_value_type elem_type, uint64_t n) {
    if (w == NULL) return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer is NULL");
    if ((int)elem_type < 0 || elem_type >= QMM_GGUF_TYPE_COUNT)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: unknown element type %d",
                         (int)elem_type);
    if (w->depth >= QMM_GGUF_MAX_DEPTH)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: arrays nested deeper than %d levels", QMM_GGUF_MAX_DEPTH);
    qmm_status s = begin_value(w, key, QMM_GGUF_TYPE_ARRAY);
    if (s || (s = put_le(&w->kv, (uint64_t)elem_type, 4)) || (s = put_le(&w->kv, n, 8)))
        return s;
    w->stack[w->depth++] = (open_array){elem_type, n, 0};
    return QMM_OK;
}

qmm_status qmm_gguf_writer_end_array(qmm_gguf_writer *w) {
    if (w == NULL || w->depth == 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: end_array without an open array");
    open_array *a = &w->stack[w->depth - 1];
    if (a->added != a->expected)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: array closed after %llu of its %llu elements",
                         (unsigned long long)a->added, (unsigned long long)a->expected);
    w->depth--;
    return QMM_OK;
}

qmm_status qmm_gguf_writer_add_array(qmm_gguf_writer *w, const char *key,
                                     qmm_gguf_value_type elem_type, const void *elems,
                                     uint64_t n) {
    if (!is_scalar(elem_type) || (elems == NULL && n != 0))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: add_array needs scalar elements (got type %d)",
                         (int)elem_type);
    qmm_status s = check_bools(elem_type, elems, n);
    if (s == QMM_OK) s = qmm_gguf_writer_begin_array(w, key, elem_type, n);
    if (s) return s;
    size_t size = qmm_gguf_value_type_size(elem_type);
    for (uint64_t j = 0; j < n && s == QMM_OK; j++) {
        w->stack[w->depth - 1].added++;
        s = put_scalar(&w->kv, elem_type, (const uint8_t *)elems + j * size);
    }
    return s ? s : qmm_gguf_writer_end_array(w);
}

qmm_status qmm_gguf_writer_add_tensor(qmm_gguf_writer *w, const char *name, qmm_type type,
                                      uint32_t n_dims, const int64_t *ne, const void *data,
                                      size_t nbytes) {
    if (w == NULL || name == NULL || ne == NULL || (data == NULL && nbytes))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: add_tensor: NULL argument");
    if (name[0] == '\0') return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: empty tensor name");
    if (n_dims < 1 || n_dims > 4)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '%s' n_dims %u not in 1..4",
                         name, n_dims);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: duplicate tensor name '%s'",
                             name);
    size_t row, total;
    qmm_status s = qmm_row_bytes(type, ne[0], &row);
    if (s) return s;
    total = row;
    int64_t full[4] = {1, 1, 1, 1};
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] < 1)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '%s' ne[%u] = %lld < 1",
                             name, d, (long long)ne[d]);
        full[d] = ne[d];
        if (d > 0 && !qmm_mul_size(total, (size_t)ne[d], &total))
            return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: tensor '%s' size overflows",
                             name);
    }
    if (total != nbytes)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "GGUF writer: tensor '%s' has %zu bytes, its shape needs %zu", name,
                         nbytes, total);
    uint64_t pad = (w->alignment - nbytes % w->alignment) % w->alignment;
    if (w->data_size > UINT64_MAX - nbytes - pad)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: data section overflows");
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 16;
        wtensor *t = realloc(w->tensors, cap * sizeof *t);
        if (t == NULL) return oom();
        w->tensors = t;
        w->cap_tensors = cap;
    }
    char *copy = strdup(name);
    if (copy == NULL) return oom();
    wtensor *t = &w->tensors[w->n_tensors++];
    *t = (wtensor){.name = copy, .type = type, .n_dims = n_dims, .data = data,
                   .nbytes = nbytes, .offset = w->data_size};
    memcpy(t->ne, full, sizeof full);
    w->data_size += nbytes + pad;
    return QMM_OK;
}

/* Everything before the data section, padded to the alignment. */
static qmm_status build_header(const qmm_gguf_writer *w, bytes *h) {
    if (w->depth != 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF writer: %d array(s) still open",
                         w->depth);
    bool auto_key = !w->has_alignment_key && w->alignment != QMM_GGUF_DEFAULT_ALIGNMENT;
    qmm_status s;
    if ((s = put(h, "GGUF", 4)) || (s = put_le(h, w->version, 4)) ||
        (s = put_le(h, w->n_tensors, 8)) || (s = put_le(h, w->n_kv + auto_key, 8)))
        return s;
    if (auto_key) {
        const char *k = GGUF_KEY_ALIGNMENT;
        if ((s = put_string(h, k, strlen(k))) || (s = put_le(h, QMM_GGUF_TYPE_UINT32, 4)) ||
            (s = put_le(h, w->alignment, 4)))
            return s;
    }
    if ((s = put(h, w->kv.p, w->kv.len))) return s;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        if ((s = put_string(h, t->name, strlen(t->name))) || (s = put_le(h, t->n_dims, 4)))
            return s;
        for (uint32_t d = 0; d < t->n_dims; d++)
            if ((s = put_le(h, (uint64_t)t->ne[d], 8))) return s;
        if ((s = put_le(h, (uint64_t)t->type, 4)) || (s = put_le(h, t->offset, 8))) return s;
    }
    const uint8_t zero = 0;
    while (h->len % w->alignment)
        if ((s = put(h, &zero, 1))) return s;
    return QMM_OK;
}

static size_t tensor_pad(const qmm_gguf_writer *w, const wtensor *t) {
    return (w->alignment - t->nbytes % w->alignment) % w->alignment;
}

qmm_status qmm_gguf_writer_write_memory(const qmm_gguf_writer *w, void **data, size_t *size) {
    if (w == NULL || data == NULL || size == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_writer_write_memory: NULL argument");
    bytes h = {0};
    qmm_status s = build_header(w, &h);
    if (s == QMM_OK && w->data_size > SIZE_MAX - h.len) s = oom();
    size_t total = h.len + (size_t)w->data_size;
    uint8_t *out = s ? NULL : malloc(total ? total : 1);
    if (s == QMM_OK && out == NULL) s = oom();
    if (s) {
        free(h.p);
        return s;
    }
    memcpy(out, h.p, h.len);
    size_t at = h.len;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        if (t->nbytes) memcpy(out + at, t->data, t->nbytes);
        memset(out + at + t->nbytes, 0, tensor_pad(w, t));
        at += t->nbytes + tensor_pad(w, t);
    }
    free(h.p);
    *data = out;
    *size = total;
    return QMM_OK;
}

qmm_status qmm_gguf_writer_write_file(const qmm_gguf_writer *w, const char *path) {
    if (w == NULL || path == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_writer_write_file: NULL argument");
    bytes h = {0};
    qmm_status s = build_header(w, &h);
    if (s) {
        free(h.p);
        return s;
    }
    char buf[256];
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        int e = errno;
        free(h.p);
        return qmm_error(QMM_ERR_IO, "cannot create GGUF file '%s': %s", path,
                         strerror_r(e, buf, sizeof buf));
    }
    static const uint8_t zeros[4096];
    bool ok = fwrite(h.p, 1, h.len, f) == h.len;
    for (size_t i = 0; ok && i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        ok = fwrite(t->data, 1, t->nbytes, f) == t->nbytes;
        for (size_t pad = tensor_pad(w, t); ok && pad;) {
            size_t n = pad < sizeof zeros ? pad : sizeof zeros;
            ok = fwrite(zeros, 1, n, f) == n;
            pad -= n;
        }
    }
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    free(h.p);
    if (!ok)
        return qmm_error(QMM_ERR_IO, "cannot write GGUF file '%s': %s", path,
                         strerror_r(e, buf, sizeof buf));
    return QMM_OK;
}
