/*
 * presets.h — projection-GEMM shapes of known models, for `qmm bench --preset`.
 *
 * A shape is one weight matrix of m rows (output features) by k columns (input features);
 * `count` is how many matrices of that shape one forward pass (one prefill chunk) runs, so
 * sum(count * 2*m*k*n) is the projection FLOPs of a chunk of n tokens.
 */
#ifndef QMM_TOOL_PRESETS_H
#define QMM_TOOL_PRESETS_H

#include <stdint.h>

typedef struct bench_shape {
    const char *label; /* which projections have this shape, e.g. "ffn_down" */
    int64_t m, k;      /* W is m x k */
    int64_t count;     /* matrices of this shape per forward pass */
} bench_shape;

typedef struct bench_preset {
    const char *name;        /* e.g. "lfm2.5-350m" */
    const char *description; /* one line: the model and where the counts come from */
    const bench_shape *shapes;
    int n_shapes;
} bench_preset;

/* The preset named `name`, or NULL. */
const bench_preset *bench_preset_find(const char *name);
/* The default preset (lfm2.5-350m). */
const bench_preset *bench_preset_default(void);
/* Preset i (0-based) for listing, or NULL past the end. */
const bench_preset *bench_preset_at(int i);

#endif /* QMM_TOOL_PRESETS_H */
