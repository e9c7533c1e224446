/*
 * test_conformance.c — the conformance suite, in the manner of ggml's test-backend-ops:
 *
 *     backend x weight type x strategy x shapes (m, n, k tails) x fault classes A-I
 *
 * every output against the float64 reference (qmm_matmul_ref). docs/FAULTS.md states the
 * classes, docs/TRUST.md what covers them (A f16 overflow of auxiliary fields, B zero/tiny/non-finite scales, C integer
 * saturation, D block layout and signs, E k tails and reads past the end, F m/n tails and grid
 * limits, G GEMV vs GEMM, H determinism, padding and stream order, I rounding ties; M the
 * CUDA timer). Class M of the benchmark is tests/test_cases_m.py; J-L (hostile GGUF) are
 * tests/test_gguf_corpus.py; the weight quantizers' tie rules are held to gguf.quants byte
 * for byte by tests/test_gguf_quants.py ("rounding ties").
 *
 * Generated from the tables, never from lists in this file:
 *   backends   CPU at every ISA level of cpu_features.h (QMM_CPU_ISA; a level the machine
 *              lacks must be refused and is reported as skipped; on a CPU with AVX-VNNI also
 *              avx2 without it, "cpu:avx2-novnni", QMM_CPU_AVX_VNNI=off), CUDA when the library
 *              has it and a device is usable (otherwise one skip line; the CPU part still runs),
 *              and WebGPU likewise (its adapter's API in the name, e.g. "webgpu:Vulkan"; the
 *              grid-limit cases only on a GPU adapter, not on lavapipe);
 *   types      every id 0..QMM_TYPE_COUNT-1 with qmm_type_is_supported && qmm_type_is_weight;
 *              weights from qmm_quantize_rows where qmm_type_has_quantizer, otherwise random
 *              valid blocks (qmm_random_rows); scale fields from the type's layout
 *              (core/types.h: offset, kind, count), planted by kind;
 *   strategies every qmm_strategy; one the backend refuses for the type (qmm_matmul_path says
 *              QMM_ERR_UNSUPPORTED) is a skip, printed with the library's reason, never a pass.
 *
 * How a run is judged (run_one, check_values):
 *   - Y has poisoned padding columns (ldy = m + 3) and a poisoned guard after it, X ends flush
 *     against NaN and its row padding is NaN; W rows are padded with 0xFF and end flush
 *     against 0xFF. Y's padding and guard must stay poison, X must be unchanged.
 *   - NaN/Inf is a failure, except where the reference has one (non-finite W: then f32-class
 *     paths must give the same class, NaN/+Inf/-Inf, the others a non-finite value) and where
 *     a path documents it (HALF paths that round X to f16: a token with |x| >= 65520 is Inf).
 *   - Outputs whose every product is exactly 0 must be exactly 0.
 *   - Where every product and partial sum is an exact float (dot_exact), f32-class paths must
 *     equal the reference bit for bit; on backends whose HALF paths round to f16, HALF paths
 *     must equal the exact sum of the f16-rounded operands where that is exact.
 *   - An elementwise bound from the precision class (qmm_precision), S = sum |x w|:
 *       |y - ref| <= (2r + r^2) S + (1 + r)(cx sum|w| + cw sum|x|) + k cx cw
 *                    + (k + 8) 2^-24 (S + that) + 4 2^-24 |ref| + k 2^-149
 *     where operands are rounded with relative error r and absolute error cx (X), cw (W):
 *       F32   r = 0;
 *       HALF  CPU (bf16, power-of-two row scales): r = 2^-8; CUDA (f16): r = 2^-11, cx = cw = 2^-25;
 *       INT8  CPU: r = 2^-11, cx = 1.01 max|x_t| / 254; CUDA: r = 2^-10, cx = max|x_t| (1/254 + 2^-10)
 *             (cx = 0 where every x is exact in int8 per 32-block by construction);
 *       FP8   r = 2^-4 + 2^-20, cx = 2^-10 max|x_t| / 448, cw = 2^-10 max|w_i| / 448.
 *   - The limits qmm_matmul_path reports (qmm_diff_ok with max_nmse, max_rel_err), as they
 *     are: on f32-class paths from STAT_MIN_F32 outputs on; on the other classes from
 *     STAT_MIN_OUTPUTS outputs on and on realistic data (random weights, uniform X: classes
 *     D-H), not where a class's data make the statistical figure meaningless (one-sign or
 *     outlier activations, planted scales, extreme quants, ties).
 *
 * Environment: QMM_CASES_FILTER=<glob> runs the tests whose names match (cmocka's filter,
 * e.g. "test_D_*"); QMM_CONFORMANCE_BACKENDS=<prefix,...> (e.g. "cuda", "cpu:generic") and
 * QMM_CONFORMANCE_TYPES=<name,...> restrict the backends and types. QMM_CONFORMANCE_QUICK=1
 * keeps every backend, type, strategy and class but smaller shapes (for emulated CPUs,
 * scripts/test-arm64.sh): fewer W rows where a class does not depend on m (A, B, C, G, H:
 * 9 or 10 instead of 33-41), shorter k where it does not depend on k (A, C, D: one block or
 * super-block more than needed, H one panel), E's k tails {32, 64, 576, 1056} (1-element
 * types {1, 3, 33, 257, 1041}) instead of seven up to 8640, F's n lists {1..5, 8, 9, 17, 129}
 * and {1, 3, 17}, F's large m 1093 instead of 65537 and one chunk of n (4097).
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/types.h"
#include "cpu/cpu_features.h"
#include "qmm.h"
#include "qmm_webgpu.h"
#include "test_util.h"

#ifdef QMM_WITH_CUDA
#include <cuda_runtime.h>

#include "cuda/cuda_internal.h"
#endif

#define MAX_BE 8
#define GUARD_FLOATS 64
#define MAX_ERRORS_PRINTED 40
/* The limits qmm_matmul_path reports are statistical (nmse and max_rel_err over many
 * outputs, no catastrophic cancellation): they are checked from this many outputs on, on the
 * f32 class from STAT_MIN_F32 (one output that cancels, as cuBLAS sgemm's m = n = 1 at k =
 * 256, measured max_rel 1.6e-5 against 1e-5), on the others from STAT_MIN_OUTPUTS
 * (fused_amx_bf16, bf16 with nmse ~4.5e-6 on uniform data, measured 1.1e-5 over 85 outputs
 * against its 1e-5). Every output is held to the elementwise bound regardless. */
#define STAT_MIN_F32 64
#define STAT_MIN_OUTPUTS 256

_Static_assert(QMM_TYPE_COUNT <= 64, "type masks are 64-bit");

/* ---------------------------------------------------------------------------------------
 * Backends
 * ------------------------------------------------------------------------------------- */

/* Operand rounding of a precision class (see the top of the file). */
typedef struct prec_model {
    double r;              /* relative rounding of each operand */
    double cx_rel, cx_abs; /* absolute rounding of x: cx_rel * max|x_t| + cx_abs */
    double cw_rel, cw_abs; /* of w: cw_rel * max|w_i| + cw_abs */
} prec_model;

typedef struct backend {
    char name[32];         /* "cpu:generic", "cuda" */
    qmm_backend kind;
    qmm_context *ctx;      /* flags 0 */
    qmm_context *inv;      /* QMM_FLAG_BATCH_INVARIANT */
    qmm_context *val;      /* QMM_FLAG_VALIDATE */
    prec_model prec[4];    /* by qmm_precision */
    bool half_f16;         /* HALF paths round X and W to f16 (RNE): |x| >= 65520 is Inf there,
                            * and exact f16 sums are expected bit for bit */
    bool device_grid;      /* a GPU: the cases beyond 65535 grid blocks run here */
} backend;

static backend g_be[MAX_BE];
static int g_nbe;
static bool g_any_f16_half;

/* Weight types of the table (after QMM_CONFORMANCE_TYPES). */
static int g_types[QMM_TYPE_COUNT];
static int g_ntypes;
/* The 1-element type whose element is stored as a given scale kind (f16, bf16), or -1:
 * used to round to f16 / bf16 through the library's conversions. */
static int g_float_type[8];

/* QMM_CONFORMANCE_QUICK: smaller shapes (the top of the file). */
static bool g_quick;
#define QK(full, quick) (g_quick ? (quick) : (full))

static const qmm_type_traits *traits(int t) { return qmm_type_traits_get(t); }
static const char *tname(int t) { return qmm_type_name((qmm_type)t); }
static int64_t bsize(int t) { return traits(t)->block_size; }

/* ---------------------------------------------------------------------------------------
 * Failures: counted, printed (the first MAX_ERRORS_PRINTED per test), the test fails at
 * its end; a run that fails does not stop the others.
 * ------------------------------------------------------------------------------------- */

static int t_fail;
static const char *t_name;

static void report_fail(const char *fmt, ...) {
    if (t_fail++ < MAX_ERRORS_PRINTED) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        print_message("[  ERROR   ] %s: %s\n", t_name, buf);
    }
}

