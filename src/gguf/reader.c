/*
 * reader.c — parse and validate a GGUF image (format: include/qmm_gguf.h).
 *
 * Every count and length read from the file is checked against the bytes left before
 * anything is allocated for it, so a hostile file makes the reader allocate at most a
 * small multiple of its own size. Nothing is handed out until the whole file validated.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/types.h"
#include "gguf/gguf_internal.h"

#define GGUF_KEY_ALIGNMENT "general.alignment"

/* Smallest encodings, used to bound counts by the bytes left: a KV pair is a key length
 * (8), a value type (4) and at least one byte of value; a tensor info is a name length
 * (8) and at least one byte of name, n_dims (4), one ne (8), type (4) and offset (8). */
enum { MIN_KV_BYTES = 13, MIN_TENSOR_INFO_BYTES = 33, MIN_STRING_BYTES = 8,
       MIN_ARRAY_BYTES = 12 };

typedef struct cursor {
    const uint8_t *p;
    size_t size;
    size_t pos;
} cursor;

static size_t left(const cursor *c) { return c->size - c->pos; }

/* Take n bytes for `what`, or fail naming the field and where the file ends. */
static qmm_status take(cursor *c, size_t n, const char *what, const uint8_t **out) {
    if (n > left(c))
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF truncated: %s needs %zu bytes at offset %zu but the file ends "
                         "at %zu",
                         what, n, c->pos, c->size);
    *out = c->p + c->pos;
    c->pos += n;
    return QMM_OK;
}

static uint32_t le32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t le64(const uint8_t *b) { return le32(b) | (uint64_t)le32(b + 4) << 32; }

static qmm_status read_u32(cursor *c, const char *what, uint32_t *out) {
    const uint8_t *b = NULL;
    qmm_status s = take(c, 4, what, &b);
    if (s == QMM_OK) *out = le32(b);
    return s;
}
static qmm_status read_u64(cursor *c, const char *what, uint64_t *out) {
    const uint8_t *b = NULL;
    qmm_status s = take(c, 8, what, &b);
    if (s == QMM_OK) *out = le64(b);
    return s;
}

/* ---- growable storage, bounded by the file size ---- */

static qmm_status arena_put(qmm_gguf *g, const uint8_t *s, size_t len, size_t *at) {
    size_t need;
    if (!qmm_add_size(g->arena_len, len, &need) || !qmm_add_size(need, 1, &need))
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF string storage overflows size_t");
    if (need > g->arena_cap) {
        size_t cap = g->arena_cap ? g->arena_cap : 4096;
        while (cap < need) {
            if (!qmm_mul_size(cap, 2, &cap))
                return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF string storage overflows");
        }
        char *a = realloc(g->arena, cap);
        if (a == NULL)
            return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: cannot allocate %zu bytes of strings",
                             cap);
        g->arena = a;
        g->arena_cap = cap;
    }
    if (len) memcpy(g->arena + g->arena_len, s, len);
    g->arena[g->arena_len + len] = '\0';
    *at = g->arena_len;
    g->arena_len = need;
    return QMM_OK;
}

/* Append `count` zeroed nodes; the caller has bounded count by the bytes left. */
static qmm_status nodes_reserve(qmm_gguf *g, uint64_t count, int64_t *first) {
    uint64_t need = (uint64_t)g->n_nodes + count;
    if (need > (uint64_t)g->cap_nodes) {
        uint64_t cap = g->cap_nodes ? (uint64_t)g->cap_nodes : 64;
        while (cap < need) cap *= 2;
        size_t bytes;
        if (cap > INT64_MAX || !qmm_mul_size((size_t)cap, sizeof(gguf_node), &bytes))
            return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: %llu metadata values overflow size_t",
                             (unsigned long long)need);
        gguf_node *n = realloc(g->nodes, bytes);
        if (n == NULL)
            return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: cannot allocate %zu bytes of metadata",
                             bytes);
        g->nodes = n;
        g->cap_nodes = (int64_t)cap;
    }
    memset(g->nodes + g->n_nodes, 0, (size_t)count * sizeof(gguf_node));
    *first = g->n_nodes;
    g->n_nodes = (int64_t)need;
    return QMM_OK;
}

/* Read a string (u64 length + bytes) into the arena. `what` names it in errors;
 * `name_like` additionally rejects empty strings and inner NULs (keys, tensor names). */
