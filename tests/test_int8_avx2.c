/*
 * test_int8_avx2.c — the AVX2 int8 GEMM (src/cpu/x86/gemm_int8_avx2.h; docs/KERNELS.md
 * "x86: int8_avx2"), beyond the conformance suite (which runs it through the API at levels avx2
 * and avx512 against the reference for every type and fault class):
 *
 *   layout    every type it has: qmm_x86_gemm_int8_avx2_unpack_row (scale * q + min rebuilt
 *             from the packed records) equals qmm_dequantize_rows bit for bit, for rows from
 *             the reference quantizer, random valid blocks and extreme quant bytes (0x00, 0xFF,
 *             0x80, 0x7F, ...: q8_0's -128, q6_K's sub-scale -128), m in {1, 7, 8, 13, 33}
 *             (padding rows of the last group must unpack to zeros), several k; the bytes the
 *             packer reports equal qmm_x86_gemm_int8_avx2_packed_bytes;
 *   kernels   both kernels (vpmaddubsw; AVX-VNNI where the CPU has it) called directly against
 *             a scalar model of the documented arithmetic (exact integer block dots from the
 *             packed quants and X's int8 quants, then the same fmaf chain in block order),
 *             bit for bit: every type x m in {1, 7, 9, 33} x n in {1, 2, 3, 4, 5, 9, 17} x k
 *             (1, 3, 7 and 33 blocks) x data: uniform W and X, extreme quant bytes with X
 *             exact in int8 (CASES C), one-sign X of 2000..60000 (CASES A), zero and NaN X
 *             blocks (CASES B: NaN outputs where a block holds NaN), on 1 and 2 threads; so
 *             the two kernels give the same bits, an output's bits do not depend on n or the
 *             thread count, and Y outside j < n, i < m (poisoned padding) is never written;
 *   AMX       where the machine has AMX-INT8: for the 32-element-block types the bits equal
 *             int8_amx's (the batch-invariant context, AMX for every n);
 *   registry  at QMM_CPU_ISA=avx2 the int8 strategy reports int8_avx2_vnni or int8_avx2
 *             (QMM_CPU_AVX_VNNI=0) with precision class INT8; W holding an Inf scale runs the
 *             exact gemv_avx2 (the int8 output has gemv's bits).
 * Skipped (77) on a machine without AVX2.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/types.h"
#include "cpu/cpu_features.h"
#include "cpu/x86/gemm_int8_avx2.h"
#include "cpu/x86/gemm_int8_avx2_layout.h"
#include "cpu/x86/x86_kernels.h"
#include "qmm.h"
#include "test_util.h"

static const qmm_type_traits *traits(int t) { return qmm_type_traits_get(t); }

static bool bits_same(float a, float b) {
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    return ua == ub || (isnan(a) && isnan(b));
}

/* ---------------------------------------------------------------------------------------
 * Weights
 * ------------------------------------------------------------------------------------- */

enum { W_QUANT, W_RANDOM, W_EXTREME, W_MODES };
static const char *const w_mode_names[W_MODES] = {"quantized", "random blocks", "extreme bytes"};

static size_t kind_bytes(int kind) {
    switch (kind) {
    case QMM_SCALE_F16: case QMM_SCALE_BF16: return 2;
    case QMM_SCALE_F32: return 4;
    case QMM_SCALE_E8M0: case QMM_SCALE_UE4M3: return 1;
    default: return 0;
    }
}

/* m rows of `type` (row_bytes each, consecutive): the reference quantizer on uniform [-1, 1)
 * (random valid blocks for a type without one), random valid blocks, or random valid blocks
 * whose non-scale bytes are replaced by extreme values (row 0 all 0x80, row 1 0x7F/0x80
 * alternating, the others drawn from the extremes). */
