/*
 * kquant_search.h — scale searches and scale packing shared by the K-quant reference
 * quantizers (q2_K .. q6_K) in quants_k.c.
 *
 * Source of the algorithms: ggml's ggml-quants.c (make_qx_quants, make_q3_quants,
 * make_qkx2_quants, get_scale_min_k4, nearest_int). They are re-implemented here with the
 * same float operations in the same order, so that the bytes of qmm_quantize_row_*_ref equal
 * those of ggml's quantize_row_*_ref. Everything is single-precision float; this file must be
 * compiled without -ffast-math and without FMA contraction (-std=c11 keeps GCC's
 * -ffp-contract=off; the baseline x86-64 target has no FMA either).
 */
#ifndef QMM_FORMATS_KQUANT_SEARCH_H
#define QMM_FORMATS_KQUANT_SEARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A group whose largest |x| is below this counts as all zero (ggml's GROUP_MAX_EPS). */
#define QMM_KQ_GROUP_MAX_EPS 1e-15f

/*
 * Round a float to the nearest integer, ties to even, by adding 1.5 * 2^23 and reading the
 * low mantissa bits (ggml's nearest_int). Exact for |fval| <= 4194303; outside that range the
 * result is the same deterministic garbage ggml produces (no assertion here: library code
 * never aborts, and ggml's release builds do not check either).
 */
static inline int qmm_kq_nearest_int(float fval) {
    float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, sizeof(i));
    return (i & 0x007fffff) - 0x00400000;
}

/*
 * The 6-bit scale (sc) and 6-bit min (m) of sub-block j (0..7) from the 12 packed bytes of a
 * q4_K / q5_K super-block: bytes 0..3 hold scales 0..3 in their low 6 bits, bytes 4..7 mins
 * 0..3; scales/mins 4..7 keep their low 4 bits in the nibbles of bytes 8..11 and their top
 * 2 bits in the top 2 bits of bytes 0..3 (scales) and 4..7 (mins).
 */
static inline void qmm_kq_get_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/*
 * Inverse of qmm_kq_get_scale_min_k4: store the 6-bit scale sc and min m (0..63) of
 * sub-block j into the 12 packed bytes q. Sub-blocks must be stored in the order 0..7 into
 * bytes that start zeroed (4..7 OR their top bits into bytes written for 0..3).
 */
static inline void qmm_kq_set_scale_min_k4(int j, uint8_t sc, uint8_t m, uint8_t *q) {
    if (j < 4) {
        q[j] = sc;
        q[j + 4] = m;
    } else {
        q[j + 4] = (uint8_t)((sc & 0xF) | ((m & 0xF) << 4));
        q[j - 4] |= (uint8_t)((sc >> 4) << 6);
        q[j] |= (uint8_t)((m >> 4) << 6);
    }
}

/*
 * Symmetric scale search (ggml's make_qx_quants, weighted-RMSE variant rmse_type = 1 with
 * weights x^2, no importance weights): find a scale s for the n values x so that
 * x[i] ~ s * (L[i] - nmax), L[i] in 0 .. 2*nmax-1. Starts at s = -max/nmax (max = the value
 * of largest magnitude) and tries 18 nearby scales. Returns s (0 and all L = 0 when
 * max |x| < QMM_KQ_GROUP_MAX_EPS). Used by q6_K (nmax 32).
 */
float qmm_kq_make_qx_quants(int n, int nmax, const float *x, int8_t *L);

/*
 * Symmetric 3-bit-style scale search with coordinate-descent refinement (ggml's
 * make_q3_quants with do_rmse = true): x[i] ~ s * (L[i] - nmax), L[i] in 0 .. 2*nmax-1,
 * weights x^2, up to 5 sweeps changing one L at a time. Returns s (0 and all L = 0 for an
 * all-zero group). Used by q3_K (nmax 4).
 */
float qmm_kq_make_q3_quants(int n, int nmax, const float *x, int8_t *L);

/*
 * Asymmetric scale + min search (ggml's make_qkx2_quants): x[i] ~ s * L[i] - m with
 * L[i] in 0..nmax and m >= 0, minimizing the weighted squared (use_mad false) or absolute
 * (use_mad true) error over nstep+1 candidate scales (nmax + rmin + rdelta*is) / (max - min).
 * Stores m in *the_min, returns s. Laux is scratch of n bytes. Used by q2_K (nmax 3),
 * q4_K (15) and q5_K (31).
 */
float qmm_kq_make_qkx2_quants(int n, int nmax, const float *x, const float *weights,
                              uint8_t *L, float *the_min, uint8_t *Laux,
                              float rmin, float rdelta, int nstep, bool use_mad);

#endif /* QMM_FORMATS_KQUANT_SEARCH_H */