static qmm_status read_string(qmm_gguf *g, cursor *c, const char *what, bool name_like,
                              size_t *at, uint64_t *len_out) {
    uint64_t len;
    qmm_status s = read_u64(c, what, &len);
    if (s) return s;
    if (len > left(c))
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF %s length %llu at offset %zu exceeds the %zu bytes left in the file",
                         what, (unsigned long long)len, c->pos - 8, left(c));
    const uint8_t *b = NULL;
    if ((s = take(c, (size_t)len, what, &b))) return s;
    if (name_like && len == 0)
        return qmm_error(QMM_ERR_FORMAT, "GGUF %s at offset %zu is empty", what, c->pos - 8);
    if (name_like && memchr(b, 0, (size_t)len) != NULL)
        return qmm_error(QMM_ERR_FORMAT, "GGUF %s at offset %zu contains a NUL byte", what,
                         c->pos - (size_t)len);
    if (len_out) *len_out = len;
    return arena_put(g, b, (size_t)len, at);
}

/* ---- metadata values ---- */

/* Keys are passed as offsets into g->arena (not pointers): parsing a string value may
 * grow, and so move, the arena. */
static qmm_status parse_value(qmm_gguf *g, cursor *c, uint32_t type, int depth,
                              size_t key_at, int64_t node);

static qmm_status parse_array(qmm_gguf *g, cursor *c, int depth, size_t key_at,
                              int64_t node) {
    if (depth > QMM_GGUF_MAX_DEPTH)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF key '%s': arrays nested deeper than %d levels at offset %zu", g->arena + key_at,
                         QMM_GGUF_MAX_DEPTH, c->pos);
    uint32_t et;
    uint64_t n;
    qmm_status s;
    if ((s = read_u32(c, "array element type", &et))) return s;
    if (et >= QMM_GGUF_TYPE_COUNT)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF key '%s': unknown array element type %u at offset %zu", g->arena + key_at, et,
                         c->pos - 4);
    if ((s = read_u64(c, "array length", &n))) return s;
    size_t esize = qmm_gguf_value_type_size((int)et);
    size_t min = esize ? esize : et == QMM_GGUF_TYPE_STRING ? MIN_STRING_BYTES : MIN_ARRAY_BYTES;
    if (n > left(c) / min)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF key '%s': array length %llu of %s at offset %zu cannot fit in the "
                         "%zu bytes left in the file (length corrupt or file truncated)",
                         g->arena + key_at, (unsigned long long)n, qmm_gguf_value_type_name((int)et),
                         c->pos - 8, left(c));
    g->nodes[node].type = QMM_GGUF_TYPE_ARRAY;
    g->nodes[node].elem_type = et;
    g->nodes[node].n = n;
    if (esize) {
        const uint8_t *b = NULL;
        if ((s = take(c, (size_t)n * esize, "array elements", &b))) return s;
        g->nodes[node].raw = b;
        if (et == QMM_GGUF_TYPE_BOOL) {
            for (uint64_t j = 0; j < n; j++)
                if (b[j] > 1)
                    return qmm_error(QMM_ERR_FORMAT,
                                     "GGUF key '%s': bool array element %llu is %u, not 0 or 1",
                                     g->arena + key_at, (unsigned long long)j, b[j]);
        }
        return QMM_OK;
    }
    int64_t first;
    if ((s = nodes_reserve(g, n, &first))) return s;
    g->nodes[node].first = first;
    for (uint64_t j = 0; j < n; j++)
        if ((s = parse_value(g, c, et, depth + 1, key_at, first + (int64_t)j))) return s;
    return QMM_OK;
}

static qmm_status parse_value(qmm_gguf *g, cursor *c, uint32_t type, int depth,
                              size_t key_at, int64_t node) {
    qmm_status s;
    if (type >= QMM_GGUF_TYPE_COUNT)
        return qmm_error(QMM_ERR_FORMAT, "GGUF key '%s': unknown value type %u at offset %zu",
                         g->arena + key_at, type, c->pos);
    if (type == QMM_GGUF_TYPE_ARRAY) return parse_array(g, c, depth, key_at, node);
    g->nodes[node].type = type;
    g->nodes[node].elem_type = type;
    if (type == QMM_GGUF_TYPE_STRING) {
        size_t at;
        uint64_t len;
        if ((s = read_string(g, c, "string value", false, &at, &len))) return s;
        g->nodes[node].str = at;
        g->nodes[node].n = len;
        return QMM_OK;
    }
    const uint8_t *b = NULL;
    if ((s = take(c, qmm_gguf_value_type_size((int)type), "scalar value", &b))) return s;
    if (type == QMM_GGUF_TYPE_BOOL && b[0] > 1)
        return qmm_error(QMM_ERR_FORMAT, "GGUF key '%s': bool value is %u, not 0 or 1", g->arena + key_at,
                         b[0]);
    g->nodes[node].raw = b;
    g->nodes[node].n = 1;
    return QMM_OK;
}