static unsigned char *make_rows(int type, int64_t m, int64_t k, int mode, tu_rng *r, size_t *rb) {
    assert_int_equal(qmm_row_bytes((qmm_type)type, k, rb), QMM_OK);
    unsigned char *w = malloc(*rb * (size_t)m);
    assert_non_null(w);
    if (mode == W_QUANT && qmm_type_has_quantizer((qmm_type)type)) {
        float *src = malloc(sizeof(float) * (size_t)(m * k));
        assert_non_null(src);
        tu_fill_uniform(r, src, (size_t)(m * k), -1.0f, 1.0f);
        assert_int_equal(qmm_quantize_rows((qmm_type)type, src, w, m, k), QMM_OK);
        free(src);
        return w;
    }
    assert_int_equal(qmm_random_rows((qmm_type)type, tu_rng_u64(r), 1.0, w, m, k), QMM_OK);
    if (mode != W_EXTREME) return w;
    static const uint8_t ext[] = {0x00, 0xFF, 0x80, 0x7F, 0x01, 0x81, 0x0F, 0xF0};
    const qmm_type_layout *lay = traits(type)->layout;
    const size_t bb = traits(type)->block_bytes;
    bool *is_scale = calloc(bb, 1);
    assert_non_null(is_scale);
    for (int f = 0; f < QMM_MAX_SCALE_FIELDS && lay->scales[f].kind != QMM_SCALE_NONE; f++)
        for (size_t b = 0; b < lay->scales[f].count * kind_bytes(lay->scales[f].kind); b++)
            is_scale[lay->scales[f].offset + b] = true;
    for (int64_t i = 0; i < m; i++)
        for (size_t j = 0; j < *rb; j++)
            if (!is_scale[j % bb])
                w[(size_t)i * *rb + j] = i == 0 ? 0x80 : i == 1 ? (j & 1 ? 0x7F : 0x80)
                                                               : ext[tu_rng_u64(r) % sizeof ext];
    free(is_scale);
    return w;
}

/* The types of the kernel, from the type table. */
static int g_types[QMM_TYPE_COUNT], g_ntypes;

static int setup(void **state) {
    (void)state;
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AVX2)) {
        print_message("[  SKIPPED ] int8_avx2: needs AVX2\n");
        return -1;
    }
    for (int t = 0; t < QMM_TYPE_COUNT; t++)
        if (qmm_type_is_supported(t) && qmm_x86_gemm_int8_avx2_has_type((qmm_type)t))
            g_types[g_ntypes++] = t;
    return 0;
}

static int64_t block_of(int t) {
    /* the K-quants and iq4_xs: 256-element super-blocks; the others 32 */
    return traits(t)->block_size;
}

/* ---------------------------------------------------------------------------------------
 * Layout: unpacked = dequantized, bit for bit
 * ------------------------------------------------------------------------------------- */

static void test_layout_roundtrip(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 7, 8, 13, 33};
    tu_rng r = tu_rng_make(0x1A);
    int cases = 0, fails = 0;
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        const int64_t bs = block_of(t);
        const int64_t ks[] = {bs, 3 * bs, bs == 32 ? 33 * 32 : 5 * bs};
        for (int mi = 0; mi < 5; mi++)
            for (int ki = 0; ki < 3; ki++)
                for (int mode = 0; mode < W_MODES; mode++) {
                    const int64_t m = ms[mi], k = ks[ki];
                    size_t rb;
                    unsigned char *w = make_rows(t, m, k, mode, &r, &rb);
                    qmm_x86_int8_x8 p;
                    assert_int_equal(qmm_x86_gemm_int8_avx2_pack((qmm_type)t, m, k, w, rb, 2, &p), QMM_OK);
                    assert_int_equal(p.bytes, qmm_x86_gemm_int8_avx2_packed_bytes((qmm_type)t, m, k));
                    float *want = malloc(sizeof(float) * (size_t)k), *got = malloc(sizeof(float) * (size_t)k);
                    assert_true(want && got);
                    for (int64_t i = 0; i < p.m_pad; i++) {
                        if (i < m) assert_int_equal(qmm_dequantize_rows((qmm_type)t, w + (size_t)i * rb, want, 1, k), QMM_OK);
                        else memset(want, 0, sizeof(float) * (size_t)k);
                        qmm_x86_gemm_int8_avx2_unpack_row(&p, i, got);
                        for (int64_t e = 0; e < k; e++)
                            /* padding rows: zero scales (the sign of 0 * (0 - offset) aside) */
                            if (!(i < m ? bits_same(want[e], got[e]) : got[e] == 0.0f) && fails++ < 20)
                                print_error("layout %s (%s) m=%lld k=%lld row %lld elem %lld: unpacked %.9g, "
                                            "dequantized %.9g\n", qmm_type_name((qmm_type)t), w_mode_names[mode],
                                            (long long)m, (long long)k, (long long)i, (long long)e, got[e], want[e]);
                    }
                    free(want);
                    free(got);
                    qmm_x86_gemm_int8_avx2_free(&p);
                    free(w);
                    cases++;
                }
    }
    print_message("layout: %d (type, m, k, data) cases of %d types unpacked bit for bit\n", cases, g_ntypes);
    assert_int_equal(fails, 0);
}

