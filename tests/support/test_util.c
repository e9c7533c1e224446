/* test_util.c — see test_util.h. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

tu_rng tu_rng_make(uint64_t seed) {
    tu_rng r = {seed};
    return r;
}

uint64_t tu_rng_u64(tu_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tu_rng_uniform(tu_rng *r, float lo, float hi) {
    double u = (double)(tu_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(lo + (hi - lo) * u);
}

void tu_fill_uniform(tu_rng *r, float *dst, size_t count, float lo, float hi) {
    for (size_t i = 0; i < count; i++) dst[i] = tu_rng_uniform(r, lo, hi);
}

tu_guarded tu_guarded_alloc(size_t bytes) {
    tu_guarded g = {NULL, 0};
    unsigned char *p = malloc(bytes + TU_GUARD_BYTES);
    if (p == NULL) return g;
    memset(p, 0, bytes);
    memset(p + bytes, 0xFF, TU_GUARD_BYTES);
    g.data = p;
    g.bytes = bytes;
    return g;
}

bool tu_guard_intact(const tu_guarded *g) {
    for (size_t i = 0; i < TU_GUARD_BYTES; i++)
        if (g->data[g->bytes + i] != 0xFF) return false;
    return true;
}

void tu_guarded_free(tu_guarded *g) {
    free(g->data);
    g->data = NULL;
    g->bytes = 0;
}

static const uint32_t poison_bits = 0x7FC0DEADu;

float tu_poison(void) {
    float f;
    memcpy(&f, &poison_bits, sizeof f);
    return f;
}

bool tu_is_poison(float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b == poison_bits;
}

void tu_poison_fill(float *dst, size_t count) {
    float p = tu_poison();
    for (size_t i = 0; i < count; i++) dst[i] = p;
}

bool tu_all_poison(const float *p, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (!tu_is_poison(p[i])) return false;
    return true;
}

bool tu_padding_intact(const float *a, int64_t rows, int64_t cols, int64_t ld) {
    /* The last row has no padding: it ends flush against the guard. */
    for (int64_t i = 0; i + 1 < rows; i++)
        for (int64_t j = cols; j < ld; j++)
            if (!tu_is_poison(a[i * ld + j])) return false;
    return true;
}

bool tu_matrix_alloc(tu_matrix *mat, int64_t rows, int64_t cols, int64_t ld) {
    memset(mat, 0, sizeof *mat);
    if (rows <= 0 || cols <= 0 || ld < cols) return false;
    size_t count = (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
    mat->buf = tu_guarded_alloc(count * sizeof(float));
    if (mat->buf.data == NULL) return false;
    mat->a = (float *)mat->buf.data;
    mat->rows = rows;
    mat->cols = cols;
    mat->ld = ld;
    tu_poison_fill(mat->a, count);
    return true;
}

void tu_matrix_fill(tu_matrix *mat, tu_rng *r, float lo, float hi) {
    for (int64_t i = 0; i < mat->rows; i++)
        tu_fill_uniform(r, mat->a + i * mat->ld, (size_t)mat->cols, lo, hi);
}

void tu_matrix_poison(tu_matrix *mat) {
    tu_poison_fill(mat->a, mat->buf.bytes / sizeof(float));
}

void tu_matrix_free(tu_matrix *mat) {
    tu_guarded_free(&mat->buf);
    mat->a = NULL;
}

qmm_status tu_weights_make(tu_weights *w, qmm_type type, int64_t m, int64_t k, size_t pad,
                           tu_rng *r) {
    memset(w, 0, sizeof *w);
    size_t rb;
    qmm_status st = qmm_row_bytes(type, k, &rb);
    if (st != QMM_OK) return st;
    float *src = malloc((size_t)m * (size_t)k * sizeof *src);
    unsigned char *packed = malloc((size_t)m * rb);
    if (src == NULL || packed == NULL) {
        free(src);
        free(packed);
        return QMM_ERR_OUT_OF_MEMORY;
    }
    tu_fill_uniform(r, src, (size_t)m * (size_t)k, -1.0f, 1.0f);
    /* types without a reference quantizer: random valid blocks, elements of about 0.5 */
    st = qmm_type_has_quantizer(type) ? qmm_quantize_rows(type, src, packed, m, k)
                                      : qmm_random_rows(type, tu_rng_u64(r), 0.5, packed, m, k);
    if (st == QMM_OK) {
        size_t stride = rb + pad;
        w->buf = tu_guarded_alloc((size_t)(m - 1) * stride + rb);
        if (w->buf.data == NULL) {
            st = QMM_ERR_OUT_OF_MEMORY;
        } else {
            memset(w->buf.data, 0xFF, w->buf.bytes);
            for (int64_t i = 0; i < m; i++)
                memcpy(w->buf.data + (size_t)i * stride, packed + (size_t)i * rb, rb);
            w->type = type;
            w->m = m;
            w->k = k;
            w->row_bytes = rb;
            w->row_stride = stride;
        }
    }
    free(src);
    free(packed);
    return st;
}

void tu_weights_free(tu_weights *w) { tu_guarded_free(&w->buf); }

bool tu_bits_equal(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t rows,
                   int64_t cols) {
    for (int64_t i = 0; i < rows; i++)
        if (memcmp(a + i * lda, b + i * ldb, (size_t)cols * sizeof(float)) != 0) return false;
    return true;
}

static char tu_xdg_dir[512];

static void tu_xdg_remove(void) { rmdir(tu_xdg_dir); } /* only if nothing was left in it */

void tu_webgpu_env(void) {
    const char *x = getenv("XDG_RUNTIME_DIR");
    if (x != NULL && x[0] != '\0') return;
    const char *tmp = getenv("TMPDIR");
    snprintf(tu_xdg_dir, sizeof tu_xdg_dir, "%s/qmm-xdg-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(tu_xdg_dir) == NULL) return; /* mkdtemp makes it 0700 */
    setenv("XDG_RUNTIME_DIR", tu_xdg_dir, 1);
    atexit(tu_xdg_remove);
}