/* ---- sorting and duplicates ---- */

typedef struct named { const char *name; int64_t index; } named;

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* Index array of `count` items sorted by the name at arena offset names[i] (stride bytes
 * apart), or an error naming the first duplicate. */
static qmm_status sort_names(const qmm_gguf *g, const size_t *names, size_t stride,
                             int64_t count, const char *what, int64_t **out) {
    size_t n = (size_t)(count ? count : 1);
    named *tmp = malloc(n * sizeof *tmp);
    int64_t *idx = malloc(n * sizeof *idx);
    if (tmp == NULL || idx == NULL) {
        free(tmp);
        free(idx);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: cannot allocate an index of %lld %ss",
                         (long long)count, what);
    }
    for (int64_t i = 0; i < count; i++) {
        tmp[i].name = g->arena + *(const size_t *)((const char *)names + (size_t)i * stride);
        tmp[i].index = i;
    }
    qsort(tmp, (size_t)count, sizeof *tmp, cmp_named);
    for (int64_t i = 1; i < count; i++) {
        if (strcmp(tmp[i - 1].name, tmp[i].name) == 0) {
            int64_t a = tmp[i - 1].index, b = tmp[i].index;
            qmm_status s = qmm_error(QMM_ERR_FORMAT,
                                     "GGUF duplicate %s '%s' (entries %lld and %lld)", what,
                                     tmp[i].name, (long long)(a < b ? a : b),
                                     (long long)(a < b ? b : a));
            free(tmp);
            free(idx);
            return s;
        }
    }
    for (int64_t i = 0; i < count; i++) idx[i] = tmp[i].index;
    free(tmp);
    *out = idx;
    return QMM_OK;
}

