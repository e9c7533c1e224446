/* values.c — GGUF metadata value types and the typed value accessors of qmm_gguf.h. */
#include <string.h>

#include "core/internal.h"
#include "gguf/gguf_internal.h"

static const struct {
    const char *name;
    size_t size;
} value_types[QMM_GGUF_TYPE_COUNT] = {
    [QMM_GGUF_TYPE_UINT8] = {"u8", 1},     [QMM_GGUF_TYPE_INT8] = {"i8", 1},
    [QMM_GGUF_TYPE_UINT16] = {"u16", 2},   [QMM_GGUF_TYPE_INT16] = {"i16", 2},
    [QMM_GGUF_TYPE_UINT32] = {"u32", 4},   [QMM_GGUF_TYPE_INT32] = {"i32", 4},
    [QMM_GGUF_TYPE_FLOAT32] = {"f32", 4},  [QMM_GGUF_TYPE_BOOL] = {"bool", 1},
    [QMM_GGUF_TYPE_STRING] = {"str", 0},   [QMM_GGUF_TYPE_ARRAY] = {"arr", 0},
    [QMM_GGUF_TYPE_UINT64] = {"u64", 8},   [QMM_GGUF_TYPE_INT64] = {"i64", 8},
    [QMM_GGUF_TYPE_FLOAT64] = {"f64", 8},
};

const char *qmm_gguf_value_type_name(int type) {
    return type >= 0 && type < QMM_GGUF_TYPE_COUNT ? value_types[type].name : NULL;
}

size_t qmm_gguf_value_type_size(int type) {
    return type >= 0 && type < QMM_GGUF_TYPE_COUNT ? value_types[type].size : 0;
}

void qmm_gguf_value_from_node(const qmm_gguf *g, int64_t node, qmm_gguf_value *out) {
    const gguf_node *nd = &g->nodes[node];
    out->type = (qmm_gguf_value_type)nd->type;
    out->elem_type = (qmm_gguf_value_type)nd->elem_type;
    out->n = nd->n;
    if (nd->type == QMM_GGUF_TYPE_STRING) out->data = g->arena + nd->str;
    else out->data = nd->raw; /* NULL for arrays of strings/arrays */
    out->g = g;
    out->node = node;
}

qmm_status qmm_gguf_array_get(const qmm_gguf_value *arr, uint64_t j, qmm_gguf_value *out) {
    if (arr == NULL || out == NULL || arr->g == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_array_get: NULL argument");
    if (arr->type != QMM_GGUF_TYPE_ARRAY)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_gguf_array_get: value of type %s is not an array",
                         qmm_gguf_value_type_name(arr->type));
    if (j >= arr->n)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "array index %llu out of range [0, %llu)",
                         (unsigned long long)j, (unsigned long long)arr->n);
    const gguf_node *nd = &arr->g->nodes[arr->node];
    size_t es = qmm_gguf_value_type_size((int)nd->elem_type);
    if (es) {
        out->type = out->elem_type = (qmm_gguf_value_type)nd->elem_type;
        out->n = 1;
        out->data = nd->raw + (size_t)j * es;
        out->g = arr->g;
        out->node = -1; /* an element of a scalar array has no node of its own */
        return QMM_OK;
    }
    qmm_gguf_value_from_node(arr->g, nd->first + (int64_t)j, out);
    return QMM_OK;
}

/* Little-endian bytes of a scalar as an unsigned 64-bit pattern. */
static uint64_t load_le(const void *p, size_t size) {
    const uint8_t *b = p;
    uint64_t v = 0;
    for (size_t i = 0; i < size; i++) v |= (uint64_t)b[i] << (8 * i);
    return v;
}

/* An integer scalar as (negative?, magnitude) — false for non-integer types. */
static bool load_integer(const qmm_gguf_value *v, bool *neg, uint64_t *mag) {
    if (v == NULL || v->data == NULL) return false;
    size_t size = qmm_gguf_value_type_size(v->type);
    uint64_t raw = load_le(v->data, size);
    *neg = false;
    switch (v->type) {
    case QMM_GGUF_TYPE_UINT8: case QMM_GGUF_TYPE_UINT16: case QMM_GGUF_TYPE_UINT32:
    case QMM_GGUF_TYPE_UINT64: case QMM_GGUF_TYPE_BOOL:
        *mag = raw;
        return true;
    case QMM_GGUF_TYPE_INT8: case QMM_GGUF_TYPE_INT16: case QMM_GGUF_TYPE_INT32:
    case QMM_GGUF_TYPE_INT64: {
        uint64_t sign = (uint64_t)1 << (8 * size - 1);
        if (raw & sign) {
            *neg = true;
            /* two's complement magnitude within `size` bytes */
            uint64_t mask = size == 8 ? UINT64_MAX : (((uint64_t)1 << (8 * size)) - 1);
            *mag = ((~raw) & mask) + 1;
        } else {
            *mag = raw;
        }
        return true;
    }
    default:
        return false;
    }
}

qmm_status qmm_gguf_value_uint(const qmm_gguf_value *v, uint64_t *out) {
    bool neg;
    uint64_t mag;
    if (out == NULL || !load_integer(v, &neg, &mag))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF value of type %s is not an integer",
                         v ? qmm_gguf_value_type_name(v->type) : "NULL");
    if (neg)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF value -%llu is negative",
                         (unsigned long long)mag);
    *out = mag;
    return QMM_OK;
}

qmm_status qmm_gguf_value_int(const qmm_gguf_value *v, int64_t *out) {
    bool neg;
    uint64_t mag;
    if (out == NULL || !load_integer(v, &neg, &mag))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF value of type %s is not an integer",
                         v ? qmm_gguf_value_type_name(v->type) : "NULL");
    if (!neg && mag > (uint64_t)INT64_MAX)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF value %llu does not fit in int64",
                         (unsigned long long)mag);
    *out = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return QMM_OK;
}

qmm_status qmm_gguf_value_float(const qmm_gguf_value *v, double *out) {
    if (v == NULL || out == NULL || v->data == NULL ||
        (v->type != QMM_GGUF_TYPE_FLOAT32 && v->type != QMM_GGUF_TYPE_FLOAT64))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF value of type %s is not f32/f64",
                         v ? qmm_gguf_value_type_name(v->type) : "NULL");
    if (v->type == QMM_GGUF_TYPE_FLOAT32) {
        uint32_t bits = (uint32_t)load_le(v->data, 4);
        float f;
        memcpy(&f, &bits, 4);
        *out = f;
    } else {
        uint64_t bits = load_le(v->data, 8);
        memcpy(out, &bits, 8);
    }
    return QMM_OK;
}

qmm_status qmm_gguf_value_string(const qmm_gguf_value *v, const char **s, size_t *len) {
    if (v == NULL || s == NULL || v->type != QMM_GGUF_TYPE_STRING)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "GGUF value of type %s is not a string",
                         v ? qmm_gguf_value_type_name(v->type) : "NULL");
    *s = v->data;
    if (len) *len = (size_t)v->n;
    return QMM_OK;
}