#define CHECK_OK(call)                                                                    \
    do {                                                                                  \
        qmm_status s_ = (call);                                                           \
        if (s_ != QMM_OK)                                                                 \
            fail_msg("%s: %s: %s", #call, qmm_status_str(s_), qmm_last_error());          \
    } while (0)

/* ---------------------------------------------------------------------------------------
 * Coverage: runs and skips per (backend, type, strategy), per test and for the program.
 * ------------------------------------------------------------------------------------- */

static unsigned g_ran[MAX_BE][QMM_TYPE_COUNT][QMM_STRATEGY_COUNT];
static char g_skip_reason[MAX_BE][QMM_TYPE_COUNT][QMM_STRATEGY_COUNT][256];
static unsigned t_ran[MAX_BE][QMM_STRATEGY_COUNT];
static uint64_t t_ran_types[MAX_BE][QMM_STRATEGY_COUNT], t_skip_types[MAX_BE][QMM_STRATEGY_COUNT];
static uint64_t t_types_seen;
static double t_start;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_begin(const char *name) {
    t_name = name;
    t_fail = 0;
    memset(t_ran, 0, sizeof t_ran);
    memset(t_ran_types, 0, sizeof t_ran_types);
    memset(t_skip_types, 0, sizeof t_skip_types);
    t_types_seen = 0;
    t_start = now_s();
}

static void note_ran(int be, int type, qmm_strategy s) {
    g_ran[be][type][s]++;
    t_ran[be][s]++;
    t_ran_types[be][s] |= 1ull << type;
    t_types_seen |= 1ull << type;
}

static void note_skip(int be, int type, qmm_strategy s, const char *why) {
    if (g_skip_reason[be][type][s][0] == '\0')
        snprintf(g_skip_reason[be][type][s], sizeof g_skip_reason[be][type][s], "%s", why);
    t_skip_types[be][s] |= 1ull << type;
    t_types_seen |= 1ull << type;
}

static int popcount64(uint64_t v) { return __builtin_popcountll(v); }

static void types_list(uint64_t mask, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (int t = 0; t < QMM_TYPE_COUNT && o + 1 < len; t++)
        if (mask & (1ull << t)) o += (size_t)snprintf(out + o, len - o, "%s%s", o ? " " : "", tname(t));
}

/* Per backend: runs per strategy, and the strategies refused for some types (their reasons
 * are in the coverage table at the end). */
static void test_end(void) {
    for (int b = 0; b < g_nbe; b++) {
        char line[768];
        size_t o = 0;
        for (int s = 0; s < QMM_STRATEGY_COUNT; s++)
            if (t_ran[b][s] > 0)
                o += (size_t)snprintf(line + o, sizeof line - o, "%s %s %u", o ? "," : "",
                                      qmm_strategy_name((qmm_strategy)s), t_ran[b][s]);
        const size_t o_ran = o;
        for (int s = 0; s < QMM_STRATEGY_COUNT; s++) {
            const uint64_t only_skipped = t_skip_types[b][s] & ~t_ran_types[b][s];
            if (only_skipped)
                o += (size_t)snprintf(line + o, sizeof line - o, "%s %s (%d types)", o == o_ran ? "; refused:" : ",",
                                      qmm_strategy_name((qmm_strategy)s), popcount64(only_skipped));
        }
        if (o > 0) print_message("%s %s: ran%s\n", t_name, g_be[b].name, line);
    }
    print_message("%s: %d types, %.1f s\n", t_name, popcount64(t_types_seen), now_s() - t_start);
    if (t_fail > 0) fail_msg("%s: %d failed checks (the first %d printed above)", t_name, t_fail,
                             t_fail < MAX_ERRORS_PRINTED ? t_fail : MAX_ERRORS_PRINTED);
}

/* ---------------------------------------------------------------------------------------
 * Scale fields by kind (formats/codec.h): bytes, planted values, writing
 * ------------------------------------------------------------------------------------- */

static size_t kind_bytes(int kind) {
    switch (kind) {
    case QMM_SCALE_F16: case QMM_SCALE_BF16: return 2;
    case QMM_SCALE_F32: return 4;
    case QMM_SCALE_E8M0: case QMM_SCALE_UE4M3: return 1;
    case QMM_SCALE_F16_IQ1M: return 8;
    default: return 0;
    }
}

static const char *kind_name(int kind) {
    switch (kind) {
    case QMM_SCALE_F16: return "f16";
    case QMM_SCALE_BF16: return "bf16";
    case QMM_SCALE_F32: return "f32";
    case QMM_SCALE_E8M0: return "E8M0";
    case QMM_SCALE_UE4M3: return "UE4M3";
    case QMM_SCALE_F16_IQ1M: return "iq1_m f16";
    default: return "?";
    }
}

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static void st16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* Store `bits` (f16 bits for F16 and the iq1_m spread f16, bf16 bits, f32 bits, a byte) as one
 * field of `kind` at p. The iq1_m f16 lives in the top nibbles of four uint16 (nibble i of the
 * f16 in bits 12..15 of the i-th); their other bits are kept. */
static void kind_put(int kind, uint8_t *p, uint32_t bits) {
    switch (kind) {
    case QMM_SCALE_F16: case QMM_SCALE_BF16: st16(p, (uint16_t)bits); break;
    case QMM_SCALE_F32: memcpy(p, &bits, 4); break;
    case QMM_SCALE_E8M0: case QMM_SCALE_UE4M3: p[0] = (uint8_t)bits; break;
    case QMM_SCALE_F16_IQ1M:
        for (int i = 0; i < 4; i++)
            st16(p + 2 * i, (uint16_t)((ld16(p + 2 * i) & 0x0FFF) | (((bits >> (4 * i)) & 0xF) << 12)));
        break;
    default: break;
    }
}

/* Categories of planted finite values. */
enum { CAT_ZERO, CAT_TINY, CAT_LARGE, CAT_NEG, CAT_POW2, CAT_COUNT };
static const char *const cat_names[CAT_COUNT] = {"zero", "tiny", "largest", "negative", "power of two"};

/*
 * A random bit pattern of `kind` in a category, false if the kind has none:
 *   zero      +-0 (E8M0 has no zero);
 *   tiny      subnormals of f16/bf16/f32 (the smallest, the largest, random; both signs), E8M0
 *             0x00/0x01 (2^-127, 2^-126: subnormal elements), UE4M3 subnormals 0x01..0x07;
 *   largest   f16 0x7BFF (65504) or near it, E8M0 0xFE/0xFD, UE4M3 0x7E/0x7D; bf16/f32 in
 *             2^100..2^110, the largest values whose sums over any k here stay below FLT_MAX
 *             (larger ones overflow f32 sums that float64 does not: a limit of f32, not a fault);
 *   negative  -(2^-7 .. 2) for the signed kinds;
 *   pow2      +-1 (f16, bf16, f32), E8M0 0x7F, UE4M3 0x38: elements are exact small multiples.
 */
static bool kind_value(int kind, int cat, tu_rng *r, uint32_t *bits) {
    const uint64_t u = tu_rng_u64(r);
    const uint32_t s16 = (u >> 63) ? 0x8000u : 0, s32 = (u >> 63) ? 0x80000000u : 0;
    const uint32_t pick = (uint32_t)(u % 4), v = (uint32_t)(u >> 8);
    switch (kind) {
    case QMM_SCALE_F16: case QMM_SCALE_F16_IQ1M:
        switch (cat) {
        case CAT_ZERO: *bits = s16; return true;
        case CAT_TINY: *bits = (pick == 0 ? 0x0001u : pick == 1 ? 0x03FFu : 1 + v % 0x3FF) | s16; return true;
        case CAT_LARGE: *bits = (pick < 2 ? 0x7BFFu : 0x7800u | (v & 0x3FF)) | s16; return true;
        case CAT_NEG: *bits = 0x8000u | (0x2000u + v % 0x2000); return true;
        case CAT_POW2: *bits = 0x3C00u | s16; return true;
        }
        break;
    case QMM_SCALE_BF16:
        switch (cat) {
        case CAT_ZERO: *bits = s16; return true;
        case CAT_TINY: *bits = (pick == 0 ? 0x0001u : pick == 1 ? 0x007Fu : 1 + v % 0x7F) | s16; return true;
        case CAT_LARGE: *bits = ((127u + 100 + v % 10) << 7 | ((v >> 8) & 0x7F)) | s16; return true;
        case CAT_NEG: *bits = 0x8000u | (0x3C00u + v % 0x400); return true;
        case CAT_POW2: *bits = 0x3F80u | s16; return true;
        }
        break;
    case QMM_SCALE_F32:
        switch (cat) {
        case CAT_ZERO: *bits = s32; return true;
        case CAT_TINY: *bits = (pick == 0 ? 1u : pick == 1 ? 0x7FFFFFu : 1 + v % 0x7FFFFF) | s32; return true;
        case CAT_LARGE: *bits = ((127u + 100 + v % 10) << 23 | ((v >> 8) & 0x7FFFFF)) | s32; return true;
        case CAT_NEG: *bits = 0x80000000u | (0x3C000000u + v % 0x4000000); return true;
        case CAT_POW2: *bits = 0x3F800000u | s32; return true;
        }
        break;
    case QMM_SCALE_E8M0:
        switch (cat) {
        case CAT_TINY: *bits = pick & 1; return true;
        case CAT_LARGE: *bits = pick & 1 ? 0xFE : 0xFD; return true;
        case CAT_POW2: *bits = 0x7F; return true;
        default: return false;
        }
    case QMM_SCALE_UE4M3:
        switch (cat) {
        case CAT_ZERO: *bits = 0; return true;
        case CAT_TINY: *bits = 1 + v % 7; return true;
        case CAT_LARGE: *bits = pick & 1 ? 0x7E : 0x7D; return true;
        case CAT_POW2: *bits = 0x38; return true;
        default: return false;
        }
    default: break;
    }
    return false;
}

/* The non-finite patterns of a kind (validation must report each): n written to out. */
static int kind_nonfinite(int kind, uint32_t out[4]) {
    switch (kind) {
    case QMM_SCALE_F16: case QMM_SCALE_F16_IQ1M:
        out[0] = 0x7C00; out[1] = 0xFC00; out[2] = 0x7E00; out[3] = 0x7C01; return 4;
    case QMM_SCALE_BF16: out[0] = 0x7F80; out[1] = 0xFF80; out[2] = 0x7FC0; return 3;
    case QMM_SCALE_F32: out[0] = 0x7F800000u; out[1] = 0xFF800000u; out[2] = 0x7FC00000u; return 3;
    case QMM_SCALE_E8M0: out[0] = 0xFF; return 1;
    case QMM_SCALE_UE4M3: out[0] = 0x7F; out[1] = 0xFF; return 2;
    default: return 0;
    }
}

/* The scale fields of a type's layout (up to QMM_MAX_SCALE_FIELDS). */
static int n_fields(int t) {
    int n = 0;
    while (n < QMM_MAX_SCALE_FIELDS && traits(t)->layout->scales[n].kind != QMM_SCALE_NONE) n++;
    return n;
}

/* Plant a value of category `cat` into every entry of field f of one block. False if the
 * kind has no value of that category. */
static bool plant_block(int t, int f, int cat, uint8_t *blk, tu_rng *r) {
    const qmm_scale_field *sf = &traits(t)->layout->scales[f];
    for (int c = 0; c < sf->count; c++) {
        uint32_t bits;
        if (!kind_value(sf->kind, cat, r, &bits)) return false;
        kind_put(sf->kind, blk + sf->offset + (size_t)c * kind_bytes(sf->kind), bits);
    }
    return true;
}

/* ---------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------- */

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Class of a value: 0 finite, 1 NaN, 2 +Inf, 3 -Inf. */
static int fclass(float v) { return isnan(v) ? 1 : isinf(v) ? (v > 0 ? 2 : 3) : 0; }
static bool same_bits(float a, float b) { return f2u(a) == f2u(b) || (a == 0.0f && b == 0.0f); }

/* Round count floats to the format of scale kind `kind` (f16 or bf16) through the library's
 * conversion (the 1-element type of that kind), in place. False if there is none. */
static bool round_to_kind(int kind, float *v, int64_t count) {
    const int t = g_float_type[kind];
    if (t < 0 || count <= 0) return t >= 0;
    size_t rb;
    if (qmm_row_bytes((qmm_type)t, count, &rb) != QMM_OK) return false;
    void *tmp = malloc(rb);
    bool ok = tmp && qmm_quantize_rows((qmm_type)t, v, tmp, 1, count) == QMM_OK &&
              qmm_dequantize_rows((qmm_type)t, tmp, v, 1, count) == QMM_OK;
    free(tmp);
    return ok;
}

/* k for a type: at least `min_blocks` blocks and at least `target` elements, a multiple of
 * the block size; `floats` elements for the 1-element types. */
static int64_t k_for(int t, int64_t min_blocks, int64_t target, int64_t floats) {
    const int64_t bs = bsize(t);
    if (bs == 1) return floats;
    int64_t k = (target + bs - 1) / bs * bs;
    return k < min_blocks * bs ? min_blocks * bs : k;
}

/*
 * True if x . w over k elements is exact in float32 in any summation order: every product
 * x_e w_e (exact in float64) is a multiple of one power of two q >= 2^-149 and
 * sum |x_e w_e| < 2^24 q, so every product and every partial sum is an integer multiple of q
 * below 2^24 q, i.e. an exactly representable float (and the total stays below 2^127).
 */
static bool dot_exact(const float *x, const float *w, int64_t k) {
    int qe = INT_MAX;
    double s = 0.0;
    for (int64_t e = 0; e < k; e++) {
        const double pr = (double)x[e] * (double)w[e];
        if (pr == 0.0) continue;
        if (!isfinite(pr)) return false;
        int ex;
        const double f = frexp(fabs(pr), &ex); /* pr = f 2^ex, f in [0.5, 1) */
        const uint64_t mant = (uint64_t)ldexp(f, 53);
        const int low = ex - 53 + __builtin_ctzll(mant);
        if (low < qe) qe = low;
        s += fabs(pr);
    }
    if (qe == INT_MAX) return true;
    return qe >= -149 && s < ldexp(1.0, 24 + qe) && s < 0x1p127;
}

/* ---------------------------------------------------------------------------------------
 * A problem: host W (rows padded with 0xFF, flush against a 0xFF guard), host X (NaN row
 * padding), the reference and everything the checks need.
 * ------------------------------------------------------------------------------------- */

enum { PF_EXACT = 1 }; /* prob_finish: compute the exactness of every output */

typedef struct prob {
    int type;
    int64_t m, k, n, ldx, ldy;
    tu_guarded w;        /* (m-1)*row_stride + row_bytes bytes, then the 0xFF guard */
    size_t row_bytes, row_stride;
    float *x;            /* n x ldx, padding NaN */
    float *wf;           /* m x k: W dequantized (qmm_dequantize_rows) */
    float *ref;          /* n x m */
    double *s;           /* n x m: sum |x w| */
    double *wsum, *wamax;/* m */
    double *xsum, *xamax;/* n */
    bool *xbig;          /* n: some |x| >= 65520 (beyond f16) */
    uint8_t *exact;      /* n x m or NULL: every product and partial sum exact (dot_exact) */
    float *half_ref;     /* n x m or NULL: the exact sum of f16-rounded operands, NaN where not exact */
    bool finite;         /* every element of W finite */
    bool owner;          /* false for a view (prob_view_last) */
} prob;

static void prob_alloc(prob *p, int type, int64_t m, int64_t k, int64_t n, size_t pad, int64_t ldx_pad) {
    memset(p, 0, sizeof *p);
    p->type = type;
    p->m = m;
    p->k = k;
    p->n = n;
    p->ldx = k + ldx_pad;
    p->ldy = m + 3;
    p->owner = true;
    CHECK_OK(qmm_row_bytes((qmm_type)type, k, &p->row_bytes));
    p->row_stride = p->row_bytes + pad;
    p->w = tu_guarded_alloc((size_t)(m - 1) * p->row_stride + p->row_bytes);
    assert_non_null(p->w.data);
    memset(p->w.data, 0xFF, p->w.bytes);
    p->x = malloc((size_t)(n * p->ldx) * sizeof(float));
    assert_non_null(p->x);
    tu_poison_fill(p->x, (size_t)(n * p->ldx));
}

static uint8_t *wrow(const prob *p, int64_t i) { return p->w.data + (size_t)i * p->row_stride; }
static uint8_t *wblock(const prob *p, int64_t i, int64_t b) {
    return wrow(p, i) + (size_t)b * traits(p->type)->block_bytes;
}
static float *xrow(const prob *p, int64_t t) { return p->x + t * p->ldx; }
static int64_t nblocks(const prob *p) { return p->k / bsize(p->type); }

/* Row i from k floats with the reference quantizer (the type must have one). */
static void w_set_row(prob *p, int64_t i, const float *src) {
    CHECK_OK(qmm_quantize_rows((qmm_type)p->type, src, wrow(p, i), 1, p->k));
}

/* Every row: quantized uniform [lo, hi) floats where the type has a quantizer, otherwise
 * random valid blocks of elements about max(|lo|, |hi|). */
static void w_fill(prob *p, tu_rng *r, float lo, float hi) {
    float *src = malloc((size_t)p->k * sizeof(float));
    assert_non_null(src);
    const double scale = fmax(fabs(lo), fabs(hi));
    for (int64_t i = 0; i < p->m; i++) {
        if (qmm_type_has_quantizer((qmm_type)p->type)) {
            tu_fill_uniform(r, src, (size_t)p->k, lo, hi);
            w_set_row(p, i, src);
        } else {
            CHECK_OK(qmm_random_rows((qmm_type)p->type, tu_rng_u64(r), scale, wrow(p, i), 1, p->k));
        }
    }
    free(src);
}

/* Row i from random valid blocks (every byte random, finite scale fields of random sign). */
static void w_random_blocks(prob *p, int64_t i, tu_rng *r, double scale) {
    CHECK_OK(qmm_random_rows((qmm_type)p->type, tu_rng_u64(r), scale, wrow(p, i), 1, p->k));
}

static void x_uniform(prob *p, tu_rng *r, float lo, float hi) {
    for (int64_t t = 0; t < p->n; t++) tu_fill_uniform(r, xrow(p, t), (size_t)p->k, lo, hi);
}

/* Integers in [-a, a]. */
static void x_ints(prob *p, int64_t t, tu_rng *r, int a) {
    for (int64_t e = 0; e < p->k; e++) xrow(p, t)[e] = (float)((int)(tu_rng_u64(r) % (uint64_t)(2 * a + 1)) - a);
}

static void prob_free_derived(prob *p) {
    free(p->wf);
    free(p->ref);
    free(p->s);
    free(p->wsum);
    free(p->wamax);
    free(p->xsum);
    free(p->xamax);
    free(p->xbig);
    free(p->exact);
    free(p->half_ref);
    p->wf = p->ref = p->half_ref = NULL;
    p->s = p->wsum = p->wamax = p->xsum = p->xamax = NULL;
    p->xbig = NULL;
    p->exact = NULL;
}

/* Dequantized W, the reference (tokens in parallel), the sums of the bounds, and with
 * PF_EXACT which outputs are exact. */
static void prob_finish(prob *p, unsigned flags) {
    const int64_t m = p->m, k = p->k, n = p->n;
    prob_free_derived(p);
    p->wf = malloc((size_t)(m * k) * sizeof(float));
    p->ref = malloc((size_t)(n * m) * sizeof(float));
    p->s = malloc((size_t)(n * m) * sizeof(double));
    p->wsum = calloc((size_t)m, sizeof(double));
    p->wamax = calloc((size_t)m, sizeof(double));
    p->xsum = calloc((size_t)n, sizeof(double));
    p->xamax = calloc((size_t)n, sizeof(double));
    p->xbig = calloc((size_t)n, sizeof(bool));
    assert_true(p->wf && p->ref && p->s && p->wsum && p->wamax && p->xsum && p->xamax && p->xbig);
    p->finite = true;
    for (int64_t i = 0; i < m; i++) {
        CHECK_OK(qmm_dequantize_rows((qmm_type)p->type, wrow(p, i), p->wf + i * k, 1, k));
        for (int64_t e = 0; e < k; e++) {
            const float v = p->wf[i * k + e];
            if (!isfinite(v)) {
                p->finite = false;
                continue;
            }
            p->wsum[i] += fabs((double)v);
            if (fabs((double)v) > p->wamax[i]) p->wamax[i] = fabs((double)v);
        }
    }
    for (int64_t t = 0; t < n; t++)
        for (int64_t e = 0; e < k; e++) {
            const double a = fabs((double)p->x[t * p->ldx + e]);
            p->xsum[t] += a;
            if (a > p->xamax[t]) p->xamax[t] = a;
            if (!(a < 65520.0)) p->xbig[t] = true;
        }
    float *wh = NULL, *xh = NULL;
    if (flags & PF_EXACT) {
        p->exact = malloc((size_t)(n * m));
        assert_non_null(p->exact);
        if (g_any_f16_half) { /* f16-rounded copies of W and X */
            p->half_ref = malloc((size_t)(n * m) * sizeof(float));
            wh = malloc((size_t)(m * k) * sizeof(float));
            xh = malloc((size_t)(n * k) * sizeof(float));
            assert_true(p->half_ref && wh && xh);
            memcpy(wh, p->wf, (size_t)(m * k) * sizeof(float));
            for (int64_t t = 0; t < n; t++) memcpy(xh + t * k, p->x + t * p->ldx, (size_t)k * sizeof(float));
            assert_true(round_to_kind(QMM_SCALE_F16, wh, m * k) && round_to_kind(QMM_SCALE_F16, xh, n * k));
        }
    }
    qmm_status st = QMM_OK;
    const int64_t chunk = 16;
#pragma omp parallel for schedule(dynamic)
    for (int64_t t0 = 0; t0 < n; t0 += chunk) {
        const int64_t nc = n - t0 < chunk ? n - t0 : chunk;
        const qmm_status s1 = qmm_matmul_ref((qmm_type)p->type, m, k, p->w.data, p->row_stride, nc,
                                             p->x + t0 * p->ldx, p->ldx, p->ref + t0 * m, m);
        if (s1 != QMM_OK) {
#pragma omp critical
            st = s1;
        }
        for (int64_t t = t0; t < t0 + nc; t++)
            for (int64_t i = 0; i < m; i++) {
                const float *xr = p->x + t * p->ldx, *wr = p->wf + i * k;
                double s = 0.0;
                for (int64_t e = 0; e < k; e++) s += fabs((double)xr[e] * (double)wr[e]);
                p->s[t * m + i] = s;
                if (p->exact) p->exact[t * m + i] = isfinite(s) && dot_exact(xr, wr, k);
                if (p->half_ref) {
                    const float *xq = xh + t * k, *wq = wh + i * k;
                    float v = NAN;
                    if (dot_exact(xq, wq, k)) {
                        double acc = 0.0;
                        for (int64_t e = 0; e < k; e++) acc += (double)xq[e] * (double)wq[e];
                        v = (float)acc;
                    }
                    p->half_ref[t * m + i] = v;
                }
            }
    }
    free(wh);
    free(xh);
    CHECK_OK(st);
}

static void prob_free(prob *p) {
    if (!p->owner) return;
    tu_guarded_free(&p->w);
    free(p->x);
    prob_free_derived(p);
}

/* The last token of p alone (n = 1): its X row then ends flush against the device guard. */
static prob prob_view_last(const prob *p) {
    prob q = *p;
    const int64_t t = p->n - 1;
    q.owner = false;
    q.n = 1;
    q.x = p->x + t * p->ldx;
    q.ref = p->ref + t * p->m;
    q.s = p->s + t * p->m;
    q.xsum = p->xsum + t;
    q.xamax = p->xamax + t;
    q.xbig = p->xbig + t;
    q.exact = p->exact ? p->exact + t * p->m : NULL;
    q.half_ref = p->half_ref ? p->half_ref + t * p->m : NULL;
    return q;
}

/* ---------------------------------------------------------------------------------------
 * What a case expects beyond the defaults
 * ------------------------------------------------------------------------------------- */

typedef struct expect {
    bool stat_low;     /* path limits also on HALF/INT8/FP8 paths (from STAT_MIN_OUTPUTS on) */
    bool x_int8_exact; /* every x is exact in int8 per 32-block (amax = 127 c, c a power of two) */
    /* n x m exact values for a precision class (NaN = none there): HALF by the backend's
     * rounding (index 0 f16, 1 bf16) */
    const float *want_f32, *want_half[2], *want_int8;
} expect;

static expect expect_default(void) {
    expect e;
    memset(&e, 0, sizeof e);
    e.stat_low = true;
    return e;
}

/* The elementwise bound of output (t, i) on a path of class prec. */
static double elem_bound(const backend *be, const prob *p, const expect *ex, qmm_precision prec,
                         int64_t t, int64_t i) {
    const prec_model *pm = &be->prec[prec];
    const double r = pm->r;
    double cx = pm->cx_rel * p->xamax[t] + pm->cx_abs;
    const double cw = pm->cw_rel * p->wamax[i] + pm->cw_abs;
    if (prec == QMM_PRECISION_INT8 && ex->x_int8_exact) cx = 0.0;
    const double s = p->s[t * p->m + i];
    const double op = (2 * r + r * r) * s + (1 + r) * (cx * p->wsum[i] + cw * p->xsum[t]) +
                      (double)p->k * cx * cw;
    return op + (double)(p->k + 8) * 0x1p-24 * (s + op) + 4 * 0x1p-24 * fabs((double)p->ref[t * p->m + i]) +
           (double)p->k * 0x1p-149;
}

/* Check n rows of Y (host copy, stride p->ldy) of one run; returns the number of bad outputs
 * and describes the first in msg. */
static int64_t check_values(const backend *be, const prob *p, int64_t n, const qmm_path *path,
                            const float *y, const expect *ex, char *msg, size_t msg_len) {
    const int64_t m = p->m;
    const qmm_precision prec = path->precision;
    const bool f32 = prec == QMM_PRECISION_F32, half = prec == QMM_PRECISION_HALF;
    const bool half16 = half && be->half_f16;
    const float *want = f32 ? ex->want_f32 : half ? ex->want_half[be->half_f16 ? 0 : 1]
                      : prec == QMM_PRECISION_INT8 ? ex->want_int8 : NULL;
    bool nonfinite_ref = false, big = false;
    int64_t bad = 0;
    msg[0] = '\0';
#define BAD(...)                                                                         \
    do {                                                                                 \
        if (bad++ == 0) snprintf(msg, msg_len, __VA_ARGS__);                             \
    } while (0)
    for (int64_t t = 0; t < n; t++) {
        if (half16 && p->xbig[t]) big = true;
        for (int64_t i = 0; i < m; i++) {
            const float v = y[t * p->ldy + i], rf = p->ref[t * m + i];
            if (half16 && p->xbig[t]) {
                if (isfinite(v)) BAD("token %lld (|x| >= 65520, beyond f16) gave finite y[%lld][%lld] = %.9g; "
                                     "the f16 paths document Inf/NaN there", (long long)t, (long long)t,
                                     (long long)i, v);
                continue;
            }
            if (!isfinite(rf)) {
                nonfinite_ref = true;
                if (f32 ? fclass(v) != fclass(rf) : isfinite(v))
                    BAD("y[%lld][%lld] = %.9g where the reference is %.9g", (long long)t, (long long)i, v, rf);
                continue;
            }
            if (!isfinite(v)) {
                BAD("y[%lld][%lld] = %.9g is not finite (reference %.9g)%s", (long long)t, (long long)i, v, rf,
                    tu_is_poison(v) ? ": never written" : "");
                continue;
            }
            if (p->s[t * m + i] == 0.0 && v != 0.0f) {
                BAD("y[%lld][%lld] = %.9g where every product is exactly 0", (long long)t, (long long)i, v);
                continue;
            }
            if (want && !isnan(want[t * m + i])) {
                if (!same_bits(v, want[t * m + i]))
                    BAD("y[%lld][%lld] = %.9g (0x%08x), the exact value of this class is %.9g (0x%08x)",
                        (long long)t, (long long)i, v, f2u(v), want[t * m + i], f2u(want[t * m + i]));
                continue;
            }
            if (f32 && p->exact && p->exact[t * m + i]) {
                if (!same_bits(v, rf))
                    BAD("y[%lld][%lld] = %.9g (0x%08x), reference %.9g (0x%08x): every product and "
                        "partial sum is exact, so must be the output", (long long)t, (long long)i, v,
                        f2u(v), rf, f2u(rf));
                continue;
            }
            if (half16 && p->half_ref && !isnan(p->half_ref[t * m + i])) {
                const float hv = p->half_ref[t * m + i];
                if (!same_bits(v, hv))
                    BAD("y[%lld][%lld] = %.9g (0x%08x), the exact sum of the f16-rounded operands is "
                        "%.9g (0x%08x)", (long long)t, (long long)i, v, f2u(v), hv, f2u(hv));
                continue;
            }
            const double b = elem_bound(be, p, ex, prec, t, i), err = fabs((double)v - (double)rf);
            if (!(err <= b))
                BAD("y[%lld][%lld] = %.9g, reference %.9g: |error| %.3g > bound %.3g (sum|xw| %.3g)",
                    (long long)t, (long long)i, v, rf, err, b, p->s[t * m + i]);
        }
    }
    /* The path's limits (statistical: on the f32 class from STAT_MIN_F32 outputs on, on the
     * others from STAT_MIN_OUTPUTS outputs on and on realistic data). */
    const bool stat = f32 ? n * m >= STAT_MIN_F32 : n * m >= STAT_MIN_OUTPUTS && ex->stat_low;
    if (bad == 0 && !nonfinite_ref && !big && stat) {
        qmm_diff d;
        CHECK_OK(qmm_compare(n, m, y, p->ldy, p->ref, m, &d));
        if (!qmm_diff_ok(&d, path->max_nmse, path->max_rel_err)) {
            bad++;
            snprintf(msg, msg_len, "nmse %.3g (limit %.3g), max_rel_err %.3g (limit %.3g), worst y[%lld][%lld]",
                     d.nmse, path->max_nmse, d.max_rel_err, path->max_rel_err, (long long)d.worst_row,
                     (long long)d.worst_col);
        }
    }
#undef BAD
    return bad;
}

/* ---------------------------------------------------------------------------------------
 * Running a problem on a backend
 * ------------------------------------------------------------------------------------- */

/* Buffers of a problem in a context's memory space: X flush against GUARD_FLOATS NaN; Y for
 * n rows and a guard, poisoned before each run. */
typedef struct devb {
    qmm_context *ctx;
    float *x, *y;
    size_t x_count, y_count; /* without the guard */
    float *host_x;           /* what X must still hold (with its guard) */
    float *host_y, *poison;
} devb;

static void dev_make(qmm_context *ctx, const prob *p, devb *d) {
    memset(d, 0, sizeof *d);
    d->ctx = ctx;
    d->x_count = (size_t)((p->n - 1) * p->ldx + p->k);
    d->y_count = (size_t)((p->n - 1) * p->ldy + p->m);
    const size_t xb = (d->x_count + GUARD_FLOATS) * sizeof(float), yb = (d->y_count + GUARD_FLOATS) * sizeof(float);
    CHECK_OK(qmm_buffer_alloc(ctx, xb, (void **)&d->x));
    CHECK_OK(qmm_buffer_alloc(ctx, yb, (void **)&d->y));
    d->host_x = malloc(xb);
    d->host_y = malloc(yb);
    d->poison = malloc(yb);
    assert_true(d->host_x && d->host_y && d->poison);
    memcpy(d->host_x, p->x, d->x_count * sizeof(float));
    tu_poison_fill(d->host_x + d->x_count, GUARD_FLOATS);
    CHECK_OK(qmm_buffer_upload(ctx, d->x, d->host_x, xb));
    tu_poison_fill(d->poison, d->y_count + GUARD_FLOATS);
}

static void dev_free(devb *d) {
    qmm_buffer_free(d->ctx, d->x);
    qmm_buffer_free(d->ctx, d->y);
    free(d->host_x);
    free(d->host_y);
    free(d->poison);
}

/* X is compared after each run when it is at most this many bytes. */
#define X_CHECK_BYTES ((size_t)16 << 20)

/*
 * Run strategy s of backend be (context ctx) on the first n tokens of p with weights w:
 * 1 ran and checked (Y left in d->host_y), 0 refused (a skip), -1 failed (reported).
 */
static int run_one(int bi, qmm_context *ctx, const prob *p, const qmm_weights *w, devb *d, int64_t n,
                   qmm_strategy s, const expect *ex, const char *what, qmm_path *path_out) {
    const backend *be = &g_be[bi];
    CHECK_OK(qmm_context_set_strategy(ctx, s));
    qmm_path path;
    const qmm_status st = qmm_matmul_path(ctx, w, n, &path);
    if (st == QMM_ERR_UNSUPPORTED) {
        note_skip(bi, p->type, s, qmm_last_error());
        return 0;
    }
    if (st != QMM_OK) {
        report_fail("%s: %s %s %s: qmm_matmul_path: %s: %s", what, be->name, tname(p->type),
                    qmm_strategy_name(s), qmm_status_str(st), qmm_last_error());
        return -1;
    }
    const size_t yb = (d->y_count + GUARD_FLOATS) * sizeof(float);
    CHECK_OK(qmm_buffer_upload(ctx, d->y, d->poison, yb));
    const qmm_status rs = qmm_matmul(ctx, w, n, d->x, p->ldx, d->y, p->ldy);
    if (rs != QMM_OK) {
        report_fail("%s: %s %s %s (%s) m=%lld k=%lld n=%lld: qmm_matmul: %s: %s", what, be->name,
                    tname(p->type), qmm_strategy_name(s), path.kernel, (long long)p->m, (long long)p->k,
                    (long long)n, qmm_status_str(rs), qmm_last_error());
        return -1;
    }
    CHECK_OK(qmm_buffer_download(ctx, d->host_y, d->y, yb));
    note_ran(bi, p->type, s);
    const float *h = d->host_y;
    const size_t last = (size_t)((n - 1) * p->ldy + p->m);
    int rc = 1;
#define RUN_FAIL(fmt, ...)                                                                          \
    do {                                                                                           \
        report_fail("%s: %s %s %s (%s) m=%lld k=%lld n=%lld: " fmt, what, be->name, tname(p->type), \
                    qmm_strategy_name(s), path.kernel, (long long)p->m, (long long)p->k,            \
                    (long long)n, __VA_ARGS__);                                                     \
        rc = -1;                                                                                   \
    } while (0)
    if (!tu_padding_intact(h, n, p->m, p->ldy) || !tu_all_poison(h + last, d->y_count + GUARD_FLOATS - last))
        RUN_FAIL("%s", "wrote outside Y (the padding columns or past the last row)");
    const size_t xb = (d->x_count + GUARD_FLOATS) * sizeof(float);
    if (xb <= X_CHECK_BYTES) {
        float *xback = malloc(xb);
        assert_non_null(xback);
        CHECK_OK(qmm_buffer_download(ctx, xback, d->x, xb));
        if (memcmp(xback, d->host_x, xb) != 0) RUN_FAIL("%s", "X (or its guard) was modified");
        free(xback);
    }
    char msg[600];
    const int64_t bad = check_values(be, p, n, &path, h, ex, msg, sizeof msg);
    if (bad > 0) RUN_FAIL("%lld bad outputs; first: %s", (long long)bad, msg);
#undef RUN_FAIL
    if (path_out) *path_out = path;
    return rc;
}

/* Weights of p on backend bi, or NULL: a backend that refuses the type (QMM_ERR_UNSUPPORTED)
 * skips every strategy for it with that reason; any other error is a failure. */
static qmm_weights *make_weights(int bi, qmm_context *ctx, const prob *p, const char *what) {
    qmm_weights *w = NULL;
    const qmm_status st = qmm_weights_create(ctx, (qmm_type)p->type, p->m, p->k, p->w.data, p->row_stride, &w);
    if (st == QMM_ERR_UNSUPPORTED) {
        char why[224];
        snprintf(why, sizeof why, "qmm_weights_create: %s", qmm_last_error());
        for (int s = 0; s < QMM_STRATEGY_COUNT; s++) note_skip(bi, p->type, (qmm_strategy)s, why);
        return NULL;
    }
    if (st != QMM_OK) {
        report_fail("%s: %s %s m=%lld k=%lld: qmm_weights_create: %s: %s", what, g_be[bi].name, tname(p->type),
                    (long long)p->m, (long long)p->k, qmm_status_str(st), qmm_last_error());
        return NULL;
    }
    return w;
}

/* Backends a call runs on. */
enum { ON_ALL = 0, ON_GRID = 1 };

static bool backend_selected(int bi, int on) { return on == ON_ALL || g_be[bi].device_grid; }

static bool any_selected(int on) {
    for (int bi = 0; bi < g_nbe; bi++)
        if (backend_selected(bi, on)) return true;
    return false;
}

/*
 * Every strategy of every backend on the first ns[i] tokens of p (weights made once per
 * backend). On the plain contexts, at least one f32-class strategy other than ref must run.
 */
static void run_all_n(const prob *p, const int64_t *ns, int nn, const expect *ex, const char *what, int on) {
    for (int bi = 0; bi < g_nbe; bi++) {
        if (!backend_selected(bi, on)) continue;
        qmm_context *ctx = g_be[bi].ctx;
        qmm_weights *w = make_weights(bi, ctx, p, what);
        if (w == NULL) continue;
        devb d;
        dev_make(ctx, p, &d);
        for (int ni = 0; ni < nn; ni++) {
            int exact_paths = 0;
            for (int s = 0; s < QMM_STRATEGY_COUNT; s++) {
                qmm_path path;
                if (run_one(bi, ctx, p, w, &d, ns[ni], (qmm_strategy)s, ex, what, &path) == 1 &&
                    path.precision == QMM_PRECISION_F32 && path.strategy != QMM_STRATEGY_REF)
                    exact_paths++;
            }
            if (exact_paths == 0)
                report_fail("%s: %s %s: no f32-class strategy other than ref ran (n=%lld)", what, g_be[bi].name,
                            tname(p->type), (long long)ns[ni]);
        }
        dev_free(&d);
        qmm_weights_free(w);
    }
}

static void run_all(const prob *p, const expect *ex, const char *what) {
    const int64_t n = p->n;
    run_all_n(p, &n, 1, ex, what, ON_ALL);
}

/* ---------------------------------------------------------------------------------------
 * A: f16 overflow in auxiliary fields — large activations of one sign
 * ------------------------------------------------------------------------------------- */

/* |x| in [2000, 60000] of one sign (whole rows, one sign per 32-block, a constant 60000 row):
 * activation sums or scales stored as f16 overflow (32 x 60000 > 65504). For types with a
 * minimum term (layout has_min), W of one sign too, so the min term is large as well. */
static void test_A_large_one_sign_activations(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xA1);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        for (int wset = 0; wset < 2; wset++) {
            if (wset == 1 && !traits(t)->layout->has_min) continue;
            if (wset == 1 && !qmm_type_has_quantizer((qmm_type)t)) {
                print_message("[  SKIPPED ] %s: %s: one-sign W needs a reference quantizer\n", t_name, tname(t));
                continue;
            }
            prob p;
            prob_alloc(&p, t, QK(33, 9), k_for(t, 1, QK(256, 64), 64), 4, 16, 5);
            if (wset == 0) w_fill(&p, &r, -1.0f, 1.0f);
            else w_fill(&p, &r, 0.25f, 1.0f);
            for (int64_t e = 0; e < p.k; e++) {
                const float a = tu_rng_uniform(&r, 2000.0f, 60000.0f);
                xrow(&p, 0)[e] = a;
                xrow(&p, 1)[e] = -tu_rng_uniform(&r, 2000.0f, 60000.0f);
                xrow(&p, 2)[e] = ((e / 32) & 1) ? -a : a;
                xrow(&p, 3)[e] = 60000.0f;
            }
            prob_finish(&p, 0);
            expect ex = expect_default();
            /* one-sign and constant rows: the rounding errors of the HALF/INT8/FP8 paths add up
             * coherently (60000 is 59904 in bf16 in every element), so their statistical
             * figures do not apply (docs/TRUST.md); the elementwise bound does */
            ex.stat_low = false;
            run_all(&p, &ex, wset ? "A (one-sign W and X)" : "A (one-sign X)");
            prob_free(&p);
        }
    }
    test_end();
}

