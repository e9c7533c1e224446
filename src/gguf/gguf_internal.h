/*
 * gguf_internal.h — the parsed form of a GGUF file, shared by the reader (reader.c) and
 * the value accessors (values.c). See include/qmm_gguf.h for the format.
 */
#ifndef QMM_GGUF_INTERNAL_H
#define QMM_GGUF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm_gguf.h"

/* One metadata value. Strings are copied (NUL-terminated) into the arena; scalars and
 * arrays of scalars point into the file; arrays of strings or arrays own `n` consecutive
 * element nodes starting at `first`. */
typedef struct gguf_node {
    uint32_t type;       /* qmm_gguf_value_type */
    uint32_t elem_type;  /* arrays: element type; otherwise = type */
    uint64_t n;          /* arrays: count; strings: byte length; scalars: 1 */
    const uint8_t *raw;  /* scalars and arrays of scalars: bytes in the file */
    size_t str;          /* strings: offset of the copy in the arena */
    int64_t first;       /* arrays of strings/arrays: index of element 0's node */
} gguf_node;

typedef struct gguf_kv {
    size_t key;          /* arena offset of the NUL-terminated key */
    int64_t node;        /* the value */
} gguf_kv;

typedef struct gguf_tensor_info {
    size_t name;         /* arena offset of the NUL-terminated name */
    qmm_type type;
    uint32_t n_dims;
    int64_t ne[4];
    uint64_t offset;     /* from the data section */
    size_t nbytes;
} gguf_tensor_info;

struct qmm_gguf {
    const uint8_t *base; /* the file image */
    size_t size;
    bool mapped;         /* base is an mmap of `size` bytes to munmap on close */
    uint32_t version;
    size_t alignment;
    uint64_t data_offset;

    char *arena;         /* every string, NUL-terminated */
    size_t arena_len, arena_cap;
    gguf_node *nodes;
    int64_t n_nodes, cap_nodes;
    gguf_kv *kvs;
    int64_t n_kv;
    gguf_tensor_info *tensors;
    int64_t n_tensors;
    int64_t *kv_by_key;      /* kv indices sorted by key (strcmp) */
    int64_t *tensor_by_name; /* tensor indices sorted by name (strcmp) */
};

/* Fill a public value from node `node` of `g`. */
void qmm_gguf_value_from_node(const qmm_gguf *g, int64_t node, qmm_gguf_value *out);

#endif /* QMM_GGUF_INTERNAL_H */
