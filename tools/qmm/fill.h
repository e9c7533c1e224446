/*
 * fill.h — benchmark inputs: random activations and random weights of any qmm type.
 *
 * Random numbers come from splitmix64 seeded by the user's --seed, so a run is repeatable.
 * Two ways to make weights (`--fill`):
 *   FILL_QUANTIZED  normal(0,1) floats through qmm_quantize_rows (GGML's reference quantizer)
 *   FILL_BYTES      uniformly random packed bytes, then every f16 scale field (d, dmin, m at
 *                   the offsets of the block structs in src/formats/blocks.h) replaced by a
 *                   random finite f16 with random sign and magnitude in [2^-12, 2^-6); for
 *                   f32/f16/bf16 every element is such a value. Exercises quant bytes the
 *                   quantizer never makes (e.g. q8_0 -128) and negative d / dmin.
 */
#ifndef QMM_TOOL_FILL_H
#define QMM_TOOL_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

typedef enum { FILL_QUANTIZED = 0, FILL_BYTES = 1 } fill_kind;

/* The value of --fill ("quantized" or "bytes"); false, with a message on stderr, otherwise. */
bool fill_kind_parse(const char *s, fill_kind *out);

typedef struct fill_rng { uint64_t state; } fill_rng;

void fill_rng_seed(fill_rng *r, uint64_t seed);
uint64_t fill_rng_next(fill_rng *r);
/* Standard normal (Box-Muller). */
double fill_rng_normal(fill_rng *r);

/* count normal(0,1) floats. */
void fill_normal(fill_rng *r, float *dst, size_t count);

/*
 * m rows of k elements of `type` into dst (row i at dst + i*row_bytes), as `kind` says.
 * Returns QMM_OK or the library's status (qmm_last_error() has the sentence).
 */
qmm_status fill_weights(fill_rng *r, fill_kind kind, qmm_type type, int64_t m, int64_t k,
                        void *dst);

#endif /* QMM_TOOL_FILL_H */