static int64_t find_sorted(const qmm_gguf *g, const int64_t *idx, int64_t count,
                           const size_t *names, size_t stride, const char *name) {
    if (name == NULL) return -1;
    int64_t lo = 0, hi = count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const char *s = g->arena + *(const size_t *)((const char *)names +
                                                     (size_t)idx[mid] * stride);
        int c = strcmp(s, name);
        if (c == 0) return idx[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* ---- header parts ---- */

static qmm_status parse_kvs(qmm_gguf *g, cursor *c, uint64_t n_kv) {
    if (n_kv > left(c) / MIN_KV_BYTES)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF n_kv %llu cannot fit in the %zu bytes after the header (count "
                         "corrupt or file truncated)",
                         (unsigned long long)n_kv, left(c));
    g->kvs = calloc((size_t)(n_kv ? n_kv : 1), sizeof *g->kvs);
    if (g->kvs == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: cannot allocate %llu KV pairs",
                         (unsigned long long)n_kv);
    qmm_status s;
    for (uint64_t i = 0; i < n_kv; i++) {
        gguf_kv *kv = &g->kvs[i];
        if ((s = read_string(g, c, "key", true, &kv->key, NULL))) return s;
        uint32_t type;
        if ((s = read_u32(c, "value type", &type))) return s;
        if ((s = nodes_reserve(g, 1, &kv->node))) return s;
        g->n_kv = (int64_t)i + 1;
        if ((s = parse_value(g, c, type, 1, kv->key, kv->node))) return s;
    }
    return sort_names(g, &g->kvs[0].key, sizeof(gguf_kv), g->n_kv, "key", &g->kv_by_key);
}

static qmm_status parse_alignment(qmm_gguf *g) {
    g->alignment = QMM_GGUF_DEFAULT_ALIGNMENT;
    int64_t i = find_sorted(g, g->kv_by_key, g->n_kv, &g->kvs[0].key, sizeof(gguf_kv),
                            GGUF_KEY_ALIGNMENT);
    if (i < 0) return QMM_OK;
    const gguf_node *v = &g->nodes[g->kvs[i].node];
    if (v->type != QMM_GGUF_TYPE_UINT32)
        return qmm_error(QMM_ERR_FORMAT, "GGUF " GGUF_KEY_ALIGNMENT " has type %s, must be u32",
                         qmm_gguf_value_type_name((int)v->type));
    uint32_t a = le32(v->raw);
    if (a == 0 || (a & (a - 1)) != 0)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF " GGUF_KEY_ALIGNMENT " is %u, must be a non-zero power of two", a);
    g->alignment = a;
    return QMM_OK;
}

static qmm_status parse_tensor_info(qmm_gguf *g, cursor *c, int64_t i) {
    gguf_tensor_info *t = &g->tensors[i];
    qmm_status s;
    if ((s = read_string(g, c, "tensor name", true, &t->name, NULL))) return s;
    const char *name = g->arena + t->name;
    if ((s = read_u32(c, "tensor n_dims", &t->n_dims))) return s;
    if (t->n_dims < 1 || t->n_dims > 4)
        return qmm_error(QMM_ERR_FORMAT, "GGUF tensor %lld '%s': n_dims is %u, must be 1..4",
                         (long long)i, name, t->n_dims);
    uint64_t count = 1;
    for (uint32_t d = 0; d < 4; d++) {
        uint64_t ne = 1;
        if (d < t->n_dims && (s = read_u64(c, "tensor ne", &ne))) return s;
        if (ne < 1 || ne > INT64_MAX)
            return qmm_error(QMM_ERR_FORMAT,
                             "GGUF tensor %lld '%s': ne[%u] is %llu, must be 1..INT64_MAX",
                             (long long)i, name, d, (unsigned long long)ne);
        if (count > (uint64_t)INT64_MAX / ne)
            return qmm_error(QMM_ERR_FORMAT,
                             "GGUF tensor %lld '%s': element count overflows at ne[%u] = %llu",
                             (long long)i, name, d, (unsigned long long)ne);
        count *= ne;
        t->ne[d] = (int64_t)ne;
    }
    uint32_t type;
    if ((s = read_u32(c, "tensor type", &type))) return s;
    const qmm_type_traits *tr = type < QMM_TYPE_COUNT ? qmm_type_traits_get((int)type) : NULL;
    if (tr == NULL)
        return qmm_error(QMM_ERR_FORMAT, "GGUF tensor %lld '%s': type id %u is not known to qmm",
                         (long long)i, name, type);
    t->type = (qmm_type)type;
    if (t->ne[0] % tr->block_size != 0)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF tensor %lld '%s': ne[0] = %lld is not a multiple of %s's block "
                         "size %lld",
                         (long long)i, name, (long long)t->ne[0], tr->name,
                         (long long)tr->block_size);
    uint64_t nbytes = (uint64_t)(t->ne[0] / tr->block_size);
    for (uint32_t d = 0; d < 4; d++) {
        uint64_t f = d == 0 ? tr->block_bytes : (uint64_t)t->ne[d];
        if (nbytes > SIZE_MAX / f)
            return qmm_error(QMM_ERR_FORMAT,
                             "GGUF tensor %lld '%s': byte size of %llu %s elements overflows",
                             (long long)i, name, (unsigned long long)count, tr->name);
        nbytes *= f;
    }
    t->nbytes = (size_t)nbytes;
    if ((s = read_u64(c, "tensor offset", &t->offset))) return s;
    if (t->offset % g->alignment != 0)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF tensor %lld '%s': offset %llu is not a multiple of the alignment "
                         "%zu",
                         (long long)i, name, (unsigned long long)t->offset, g->alignment);
    return QMM_OK;
}

typedef struct extent { uint64_t offset; size_t nbytes; int64_t index; } extent;

static int cmp_extent(const void *a, const void *b) {
    uint64_t x = ((const extent *)a)->offset, y = ((const extent *)b)->offset;
    return x < y ? -1 : x > y;
}

