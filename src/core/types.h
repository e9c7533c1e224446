/*
 * types.h — the type table: the single source of truth for what a type is.
 * Tests iterate it; adding a type means a block struct, its scalar code, and one row here.
 */
#ifndef QMM_CORE_TYPES_H
#define QMM_CORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/codec.h"
#include "qmm.h"

typedef void (*qmm_to_float_fn)(const void *src, float *dst, int64_t k);
typedef void (*qmm_from_float_fn)(const float *src, void *dst, int64_t k);

/* Decode unit u (QMM_UNIT elements) of one block: the unit codec of formats/codec.h. */
typedef void (*qmm_unit_fn)(const uint8_t *block, int u, float *out);

typedef struct qmm_type_traits {
    const char *name;            /* GGML's lower-case name; NULL = unsupported id */
    int64_t block_size;          /* elements per block */
    size_t block_bytes;          /* bytes per block */
    bool is_weight;              /* usable as qmm_weights */
    qmm_to_float_fn to_float;    /* dequantize one row (bit-exact with GGML) */
    qmm_from_float_fn from_float_ref; /* reference quantizer (GGML's _ref bytes), or NULL when
                                  * qmm has none (docs/FORMATS.md says why per type) */
    qmm_unit_fn unit;            /* unit codec, or NULL for types with their own row codec */
    const qmm_type_layout *layout; /* scale fields, sub-block, value range (formats/codec.h) */
} qmm_type_traits;

/* Traits of a type id, or NULL if the id is out of range or unsupported. */
const qmm_type_traits *qmm_type_traits_get(int type);

/* Fill `nblocks` blocks of `type` with random valid bytes from the splitmix64 state *rng:
 * every byte random, then every scale field of the layout overwritten with a random finite
 * value of its kind whose magnitude is about `scale` / layout.max_q (so elements are about
 * `scale` in magnitude) with a random sign where the kind has one. Float types get elements
 * of about `scale`. Returns false for an unknown type. */
bool qmm_type_random_blocks(int type, uint64_t *rng, double scale, void *dst, int64_t nblocks);

#endif /* QMM_CORE_TYPES_H */
