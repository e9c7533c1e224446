/*
 * fuzz_gguf.c — libFuzzer target: the GGUF reader on arbitrary bytes (CASES.md J, K, L).
 *
 * The input is handed to qmm_gguf_open_memory. Either it fails with a status and a
 * non-empty message, or it opens and then every accessor is walked — every tensor's bytes
 * read, every key, every value and every array element down to the nesting limit — so
 * that a file the reader wrongly accepts shows up as an out-of-bounds read under ASan.
 * Build and run: fuzz/build.sh, fuzz/run_ci.sh (docs/TRUST.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qmm.h"
#include "qmm_gguf.h"

static volatile uint64_t sink; /* keeps the reads from being optimized away */

/* Touch every byte of a value and, for arrays, every element (bounded work per file). */
static void walk_value(const qmm_gguf_value *v, int depth, uint64_t *budget) {
    if (*budget == 0) return;
    (*budget)--;
    if (v->type == QMM_GGUF_TYPE_ARRAY) {
        if (depth > QMM_GGUF_MAX_DEPTH) abort(); /* the reader promised a depth limit */
        for (uint64_t j = 0; j < v->n && *budget > 0; j++) {
            qmm_gguf_value e;
            if (qmm_gguf_array_get(v, j, &e) != QMM_OK) abort(); /* j < n must work */
            walk_value(&e, depth + 1, budget);
        }
        if (qmm_gguf_array_get(v, v->n, &(qmm_gguf_value){0}) == QMM_OK) abort();
        return;
    }
    if (v->type == QMM_GGUF_TYPE_STRING) {
        const char *s = NULL;
        size_t len = 0;
        if (qmm_gguf_value_string(v, &s, &len) != QMM_OK || len != v->n) abort();
        uint64_t h = 0;
        for (size_t i = 0; i <= len; i++) h += (unsigned char)s[i]; /* includes the NUL */
        if (s[len] != '\0') abort();
        sink += h;
        return;
    }
    size_t sz = qmm_gguf_value_type_size(v->type);
    if (sz == 0) abort(); /* an unknown type must never be handed out */
    const unsigned char *p = v->data;
    for (size_t i = 0; i < sz; i++) sink += p[i];
    uint64_t u;
    int64_t s;
    double d;
    (void)qmm_gguf_value_uint(v, &u);
    (void)qmm_gguf_value_int(v, &s);
    (void)qmm_gguf_value_float(v, &d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qmm_gguf *g = NULL;
    qmm_status st = qmm_gguf_open_memory(data, size, &g);
    if (st != QMM_OK) {
        if (g != NULL) abort();                      /* *out set only on success */
        if (qmm_last_error()[0] == '\0') abort();    /* every error names its cause */
        if (st != QMM_ERR_FORMAT && st != QMM_ERR_OUT_OF_MEMORY) abort();
        return 0;
    }
    uint64_t file_size = qmm_gguf_file_size(g);
    size_t align = qmm_gguf_alignment(g);
    if (file_size != size || align == 0 || (align & (align - 1)) != 0) abort();
    if (qmm_gguf_data_offset(g) % align != 0) abort();
    /* With no tensors the (empty) data section may start past the end of a short file. */
    if (qmm_gguf_n_tensors(g) > 0 && qmm_gguf_data_offset(g) > size) abort();

    int64_t nt = qmm_gguf_n_tensors(g);
    for (int64_t i = 0; i < nt; i++) {
        qmm_gguf_tensor t;
        if (qmm_gguf_get_tensor(g, i, &t) != QMM_OK) abort();
        size_t rb = 0;
        if (qmm_row_bytes(t.type, t.ne[0], &rb) != QMM_OK) abort();
        if (t.n_dims < 1 || t.n_dims > 4 || t.offset % align != 0) abort();
        const unsigned char *p = t.data;
        if (p < data || p + t.nbytes > data + size) abort();
        uint64_t h = 0;
        for (size_t b = 0; b < t.nbytes; b++) h += p[b]; /* ASan checks every byte */
        sink += h;
        if (qmm_gguf_find_tensor(g, t.name) != i) abort();
    }
    uint64_t budget = 1u << 16;
    int64_t nkv = qmm_gguf_n_kv(g);
    for (int64_t i = 0; i < nkv; i++) {
        const char *key = qmm_gguf_kv_key(g, i);
        if (key == NULL || qmm_gguf_find_kv(g, key) != i) abort();
        qmm_gguf_value v;
        if (qmm_gguf_get_kv(g, i, &v) != QMM_OK) abort();
        if (qmm_gguf_kv_type(g, i) != (int)v.type) abort();
        walk_value(&v, 1, &budget);
    }
    qmm_gguf_close(g);
    return 0;
}