/* Data section placement, tensors inside the file, no two overlapping. */
static qmm_status check_tensor_data(qmm_gguf *g, size_t header_end) {
    uint64_t a = g->alignment;
    uint64_t pad = (a - header_end % a) % a;
    if (header_end > UINT64_MAX - pad)
        return qmm_error(QMM_ERR_FORMAT, "GGUF data offset overflows");
    g->data_offset = header_end + pad;
    if (g->n_tensors == 0) return QMM_OK;
    if (g->data_offset > g->size)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF data section starts at %llu (header end %zu aligned to %zu), past "
                         "the end of the file (%zu bytes)",
                         (unsigned long long)g->data_offset, header_end, g->alignment, g->size);
    uint64_t data_size = g->size - g->data_offset;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor_info *t = &g->tensors[i];
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return qmm_error(QMM_ERR_FORMAT,
                             "GGUF tensor %lld '%s': offset %llu + size %zu runs past the end of "
                             "the data section (%llu bytes)",
                             (long long)i, g->arena + t->name, (unsigned long long)t->offset,
                             t->nbytes, (unsigned long long)data_size);
    }
    extent *ex = malloc((size_t)g->n_tensors * sizeof *ex);
    if (ex == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: cannot sort tensors");
    for (int64_t i = 0; i < g->n_tensors; i++)
        ex[i] = (extent){g->tensors[i].offset, g->tensors[i].nbytes, i};
    qsort(ex, (size_t)g->n_tensors, sizeof *ex, cmp_extent);
    qmm_status s = QMM_OK;
    for (int64_t i = 1; i < g->n_tensors && s == QMM_OK; i++) {
        const gguf_tensor_info *p = &g->tensors[ex[i - 1].index], *t = &g->tensors[ex[i].index];
        if (p->offset + p->nbytes > t->offset)
            s = qmm_error(QMM_ERR_FORMAT,
                          "GGUF tensor '%s' (offset %llu, %zu bytes) overlaps tensor '%s' at "
                          "offset %llu",
                          g->arena + p->name, (unsigned long long)p->offset, p->nbytes,
                          g->arena + t->name, (unsigned long long)t->offset);
    }
    free(ex);
    return s;
}

static qmm_status parse(qmm_gguf *g) {
    cursor c = {.p = g->base, .size = g->size, .pos = 0};
    const uint8_t *magic = NULL;
    qmm_status s;
    if ((s = take(&c, 4, "magic", &magic))) return s;
    if (memcmp(magic, "GGUF", 4) != 0)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF magic is %02x %02x %02x %02x, expected the bytes \"GGUF\"",
                         magic[0], magic[1], magic[2], magic[3]);
    if ((s = read_u32(&c, "version", &g->version))) return s;
    if (g->version == 0x02000000u || g->version == 0x03000000u)
        return qmm_error(QMM_ERR_FORMAT,
                         "big-endian GGUF not supported (version field reads 0x%08x, version %u "
                         "byte-swapped)",
                         g->version, __builtin_bswap32(g->version));
    if (g->version != 2 && g->version != 3)
        return qmm_error(QMM_ERR_FORMAT, "GGUF version is %u, only versions 2 and 3 are read",
                         g->version);
    uint64_t n_tensors, n_kv;
    if ((s = read_u64(&c, "n_tensors", &n_tensors))) return s;
    if ((s = read_u64(&c, "n_kv", &n_kv))) return s;
    if (n_tensors > left(&c) / MIN_TENSOR_INFO_BYTES)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF n_tensors %llu cannot fit in the %zu bytes after the header (count "
                         "corrupt or file truncated)",
                         (unsigned long long)n_tensors, left(&c));
    if ((s = parse_kvs(g, &c, n_kv))) return s;
    if ((s = parse_alignment(g))) return s;
    if (n_tensors > left(&c) / MIN_TENSOR_INFO_BYTES)
        return qmm_error(QMM_ERR_FORMAT,
                         "GGUF n_tensors %llu cannot fit in the %zu bytes after the metadata (count "
                         "corrupt or file truncated)",
                         (unsigned long long)n_tensors, left(&c));
    g->tensors = calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *g->tensors);
    if (g->tensors == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: cannot allocate %llu tensor infos",
                         (unsigned long long)n_tensors);
    for (uint64_t i = 0; i < n_tensors; i++) {
        g->n_tensors = (int64_t)i + 1;
        if ((s = parse_tensor_info(g, &c, (int64_t)i))) return s;
    }
    if ((s = sort_names(g, &g->tensors[0].name, sizeof(gguf_tensor_info), g->n_tensors,
                        "tensor name", &g->tensor_by_name)))
        return s;
    return check_tensor_data(g, c.pos);
}

/* ---- public ---- */

void qmm_gguf_close(qmm_gguf *g) {
    if (g == NULL) return;
    if (g->mapped && g->size) munmap((void *)g->base, g->size);
    free(g->arena);
    free(g->nodes);
    free(g->kvs);
    free(g->tensors);
    free(g->kv_by_key);
    free(g->tensor_by_name);
    free(g);
}

/* Take ownership of the image (base, size, mapped) and validate it. */
static qmm_status open_image(const void *data, size_t size, bool mapped, qmm_gguf **out) {
    qmm_gguf *g = calloc(1, sizeof *g);
    if (g == NULL) {
        if (mapped && size) munmap((void *)data, size);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "GGUF: cannot allocate the reader");
    }
    g->base = data;
    g->size = size;
    g->mapped = mapped;
    qmm_status s = parse(g);
    if (s != QMM_OK) {
        qmm_gguf_close(g);
        return s;
    }
    *out = g;
    return QMM_OK;
}

