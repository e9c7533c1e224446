/* compare.c — output vs reference: normalized MSE, max errors, non-finite count. */
#include <math.h>
#include <string.h>

#include "core/internal.h"

qmm_status qmm_compare(int64_t n, int64_t m, const float *out, int64_t ldo, const float *ref,
                       int64_t ldr, qmm_diff *diff) {
    if (out == NULL || ref == NULL || diff == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_compare: NULL argument");
    if (n <= 0 || m <= 0 || ldo < m || ldr < m)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "qmm_compare: bad shape n=%lld m=%lld ldo=%lld ldr=%lld", (long long)n,
                         (long long)m, (long long)ldo, (long long)ldr);
    qmm_diff d;
    memset(&d, 0, sizeof d);
    double se = 0.0, sr = 0.0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < m; j++) {
            double o = out[i * ldo + j], r = ref[i * ldr + j];
            if (!isfinite(o) || !isfinite(r)) {
                if (d.n_nonfinite == 0) {
                    d.worst_row = i;
                    d.worst_col = j;
                }
                d.n_nonfinite++;
                continue;
            }
            double e = fabs(o - r);
            se += e * e;
            sr += r * r;
            d.checksum_out += o;
            d.checksum_ref += r;
            if (fabs(r) > d.ref_max_abs) d.ref_max_abs = fabs(r);
            if (e > d.max_abs_err) {
                d.max_abs_err = e;
                if (d.n_nonfinite == 0) {
                    d.worst_row = i;
                    d.worst_col = j;
                }
            }
        }
    }
    d.nmse = sr > 0.0 ? se / sr : (se > 0.0 ? INFINITY : 0.0);
    d.max_rel_err = d.ref_max_abs > 0.0 ? d.max_abs_err / d.ref_max_abs
                                        : (d.max_abs_err > 0.0 ? INFINITY : 0.0);
    *diff = d;
    return QMM_OK;
}

bool qmm_diff_ok(const qmm_diff *d, double max_nmse, double max_rel) {
    return d != NULL && d->n_nonfinite == 0 && d->nmse <= max_nmse && d->max_rel_err <= max_rel;
}