/* ---------------------------------------------------------------------------------------
 * Kernels against a scalar model of their arithmetic
 * ------------------------------------------------------------------------------------- */

static float rd_f32(const unsigned char *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}
static int rd_i16(const unsigned char *p) {
    int16_t v;
    memcpy(&v, p, 2);
    return v;
}

/*
 * The documented arithmetic, scalar: per output (j, i) and block c in order, the exact int32
 * dot of the signed W quants (u - offset) with X's int8 quants (K16: sc0 * dot0 + sc1 * dot1),
 * then acc = fmaf((float)isum, d * dx, acc), min types fmaf(s, mn, acc), q2_K
 * fmaf((float)(m0 sum0 + m1 sum1), (-dmin) * dx, acc).
 */
static void model(const qmm_x86_int8_x8 *p, int64_t n, const float *x, int64_t ldx, float *y,
                  int64_t ldy) {
    const int64_t k = p->k, kc = k / 32;
    int8_t *q = malloc((size_t)k);
    float *dx = malloc(sizeof(float) * (size_t)kc), *sx = malloc(sizeof(float) * (size_t)kc);
    assert_true(q && dx && sx);
    for (int64_t j = 0; j < n; j++) {
        qmm_x86_int8_quantize_row_generic(x + j * ldx, k, q, dx, sx, 1);
        for (int64_t i = 0; i < p->m; i++) {
            const int r = (int)(i % 8);
            const unsigned char *recs = p->data + (size_t)(i / 8) * (size_t)kc * p->rec_bytes;
            float acc = 0.0f;
            for (int64_t c = 0; c < kc; c++) {
                const unsigned char *rec = recs + (size_t)c * p->rec_bytes, *meta = rec + p->qbytes;
                int32_t dot[2] = {0, 0}, xs[2] = {0, 0};
                for (int e = 0; e < 32; e++) {
                    const int v = e / 4;
                    int u = p->qbytes == 256 ? rec[32 * v + 4 * r + e % 4]
                                             : (rec[32 * (v / 2) + 4 * r + e % 4] >> (4 * (v % 2))) & 0xF;
                    if (p->has_lut) u = p->lut[u];
                    dot[e / 16] += (u - p->offset) * q[32 * c + e];
                    xs[e / 16] += q[32 * c + e];
                }
                const float d = rd_f32(meta + QMM_X8_REC_D + 4 * r);
                int32_t isum = dot[0] + dot[1];
                if (p->kind == QMM_X8_K16)
                    isum = rd_i16(meta + QMM_X8_REC_SC + 4 * r) * dot[0] + rd_i16(meta + QMM_X8_REC_SC + 4 * r + 2) * dot[1];
                acc = fmaf((float)isum, d * dx[c], acc);
                if (p->has_min) acc = fmaf(sx[c], rd_f32(meta + QMM_X8_REC_MN + 4 * r), acc);
                if (p->type == QMM_TYPE_Q2_K) {
                    const int32_t im = rd_i16(meta + QMM_X8_REC_M01 + 4 * r) * xs[0] +
                                       rd_i16(meta + QMM_X8_REC_M01 + 4 * r + 2) * xs[1];
                    acc = fmaf((float)im, rd_f32(meta + QMM_X8_REC_NDMIN + 4 * r) * dx[c], acc);
                }
            }
            y[j * ldy + i] = acc;
        }
    }
    free(q);
    free(dx);
    free(sx);
}

enum { X_UNIFORM, X_INTS, X_ONE_SIGN, X_ZERO_NAN, X_MODES };
static const char *const x_mode_names[X_MODES] = {"uniform", "int8-exact ints", "one-sign 2000..60000",
                                                  "zero and NaN blocks"};

