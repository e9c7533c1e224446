/*
 * gemv.cu — the `gemv` strategy: one warp per row (or per two rows) of W, W decoded in
 * registers a unit at a time (qmm_cuda_part<T>: whole quant groups per lane, read by one
 * 4- or 16-byte load, exact), X staged in shared memory, f32 fmaf products and f32 sums.
 *
 * Order (the order defines the result, so it is fixed by k alone):
 * - Lane l of a row's warp takes the units u = l, l + 32, l + 64, ... of the row
 *   (qmm_cuda_part<T>::units(k) of them), in increasing u, and for each token accumulates
 *   w * x by fmaf into its own f32 partial, in the order in which the unit decoder yields the
 *   unit's elements. The warp then sums its 32 partials by a fixed butterfly
 *   (__shfl_xor_sync 16, 8, 4, 2, 1). This is the order of the first gemv (commit f78f1a1^),
 *   so its results are bit-identical to that version's.
 * - Which lane takes which element, and the order, depend on k only — never on n, on the
 *   other tokens, on the token's slot, on m, on the chunk size or on how many rows a warp
 *   takes — so every output is bit-identical for every n (batch-invariant) and run to run (no
 *   atomics; shared memory holds only copies of X). The CPU kernels use another order: the
 *   results agree within the F32 class's limits, not bit for bit.
 *
 * X in shared memory: every row of a block reads the same X, so the block stages it once per
 * chunk of kChunk<NT> elements of NT tokens (18 KB; 36 KB at NT = 8) with coalesced 16-byte
 * loads (4-byte loads when x is not 16-byte aligned or ldx % 4 != 0, decided once per launch;
 * elements at or past k are stored as 0 and never read), between two __syncthreads. A
 * chunk's length is a multiple of 1024 elements (a multiple of every type's block and of 32
 * units), so a chunk holds whole units and the lanes walk the same units in the same order as
 * without chunks. Warps whose rows are all past m still stage X and meet every barrier; they
 * skip only the arithmetic and the stores.
 * Layout of a staged chunk (gemv_pos<T>): quad-major. The 32 units of a warp step are stored
 * as U/4 quad rows (U = elements per unit) of 32 float4 and a pad, quad row q holding the
 * elements 4q..4q+3 each unit's decoder yields, lane l's four at float4 l. A lane reads them
 * by one 16-byte shared load at a constant offset per quad (no per-element arithmetic, a
 * quarter of the unit-major layout's shared loads; the kernel is bound by instruction issue,
 * not by W bandwidth), a warp load is 512 consecutive bytes (no bank conflicts), and staging
 * writes each 16-byte X load with one 16-byte store. The layout moves no product: the order
 * is unchanged (bit-identical to the unit-major and swizzled versions).
 *
 * Rows per warp (RW): 1 at n = 1 (8 rows per block, m = 4608 gives 576 blocks); 2 for the
 * quantized types at n >= 2 (16 rows per block), so each X value read from shared memory
 * serves two rows. The second row's unit is decoded first into registers, then the first
 * row's, in the same decoder call order. RW changes only which warp computes a row, not the
 * row's order.
 *
 * Tokens: a launch handles NT = 1, 2, 4 or 8 tokens per warp (the smallest >= n, at most
 * QMM_CUDA_GEMV_TOKENS); blockIdx.y walks groups of NT tokens (grid-stride beyond 65535).
 * Token slots past n repeat the last token (staged and computed, never stored) so the inner
 * loop has no predicates. Lane t stores token t of each of its warp's rows.
 */
#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"

