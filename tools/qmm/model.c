/* model.c — group a GGUF file's weight matrices by (type, shape) (see model.h). */
#include "model.h"

#include <stdlib.h>
#include <string.h>

qmm_status model_open(const char *path, model_file *out) {
    memset(out, 0, sizeof *out);
    qmm_gguf *g = NULL;
    qmm_status st = qmm_gguf_open(path, &g);
    if (st != QMM_OK) return st;
    const int64_t nt = qmm_gguf_n_tensors(g);
    model_group *groups = calloc(nt > 0 ? (size_t)nt : 1, sizeof *groups);
    if (groups == NULL) {
        qmm_gguf_close(g);
        return QMM_ERR_OUT_OF_MEMORY;
    }
    int n = 0;
    int64_t skipped = 0;
    for (int64_t i = 0; i < nt; i++) {
        qmm_gguf_tensor t;
        st = qmm_gguf_get_tensor(g, i, &t);
        if (st != QMM_OK) {
            free(groups);
            qmm_gguf_close(g);
            return st;
        }
        if (t.n_dims != 2 || !qmm_type_is_weight(t.type)) {
            skipped++;
            continue;
        }
        int j = 0;
        while (j < n && !(groups[j].type == t.type && groups[j].m == t.ne[1] &&
                          groups[j].k == t.ne[0]))
            j++;
        if (j == n) {
            groups[n] = (model_group){.name = t.name, .type = t.type, .m = t.ne[1],
                                      .k = t.ne[0], .count = 0, .data = t.data};
            n++;
        }
        groups[j].count++;
    }
    out->g = g;
    out->groups = groups;
    out->n_groups = n;
    out->n_tensors = nt;
    out->n_not_matrix = skipped;
    return QMM_OK;
}

void model_close(model_file *mf) {
    if (mf == NULL) return;
    free(mf->groups);
    qmm_gguf_close(mf->g);
    memset(mf, 0, sizeof *mf);
}
