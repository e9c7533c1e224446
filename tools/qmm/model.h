/*
 * model.h — the weight matrices of a GGUF model for `qmm bench --model`: every 2-D tensor
 * of a weight type, grouped by (type, m, k). `qmm bench --model` times and verifies every
 * tensor of each group with its own bytes, group after group.
 */
#ifndef QMM_TOOL_MODEL_H
#define QMM_TOOL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "qmm.h"
#include "qmm_gguf.h"

typedef struct model_group {
    const char *name;  /* the representative: the group's first tensor in file order */
    qmm_type type;
    int64_t m, k;      /* ne[1], ne[0] */
    int64_t count;     /* tensors in the group */
    const void *data;  /* the representative's bytes (m packed rows), inside the mapping */
} model_group;

typedef struct model_file {
    qmm_gguf *g;
    model_group *groups;
    int n_groups;
    int64_t n_tensors;      /* all tensors in the file */
    int64_t n_not_matrix;   /* skipped: 1-D, or 3-D/4-D (e.g. stacked experts) */
} model_file;

/* Open `path` and group its 2-D weight tensors. On failure prints nothing and returns the
 * library's status (qmm_last_error() says why). */
qmm_status model_open(const char *path, model_file *out);
void model_close(model_file *mf);

#endif /* QMM_TOOL_MODEL_H */