namespace {

constexpr int kWarps = 8; /* warps per block */
constexpr int kThreads = kWarps * 32;

/* Elements of X per token staged at once: a multiple of 1024, NT * kChunk * 4 <= 32 KB (36 KB
 * with the pad of gemv_quad_row). */
template <int NT> struct gemv_chunk { static constexpr int v = NT >= 4 ? 1024 : 4096 / NT; };

/* Rows per warp: 2 for the quantized types at NT >= 2 (their units decode fully unrolled, so
 * the second row's values stay in registers), 1 otherwise. */
template <int T, int NT> struct gemv_rows_per_warp {
    static constexpr int v = (NT >= 2 && qmm_cuda_type<T>::qk > 1) ? 2 : 1;
};

/* Elements of one unit of qmm_cuda_part<T> (dequant.cuh, the descriptor's `unit`): 32 units
 * (one warp step) cover 32 * gemv_unit_elems<T> consecutive elements of a row. */
template <int T> struct gemv_unit_elems {
    static constexpr int v = qmm_cuda_type<T>::unit;
};

/* Warp steps unrolled (more W loads in flight per warp): 2 for the quantized types, 1 for the
 * float types and for 32-element units (q4_K/q5_K) at NT >= 4 (no spills); at NT = 1 the
 * descriptor's gemv_unroll1: 4 for q4_0 and q8_0, 2 for the others, measured on the H200
 * with `qmm bench --backend cuda --shape 4096x14336,14336x4096 --n 1 --strategy gemv`
 * (unroll 2 / 4 / 8; the numbers: bench/results/h200-cuda-session3.md, call 4).
 * The unroll changes no operation's order. */
template <int T, int NT> struct gemv_unroll {
    static constexpr int v = qmm_cuda_type<T>::qk == 1                          ? 1
                             : (gemv_unit_elems<T>::v == 32 && NT >= 4)         ? 1
                             : NT == 1                                          ? qmm_cuda_type<T>::gemv_unroll1
                                                                                : 2;
};

/* Floats per quad row of the quad-major layout (gemv_pos): 128 (32 lanes x 4) and a pad,
 * the descriptor's quad_row, chosen by enumerating the banks of the staging loop's 16-byte
 * stores for the type's lane map: 144 makes them conflict-free for the float, legacy, q8_0,
 * 16-element K and generic unit maps (2-way for q4_K/q5_K), 136 for q4_K/q5_K and the
 * 16-element codebook units (conflict-free; 128 would be 2- to 4-way). A multiple of 4, so
 * every quad is 16-byte aligned. */
template <int T> struct gemv_quad_row {
    static constexpr int v = qmm_cuda_type<T>::quad_row;
};

/* Shared-memory position of element e (0 <= e < kChunk) of a staged chunk, quad-major: the
 * 32 * U elements of one warp step (U = gemv_unit_elems<T>) are stored as U/4 quad rows of
 * QP = gemv_quad_row<T> floats; quad row q holds the elements c = 4q..4q+3 (in decoder call
 * order) of the step's 32 units, lane l's four at floats 4l..4l+3. Lane l then reads the
 * c-th to (c+3)-th elements of its unit by one 16-byte load at step_base + QP*(c/4) + 4l: a
 * constant offset per quad (no address arithmetic per element, one shared load per four
 * elements and token), and a warp's load is 512 consecutive bytes (no bank conflicts). The
 * 4 consecutive elements e..e+3 (e % 4 == 0) of X are always c..c+3 of one unit, so staging
 * stores them by one 16-byte store. lane(e) and c(e) are the descriptor's lane map
 * (qmm_cuda_type<T>::map, dequant.cuh, one per unit layout of qmm_cuda_part; a type without
 * a descriptor does not compile): float types: unit = 4 consecutive elements, c = j. Legacy
 * 4-bit blocks: lane = 4*block + i, element 32*block + 16*half + 4i + j, c = 4*half + j.
 * q8_0: element 32*block + 8i + j, c = j. q2_K/q3_K/q6_K: lane = 16*sb + 8h + c4, element
 * 256sb + 128h + 32p + 4c4 + j, c = 4p + j. q4_K/q5_K: lane = 8*sb + 2c2 + half, element
 * 256sb + 64c2 + 32s + 16half + j, c = 16s + j. Unit codecs: unit = 8 consecutive
 * elements, c = j. Codebook units (codebook16.cuh): 16 elements, c = 0..7 low nibbles, 8..15
 * high nibbles of 8 bytes. */
template <int T> __device__ __forceinline__ int gemv_pos(int e) {
    constexpr int U = gemv_unit_elems<T>::v;
    const int lane = qmm_cuda_type<T>::map::lane(e), c = qmm_cuda_type<T>::map::call(e);
    constexpr int QP = gemv_quad_row<T>::v;
    return e / (32 * U) * (QP * U / 4) + QP * (c >> 2) + 4 * (lane & 31) + (c & 3);
}

/* Component j (0..3) of a float4; j is a constant wherever the decoders are unrolled. */
__device__ __forceinline__ float gemv_comp(const float4 &v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

/* Elements e..e+3 of one token's X row: one 16-byte load when vec, else 4-byte loads of the
 * elements below k (0 past k). */
__device__ __forceinline__ float4 gemv_load_x(const float *__restrict__ p, bool vec, int64_t e, int64_t k) {
    if (vec && e + 4 <= k) return __ldg((const float4 *)(p + e));
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; j++) v[j] = e + j < k ? __ldg(p + e + j) : 0.0f;
    return make_float4(v[0], v[1], v[2], v[3]);
}

/* Unit u of the warp's RW rows times the staged X: xu points at the lane's quad of its step
 * (chunk layout: gemv_pos), so the c-th decoded element meets component c % 4 of the float4
 * at xu + QP*(c/4) + t*CS for token t (CS: floats per token of the chunk), loaded when c % 4
 * == 0. */
template <int T, int NT, int RW, int CS>
__device__ __forceinline__ void gemv_unit(const uint8_t *const (&rows)[RW], int64_t u, int64_t k,
                                          const float *xu, float (&acc)[RW][NT]) {
    static_assert(RW == 1 || RW == 2, "one or two rows per warp");
    constexpr int QP = gemv_quad_row<T>::v;
    int c = 0; /* decoder call index: a constant at each call (the decoders are unrolled) */
    float4 xq[NT];
    if constexpr (RW == 1) {
        qmm_cuda_part<T>::decode(rows[0], u, k, [&](int64_t, float w0) {
            if ((c & 3) == 0) {
#pragma unroll
                for (int t = 0; t < NT; t++) xq[t] = *(const float4 *)(xu + QP * (c >> 2) + t * CS);
            }
            const int j = c++ & 3;
            const float wv[1] = {w0};
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float xv = gemv_comp(xq[t], j);
#pragma unroll
                for (int i = 0; i < RW; i++) acc[i][t] = fmaf(wv[i], xv, acc[i][t]);
            }
        });
    } else {
        /* the second row's unit first (at most 32 elements, q4_K/q5_K), in registers: the
         * decoder is fully unrolled for the quantized types, so c is a constant at each call */
        float w1[32];
        qmm_cuda_part<T>::decode(rows[1], u, k, [&](int64_t, float wv) { w1[c++] = wv; });
        c = 0;
        qmm_cuda_part<T>::decode(rows[0], u, k, [&](int64_t, float w0) {
            if ((c & 3) == 0) {
#pragma unroll
                for (int t = 0; t < NT; t++) xq[t] = *(const float4 *)(xu + QP * (c >> 2) + t * CS);
            }
            const int j = c & 3;
            const float wv[2] = {w0, w1[c++]};
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const float xv = gemv_comp(xq[t], j);
#pragma unroll
                for (int i = 0; i < RW; i++) acc[i][t] = fmaf(wv[i], xv, acc[i][t]);
            }
        });
    }
}

