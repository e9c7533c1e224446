/*
 * test_util.h — helpers shared by the C tests: a seeded random generator, guarded buffers
 * (data followed by 0xFF guard bytes, which read as NaN floats and NaN f16 scales), NaN
 * poisoning of output padding, and random weights of any type in the type table.
 * Nothing here exits or asserts: functions return values the tests check with cmocka.
 */
#ifndef QMM_TEST_UTIL_H
#define QMM_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

/* ---- random numbers (splitmix64; same seed, same sequence on every machine) ---- */

typedef struct tu_rng { uint64_t s; } tu_rng;

tu_rng tu_rng_make(uint64_t seed);
uint64_t tu_rng_u64(tu_rng *r);
/* Uniform float in [lo, hi). */
float tu_rng_uniform(tu_rng *r, float lo, float hi);
/* Fill count floats uniformly in [lo, hi). */
void tu_fill_uniform(tu_rng *r, float *dst, size_t count, float lo, float hi);

/* ---- guarded buffers ---- */

/* Bytes of 0xFF after every guarded buffer. */
#define TU_GUARD_BYTES 64

/* `bytes` usable bytes at data, then TU_GUARD_BYTES of 0xFF inside the same allocation. */
typedef struct tu_guarded {
    unsigned char *data;
    size_t bytes;
} tu_guarded;

/* Allocate (data zeroed, guard 0xFF). data == NULL on failure. */
tu_guarded tu_guarded_alloc(size_t bytes);
/* True if the guard bytes after data are all still 0xFF. */
bool tu_guard_intact(const tu_guarded *g);
void tu_guarded_free(tu_guarded *g);

/* ---- poisoning ---- */

/* The poison: a quiet NaN with a payload the library never produces (bits 0x7FC0DEAD). */
float tu_poison(void);
/* True if the float's bits are exactly the poison's. */
bool tu_is_poison(float v);
/* Set count floats to the poison. */
void tu_poison_fill(float *dst, size_t count);
/* True if every float of [p, p+count) is still the poison. */
bool tu_all_poison(const float *p, size_t count);
/* Rows of a strided matrix: true if every element j in [cols, ld) of rows 0..rows-2 is still
 * the poison (the padding a kernel must never write; the last row has none, see tu_matrix). */
bool tu_padding_intact(const float *a, int64_t rows, int64_t cols, int64_t ld);

/*
 * A strided f32 matrix of rows x cols with row stride ld >= cols, in a guarded buffer sized
 * exactly (rows-1)*ld + cols floats (the last row ends flush against the guard, which reads
 * as NaN). Padding between cols and ld is the poison; the elements are uniform [lo, hi).
 */
typedef struct tu_matrix {
    tu_guarded buf;
    float *a;
    int64_t rows, cols, ld;
} tu_matrix;

bool tu_matrix_alloc(tu_matrix *mat, int64_t rows, int64_t cols, int64_t ld);
void tu_matrix_fill(tu_matrix *mat, tu_rng *r, float lo, float hi);
/* Every float of the matrix (elements and padding) set to the poison. */
void tu_matrix_poison(tu_matrix *mat);
void tu_matrix_free(tu_matrix *mat);

/*
 * Weights for qmm: m rows of k elements of `type` made with the reference quantizer from
 * uniform [-1, 1) floats, row i at data + i*row_stride, where row_stride = row bytes + pad.
 * Padding bytes between rows are 0xFF; the buffer ends flush against a 0xFF guard.
 */
typedef struct tu_weights {
    tu_guarded buf;
    qmm_type type;
    int64_t m, k;
    size_t row_bytes, row_stride;
} tu_weights;

/* QMM_OK or the library's error (from qmm_row_bytes / qmm_quantize_rows). */
qmm_status tu_weights_make(tu_weights *w, qmm_type type, int64_t m, int64_t k, size_t pad,
                           tu_rng *r);
void tu_weights_free(tu_weights *w);

/* Bitwise equality of two strided float matrices (rows x cols). */
bool tu_bits_equal(const float *a, int64_t lda, const float *b, int64_t ldb, int64_t rows,
                   int64_t cols);

/* Before the first WebGPU context: Mesa's Vulkan drivers (lavapipe) want XDG_RUNTIME_DIR to
 * be a private directory (libwayland prints errors otherwise); when it is unset, make a 0700
 * one under the temporary directory and set it. */
void tu_webgpu_env(void);

#endif /* QMM_TEST_UTIL_H */