/* n rows of k, stride ldx, NaN after k. */
static void make_x(float *x, int64_t n, int64_t k, int64_t ldx, int mode, tu_rng *r) {
    for (int64_t j = 0; j < n; j++) {
        float *row = x + j * ldx;
        for (int64_t e = 0; e < ldx; e++) row[e] = NAN;
        for (int64_t e = 0; e < k; e++) {
            switch (mode) {
            case X_UNIFORM: row[e] = tu_rng_uniform(r, -1.0f, 1.0f); break;
            case X_INTS: /* per 32-block one +-127: dx = 1, every x exact */
                row[e] = e % 32 == 0 ? (tu_rng_u64(r) & 1 ? 127.0f : -127.0f)
                                     : (float)((int)(tu_rng_u64(r) % 255) - 127);
                break;
            case X_ONE_SIGN: row[e] = (j % 2 ? -1.0f : 1.0f) * tu_rng_uniform(r, 2000.0f, 60000.0f); break;
            default: /* block 0 zero, block 1 (if any) NaN in row 1, the rest uniform */
                row[e] = e < 32 ? 0.0f : tu_rng_uniform(r, -1.0f, 1.0f);
                if (j == 1 && e >= 32 && e < 64) row[e] = e == 40 ? NAN : 0.5f;
                break;
            }
        }
    }
}

static int run_kernel_case(const qmm_x86_int8_x8 *p, int64_t n, const float *x, int64_t ldx,
                           const float *want, bool vnni, int threads, const char *what) {
    const int64_t ldy = p->m + 3;
    const size_t ycount = (size_t)(n * ldy);
    float *y = malloc(sizeof(float) * ycount);
    void *scratch = aligned_alloc(64, (qmm_x86_gemm_int8_avx2_scratch(p, n, threads) + 63) / 64 * 64);
    assert_true(y && scratch);
    tu_poison_fill(y, ycount);
    qmm_x86_gemm_int8_avx2(p, n, x, ldx, y, ldy, scratch, threads, vnni);
    int fails = 0;
    for (int64_t j = 0; j < n; j++) {
        for (int64_t i = 0; i < p->m; i++)
            if (!bits_same(y[j * ldy + i], want[j * p->m + i]) && fails++ < 5)
                print_error("%s (%s, %d threads) n=%lld: y[%lld][%lld] = %.9g, model %.9g\n", what,
                            vnni ? "avx-vnni" : "vpmaddubsw", threads, (long long)n, (long long)j,
                            (long long)i, y[j * ldy + i], want[j * p->m + i]);
        for (int64_t i = p->m; i < ldy; i++)
            if (!tu_is_poison(y[j * ldy + i]) && fails++ < 5)
                print_error("%s: wrote y[%lld][%lld] outside m\n", what, (long long)j, (long long)i);
    }
    free(y);
    free(scratch);
    return fails;
}

