/*
 * candidate_diff.h — what both candidate modes of `qmm bench --candidate` share (CUDA:
 * candidate_run.c; WebGPU: candidate_wgsl.c): the verdict over a WHOLE output, the guarded
 * and poisoned output image, the seeds, the median, the table row and the JSON row.
 *
 * The verdict: both outputs (n x m floats between guards of CAND_GUARD_BYTES bytes of
 * CAND_GUARD_BYTE, the floats poisoned with NaN before the run) are compared element by
 * element: any non-finite value in either fails; without a tolerance every float must be
 * bit-identical; with one, max|y_cand - y_prod| / max|y_prod| <= tolerance; a guard byte the
 * candidate changed fails.
 */
#ifndef QMM_TOOL_CANDIDATE_DIFF_H
#define QMM_TOOL_CANDIDATE_DIFF_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "presets.h"
#include "qmm.h"

#define CAND_GUARD_BYTES 4096
#define CAND_GUARD_BYTE 0xA5

typedef struct cand_result {
    bool pass;
    int64_t mismatches, nonfinite_cand, nonfinite_prod;
    double max_abs_diff, max_abs_prod, rel;
    double prod_us, cand_us;
    char note[320];
} cand_result;

/* The output image: guard, n*m NaN floats, guard (g_bytes = n*m*4 + 2*CAND_GUARD_BYTES). */
void cand_image_init(uint8_t *g, size_t g_bytes);
/* Compare the candidate's image gc with production's gp (the verdict above) into res. */
void cand_compare(bool has_tolerance, double tolerance, const uint8_t *gp, const uint8_t *gc,
                  int64_t n, int64_t m, cand_result *res);
/* A seed from (seed, a, b, c), as qmm bench mixes its seeds. */
uint64_t cand_mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
/* Median of n times in ms, returned in microseconds (sorts ms). */
double cand_median_us(double *ms, int64_t n);
/* The table: a header line with two geometry columns named g1, g2, then rows. */
void cand_print_columns(const char *g1, const char *g2);
void cand_print_row(qmm_type type, const bench_shape *sh, int64_t n, long g1, long g2,
                    const cand_result *r);
/* A JSON row (type, label, m, k, n, the times when it passed, the verdict's fields); the
 * caller adds its geometry fields to the returned object (NULL when out of memory). */
cJSON *cand_json_row(cJSON *rows, qmm_type type, const bench_shape *sh, int64_t n,
                     const cand_result *r);
bool cand_write_json(const char *path, cJSON *doc);

#endif /* QMM_TOOL_CANDIDATE_DIFF_H */
