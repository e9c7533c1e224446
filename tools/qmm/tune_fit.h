/*
 * tune_fit.h — `qmm tune`'s crossovers: from the median times of the candidate strategies
 * (gemv, int8, fused) on a grid of n and a set of shapes, the CPU row that `auto` applies
 * (int8 for int8_lo <= n <= int8_hi, else gemv for n <= gemv_max, else fused: the rule of
 * src/cpu/auto_table.c), chosen to lose the least time against the best candidate at every
 * measured n. Pure functions (no library calls), so they can be tested on their own.
 */
#ifndef QMM_TOOL_TUNE_FIT_H
#define QMM_TOOL_TUNE_FIT_H

#include <stdbool.h>
#include <stdint.h>

enum { TUNE_GEMV = 0, TUNE_INT8 = 1, TUNE_FUSED = 2, TUNE_CAND = 3 };

/* Every n larger than the grid's last gets that last n's choice: thresholds at the grid's end
 * are written as this. */
#define TUNE_N_OPEN ((int64_t)1 << 30)

/* A CPU auto row: int8 for int8_lo <= n <= int8_hi (int8_lo > int8_hi: never), else gemv for
 * n <= gemv_max (0: never), else fused. */
typedef struct tune_rule {
    int64_t int8_lo, int8_hi, gemv_max;
} tune_rule;

/*
 * The measurements the fit reads. t[(s * n_ns + i) * TUNE_CAND + c] is the median ms of
 * candidate c on shape s at n = ns[i] (ascending), or INFINITY when it was not measured
 * there (pruned as too slow, or failed); weight[s] > 0 is how much shape s counts (the
 * number of such matrices in a forward pass). int8_ok: the int8 candidate exists.
 */
typedef struct tune_data {
    const int64_t *ns;
    int n_ns;
    int n_shapes;
    const double *weight;
    const double *t;
    bool int8_ok;
} tune_data;

/* The candidate `rule` takes at n. */
int tune_rule_choice(const tune_rule *rule, int64_t n);

/* Slowdown of `rule` on the shapes in mask (bit s = shape s): the sum over the grid of
 * (weighted time of the rule's choices) / (weighted time of each shape's best candidate);
 * INFINITY if a choice was not measured. n_ns is a perfect score. */
double tune_rule_loss(const tune_data *d, const tune_rule *rule, uint64_t mask);

/* The largest time ratio of the rule's choice to the best candidate over the grid on shape s
 * (1.0 = always the best). */
double tune_rule_worst(const tune_data *d, const tune_rule *rule, int s);

/* The rule of least loss on the shapes in mask, thresholds at grid points (the first grid n
 * where a candidate takes over, the last where it holds; the grid's last n open-ended:
 * TUNE_N_OPEN). Ties go to the rule found first: no int8 before int8, smaller ranges first.
 * False if no rule has a finite loss (some n where nothing was measured). */
bool tune_fit(const tune_data *d, uint64_t mask, tune_rule *out);

#endif /* QMM_TOOL_TUNE_FIT_H */
