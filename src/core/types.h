/*
 * types.h — the type table: the single source of truth for what a type is.
 * Tests iterate it; adding a type means a block struct, its scalar code, and one row here.
 */
#ifndef QMM_CORE_TYPES_H
#define QMM_CORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

typedef void (*qmm_to_float_fn)(const void *src, float *dst, int64_t k);
typedef void (*qmm_from_float_fn)(const float *src, void *dst, int64_t k);

typedef struct qmm_type_traits {
    const char *name;            /* GGML's lower-case name; NULL = unsupported id */
    int64_t block_size;          /* elements per block */
    size_t block_bytes;          /* bytes per block */
    bool is_weight;              /* usable as qmm_weights */
    qmm_to_float_fn to_float;    /* dequantize one row (bit-exact with GGML) */
    qmm_from_float_fn from_float_ref; /* reference quantizer (GGML's _ref bytes) */
} qmm_type_traits;

/* Traits of a type id, or NULL if the id is out of range or unsupported. */
const qmm_type_traits *qmm_type_traits_get(int type);

#endif /* QMM_CORE_TYPES_H */
