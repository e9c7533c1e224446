/*
 * test_cuda_host.cpp — the CUDA decoders and the gemv X layout, compiled for the host and
 * checked without a GPU (built when the CUDA backend is; runs everywhere).
 *
 * src/cuda/dequant.cuh is compiled by the host C++ compiler with the few device intrinsics it
 * uses written here in plain C++ (each one IEEE operation; __byte_perm as nvcc compiles it).
 * For every weight type
 * of the type table:
 *   1. it has a device descriptor (qmm_cuda_type, through qmm_cuda_dispatch_type) whose block
 *      size and bytes are the table's;
 *   2. the unit decoder qmm_cuda_part<T> (gemv, the dequantize kernel), the element decoder
 *      qmm_cuda_dequant<T> and fused's group decoder qmm_cuda_group8<T> — and for unit-codec
 *      types the generic codec path qmm_cuda_part_unit<T> too — equal the CPU's
 *      qmm_dequantize_rows bit for bit (two NaNs count as equal) on random bytes, every unit
 *      writing its elements once;
 *   3. the gemv kernel's X layout (gemv.cu: gemv_pos, the quad-major chunk, read back at
 *      xu + QP*(c/4) + (c%4) for the c-th decoder call of lane l's unit in step j) hands each
 *      decoded weight the X element of its own index, for every chunk size (NT = 1, 2, 4, 8)
 *      and k with a partial chunk, every element exactly once, positions inside the token's
 *      CS floats; and the emulated gemv sum (lanes, fmaf in decoder order, butterfly) agrees
 *      with the float64 dot product.
 * What this cannot see: the device compiler's code, shared-memory races, the fused and int8
 * kernels (test_cuda on a GPU).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_fp16.h>
#include <vector_functions.h>
#include <vector_types.h>

/* ---- the device intrinsics dequant.cuh uses, on the host ---- */
static inline float __uint_as_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
/* CUDA's __byte_perm is prmt.b32 with the selector masked by 0x7777 (nvcc's PTX for it: an
 * and.b32 with 30583 before the prmt): byte n of the result is byte s<4n+2:4n> of y:x. */
static inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s) {
    const uint64_t t = ((uint64_t)y << 32) | x;
    uint32_t r = 0;
    for (int n = 0; n < 4; n++) r |= ((uint32_t)(t >> (8 * ((s >> (4 * n)) & 7u))) & 0xFFu) << (8 * n);
    return r;
}

#include "cuda/dequant.cuh"
#include "qmm.h"

/* dequant.cu (linked from the library, compiled by nvcc) */
extern "C" bool qmm_cuda_type_check(int type, int64_t block_size, size_t block_bytes);

static int g_failures;
#define FAIL(...)                                                                          \
    do {                                                                                   \
        if (g_failures++ < 40) {                                                           \
            fprintf(stderr, "FAIL: ");                                                     \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
        }                                                                                  \
    } while (0)

static uint64_t g_rng = 0x5EEDu;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static bool same(float a, float b) {
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (a != a && b != b);
}

/* ---- 2. decoders against the CPU ---- */

template <class P> static void check_part(const char *what, const char *name, const uint8_t *src, size_t rb,
                                          int64_t m, int64_t k, const float *cpu) {
    float *got = (float *)malloc((size_t)k * sizeof(float));
    int *hits = (int *)malloc((size_t)k * sizeof(int));
    for (int64_t r = 0; r < m; r++) {
        memset(hits, 0, (size_t)k * sizeof(int));
        for (int64_t u = 0; u < P::units(k); u++)
            P::decode(src + r * rb, u, k, [&](int64_t e, float w) {
                if (e < 0 || e >= k) {
                    FAIL("%s %s: unit %lld gave element %lld (k %lld)", name, what, (long long)u, (long long)e, (long long)k);
                    return;
                }
                got[e] = w;
                hits[e]++;
            });
        for (int64_t e = 0; e < k; e++) {
            if (hits[e] != 1) FAIL("%s %s: row %lld element %lld decoded %d times", name, what, (long long)r, (long long)e, hits[e]);
            else if (!same(got[e], cpu[r * k + e]))
                FAIL("%s %s: row %lld element %lld: %a, CPU %a", name, what, (long long)r, (long long)e, (double)got[e],
                     (double)cpu[r * k + e]);
        }
    }
    free(got);
    free(hits);
}