template <int T, int NT>
__global__ void __launch_bounds__(kThreads, NT == 1 ? 4 : 1)
gemv_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int64_t k, int64_t n,
            const float *__restrict__ x, int64_t ldx, float *__restrict__ y, int64_t ldy) {
    constexpr int RW = gemv_rows_per_warp<T, NT>::v;
    constexpr int CH = gemv_chunk<NT>::v;
    constexpr int CS = CH / 128 * gemv_quad_row<T>::v; /* floats per token of a staged chunk */
    __shared__ __align__(16) float xs[NT * CS];
    const int lane = threadIdx.x & 31;
    const int64_t r0 = ((int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5)) * RW;
    const bool live = r0 < m; /* warp-uniform: the warp has at least one row below m */
    int64_t r[RW];
    const uint8_t *rows[RW];
#pragma unroll
    for (int i = 0; i < RW; i++) {
        r[i] = r0 + i;
        rows[i] = w + (r[i] < m ? r[i] : m - 1) * row_bytes; /* rows past m: computed, not stored */
    }
    const bool vec = ((uintptr_t)x & 15u) == 0 && (ldx & 3) == 0;
    /* one warp step: 32 units = kStepElems elements = whole blocks, step_bytes bytes of a row */
    constexpr int kStepElems = 32 * gemv_unit_elems<T>::v, QK = qmm_cuda_type<T>::qk;
    static_assert(kStepElems % QK == 0 && CH % kStepElems == 0, "a step holds whole blocks; a chunk whole steps");
    const size_t step_bytes = row_bytes / (size_t)((k + QK - 1) / QK) * (size_t)(kStepElems / QK);
    const int64_t groups = (n + NT - 1) / NT;
    for (int64_t g = blockIdx.y; g < groups; g += gridDim.y) {
        const int64_t t0 = g * NT;
        float acc[RW][NT];
#pragma unroll
        for (int i = 0; i < RW; i++)
#pragma unroll
            for (int t = 0; t < NT; t++) acc[i][t] = 0.0f;
        for (int64_t c0 = 0; c0 < k; c0 += CH) {
            const int kc = (int)(k - c0 < CH ? k - c0 : CH);
            const int n4 = (kc + 3) / 4;
            __syncthreads(); /* every warp is done with the previous chunk */
            for (int i = threadIdx.x; i < NT * n4; i += kThreads) {
                const int t = i / n4;
                const int e = 4 * (i - t * n4);
                const int64_t tok = t0 + t < n ? t0 + t : n - 1;
                const float4 v = gemv_load_x(x + tok * ldx, vec, c0 + e, k);
                *(float4 *)(xs + t * CS + gemv_pos<T>(e)) = v; /* elements c..c+3 of one unit */
            }
            __syncthreads(); /* the chunk is staged */
            if (!live) continue;
            const int64_t u0 = qmm_cuda_part<T>::units(c0), u1 = qmm_cuda_part<T>::units(c0 + kc);
            constexpr int kUnroll = gemv_unroll<T, NT>::v;
            /* u0 is a multiple of 32 (c0 is a multiple of 1024), so lane l takes u = u0 + l + 32j,
             * whose elements sit in column l of the chunk's step j */
            const float *xu = xs + 4 * lane;
            /* The decoder sees each step's rows from the step's first block on (rs) and the
             * lane's unit as unit `lane` of them (kl: the elements left from there): the same
             * unit and bytes as unit u of the whole row, with the block address stepping by a
             * constant instead of being recomputed from u (u - lane is a multiple of 32, so
             * the step starts at a block boundary and unit lane has u's position in it). */
            const uint8_t *rs[RW];
#pragma unroll
            for (int i = 0; i < RW; i++) rs[i] = rows[i] + (size_t)(c0 / kStepElems) * step_bytes;
            int64_t kl = k - c0;
#pragma unroll kUnroll
            for (int64_t u = u0 + lane; u < u1; u += 32, xu += gemv_quad_row<T>::v * gemv_unit_elems<T>::v / 4) {
                gemv_unit<T, NT, RW, CS>(rs, lane, kl, xu, acc);
#pragma unroll
                for (int i = 0; i < RW; i++) rs[i] += step_bytes;
                kl -= kStepElems;
            }
        }
        if (!live) continue;
#pragma unroll
        for (int i = 0; i < RW; i++) {
#pragma unroll
            for (int t = 0; t < NT; t++) {
#pragma unroll
                for (int off = 16; off > 0; off >>= 1)
                    acc[i][t] += __shfl_xor_sync(0xFFFFFFFFu, acc[i][t], off);
            }
            /* every lane holds the sums; lane t stores token t */
            float mine = acc[i][0];
#pragma unroll
            for (int t = 1; t < NT; t++)
                if (lane == t) mine = acc[i][t];
            if (lane < NT && t0 + lane < n && r[i] < m) y[(t0 + lane) * ldy + r[i]] = mine;
        }
    }
}