/* One x = 70000 (beyond f16): HALF paths that round X to f16 document Inf/NaN for that token;
 * every other path stays finite and within its bound. */
static void test_A_x_beyond_f16(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xA2);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        prob p;
        prob_alloc(&p, t, QK(40, 9), k_for(t, 2, 64, 48), 3, 0, 3);
        w_fill(&p, &r, -1.0f, 1.0f);
        x_uniform(&p, &r, -1.0f, 1.0f);
        xrow(&p, 1)[5] = 70000.0f;
        prob_finish(&p, 0);
        expect ex = expect_default();
        ex.stat_low = false; /* one outlier dominates token 1: its rounding error is coherent */
        run_all(&p, &ex, "A (x = 70000)");
        prob_free(&p);
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * B: zero, tiny and non-finite scales
 * ------------------------------------------------------------------------------------- */

/* Even rows all zero (the reference quantizer on zeros: no 0/0 in its scale search; all-zero
 * bytes for types without one), odd rows with one zero block; both dequantize to exact zeros.
 * X: a zero token and a token of 1e30 (beyond f16: Inf on the f16 paths, documented). */
static void test_B_all_zero_blocks(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xB1);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        const int64_t bs = bsize(t);
        prob p;
        prob_alloc(&p, t, QK(34, 10), k_for(t, 2, 96, 40), 8, 8, 2);
        const int64_t k = p.k, zb = bs == 1 ? 8 : bs; /* elements of the zero block */
        const bool quant = qmm_type_has_quantizer((qmm_type)t);
        float *src = malloc((size_t)k * sizeof(float)), *back = malloc((size_t)k * sizeof(float));
        assert_true(src && back);
        for (int64_t i = 0; i < p.m; i++) {
            if (quant) {
                tu_fill_uniform(&r, src, (size_t)k, -1.0f, 1.0f);
                if (i % 2 == 0) memset(src, 0, (size_t)k * sizeof(float));
                else memset(src + (bs == 1 ? 3 : bs), 0, (size_t)zb * sizeof(float));
                w_set_row(&p, i, src);
            } else {
                w_random_blocks(&p, i, &r, 1.0);
                if (i % 2 == 0) memset(wrow(&p, i), 0, p.row_bytes);
                else memset(wblock(&p, i, bs == 1 ? 3 : 1), 0, (size_t)traits(t)->block_bytes * (bs == 1 ? 8 : 1));
            }
            CHECK_OK(qmm_dequantize_rows((qmm_type)t, wrow(&p, i), back, 1, k));
            const int64_t z0 = i % 2 == 0 ? 0 : (bs == 1 ? 3 : bs), z1 = i % 2 == 0 ? k : z0 + zb;
            for (int64_t e = z0; e < z1; e++)
                if (back[e] != 0.0f)
                    report_fail("B: %s: the zero %s of row %lld dequantizes to %g at %lld", tname(t),
                                i % 2 == 0 ? "row" : "block", (long long)i, back[e], (long long)e);
        }
        free(src);
        free(back);
        CHECK_OK(qmm_validate_rows((qmm_type)t, p.w.data, p.m, k, p.row_stride));
        x_uniform(&p, &r, -1.0f, 1.0f);
        memset(xrow(&p, 2), 0, (size_t)k * sizeof(float));
        for (int64_t e = 0; e < k; e++) xrow(&p, 3)[e] *= 1e30f;
        prob_finish(&p, 0);
        expect ex = expect_default();
        /* the 1e30 token outweighs the others in nmse: a sample of one token */
        ex.stat_low = false;
        run_all(&p, &ex, "B (zero blocks)");
        prob_free(&p);
    }
    test_end();
}

