/* tune_fit.c — the crossovers `qmm tune` writes (see tune_fit.h). */
#include "tune_fit.h"

#include <math.h>
#include <stddef.h>

int tune_rule_choice(const tune_rule *rule, int64_t n) {
    if (n >= rule->int8_lo && n <= rule->int8_hi) return TUNE_INT8;
    return n <= rule->gemv_max ? TUNE_GEMV : TUNE_FUSED;
}

static double t_at(const tune_data *d, int s, int i, int c) {
    return d->t[((size_t)s * (size_t)d->n_ns + (size_t)i) * TUNE_CAND + (size_t)c];
}

static double best_at(const tune_data *d, int s, int i) {
    double best = INFINITY;
    for (int c = 0; c < TUNE_CAND; c++)
        if (t_at(d, s, i, c) < best) best = t_at(d, s, i, c);
    return best;
}

double tune_rule_loss(const tune_data *d, const tune_rule *rule, uint64_t mask) {
    double loss = 0.0;
    for (int i = 0; i < d->n_ns; i++) {
        const int c = tune_rule_choice(rule, d->ns[i]);
        double chosen = 0.0, best = 0.0;
        for (int s = 0; s < d->n_shapes; s++) {
            if (!((mask >> s) & 1u)) continue;
            chosen += d->weight[s] * t_at(d, s, i, c);
            best += d->weight[s] * best_at(d, s, i);
        }
        if (!(best > 0.0) || !isfinite(best)) return INFINITY; /* nothing measured here */
        loss += chosen / best; /* INFINITY when the choice was not measured */
    }
    return loss;
}

double tune_rule_worst(const tune_data *d, const tune_rule *rule, int s) {
    double worst = 1.0;
    for (int i = 0; i < d->n_ns; i++) {
        const double best = best_at(d, s, i);
        const double r = t_at(d, s, i, tune_rule_choice(rule, d->ns[i])) / best;
        if (isfinite(best) && best > 0.0 && r > worst) worst = r;
        if (!isfinite(r)) worst = INFINITY;
    }
    return worst;
}

/* Threshold value of grid index i as an upper bound (the last n open-ended). */
static int64_t upper(const tune_data *d, int i) {
    return i == d->n_ns - 1 ? TUNE_N_OPEN : d->ns[i];
}

bool tune_fit(const tune_data *d, uint64_t mask, tune_rule *out) {
    double best = INFINITY;
    tune_rule best_rule = {1, 0, 0};
    /* int8 ranges: none (a = -1), then [a, b] over the grid; gemv: none (g = -1), then up to
     * grid index g. */
    for (int a = -1; a < (d->int8_ok ? d->n_ns : 0); a++) {
        for (int b = a < 0 ? -1 : a; b < (a < 0 ? 0 : d->n_ns); b++) {
            for (int g = -1; g < d->n_ns; g++) {
                tune_rule r;
                r.int8_lo = a < 0 ? 1 : a == 0 ? 1 : d->ns[a];
                r.int8_hi = a < 0 ? 0 : upper(d, b);
                r.gemv_max = g < 0 ? 0 : upper(d, g);
                const double loss = tune_rule_loss(d, &r, mask);
                if (loss < best * (1.0 - 1e-12)) {
                    best = loss;
                    best_rule = r;
                }
            }
        }
    }
    if (!isfinite(best)) return false;
    *out = best_rule;
    return true;
}