template <int T> struct CheckDecoders {
    static void run(const char *name, int64_t block_size, size_t block_bytes) {
        typedef qmm_cuda_type<T> D;
        if (D::qk != block_size || (size_t)D::bytes != block_bytes)
            FAIL("%s: descriptor says %d elements / %d bytes per block, the type table %lld / %zu", name, D::qk,
                 D::bytes, (long long)block_size, block_bytes);
        const int64_t m = 37, k = D::qk == 1 ? 4 * 64 + 3 : 4 * D::qk;
        size_t rb = 0;
        if (qmm_row_bytes((qmm_type)T, k, &rb) != QMM_OK) {
            FAIL("%s: qmm_row_bytes: %s", name, qmm_last_error());
            return;
        }
        uint8_t *src = (uint8_t *)malloc(rb * (size_t)m);
        float *cpu = (float *)malloc((size_t)(m * k) * sizeof(float));
        for (size_t i = 0; i < rb * (size_t)m; i++) src[i] = (uint8_t)rnd();
        if (qmm_dequantize_rows((qmm_type)T, src, cpu, m, k) != QMM_OK) FAIL("%s: CPU dequantize: %s", name, qmm_last_error());
        check_part<qmm_cuda_part<T>>("qmm_cuda_part", name, src, rb, m, k, cpu);
        if constexpr (D::unit_codec) check_part<qmm_cuda_part_unit<T>>("qmm_cuda_part_unit", name, src, rb, m, k, cpu);
        for (int64_t r = 0; r < m; r++) {
            const uint8_t *row = src + r * rb;
            for (int64_t e = 0; e < k; e++)
                if (!same(qmm_cuda_dequant<T>(row, e), cpu[r * k + e]))
                    FAIL("%s qmm_cuda_dequant: row %lld element %lld: %a, CPU %a", name, (long long)r, (long long)e,
                         (double)qmm_cuda_dequant<T>(row, e), (double)cpu[r * k + e]);
            if (D::qk > 1)
                for (int64_t e = 0; e < k; e += 8) {
                    float v[8];
                    qmm_cuda_group8<T>(row + e / D::qk * D::bytes, (unsigned)(e % D::qk), v);
                    for (int j = 0; j < 8; j++)
                        if (!same(v[j], cpu[r * k + e + j]))
                            FAIL("%s qmm_cuda_group8: row %lld element %lld: %a, CPU %a", name, (long long)r,
                                 (long long)(e + j), (double)v[j], (double)cpu[r * k + e + j]);
                }
        }
        free(src);
        free(cpu);
    }
};

/* ---- 3. the gemv layout (a transcription of gemv.cu's loop structure and gemv_pos) ---- */

/* gemv.cu: gemv_chunk<NT> and gemv_pos<T>. */
static int chunk_of(int nt) { return nt >= 4 ? 1024 : 4096 / nt; }
template <int T> static int pos_of(int e) {
    typedef qmm_cuda_type<T> D;
    constexpr int U = D::unit, QP = D::quad_row;
    const int lane = D::map::lane(e), c = D::map::call(e);
    return e / (32 * U) * (QP * U / 4) + QP * (c >> 2) + 4 * (lane & 31) + (c & 3);
}