/* x = i 2^-133 (subnormal, i in -15..15) with W of magnitude ~2^10, so the products are
 * normal floats: a path that flushes subnormal activations (DAZ) returns 0. Where every
 * product and sum happens to be exact, f32-class paths must equal the reference. */
static void test_B_subnormal_activations(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xB2);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        prob p;
        prob_alloc(&p, t, QK(33, 9), k_for(t, 1, 64, 40), 3, 0, 1);
        w_fill(&p, &r, -1024.0f, 1024.0f);
        for (int64_t tt = 0; tt < p.n; tt++)
            for (int64_t e = 0; e < p.k; e++)
                xrow(&p, tt)[e] = ldexpf((float)((int)(tu_rng_u64(&r) % 31) - 15), -133);
        prob_finish(&p, PF_EXACT);
        bool nonzero = false;
        for (int64_t i = 0; i < p.n * p.m; i++) nonzero |= p.ref[i] != 0.0f;
        if (!nonzero) report_fail("B: %s: the reference of subnormal X is all zero", tname(t));
        expect ex = expect_default();
        ex.stat_low = false; /* the f16 paths flush x < 2^-24 (documented) */
        run_all(&p, &ex, "B (subnormal x)");
        prob_free(&p);
    }
    test_end();
}

/* Every scale field of the layout, by kind, in every block: zero, tiny (f16/bf16/f32
 * subnormals, the smallest E8M0 and UE4M3), largest (f16 65504, E8M0 0xFE, UE4M3 0x7E),
 * negative. For f32/f16/bf16 the field is the element itself (bf16 subnormal weights, ...).
 * Validation passes (all finite); X small integers (and one uniform token), so products of
 * subnormal weights are exact where dot_exact says so. */