static void test_kernels_vs_model(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 7, 9, 33}, ns[] = {1, 2, 3, 4, 5, 9, 17};
    const bool have_vnni = qmm_cpu_features_get()->avx_vnni;
    if (!have_vnni) print_message("kernels: no AVX-VNNI on this CPU: the vpmaddubsw kernel only\n");
    tu_rng r = tu_rng_make(0x2B);
    int cases = 0, fails = 0, nan_outputs = 0;
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        const int64_t bs = block_of(t);
        const int64_t ks[] = {bs, 3 * bs, bs == 32 ? 7 * 32 : 2 * bs, bs == 32 ? 33 * 32 : 5 * bs};
        for (int mi = 0; mi < 4; mi++)
            for (int ki = 0; ki < 4; ki++)
                for (int mode = 0; mode < W_MODES; mode++) {
                    const int64_t m = ms[mi], k = ks[ki], nmax = 17, ldx = k + 3;
                    size_t rb;
                    unsigned char *w = make_rows(t, m, k, mode, &r, &rb);
                    qmm_x86_int8_x8 p;
                    assert_int_equal(qmm_x86_gemm_int8_avx2_pack((qmm_type)t, m, k, w, rb, 1, &p), QMM_OK);
                    float *x = malloc(sizeof(float) * (size_t)(nmax * ldx));
                    float *want = malloc(sizeof(float) * (size_t)(nmax * m));
                    assert_true(x && want);
                    /* extreme bytes with int8-exact X; the other W with every X mode in turn */
                    const int xm = mode == W_EXTREME ? X_INTS : (mi * 4 + ki + mode) % X_MODES;
                    make_x(x, nmax, k, ldx, xm, &r);
                    model(&p, nmax, x, ldx, want, m);
                    for (int64_t e = 0; e < nmax * m; e++) nan_outputs += isnan(want[e]);
                    char what[160];
                    snprintf(what, sizeof what, "%s m=%lld k=%lld W %s, X %s", qmm_type_name((qmm_type)t),
                             (long long)m, (long long)k, w_mode_names[mode], x_mode_names[xm]);
                    for (int ni = 0; ni < 7; ni++)
                        for (int v = 0; v < (have_vnni ? 2 : 1); v++)
                            fails += run_kernel_case(&p, ns[ni], x, ldx, want, v == 1, 1 + (ni % 2), what);
                    free(x);
                    free(want);
                    qmm_x86_gemm_int8_avx2_free(&p);
                    free(w);
                    cases++;
                }
    }
    print_message("kernels: %d (type, m, k, data) cases x 7 n x %d kernels bit-identical to the model "
                  "(%d NaN outputs from NaN X blocks)\n", cases, have_vnni ? 2 : 1, nan_outputs);
    assert_true(nan_outputs > 0);
    assert_int_equal(fails, 0);
}

/* ---------------------------------------------------------------------------------------
 * Through the API: AMX bits, the registry row, the exact fallback
 * ------------------------------------------------------------------------------------- */

static qmm_context *ctx_at(const char *isa, unsigned flags) {
    setenv("QMM_CPU_ISA", isa, 1);
    qmm_context_params cp = qmm_context_default_params();
    cp.n_threads = 2;
    cp.flags = flags;
    qmm_context *ctx = NULL;
    assert_int_equal(qmm_context_create(&cp, &ctx), QMM_OK);
    unsetenv("QMM_CPU_ISA");
    return ctx;
}

static void run_api(qmm_context *ctx, qmm_strategy s, int type, int64_t m, int64_t k,
                    const unsigned char *w, size_t rb, int64_t n, const float *x, int64_t ldx,
                    float *y, qmm_path *path) {
    qmm_weights *wt = NULL;
    assert_int_equal(qmm_weights_create(ctx, (qmm_type)type, m, k, w, rb, &wt), QMM_OK);
    assert_int_equal(qmm_context_set_strategy(ctx, s), QMM_OK);
    assert_int_equal(qmm_matmul_path(ctx, wt, n, path), QMM_OK);
    assert_int_equal(qmm_matmul(ctx, wt, n, x, ldx, y, m), QMM_OK);
    qmm_weights_free(wt);
}

static void test_amx_bits(void **state) {
    (void)state;
    if (!qmm_cpu_isa_supported(QMM_CPU_ISA_AMX)) {
        print_message("[  SKIPPED ] AMX bits: no AMX-INT8 here\n");
        skip();
    }
    qmm_context *amx = ctx_at("amx", QMM_FLAG_BATCH_INVARIANT), *avx2 = ctx_at("avx2", 0);
    tu_rng r = tu_rng_make(0x3C);
    int compared = 0;
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        if (!qmm_x86_int8_tiles_has_type((qmm_type)t)) continue;
        const int64_t m = 37, k = block_of(t) == 32 ? 7 * 32 : 3 * 256, n = 21, ldx = k + 3;
        size_t rb;
        unsigned char *w = make_rows(t, m, k, W_QUANT, &r, &rb);
        float *x = malloc(sizeof(float) * (size_t)(n * ldx));
        float *ya = malloc(sizeof(float) * (size_t)(n * m)), *yb = malloc(sizeof(float) * (size_t)(n * m));
        assert_true(x && ya && yb);
        make_x(x, n, k, ldx, X_UNIFORM, &r);
        qmm_path pa, pb;
        run_api(amx, QMM_STRATEGY_INT8, t, m, k, w, rb, n, x, ldx, ya, &pa);
        run_api(avx2, QMM_STRATEGY_INT8, t, m, k, w, rb, n, x, ldx, yb, &pb);
        assert_string_equal(pa.kernel, "int8_amx");
        if (!tu_bits_equal(ya, m, yb, m, n, m))
            fail_msg("%s: %s and %s differ", qmm_type_name((qmm_type)t), pa.kernel, pb.kernel);
        compared++;
        free(x);
        free(ya);
        free(yb);
        free(w);
    }
    print_message("AMX bits: %d types bit-identical to int8_amx\n", compared);
    assert_true(compared >= 7);
    qmm_context_free(amx);
    qmm_context_free(avx2);
}