template <int T, int NT>
void gemv_launch(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                 int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
    constexpr int64_t rows_per_block = (int64_t)kWarps * gemv_rows_per_warp<T, NT>::v;
    const int64_t groups = (n + NT - 1) / NT;
    dim3 grid((unsigned)((m + rows_per_block - 1) / rows_per_block), (unsigned)(groups < 65535 ? groups : 65535));
    gemv_kernel<T, NT><<<grid, kThreads, 0, s>>>(w, row_bytes, m, k, n, x, ldx, y, ldy);
}

template <int T> struct GemvLaunch {
    static void run(const void *w, size_t row_bytes, int64_t m, int64_t k, int64_t n, const float *x,
                    int64_t ldx, float *y, int64_t ldy, cudaStream_t s) {
        const uint8_t *wb = (const uint8_t *)w;
        if (n <= 1) gemv_launch<T, 1>(wb, row_bytes, m, k, n, x, ldx, y, ldy, s);
        else if (n <= 2) gemv_launch<T, 2>(wb, row_bytes, m, k, n, x, ldx, y, ldy, s);
        else if (n <= 4) gemv_launch<T, 4>(wb, row_bytes, m, k, n, x, ldx, y, ldy, s);
        else gemv_launch<T, 8>(wb, row_bytes, m, k, n, x, ldx, y, ldy, s);
    }
};

static_assert(QMM_CUDA_GEMV_TOKENS == 8, "gemv_kernel instantiates NT = 1, 2, 4, 8");
static_assert(gemv_chunk<1>::v % 1024 == 0 && gemv_chunk<2>::v % 1024 == 0 && gemv_chunk<4>::v % 1024 == 0 &&
                  gemv_chunk<8>::v % 1024 == 0,
              "a chunk must hold whole 32-unit steps of every type");

} // namespace

extern "C" cudaError_t qmm_cuda_gemv(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                     int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy,
                                     cudaStream_t stream) {
    if ((m + kWarps - 1) / kWarps > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    if (!qmm_cuda_dispatch_type<GemvLaunch>(type, w, row_bytes, m, k, n, x, ldx, y, ldy, stream))
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