qmm_status qmm_gguf_open_memory(const void *data, size_t size, qmm_gguf **out) {
    if (out == NULL || (data == NULL && size != 0))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_open_memory: NULL argument");
    static const uint8_t empty[1];
    return open_image(data ? data : empty, size, false, out);
}

qmm_status qmm_gguf_open(const char *path, qmm_gguf **out) {
    if (path == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_open: NULL argument");
    char buf[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return qmm_error(QMM_ERR_IO, "cannot open GGUF file '%s': %s", path,
                         strerror_r(e, buf, sizeof buf));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return qmm_error(QMM_ERR_IO, "cannot read GGUF file '%s': %s", path,
                         strerror_r(e, buf, sizeof buf));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return qmm_error(QMM_ERR_IO, "cannot read GGUF file '%s': not a regular file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return qmm_error(QMM_ERR_IO, "GGUF file '%s' is too large to map", path);
    }
    size_t size = (size_t)st.st_size;
    void *map = NULL;
    if (size) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int e = errno;
            close(fd);
            return qmm_error(QMM_ERR_IO, "cannot mmap GGUF file '%s' (%zu bytes): %s", path,
                             size, strerror_r(e, buf, sizeof buf));
        }
    }
    close(fd);
    static const uint8_t empty[1];
    return open_image(size ? map : empty, size, size != 0, out);
}

uint32_t qmm_gguf_version(const qmm_gguf *g) { return g ? g->version : 0; }
size_t qmm_gguf_alignment(const qmm_gguf *g) { return g ? g->alignment : 0; }
uint64_t qmm_gguf_data_offset(const qmm_gguf *g) { return g ? g->data_offset : 0; }
uint64_t qmm_gguf_file_size(const qmm_gguf *g) { return g ? g->size : 0; }
int64_t qmm_gguf_n_tensors(const qmm_gguf *g) { return g ? g->n_tensors : 0; }
int64_t qmm_gguf_n_kv(const qmm_gguf *g) { return g ? g->n_kv : 0; }

qmm_status qmm_gguf_get_tensor(const qmm_gguf *g, int64_t i, qmm_gguf_tensor *out) {
    if (g == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_get_tensor: NULL argument");
    if (i < 0 || i >= g->n_tensors)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "tensor index %lld out of range [0, %lld)",
                         (long long)i, (long long)g->n_tensors);
    const gguf_tensor_info *t = &g->tensors[i];
    out->name = g->arena + t->name;
    out->type = t->type;
    out->n_dims = t->n_dims;
    memcpy(out->ne, t->ne, sizeof out->ne);
    out->offset = t->offset;
    out->nbytes = t->nbytes;
    out->data = g->base + g->data_offset + t->offset;
    return QMM_OK;
}

int64_t qmm_gguf_find_tensor(const qmm_gguf *g, const char *name) {
    if (g == NULL || g->n_tensors == 0) return -1;
    return find_sorted(g, g->tensor_by_name, g->n_tensors, &g->tensors[0].name,
                       sizeof(gguf_tensor_info), name);
}

const char *qmm_gguf_kv_key(const qmm_gguf *g, int64_t i) {
    if (g == NULL || i < 0 || i >= g->n_kv) return NULL;
    return g->arena + g->kvs[i].key;
}

int qmm_gguf_kv_type(const qmm_gguf *g, int64_t i) {
    if (g == NULL || i < 0 || i >= g->n_kv) return -1;
    return (int)g->nodes[g->kvs[i].node].type;
}

int64_t qmm_gguf_find_kv(const qmm_gguf *g, const char *key) {
    if (g == NULL || g->n_kv == 0) return -1;
    return find_sorted(g, g->kv_by_key, g->n_kv, &g->kvs[0].key, sizeof(gguf_kv), key);
}

qmm_status qmm_gguf_get_kv(const qmm_gguf *g, int64_t i, qmm_gguf_value *out) {
    if (g == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_get_kv: NULL argument");
    if (i < 0 || i >= g->n_kv)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "KV index %lld out of range [0, %lld)",
                         (long long)i, (long long)g->n_kv);
    qmm_gguf_value_from_node(g, g->kvs[i].node, out);
    return QMM_OK;
}