template <int T> struct CheckLayout {
    static void run(const char *name, int64_t, size_t) {
        typedef qmm_cuda_type<T> D;
        typedef qmm_cuda_part<T> P;
        constexpr int U = D::unit, QP = D::quad_row, QK = D::qk, kStepElems = 32 * U;
        static_assert(kStepElems % QK == 0, "a step holds whole blocks");
        const int64_t ks[] = {QK == 1 ? 7 : QK, QK == 1 ? 100 : 3 * QK, QK == 1 ? 4099 : 4096 + 3 * QK,
                              QK == 1 ? 9000 : 8192 + QK};
        for (int nt = 1; nt <= 8; nt *= 2) {
            const int CH = chunk_of(nt), CS = CH / 128 * QP;
            if (CH % kStepElems != 0) FAIL("%s: chunk %d does not hold whole steps of %d", name, CH, kStepElems);
            for (int64_t k : ks) {
                size_t rb = 0;
                if (qmm_row_bytes((qmm_type)T, k, &rb) != QMM_OK) {
                    FAIL("%s: qmm_row_bytes(k %lld)", name, (long long)k);
                    continue;
                }
                /* W: random valid blocks (finite), X: distinct values (x[e] = e + 1) */
                uint8_t *w = (uint8_t *)malloc(rb);
                if (qmm_random_rows((qmm_type)T, rnd(), 1.0, w, 1, k) != QMM_OK) FAIL("%s: qmm_random_rows", name);
                float *wf = (float *)malloc((size_t)k * sizeof(float));
                qmm_dequantize_rows((qmm_type)T, w, wf, 1, k);
                float *x = (float *)malloc((size_t)k * sizeof(float));
                for (int64_t e = 0; e < k; e++) x[e] = (float)(e + 1) * (rnd() & 1 ? 1.0f : -1.0f);
                float *xs = (float *)malloc((size_t)CS * sizeof(float));
                int *seen = (int *)calloc((size_t)k, sizeof(int));
                const size_t step_bytes = rb / (size_t)((k + QK - 1) / QK) * (size_t)(kStepElems / QK);
                float acc[32] = {0};
                double ref = 0.0, mag = 0.0;
                for (int64_t e = 0; e < k; e++) ref += (double)wf[e] * x[e], mag += fabs((double)wf[e] * x[e]);
                for (int64_t c0 = 0; c0 < k; c0 += CH) {
                    const int kc = (int)(k - c0 < CH ? k - c0 : CH);
                    const int n4 = (kc + 3) / 4;
                    for (int i = 0; i < CS; i++) xs[i] = NAN;
                    for (int i = 0; i < n4; i++) { /* staging, one token */
                        const int e = 4 * i, p = pos_of<T>(e);
                        if (p % 4 != 0 || p < 0 || p + 4 > CS) {
                            FAIL("%s NT=%d: element %d of a chunk at float %d (of %d per token)", name, nt, e, p, CS);
                            continue;
                        }
                        for (int j = 0; j < 4; j++) {
                            if (xs[p + j] == xs[p + j]) FAIL("%s NT=%d: two quads of X at float %d", name, nt, p + j);
                            xs[p + j] = c0 + e + j < k ? x[c0 + e + j] : 0.0f;
                        }
                    }
                    const int64_t u0 = P::units(c0), u1 = P::units(c0 + kc);
                    for (int lane = 0; lane < 32; lane++) {
                        const float *xu = xs + 4 * lane;
                        const uint8_t *rs = w + (size_t)(c0 / kStepElems) * step_bytes;
                        int64_t kl = k - c0;
                        int64_t base = c0;
                        for (int64_t u = u0 + lane; u < u1; u += 32, xu += QP * U / 4) {
                            int c = 0;
                            P::decode(rs, lane, kl, [&](int64_t er, float wv) {
                                const int64_t e = base + er;
                                const float xv = xu[QP * (c >> 2) + (c & 3)];
                                c++;
                                if (e < 0 || e >= k) {
                                    FAIL("%s NT=%d k=%lld: lane %d element %lld past k", name, nt, (long long)k, lane, (long long)e);
                                    return;
                                }
                                seen[e]++;
                                if (!same(xv, x[e]))
                                    FAIL("%s NT=%d k=%lld: lane %d call %d: element %lld meets x %g, not x[e] %g", name, nt,
                                         (long long)k, lane, c - 1, (long long)e, (double)xv, (double)x[e]);
                                if (!same(wv, wf[e]))
                                    FAIL("%s NT=%d k=%lld: element %lld: w %a, CPU %a", name, nt, (long long)k, (long long)e,
                                         (double)wv, (double)wf[e]);
                                acc[lane] = fmaf(wv, xv, acc[lane]);
                            });
                            rs += step_bytes;
                            kl -= kStepElems;
                            base += kStepElems;
                        }
                    }
                }
                for (int64_t e = 0; e < k; e++)
                    if (seen[e] != 1) FAIL("%s NT=%d k=%lld: element %lld met %d times", name, nt, (long long)k, (long long)e, seen[e]);
                for (int off = 16; off > 0; off >>= 1) { /* the butterfly: every lane ends with the sum */
                    float nxt[32];
                    for (int l = 0; l < 32; l++) nxt[l] = acc[l] + acc[l ^ off];
                    memcpy(acc, nxt, sizeof acc);
                }
                if (!(fabs((double)acc[0] - ref) <= 1e-5 * mag + 1e-30))
                    FAIL("%s NT=%d k=%lld: emulated gemv %.9g, float64 %.9g", name, nt, (long long)k, (double)acc[0], ref);
                free(w);
                free(wf);
                free(x);
                free(xs);
                free(seen);
            }
        }
    }
};

int main(void) {
    int types = 0, unit_types = 0;
    for (int t = 0; t < QMM_TYPE_COUNT; t++) {
        if (!qmm_type_is_supported(t) || !qmm_type_is_weight((qmm_type)t)) continue;
        const char *name = qmm_type_name((qmm_type)t);
        const int64_t bs = qmm_type_block_size((qmm_type)t);
        const size_t bb = qmm_type_block_bytes((qmm_type)t);
        if (!qmm_cuda_dispatch_type<CheckDecoders>(t, name, bs, bb)) {
            FAIL("%s: no CUDA descriptor (qmm_cuda_dispatch_type)", name);
            continue;
        }
        if (!qmm_cuda_type_check(t, bs, bb)) FAIL("%s: qmm_cuda_type_check refuses the table's block", name);
        qmm_cuda_dispatch_type<CheckLayout>(t, name, bs, bb);
        types++;
        qmm_cuda_type_facts f;
        if (qmm_cuda_type_facts_get(t, &f) && bs > 1 && !f.int8) unit_types++;
    }
    if (qmm_cuda_type_check(QMM_TYPE_Q8_K, 256, 292)) FAIL("q8_K (not a weight type) has a descriptor");
    printf("test_cuda_host: %d weight types (%d quantized without an int8 repacker), decoders and "
           "gemv layout checked on the host: %s\n", types, unit_types, g_failures ? "FAILED" : "ok");
    return g_failures ? 1 : 0;
}