static void test_B_planted_scales(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xB3);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        for (int f = 0; f < n_fields(t); f++)
            for (int cat = CAT_ZERO; cat <= CAT_NEG; cat++) {
                prob p;
                prob_alloc(&p, t, QK(33, 9), k_for(t, 2, 64, 40), 3, 0, 0);
                w_fill(&p, &r, -1.0f, 1.0f);
                bool ok = true;
                for (int64_t i = 0; i < p.m && ok; i++)
                    for (int64_t b = 0; b < nblocks(&p) && ok; b++) ok = plant_block(t, f, cat, wblock(&p, i, b), &r);
                if (!ok) { /* the kind has no such value (E8M0 zero, unsigned negative) */
                    prob_free(&p);
                    continue;
                }
                const qmm_status vs = qmm_validate_rows((qmm_type)t, p.w.data, p.m, p.k, p.row_stride);
                if (vs != QMM_OK)
                    report_fail("B: %s field %d (%s) planted %s: qmm_validate_rows: %s", tname(t), f,
                                kind_name(traits(t)->layout->scales[f].kind), cat_names[cat], qmm_last_error());
                x_ints(&p, 0, &r, 8);
                x_ints(&p, 1, &r, 8);
                tu_fill_uniform(&r, xrow(&p, 2), (size_t)p.k, -1.0f, 1.0f);
                prob_finish(&p, PF_EXACT);
                expect ex = expect_default();
                /* planted scales are not realistic data (f16 paths flush tiny values; a block of
                 * a much larger scale dominates a dot product): bounds, not statistics */
                ex.stat_low = false;
                char what[96];
                snprintf(what, sizeof what, "B (%s %s in field %d)", cat_names[cat],
                         kind_name(traits(t)->layout->scales[f].kind), f);
                run_all(&p, &ex, what);
                prob_free(&p);
            }
    }
    test_end();
}

/* Each non-finite pattern of each field's kind (f16/bf16/f32 Inf and NaN, E8M0 0xFF, UE4M3
 * 0x7F/0xFF, iq1_m's spread f16) in one block: QMM_FLAG_VALIDATE refuses the weights with
 * QMM_ERR_NUMERIC naming that row and block (out untouched), qmm_validate_rows too; without
 * the flag the weights are made and every path gives the reference's non-finite class in
 * every place the reference has one (ggml's decode of the pattern) and finite values elsewhere. */
static void test_B_nonfinite_scales(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xB4);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        int idx = 0;
        for (int f = 0; f < n_fields(t); f++) {
            const qmm_scale_field *sf = &traits(t)->layout->scales[f];
            uint32_t pats[4];
            const int np = kind_nonfinite(sf->kind, pats);
            for (int pi = 0; pi < np; pi++, idx++) {
                prob p;
                prob_alloc(&p, t, 9, k_for(t, 2, 64, 24), 4, 8, 0);
                w_fill(&p, &r, -1.0f, 1.0f);
                const int64_t row = 1 + idx % (p.m - 1), blk = idx % 2 ? nblocks(&p) - 1 : 0;
                const int c = idx % sf->count;
                kind_put(sf->kind, wblock(&p, row, blk) + sf->offset + (size_t)c * kind_bytes(sf->kind), pats[pi]);
                char want[64], what[96];
                snprintf(want, sizeof want, "row %lld, block %lld", (long long)row, (long long)blk);
                snprintf(what, sizeof what, "B (%s 0x%x in field %d, row %lld block %lld)", kind_name(sf->kind),
                         pats[pi], f, (long long)row, (long long)blk);
                qmm_status vs = qmm_validate_rows((qmm_type)t, p.w.data, p.m, p.k, p.row_stride);
                if (vs != QMM_ERR_NUMERIC || !strstr(qmm_last_error(), want))
                    report_fail("%s %s: qmm_validate_rows gave %s (\"%s\"), want QMM_ERR_NUMERIC naming %s", what,
                                tname(t), qmm_status_str(vs), qmm_last_error(), want);
                for (int bi = 0; bi < g_nbe; bi++) {
                    qmm_weights *sentinel = (qmm_weights *)&p, *w = sentinel;
                    vs = qmm_weights_create(g_be[bi].val, (qmm_type)t, p.m, p.k, p.w.data, p.row_stride, &w);
                    if (vs != QMM_ERR_NUMERIC || w != sentinel || !strstr(qmm_last_error(), want))
                        report_fail("%s %s on %s: QMM_FLAG_VALIDATE gave %s (\"%s\"), want QMM_ERR_NUMERIC naming "
                                    "%s with the output untouched", what, tname(t), g_be[bi].name,
                                    qmm_status_str(vs), qmm_last_error(), want);
                    if (vs == QMM_OK && w != sentinel) qmm_weights_free(w);
                }
                /* another row gets one too (without validation nothing looks at the first) */
                const int64_t row2 = (row + 3) % p.m;
                kind_put(sf->kind, wblock(&p, row2, 0) + sf->offset, pats[(pi + 1) % np]);
                x_uniform(&p, &r, -1.0f, 1.0f);
                prob_finish(&p, 0);
                expect ex = expect_default();
                run_all(&p, &ex, what);
                prob_free(&p);
            }
        }
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * C: integer overflow and saturation — extreme quant bytes, exact integer reference
 * ------------------------------------------------------------------------------------- */

/* Quant bytes from the extremes {0x00, 0xFF, 0x80, 0x7F, 0x01, 0x81, 0x0F, 0xF0} (row 0 all
 * 0x80: q8_0 quants and int8 sub-scales of -128; row 1 alternating 0x7F / 0x80), every scale
 * field a power of two: every element is an exact small multiple. X per 32-block one +-127
 * and integers in [-8, 8] (tokens 0 and 1: +127 / -127 and +8 / -8, one sign): exact in
 * int8 per block (amax 127), f16 and f32. Where dot_exact holds (nearly everywhere) f32-class
 * paths must equal the reference bit for bit; int8 paths are held to the bound with no X
 * rounding; a path that saturates int16 pair sums or cannot negate -128 is off by thousands. */