static void test_registry_and_fallback(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0x4D);
    /* n at the GEMM's first n: below it the int8 strategy runs the int8 gemv */
    const int64_t m = 19, k = 256, n = QMM_INT8_AVX2_GEMM_MIN_N + 1, ldx = k;
    for (int vnni_env = 0; vnni_env < 2; vnni_env++) {
        if (vnni_env) setenv("QMM_CPU_AVX_VNNI", "0", 1);
        qmm_context *ctx = ctx_at("avx2", 0);
        unsetenv("QMM_CPU_AVX_VNNI");
        const bool vnni = qmm_cpu_features_get()->avx_vnni && !vnni_env;
        for (int ti = 0; ti < g_ntypes; ti++) {
            const int t = g_types[ti];
            size_t rb;
            unsigned char *w = make_rows(t, m, k, W_QUANT, &r, &rb);
            float *x = malloc(sizeof(float) * (size_t)(n * ldx));
            float *y8 = malloc(sizeof(float) * (size_t)(n * m)), *yg = malloc(sizeof(float) * (size_t)(n * m));
            assert_true(x && y8 && yg);
            make_x(x, n, k, ldx, X_UNIFORM, &r);
            qmm_path p8, pg;
            run_api(ctx, QMM_STRATEGY_INT8, t, m, k, w, rb, n, x, ldx, y8, &p8);
            assert_string_equal(p8.kernel, vnni ? "int8_avx2_gemm_vnni" : "int8_avx2_gemm");
            assert_int_equal(p8.precision, QMM_PRECISION_INT8);
            /* one f16/E8M0 scale field of row 3 made Inf (E8M0 0xFF is NaN): gemv's bits */
            const qmm_scale_field *sf = &traits(t)->layout->scales[0];
            unsigned char *f = w + 3 * rb + rb / 2 / traits(t)->block_bytes * traits(t)->block_bytes + sf->offset;
            if (sf->kind == QMM_SCALE_E8M0) f[0] = 0xFF;
            else f[0] = 0x00, f[1] = 0x7C;
            run_api(ctx, QMM_STRATEGY_INT8, t, m, k, w, rb, n, x, ldx, y8, &p8);
            run_api(ctx, QMM_STRATEGY_GEMV, t, m, k, w, rb, n, x, ldx, yg, &pg);
            assert_string_equal(pg.kernel, "gemv_avx2");
            int nonfinite = 0;
            for (int64_t e = 0; e < n * m; e++) nonfinite += !isfinite(yg[e]);
            if (nonfinite == 0 || !tu_bits_equal(y8, m, yg, m, n, m))
                fail_msg("%s with a non-finite scale: int8 (%d non-finite gemv outputs) is not gemv_avx2's bits",
                         qmm_type_name((qmm_type)t), nonfinite);
            free(x);
            free(y8);
            free(yg);
            free(w);
        }
        qmm_context_free(ctx);
    }
}

/* Batch-invariant auto at level avx2 (both kernels where the CPU has AVX-VNNI): the int8
 * strategy (the auto rows' prefill choice) on the GEMM for every n, so rows of small n (the 1-
 * and 2-row tiles, a partial last quad) equal the same rows of a larger n bit for bit; nvfp4
 * (no GEMM) on its int8 gemv for every n. The GEMM's copy shows in qmm_weights_memory. */