static void test_C_extreme_quants_exact(void **state) {
    (void)state;
    test_begin(__func__);
    static const uint8_t ext[] = {0x00, 0xFF, 0x80, 0x7F, 0x01, 0x81, 0x0F, 0xF0};
    tu_rng r = tu_rng_make(0xC1);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        if (bsize(t) == 1) continue; /* float types: no quants (their elements are B's fields) */
        prob p;
        prob_alloc(&p, t, QK(33, 9), k_for(t, 1, QK(256, 64), 0), 6, 0, 0);
        for (int64_t i = 0; i < p.m; i++) {
            uint8_t *row = wrow(&p, i);
            for (size_t j = 0; j < p.row_bytes; j++)
                row[j] = i == 0 ? 0x80 : i == 1 ? (j & 1 ? 0x7F : 0x80) : ext[tu_rng_u64(&r) % sizeof ext];
            for (int64_t b = 0; b < nblocks(&p); b++)
                for (int f = 0; f < n_fields(t); f++) assert_true(plant_block(t, f, CAT_POW2, wblock(&p, i, b), &r));
        }
        for (int64_t tt = 0; tt < p.n; tt++)
            for (int64_t e = 0; e < p.k; e++) {
                const bool anchor = e % 32 == 0;
                float v = anchor ? (tu_rng_u64(&r) & 1 ? 127.0f : -127.0f) : (float)((int)(tu_rng_u64(&r) % 17) - 8);
                if (tt == 0) v = anchor ? 127.0f : 8.0f;
                if (tt == 1) v = anchor ? -127.0f : -8.0f;
                xrow(&p, tt)[e] = v;
            }
        prob_finish(&p, PF_EXACT);
        int64_t exact = 0;
        for (int64_t i = 0; i < p.n * p.m; i++) exact += p.exact[i];
        if (exact * 2 < p.n * p.m)
            print_message("%s: %s: only %lld of %lld outputs are exact (the others: bounds only)\n", t_name,
                          tname(t), (long long)exact, (long long)(p.n * p.m));
        expect ex = expect_default();
        ex.x_int8_exact = true;
        ex.stat_low = false; /* adversarial bytes: exactness and bounds */
        run_all(&p, &ex, "C (extreme quants)");
        prob_free(&p);
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * D: block layout and signs — X = identity, Y = W dequantized
 * ------------------------------------------------------------------------------------- */

/* W: rows from the reference quantizer (where there is one) and rows of random valid blocks
 * (every quant pattern, scale fields of random sign); X rows = rows of the identity (all k,
 * the last one alone, the last 9): Y row j = column j of W. The reference must equal
 * qmm_dequantize_rows bit for bit; f32-class paths must too (products by 1, sums with 0);
 * f16 paths must give f16(w); the others are held to their bounds. A nibble-order, high-bit,
 * packed-scale, sign or min error moves values between positions or flips them. */
static void test_D_identity_probe(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xD1);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        const int64_t k = k_for(t, QK(2, 1), 64, 40), m = 19;
        prob base;
        prob_alloc(&base, t, m, k, 1, 8, 0);
        float *src = malloc((size_t)k * sizeof(float));
        assert_non_null(src);
        for (int64_t i = 0; i < m; i++) {
            if (i < m / 2 && qmm_type_has_quantizer((qmm_type)t)) {
                tu_fill_uniform(&r, src, (size_t)k, -4.0f, 4.0f);
                w_set_row(&base, i, src);
            } else {
                w_random_blocks(&base, i, &r, 2.0);
            }
        }
        free(src);
        const int64_t t0s[] = {0, k - 1, k - 9}, ns[] = {k, 1, 9};
        for (int c = 0; c < 3; c++) {
            prob p;
            prob_alloc(&p, t, m, k, ns[c], 8, 3);
            memcpy(p.w.data, base.w.data, base.w.bytes);
            for (int64_t tt = 0; tt < p.n; tt++) {
                memset(xrow(&p, tt), 0, (size_t)k * sizeof(float));
                xrow(&p, tt)[t0s[c] + tt] = 1.0f;
            }
            prob_finish(&p, PF_EXACT);
            if (!p.finite) fail_msg("D: %s: random valid blocks dequantize to non-finite values", tname(t));
            for (int64_t tt = 0; tt < p.n; tt++)
                for (int64_t i = 0; i < m; i++)
                    if (!same_bits(p.ref[tt * m + i], p.wf[i * k + t0s[c] + tt]))
                        report_fail("D: %s: the reference y[%lld][%lld] = %.9g differs from qmm_dequantize_rows %.9g",
                                    tname(t), (long long)tt, (long long)i, p.ref[tt * m + i], p.wf[i * k + t0s[c] + tt]);
            expect ex = expect_default();
            ex.want_f32 = p.ref;
            run_all(&p, &ex, "D (X = identity)");
            prob_free(&p);
        }
        prob_free(&base);
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * E: k tails; W flush against 0xFF, X flush against NaN
 * ------------------------------------------------------------------------------------- */

/* k of about {32, 64, 128, 192, 576, 4128, 8640} rounded up to the block size (and
 * {1, 3, 33, 255, 257, 4127, 8641} for the 1-element types: lane and panel tails); W ends
 * flush against 0xFF (NaN scales), X flush against NaN; n = 17 (GEMM) and n = 1 (GEMV, the
 * last token, flush against the guard). A kernel that reads one tile past the row end meets
 * NaN there (and NaN * 0 is NaN). */
static void test_E_k_tails_flush(void **state) {
    (void)state;
    test_begin(__func__);
    static const int64_t kq_full[] = {32, 64, 128, 192, 576, 4128, 8640}, kq_quick[] = {32, 64, 576, 1056};
    static const int64_t k1_full[] = {1, 3, 33, 255, 257, 4127, 8641}, k1_quick[] = {1, 3, 33, 257, 1041};
    const int64_t *kq = QK(kq_full, kq_quick), *k1 = QK(k1_full, k1_quick);
    const int nk = QK(7, 4), nk1 = QK(7, 5);
    tu_rng r = tu_rng_make(0xE1);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        const int64_t bs = bsize(t);
        int64_t prev = 0;
        for (int ki = 0; ki < (bs == 1 ? nk1 : nk); ki++) {
            const int64_t k = bs == 1 ? k1[ki] : (kq[ki] + bs - 1) / bs * bs;
            if (k == prev) continue;
            prev = k;
            prob p;
            prob_alloc(&p, t, 5, k, 17, 0, 0);
            w_fill(&p, &r, -1.0f, 1.0f);
            x_uniform(&p, &r, -1.0f, 1.0f);
            prob_finish(&p, 0);
            expect ex = expect_default();
            run_all(&p, &ex, "E (k tail, n = 17)");
            prob q = prob_view_last(&p);
            run_all(&q, &ex, "E (k tail, n = 1)");
            if (!tu_guard_intact(&p.w)) report_fail("E: %s k=%lld: the W guard changed", tname(t), (long long)k);
            prob_free(&p);
        }
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * F: m and n tails, large m, grids beyond 65535 blocks
 * ------------------------------------------------------------------------------------- */

static void f_case(int t, int64_t m, int64_t k, const int64_t *ns, int nn, int on, tu_rng *r, const char *what) {
    if (!any_selected(on)) return;
    int64_t n_max = 0;
    for (int i = 0; i < nn; i++) n_max = ns[i] > n_max ? ns[i] : n_max;
    prob p;
    prob_alloc(&p, t, m, k, n_max, 16, 5);
    w_fill(&p, r, -1.0f, 1.0f);
    x_uniform(&p, r, -1.0f, 1.0f);
    prob_finish(&p, 0);
    expect ex = expect_default();
    run_all_n(&p, ns, nn, &ex, what, on);
    prob_free(&p);
}

/* m in {1, 7, 33, 65, 96} x n in {1..17, 127, 129} (all n for m = 33, a subset for the other
 * m) for every type; every output is checked, the last row and column included. */
static void test_F_m_n_tails(void **state) {
    (void)state;
    test_begin(__func__);
    static const int64_t n_all_full[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 127, 129};
    static const int64_t n_some_full[] = {1, 3, 9, 17, 129};
    static const int64_t n_all_quick[] = {1, 2, 3, 4, 5, 8, 9, 17, 129}, n_some_quick[] = {1, 3, 17};
    const int64_t *n_all = QK(n_all_full, n_all_quick), *n_some = QK(n_some_full, n_some_quick);
    const int nn_all = QK(19, 9), nn_some = QK(5, 3);
    static const int64_t ms[] = {1, 7, 33, 65, 96};
    tu_rng r = tu_rng_make(0xF1);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        for (int mi = 0; mi < 5; mi++) {
            if (ms[mi] == 33) f_case(t, 33, k_for(t, 1, 256, 256), n_all, nn_all, ON_ALL, &r, "F (m, n tails)");
            else f_case(t, ms[mi], k_for(t, 1, 256, 256), n_some, nn_some, ON_ALL, &r, "F (m, n tails)");
        }
    }
    test_end();
}

/* m = 65537 rows: everywhere for the first type of block size 32 and of block size 1 (n = 1,
 * 17), on GPUs for the first type of every block size and more n; n = 4097, 8209 (chunks of
 * 4096 tokens); on GPUs also m = 524297 rows of k = 1 (65538 blocks of 8 rows) and n = 65535
 * * 128 + 129 tokens of k = 1 (beyond gridDim.y for every token grouping the kernels use), the
 * last token checked like every other. */
static void test_F_large_m_and_grids(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0xF2);
    static const int64_t n_few[] = {1, 17}, n_grid[] = {1, 2, 9, 17, 129}, n_chunks[] = {4097, 8209};
    int64_t seen[8];
    int nseen = 0, t1 = -1, t32 = -1;
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        const int64_t bs = bsize(t);
        bool dup = false;
        for (int i = 0; i < nseen; i++) dup |= seen[i] == bs;
        if (dup || nseen == 8) continue;
        seen[nseen++] = bs;
        if (bs == 1) t1 = t;
        if (bs == 32) t32 = t;
        const int64_t k = bs == 1 ? 32 : bs;
        if (bs <= 32) f_case(t, QK(65537, 1093), k, n_few, 2, ON_ALL, &r, QK("F (m = 65537)", "F (m = 1093)"));
        f_case(t, 65537, k, n_grid, 5, ON_GRID, &r, "F (m = 65537)");
    }
    if (t32 >= 0) f_case(t32, 33, 32, n_chunks, QK(2, 1), ON_ALL, &r, "F (n over 4096-token chunks)");
    if (!any_selected(ON_GRID)) {
        print_message("[  SKIPPED ] %s: m = 524297 x k = 1 and n = 8388609: grid limits of a GPU, none here\n", t_name);
    } else if (t1 >= 0) {
        f_case(t1, 524297, 1, n_few, 2, ON_GRID, &r, "F (m = 524297, k = 1)");
        prob p;
        prob_alloc(&p, t1, 2, 1, 65535 * 128 + 129, 0, 1);
        CHECK_OK(qmm_random_rows((qmm_type)t1, 7, 1.0, p.w.data, 2, 1));
        x_uniform(&p, &r, -1.0f, 1.0f);
        prob_finish(&p, 0);
        expect ex = expect_default();
        const int64_t n = p.n;
        run_all_n(&p, &n, 1, &ex, "F (n > 65535 x 128)", ON_GRID);
        prob_free(&p);
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * G: the rows of n = 1 vs larger n
 * ------------------------------------------------------------------------------------- */

/* With QMM_FLAG_BATCH_INVARIANT, every strategy that resolves gives for n in {1, 2, 3, 8, 9,
 * 16, 17, 64, 65} exactly the first n rows of n = 129; without it, every n is within the
 * path's bound (run_one). k of 2+ panels of the portable order (256) and of the gemv order
 * (1024; where fused runs the gemv kernels at small n): the accumulation order counts. */
static void test_G_row0_across_n(void **state) {
    (void)state;
    test_begin(__func__);
    static const int64_t ns[] = {1, 2, 3, 8, 9, 16, 17, 64, 65, 129}, n_plain[] = {1, 8, 17, 65};
    const int nn = (int)(sizeof ns / sizeof ns[0]);
    tu_rng r = tu_rng_make(0x61);
    for (int ti = 0; ti < 2 * g_ntypes; ti++) {
        const int t = g_types[ti % g_ntypes];
        prob p;
        prob_alloc(&p, t, QK(37, 9), ti < g_ntypes ? k_for(t, 2, 512, 100) : k_for(t, 2, 2304, 2100), 129, 0, 0);
        w_fill(&p, &r, -1.0f, 1.0f);
        x_uniform(&p, &r, -1.0f, 1.0f);
        prob_finish(&p, 0);
        expect ex = expect_default();
        run_all_n(&p, n_plain, 4, &ex, "G", ON_ALL);
        float *first = malloc((size_t)(p.n * p.ldy) * sizeof(float));
        assert_non_null(first);
        for (int bi = 0; bi < g_nbe; bi++) {
            qmm_context *ctx = g_be[bi].inv;
            qmm_weights *w = make_weights(bi, ctx, &p, "G (batch-invariant)");
            if (w == NULL) continue;
            devb d;
            dev_make(ctx, &p, &d);
            for (int s = 0; s < QMM_STRATEGY_COUNT; s++) {
                if (run_one(bi, ctx, &p, w, &d, ns[nn - 1], (qmm_strategy)s, &ex, "G (batch-invariant)", NULL) != 1)
                    continue;
                memcpy(first, d.host_y, (size_t)((p.n - 1) * p.ldy + p.m) * sizeof(float));
                for (int ni = 0; ni < nn - 1; ni++) {
                    const int rc = run_one(bi, ctx, &p, w, &d, ns[ni], (qmm_strategy)s, &ex, "G (batch-invariant)", NULL);
                    if (rc == 0)
                        report_fail("G: %s %s %s ran at n = 129 but was refused at n = %lld", g_be[bi].name, tname(t),
                                    qmm_strategy_name((qmm_strategy)s), (long long)ns[ni]);
                    if (rc == 1 && !tu_bits_equal(first, p.ldy, d.host_y, p.ldy, ns[ni], p.m))
                        report_fail("G: %s %s %s, batch-invariant: the rows of n = %lld differ from the same rows of "
                                    "n = 129 (row 0 %s)", g_be[bi].name, tname(t), qmm_strategy_name((qmm_strategy)s),
                                    (long long)ns[ni],
                                    tu_bits_equal(first, p.ldy, d.host_y, p.ldy, 1, p.m) ? "equal" : "differs too");
                }
            }
            dev_free(&d);
            qmm_weights_free(w);
        }
        free(first);
        prob_free(&p);
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * H: determinism and padding
 * ------------------------------------------------------------------------------------- */

/* Three runs of every path bit-identical; W rows 40 bytes apart filled with 0xFF (NaN scales
 * a kernel must never read), X rows padded with NaN (ldx = k + 7), Y padding poisoned. */
static void test_H_determinism_and_padding(void **state) {
    (void)state;
    test_begin(__func__);
    tu_rng r = tu_rng_make(0x81);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        prob p;
        prob_alloc(&p, t, QK(41, 9), k_for(t, 1, QK(768, 256), QK(768, 300)), 19, 40, 7);
        w_fill(&p, &r, -1.0f, 1.0f);
        x_uniform(&p, &r, -1.0f, 1.0f);
        prob_finish(&p, 0);
        expect ex = expect_default();
        float *first = malloc((size_t)(p.n * p.ldy) * sizeof(float));
        assert_non_null(first);
        for (int bi = 0; bi < g_nbe; bi++) {
            qmm_context *ctx = g_be[bi].ctx;
            qmm_weights *w = make_weights(bi, ctx, &p, "H");
            if (w == NULL) continue;
            devb d;
            dev_make(ctx, &p, &d);
            for (int s = 0; s < QMM_STRATEGY_COUNT; s++) {
                if (run_one(bi, ctx, &p, w, &d, p.n, (qmm_strategy)s, &ex, "H", NULL) != 1) continue;
                memcpy(first, d.host_y, d.y_count * sizeof(float));
                for (int rep = 1; rep < 3; rep++) {
                    if (run_one(bi, ctx, &p, w, &d, p.n, (qmm_strategy)s, &ex, "H (repeat)", NULL) != 1) break;
                    if (!tu_bits_equal(first, p.ldy, d.host_y, p.ldy, p.n, p.m))
                        report_fail("H: %s %s %s: run %d differs from run 0", g_be[bi].name, tname(t),
                                    qmm_strategy_name((qmm_strategy)s), rep);
                }
            }
            dev_free(&d);
            qmm_weights_free(w);
        }
        if (!tu_guard_intact(&p.w)) report_fail("H: %s: the W guard changed", tname(t));
        free(first);
        prob_free(&p);
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * I: rounding ties
 * ------------------------------------------------------------------------------------- */

/* RNE to integer (ties to even) of a float64 that is a multiple of 0.5. */
static double rne(double v) {
    const double f = floor(v), d = v - f;
    if (d < 0.5) return f;
    if (d > 0.5) return f + 1;
    return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

/*
 * Activations exactly on the ties of each path's rounding, through every path, W = v * the
 * identity (v the first of a few integers for which the type's quantizer gives the identity
 * exactly; types without a quantizer cannot make it and are skipped). Tie rules (docs/
 * KERNELS.md, docs/CUDA.md), both backends held to them:
 *   f32 class: no rounding, y = x v as the reference;
 *   HALF: x and w rounded to nearest, ties to even, in the backend's format (bf16 on the CPU,
 *         f16 on CUDA): y = h(x) h(v) exactly;
 *   INT8: per 32-block, dx = max|x| / 127 and q = round-to-nearest-even(x / dx): with an
 *         anchor of 127 c per block (c a power of two) and x = (j + 0.5) c, y = rne(x / c) c v.
 * Tokens 0-1 hold f16 ties, 2-3 bf16 ties, 4-5 int8 ties (FP8 and the classes' other tokens:
 * bounds only).
 */
static void test_I_activation_ties(void **state) {
    (void)state;
    test_begin(__func__);
    static const float mult[] = {1, 2, 3, 7, 15, 31, 63, 127};
    tu_rng r = tu_rng_make(0x11);
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        if (!qmm_type_has_quantizer((qmm_type)t)) {
            print_message("[  SKIPPED ] %s: %s: no reference quantizer to make an exact identity\n", t_name, tname(t));
            continue;
        }
        const int64_t k = k_for(t, 2, 64, 64), m = k, n = 6;
        prob p;
        prob_alloc(&p, t, m, k, n, 0, 0);
        float *src = calloc((size_t)k, sizeof(float)), *back = malloc((size_t)k * sizeof(float));
        assert_true(src && back);
        float v = 0.0f;
        for (size_t mi = 0; mi < sizeof mult / sizeof mult[0] && v == 0.0f; mi++) {
            bool exact = true;
            for (int64_t i = 0; i < m && exact; i++) {
                memset(src, 0, (size_t)k * sizeof(float));
                src[i] = mult[mi];
                w_set_row(&p, i, src);
                CHECK_OK(qmm_dequantize_rows((qmm_type)t, wrow(&p, i), back, 1, k));
                for (int64_t e = 0; e < k && exact; e++) exact = back[e] == src[e]; /* -0 is 0 here */
            }
            if (exact) v = mult[mi];
        }
        free(src);
        free(back);
        if (v == 0.0f) {
            print_message("[  SKIPPED ] %s: %s: the quantizer makes no identity of 1, 2, ..., 127 exactly\n", t_name,
                          tname(t));
            prob_free(&p);
            continue;
        }
        const float c = 0.125f;
        for (int64_t e = 0; e < k; e++) {
            const uint64_t u = tu_rng_u64(&r);
            const float sg = (u & 1) ? -1.0f : 1.0f;
            /* f16 ties: (M + 0.5) 2^(e-10), M in 1024..2047, e in -14..14 */
            xrow(&p, 0)[e] = xrow(&p, 1)[e] = sg * ldexpf((float)(1024 + (u >> 8) % 1024) + 0.5f, (int)((u >> 20) % 29) - 24);
            /* bf16 ties: (M + 0.5) 2^(e-7), M in 128..255, e in -20..20 */
            xrow(&p, 2)[e] = xrow(&p, 3)[e] = sg * ldexpf((float)(128 + (u >> 32) % 128) + 0.5f, (int)((u >> 40) % 41) - 27);
            /* int8 ties: anchors of 127 c, then (j + 0.5) c, j in -127..125 */
            const float j = (float)((int)((u >> 48) % 253) - 127);
            xrow(&p, 4)[e] = xrow(&p, 5)[e] = e % 32 == 0 ? sg * 127.0f * c : (j + 0.5f) * c;
        }
        for (int64_t e = 0; e < k; e++) { /* the second token of each pair: other signs */
            xrow(&p, 1)[e] = -xrow(&p, 1)[e];
            xrow(&p, 3)[e] = -xrow(&p, 3)[e];
            if (e % 32 != 0) xrow(&p, 5)[e] = -xrow(&p, 5)[e];
        }
        prob_finish(&p, 0);
        /* the exact values per class */
        float *wf16 = malloc((size_t)(n * m) * sizeof(float)), *wbf = malloc((size_t)(n * m) * sizeof(float)),
              *wi8 = malloc((size_t)(n * m) * sizeof(float));
        float *xh = malloc((size_t)k * sizeof(float)), hv[2] = {v, v};
        assert_true(wf16 && wbf && wi8 && xh);
        assert_true(round_to_kind(QMM_SCALE_F16, hv, 1) && round_to_kind(QMM_SCALE_BF16, hv + 1, 1));
        for (int64_t tt = 0; tt < n; tt++) {
            for (int kind = 0; kind < 2; kind++) {
                memcpy(xh, xrow(&p, tt), (size_t)k * sizeof(float));
                assert_true(round_to_kind(kind == 0 ? QMM_SCALE_F16 : QMM_SCALE_BF16, xh, k));
                for (int64_t i = 0; i < m; i++) (kind == 0 ? wf16 : wbf)[tt * m + i] = xh[i] * hv[kind];
            }
            for (int64_t i = 0; i < m; i++)
                wi8[tt * m + i] = tt >= 4 ? (float)(rne((double)xrow(&p, tt)[i] / c) * c * v) : NAN;
        }
        expect ex = expect_default();
        ex.want_f32 = p.ref;
        ex.want_half[0] = wf16;
        ex.want_half[1] = wbf;
        ex.want_int8 = wi8;
        run_all(&p, &ex, "I (activation ties)");
        free(wf16);
        free(wbf);
        free(wi8);
        free(xh);
        prob_free(&p);
    }
    test_end();
}

/* The float types' conversions (qmm_quantize_rows of the 1-element types, by the kind of
 * their element): round to nearest, ties to even (docs/FORMATS.md). */
static void test_I_float_conversion_ties(void **state) {
    (void)state;
    test_begin(__func__);
    for (int kind = QMM_SCALE_F16; kind <= QMM_SCALE_BF16; kind++) {
        if (g_float_type[kind] < 0) continue;
        const float ulp = kind == QMM_SCALE_F16 ? 0x1p-10f : 0x1p-7f;
        /* 1 + ulp/2 -> 1 (even), 1 + 3 ulp/2 -> 1 + 2 ulp, the negatives, a subnormal tie */
        const float in[] = {1.0f + ulp / 2, 1.0f + 3 * ulp / 2, -(1.0f + ulp / 2), -(1.0f + 3 * ulp / 2),
                            kind == QMM_SCALE_F16 ? 3 * 0x1p-25f : 3 * 0x1p-134f};
        const float want[] = {1.0f, 1.0f + 2 * ulp, -1.0f, -(1.0f + 2 * ulp),
                              kind == QMM_SCALE_F16 ? 0x1p-23f : 0x1p-132f};
        float v[5];
        memcpy(v, in, sizeof v);
        assert_true(round_to_kind(kind, v, 5));
        for (int i = 0; i < 5; i++)
            if (f2u(v[i]) != f2u(want[i]))
                report_fail("I: %s: %a -> %a, ties to even gives %a", kind_name(kind), (double)in[i], (double)v[i],
                            (double)want[i]);
    }
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * CUDA-only cases: the workspace, the caller's stream, the f16 conversion kernel, the timer
 * ------------------------------------------------------------------------------------- */

#ifdef QMM_WITH_CUDA
static int cuda_backend(void) {
    for (int bi = 0; bi < g_nbe; bi++)
        if (g_be[bi].kind == QMM_BACKEND_CUDA) return bi;
    return -1;
}
static const qmm_cuda_context *cuda_ctx(const qmm_context *ctx) { return (const qmm_cuda_context *)ctx->backend; }
#define CUDA_OK(call)                                                                    \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(e_));       \
    } while (0)
#endif

/* Skip a CUDA-only test (with the reason) when there is no CUDA backend here. */
static int need_cuda(void) {
#ifdef QMM_WITH_CUDA
    const int bi = cuda_backend();
    if (bi < 0) print_message("[  SKIPPED ] %s: no usable CUDA device\n", t_name);
    return bi;
#else
    print_message("[  SKIPPED ] %s: this libqmm was built without the CUDA backend\n", t_name);
    return -1;
#endif
}

/* fp8 puts X in E4M3 into the context workspace, padded to 16 columns and 16 tokens; the
 * workspace is filled with 0xFF (E4M3 NaN) before each run, k and n not multiples of 16. The
 * first fp8 call on weights makes their fp8 copy and may grow the workspace (a new one, not
 * filled): one call first, so that every checked run finds the 0xFF workspace. */
static void test_H_fp8_stale_workspace(void **state) {
    (void)state;
    test_begin(__func__);
    const int bi = need_cuda();
    if (bi < 0) {
        test_end();
        skip();
        return;
    }
#ifdef QMM_WITH_CUDA
    tu_rng r = tu_rng_make(0x82);
    qmm_context *ctx = g_be[bi].ctx;
    for (int ti = 0; ti < g_ntypes; ti++) {
        const int t = g_types[ti];
        prob p;
        prob_alloc(&p, t, 21, k_for(t, 1, 0, 7 + 33 * (ti % 2)), 5, 0, 0);
        w_fill(&p, &r, -1.0f, 1.0f);
        x_uniform(&p, &r, -1.0f, 1.0f);
        prob_finish(&p, 0);
        expect ex = expect_default();
        qmm_weights *w = make_weights(bi, ctx, &p, "H (fp8 after a 0xFF workspace)");
        if (w == NULL) {
            prob_free(&p);
            continue;
        }
        devb d;
        dev_make(ctx, &p, &d);
        const qmm_cuda_context *c = cuda_ctx(ctx);
        run_one(bi, ctx, &p, w, &d, p.n, QMM_STRATEGY_FP8, &ex, "H (fp8, first call)", NULL);
        for (int64_t n = 1; n <= p.n; n += 2) {
            CUDA_OK(cudaMemsetAsync(c->workspace, 0xFF, c->workspace_bytes, c->stream));
            run_one(bi, ctx, &p, w, &d, n, QMM_STRATEGY_FP8, &ex, "H (fp8 after a 0xFF workspace)", NULL);
        }
        dev_free(&d);
        qmm_weights_free(w);
        prob_free(&p);
    }
#endif
    test_end();
}

/* X produced on the caller's stream (cuda_stream given at context creation) by a slow kernel
 * (qmm_cuda_delayed_copy, 20 ms) right before each matmul, into a buffer poisoned with NaN:
 * every path must wait for it. */
static void test_H_caller_stream_order(void **state) {
    (void)state;
    test_begin(__func__);
    const int bi = need_cuda();
    if (bi < 0) {
        test_end();
        skip();
        return;
    }
#ifdef QMM_WITH_CUDA
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    qmm_context_params prm = qmm_context_default_params();
    prm.backend = QMM_BACKEND_CUDA;
    prm.cuda_stream = stream;
    qmm_context *ctx = NULL;
    CHECK_OK(qmm_context_create(&prm, &ctx));
    tu_rng r = tu_rng_make(0x83);
    for (int ti = 0; ti < g_ntypes; ti += 4) {
        const int t = g_types[ti];
        prob p;
        prob_alloc(&p, t, 64, k_for(t, 2, 256, 256), 9, 0, 0);
        w_fill(&p, &r, -1.0f, 1.0f);
        x_uniform(&p, &r, -1.0f, 1.0f);
        prob_finish(&p, 0);
        expect ex = expect_default();
        qmm_weights *w = make_weights(bi, ctx, &p, "H (caller's stream)");
        if (w == NULL) {
            prob_free(&p);
            continue;
        }
        devb d;
        dev_make(ctx, &p, &d);
        float *src = NULL;
        CHECK_OK(qmm_buffer_alloc(ctx, d.x_count * sizeof(float), (void **)&src));
        CHECK_OK(qmm_buffer_upload(ctx, src, d.host_x, d.x_count * sizeof(float)));
        float *nan = malloc(d.x_count * sizeof(float));
        assert_non_null(nan);
        tu_poison_fill(nan, d.x_count);
        for (int s = 0; s < QMM_STRATEGY_COUNT; s++) {
            CHECK_OK(qmm_buffer_upload(ctx, d.x, nan, d.x_count * sizeof(float)));
            CUDA_OK(qmm_cuda_delayed_copy(d.x, src, (int64_t)d.x_count, 20 * 1000000ull, stream));
            /* run_one uploads Y's poison first (synchronously, after the queued copy) */
            run_one(bi, ctx, &p, w, &d, p.n, (qmm_strategy)s, &ex, "H (X behind a slow kernel on the caller's stream)",
                    NULL);
        }
        free(nan);
        qmm_buffer_free(ctx, src);
        dev_free(&d);
        qmm_weights_free(w);
        prob_free(&p);
    }
    qmm_context_free(ctx);
    CUDA_OK(cudaStreamDestroy(stream));
#endif
    test_end();
}

/* The CUDA conversion of X to f16 (qmm_cuda_x_to_f16, used by cached_f16) and the CPU's
 * (the f16 type's qmm_quantize_rows, ties to even) give the same bits on exact ties (normal
 * and subnormal, both signs), on the overflow boundary (65519.996 -> 65504, 65520 -> Inf)
 * and on ordinary values. */
static void test_I_cuda_f16_conversion_ties(void **state) {
    (void)state;
    test_begin(__func__);
    const int bi = need_cuda();
    if (bi < 0 || g_float_type[QMM_SCALE_F16] < 0) {
        test_end();
        skip();
        return;
    }
#ifdef QMM_WITH_CUDA
    enum { K = 4096 };
    qmm_context *ctx = g_be[bi].ctx;
    float *x = malloc(K * sizeof(float));
    uint16_t *cpu = malloc(K * sizeof(uint16_t)), *gpu = malloc(K * sizeof(uint16_t));
    assert_true(x && cpu && gpu);
    tu_rng r = tu_rng_make(4242);
    for (int e = 0; e < K; e++) {
        const int kind = e % 4;
        if (kind < 2) x[e] = ldexpf((float)(1024 + (int)(tu_rng_u64(&r) % 1024)) + 0.5f, (int)(tu_rng_u64(&r) % 30) - 24);
        else if (kind == 2) x[e] = ldexpf((float)(tu_rng_u64(&r) % 1024) + 0.5f, -24);
        else x[e] = tu_rng_uniform(&r, -70000.0f, 70000.0f);
        if (tu_rng_u64(&r) % 2) x[e] = -x[e];
    }
    x[3] = 65519.996f;
    x[7] = -65520.0f;
    x[11] = 0x1p-25f;
    CHECK_OK(qmm_quantize_rows((qmm_type)g_float_type[QMM_SCALE_F16], x, cpu, 1, K));
    float *dx = NULL;
    uint16_t *dh = NULL;
    CHECK_OK(qmm_buffer_alloc(ctx, K * sizeof(float), (void **)&dx));
    CHECK_OK(qmm_buffer_alloc(ctx, K * sizeof(uint16_t), (void **)&dh));
    CHECK_OK(qmm_buffer_upload(ctx, dx, x, K * sizeof(float)));
    CUDA_OK(qmm_cuda_x_to_f16(dx, 1, K, K, dh, cuda_ctx(ctx)->stream));
    CHECK_OK(qmm_buffer_download(ctx, gpu, dh, K * sizeof(uint16_t)));
    for (int e = 0; e < K; e++)
        if (cpu[e] != gpu[e])
            report_fail("I (f16 ties): x = %a: GPU f16 0x%04x, CPU f16 0x%04x", (double)x[e], gpu[e], cpu[e]);
    qmm_buffer_free(ctx, dx);
    qmm_buffer_free(ctx, dh);
    free(x);
    free(cpu);
    free(gpu);
#endif
    test_end();
}

/* M: qmm_timer_begin / qmm_timer_end around a kernel of known duration on the context's
 * stream (qmm_cuda_delayed_copy spins on the device clock) must report at least that: a timer
 * that forgets to synchronize (an end event on another stream, a host clock) reports ~0. */
static void test_M_timer_waits_for_device(void **state) {
    (void)state;
    test_begin(__func__);
    const int bi = need_cuda();
    if (bi < 0) {
        test_end();
        skip();
        return;
    }
#ifdef QMM_WITH_CUDA
    qmm_context *ctx = g_be[bi].ctx;
    float *a = NULL, *b = NULL;
    CHECK_OK(qmm_buffer_alloc(ctx, 1024 * sizeof(float), (void **)&a));
    CHECK_OK(qmm_buffer_alloc(ctx, 1024 * sizeof(float), (void **)&b));
    static const double ms_known[] = {5.0, 20.0, 50.0};
    for (size_t i = 0; i < sizeof ms_known / sizeof ms_known[0]; i++) {
        double ms = -1.0;
        CHECK_OK(qmm_timer_begin(ctx));
        CUDA_OK(qmm_cuda_delayed_copy(b, a, 1024, (uint64_t)(ms_known[i] * 1e6), cuda_ctx(ctx)->stream));
        CHECK_OK(qmm_timer_end(ctx, &ms));
        print_message("%s: a kernel of %.0f ms timed as %.3f ms\n", t_name, ms_known[i], ms);
        if (!(ms >= 0.95 * ms_known[i] && ms < ms_known[i] + 500.0))
            report_fail("M: a %.0f ms kernel on the context's stream was timed as %.3f ms", ms_known[i], ms);
    }
    qmm_buffer_free(ctx, a);
    qmm_buffer_free(ctx, b);
#endif
    test_end();
}

/* ---------------------------------------------------------------------------------------
 * Setup: backends and types; the coverage table at the end
 * ------------------------------------------------------------------------------------- */

/* True if `name` is selected by the comma-separated prefixes of env var `var` (unset: all). */
static bool selected(const char *var, const char *name) {
    const char *list = getenv(var);
    if (list == NULL || list[0] == '\0') return true;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strncmp(name, tok, strlen(tok)) == 0) return true;
    return false;
}

/* A context at CPU level `isa` (NULL: the default); `vnni`: QMM_CPU_AVX_VNNI or NULL. */
static qmm_status make_ctx(qmm_backend kind, const char *isa, const char *vnni, unsigned flags,
                           qmm_context **out) {
    if (isa) setenv("QMM_CPU_ISA", isa, 1);
    if (vnni) setenv("QMM_CPU_AVX_VNNI", vnni, 1);
    qmm_context_params prm = qmm_context_default_params();
    prm.backend = kind;
    prm.flags = flags;
    const qmm_status st = qmm_context_create(&prm, out);
    if (isa) unsetenv("QMM_CPU_ISA");
    if (vnni) unsetenv("QMM_CPU_AVX_VNNI");
    return st;
}

static bool add_backend(backend *be, qmm_backend kind, const char *isa, const char *vnni) {
    if (make_ctx(kind, isa, vnni, 0, &be->ctx) != QMM_OK ||
        make_ctx(kind, isa, vnni, QMM_FLAG_BATCH_INVARIANT, &be->inv) != QMM_OK ||
        make_ctx(kind, isa, vnni, QMM_FLAG_VALIDATE, &be->val) != QMM_OK) {
        print_message("test_conformance: %s: context creation failed: %s\n", be->name, qmm_last_error());
        return false;
    }
    return true;
}

/* 0: at least one backend; 1: none selected is usable here; -1: a context failed. The CPU
 * levels, and at avx2 on a CPU with AVX-VNNI a second backend "cpu:avx2-novnni"
 * (QMM_CPU_AVX_VNNI=off: the vpmaddubsw int8 kernels an AVX2-only CPU runs). */
static int setup_backends(void) {
    for (int lv = QMM_CPU_ISA_GENERIC; lv <= QMM_CPU_ISA_COUNT; lv++) {
        /* lv == QMM_CPU_ISA_COUNT: avx2 without AVX-VNNI */
        const bool novnni = lv == QMM_CPU_ISA_COUNT;
#if defined(QMM_ARCH_X86_64)
        const int isa = novnni ? QMM_CPU_ISA_AVX2 : lv;
        if (novnni && !qmm_cpu_features_get()->avx_vnni) continue;
#else
        const int isa = lv;
        if (novnni) continue; /* AVX-VNNI exists only on x86-64 */
#endif
        backend *be = &g_be[g_nbe];
        memset(be, 0, sizeof *be);
        snprintf(be->name, sizeof be->name, "cpu:%s%s", qmm_cpu_isa_name((qmm_cpu_isa)isa),
                 novnni ? "-novnni" : "");
        if (!selected("QMM_CONFORMANCE_BACKENDS", be->name)) continue;
        if (!qmm_cpu_isa_supported((qmm_cpu_isa)isa)) {
            qmm_context *c = NULL;
            const qmm_status st = make_ctx(QMM_BACKEND_CPU, qmm_cpu_isa_name((qmm_cpu_isa)isa), NULL, 0, &c);
            if (st != QMM_ERR_UNSUPPORTED || c != NULL) {
                print_message("test_conformance: %s is not supported here but its context gave %s\n", be->name,
                              qmm_status_str(st));
                qmm_context_free(c);
                return -1;
            }
            print_message("[  SKIPPED ] backend %s: not on this machine (%s)\n", be->name, qmm_last_error());
            continue;
        }
        be->kind = QMM_BACKEND_CPU;
        be->prec[QMM_PRECISION_HALF] = (prec_model){0x1p-8, 0, 0, 0, 0};
        be->prec[QMM_PRECISION_INT8] = (prec_model){0x1p-11, 1.01 / 254.0, 0, 0, 0};
        be->prec[QMM_PRECISION_FP8] = (prec_model){0x1p-4 + 0x1p-20, 0x1p-10 / 448.0, 0, 0x1p-10 / 448.0, 0};
        if (!add_backend(be, QMM_BACKEND_CPU, qmm_cpu_isa_name((qmm_cpu_isa)isa), novnni ? "off" : NULL))
            return -1;
        g_nbe++;
    }
    backend *be = &g_be[g_nbe];
    memset(be, 0, sizeof *be);
    snprintf(be->name, sizeof be->name, "cuda");
    if (selected("QMM_CONFORMANCE_BACKENDS", be->name)) {
#ifdef QMM_WITH_CUDA
        if (!qmm_backend_available(QMM_BACKEND_CUDA)) {
            print_message("[  SKIPPED ] backend cuda: no usable CUDA device "
                          "(qmm_backend_available(QMM_BACKEND_CUDA) is false)\n");
        } else {
            be->kind = QMM_BACKEND_CUDA;
            be->prec[QMM_PRECISION_HALF] = (prec_model){0x1p-11, 0, 0x1p-25, 0, 0x1p-25};
            be->prec[QMM_PRECISION_INT8] = (prec_model){0x1p-10, 1.0 / 254.0 + 0x1p-10, 0, 0, 0};
            be->prec[QMM_PRECISION_FP8] = (prec_model){0x1p-4 + 0x1p-20, 0x1p-10 / 448.0, 0, 0x1p-10 / 448.0, 0};
            be->half_f16 = true;
            be->device_grid = true;
            if (!add_backend(be, QMM_BACKEND_CUDA, NULL, NULL)) return -1;
            int dev = 0, major = 0, minor = 0;
            if (cudaGetDevice(&dev) == cudaSuccess &&
                cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess)
                snprintf(be->name, sizeof be->name, "cuda:sm_%d%d", major, minor);
            g_any_f16_half = true;
            g_nbe++;
        }
#else
        print_message("[  SKIPPED ] backend cuda: this libqmm was built without the CUDA backend\n");
#endif
    }
    be = &g_be[g_nbe];
    memset(be, 0, sizeof *be);
    snprintf(be->name, sizeof be->name, "webgpu");
    if (selected("QMM_CONFORMANCE_BACKENDS", be->name)) {
        tu_webgpu_env();
        const qmm_status st = qmm_backend_check(QMM_BACKEND_WEBGPU);
        if (st != QMM_OK) {
            print_message("[  SKIPPED ] backend webgpu: %s\n", qmm_last_error());
        } else {
            be->kind = QMM_BACKEND_WEBGPU; /* every WebGPU path is F32 class: no operand model */
            if (!add_backend(be, QMM_BACKEND_WEBGPU, NULL, NULL)) return -1;
            qmm_webgpu_info info;
            CHECK_OK(qmm_webgpu_get_info(be->ctx, &info));
            /* the grid-limit cases (m = 524297, n > 8M) run on a GPU, not on a CPU adapter */
            be->device_grid = strcmp(info.adapter_type, "CPU") != 0;
            snprintf(be->name, sizeof be->name, "webgpu:%s", info.backend_api);
            g_nbe++;
        }
    }
    return g_nbe > 0 ? 0 : 1;
}

static void setup_types(void) {
    for (int k = 0; k < 8; k++) g_float_type[k] = -1;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        if (!qmm_type_is_supported(t) || !qmm_type_is_weight((qmm_type)t)) continue;
        const qmm_type_traits *tr = traits(t);
        if (tr->block_size == 1 && qmm_type_has_quantizer((qmm_type)t) && g_float_type[tr->layout->scales[0].kind] < 0)
            g_float_type[tr->layout->scales[0].kind] = t;
        if (selected("QMM_CONFORMANCE_TYPES", tname(t))) g_types[g_ntypes++] = t;
    }
}

/* `why` with each whole-word occurrence of `type` replaced by "<type>". */
static void normalize_reason(const char *why, const char *type, char *out, size_t len) {
    const size_t tl = strlen(type);
    size_t o = 0;
    for (const char *p = why; *p && o + 8 < len;) {
        const bool start = p == why || p[-1] == ' ' || p[-1] == '(';
        if (start && strncmp(p, type, tl) == 0 && (p[tl] == ' ' || p[tl] == '\0' || p[tl] == ',' || p[tl] == ')')) {
            o += (size_t)snprintf(out + o, len - o, "<type>");
            p += tl;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

/* What ran: per backend and type, the runs per strategy, and each strategy never run with
 * the library's reason. */
static int print_coverage(void **state) {
    (void)state;
    print_message("test_conformance coverage (runs per strategy; - = refused, with the reason below):\n");
    for (int b = 0; b < g_nbe; b++) {
        char head[256];
        size_t o = 0;
        for (int s = 0; s < QMM_STRATEGY_COUNT; s++)
            o += (size_t)snprintf(head + o, sizeof head - o, " %13s", qmm_strategy_name((qmm_strategy)s));
        print_message("  %-14s%s\n", g_be[b].name, head);
        for (int ti = 0; ti < g_ntypes; ti++) {
            const int t = g_types[ti];
            char line[256];
            o = 0;
            for (int s = 0; s < QMM_STRATEGY_COUNT; s++) {
                if (g_ran[b][t][s]) o += (size_t)snprintf(line + o, sizeof line - o, " %13u", g_ran[b][t][s]);
                else o += (size_t)snprintf(line + o, sizeof line - o, " %13s", "-");
            }
            print_message("  %-14s%s\n", tname(t), line);
        }
        for (int s = 0; s < QMM_STRATEGY_COUNT; s++) {
            /* the types never run, grouped by the library's reason (the type's name in it
             * replaced by <type>) */
            char reasons[8][256];
            uint64_t groups[8] = {0};
            int ng = 0;
            for (int ti = 0; ti < g_ntypes; ti++) {
                const int t = g_types[ti];
                if (g_ran[b][t][s] != 0 || g_skip_reason[b][t][s][0] == '\0') continue;
                char norm[256];
                normalize_reason(g_skip_reason[b][t][s], tname(t), norm, sizeof norm);
                int gi = 0;
                while (gi < ng && strcmp(reasons[gi], norm) != 0) gi++;
                if (gi == ng && ng < 8) snprintf(reasons[ng++], sizeof reasons[0], "%s", norm);
                if (gi < 8) groups[gi] |= 1ull << t;
            }
            for (int gi = 0; gi < ng; gi++) {
                char types[512];
                types_list(groups[gi], types, sizeof types);
                print_message("  %s %s refused for %s: %s\n", g_be[b].name, qmm_strategy_name((qmm_strategy)s),
                              types, reasons[gi]);
            }
        }
    }
    for (int b = 0; b < g_nbe; b++) {
        qmm_context_free(g_be[b].ctx);
        qmm_context_free(g_be[b].inv);
        qmm_context_free(g_be[b].val);
    }
    return 0;
}

int main(void) {
    const char *quick = getenv("QMM_CONFORMANCE_QUICK");
    g_quick = quick != NULL && quick[0] != '\0' && strcmp(quick, "0") != 0;
    setup_types();
    const int rc = setup_backends();
    if (rc < 0) return 1; /* a context that should exist could not be made (printed) */
    if (rc > 0) {         /* e.g. QMM_CONFORMANCE_BACKENDS=cuda on a machine without a GPU */
        print_message("test_conformance: skipped: none of the selected backends is usable here\n");
        return 77;
    }
    print_message("test_conformance%s: %d weight types, backends:", g_quick ? " (QMM_CONFORMANCE_QUICK: smaller shapes)" : "",
                  g_ntypes);
    for (int b = 0; b < g_nbe; b++) print_message(" %s", g_be[b].name);
    print_message("\n");
    const char *filter = getenv("QMM_CASES_FILTER");
    if (filter != NULL && filter[0] != '\0') cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_A_large_one_sign_activations),
        cmocka_unit_test(test_A_x_beyond_f16),
        cmocka_unit_test(test_B_all_zero_blocks),
        cmocka_unit_test(test_B_subnormal_activations),
        cmocka_unit_test(test_B_planted_scales),
        cmocka_unit_test(test_B_nonfinite_scales),
        cmocka_unit_test(test_C_extreme_quants_exact),
        cmocka_unit_test(test_D_identity_probe),
        cmocka_unit_test(test_E_k_tails_flush),
        cmocka_unit_test(test_F_m_n_tails),
        cmocka_unit_test(test_F_large_m_and_grids),
        cmocka_unit_test(test_G_row0_across_n),
        cmocka_unit_test(test_H_determinism_and_padding),
        cmocka_unit_test(test_H_fp8_stale_workspace),
        cmocka_unit_test(test_H_caller_stream_order),
        cmocka_unit_test(test_I_activation_ties),
        cmocka_unit_test(test_I_float_conversion_ties),
        cmocka_unit_test(test_I_cuda_f16_conversion_ties),
        cmocka_unit_test(test_M_timer_waits_for_device),
    };
    return cmocka_run_group_tests(tests, NULL, print_coverage);
}