static void test_batch_invariant_auto(void **state) {
    (void)state;
    tu_rng r = tu_rng_make(0x5E);
    static const int64_t ns[] = {1, 2, 3, 5, 6, 8, 13};
    const int64_t m = 21, nmax = 33;
    int compared = 0;
    int types[QMM_TYPE_COUNT + 1], ntypes = 0;
    for (int ti = 0; ti < g_ntypes; ti++) types[ntypes++] = g_types[ti];
    types[ntypes++] = QMM_TYPE_NVFP4;
    if (!qmm_cpu_features_get()->avx_vnni) print_message("batch-invariant auto: no AVX-VNNI here: one kernel\n");
    for (int vnni_env = 0; vnni_env < 2; vnni_env++) {
        if (vnni_env) setenv("QMM_CPU_AVX_VNNI", "0", 1);
        qmm_context *ctx = ctx_at("avx2", QMM_FLAG_BATCH_INVARIANT);
        unsetenv("QMM_CPU_AVX_VNNI");
        const bool vnni = qmm_cpu_features_get()->avx_vnni && !vnni_env;
        for (int ti = 0; ti < ntypes; ti++) {
            const int t = types[ti];
            const bool gemm = qmm_x86_gemm_int8_avx2_has_type((qmm_type)t);
            const char *want = gemm ? (vnni ? "int8_avx2_gemm_vnni" : "int8_avx2_gemm")
                                    : (vnni ? "int8_avxvnni_gemv" : "int8_avx2_gemv");
            const int64_t k = block_of(t) == 32 ? 9 * 32 : block_of(t) == 16 ? 18 * 16 : 2 * 256, ldx = k + 1;
            size_t rb;
            unsigned char *w = make_rows(t, m, k, W_QUANT, &r, &rb);
            float *x = malloc(sizeof(float) * (size_t)(nmax * ldx));
            float *base = malloc(sizeof(float) * (size_t)(nmax * m)), *y = malloc(sizeof(float) * (size_t)(nmax * m));
            assert_true(x && base && y);
            make_x(x, nmax, k, ldx, X_UNIFORM, &r);
            qmm_path p;
            run_api(ctx, QMM_STRATEGY_AUTO, t, m, k, w, rb, nmax, x, ldx, base, &p);
            for (int ni = 0; ni < 7; ni++) {
                run_api(ctx, QMM_STRATEGY_AUTO, t, m, k, w, rb, ns[ni], x, ldx, y, &p);
                assert_int_equal(p.strategy, QMM_STRATEGY_INT8);
                assert_int_equal(p.precision, QMM_PRECISION_INT8);
                assert_string_equal(p.kernel, want);
                if (!tu_bits_equal(base, m, y, m, ns[ni], m))
                    fail_msg("%s n=%lld (%s): rows differ from n = %lld", qmm_type_name((qmm_type)t),
                             (long long)ns[ni], p.kernel, (long long)nmax);
                compared++;
            }
            if (gemm) { /* the GEMM's 8-row copy, made by the calls above, is reported */
                qmm_weights *wt = NULL;
                assert_int_equal(qmm_weights_create(ctx, (qmm_type)t, m, k, w, rb, &wt), QMM_OK);
                assert_int_equal(qmm_context_set_strategy(ctx, QMM_STRATEGY_AUTO), QMM_OK);
                assert_int_equal(qmm_matmul(ctx, wt, 1, x, ldx, y, m), QMM_OK);
                qmm_weights_memory_info mi;
                assert_int_equal(qmm_weights_memory(wt, &mi), QMM_OK);
                assert_true(mi.int8_bytes >= qmm_x86_gemm_int8_avx2_packed_bytes((qmm_type)t, m, k));
                assert_true(mi.total_bytes >= mi.gguf_bytes + mi.int8_bytes);
                qmm_weights_free(wt);
            }
            free(x);
            free(base);
            free(y);
            free(w);
        }
        qmm_context_free(ctx);
    }
    print_message("batch-invariant auto at avx2: %d (type, n, kernel) rows equal to n = %lld's\n", compared,
                  (long long)nmax);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_roundtrip),
        cmocka_unit_test(test_kernels_vs_model),
        cmocka_unit_test(test_amx_bits),
        cmocka_unit_test(test_registry_and_fallback),
        cmocka_unit_test(test_batch_invariant_auto),
    };
    if (setup(NULL) != 0) return 77;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
