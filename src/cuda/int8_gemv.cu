/*
 * int8_gemv.cu — the int8 strategy's kernel for n <= 8 on the GGUF bytes themselves (no
 * repack): the int8 order of int8.cu, bit for bit, with dp4a products.
 *
 * Why: the repack's skinny kernel reads the int8 repack, about twice the GGUF bytes of a 4-bit
 * type, and a decode step is bound by the bytes it reads. This kernel reads the GGUF rows
 * once, so a weights object used only for decode holds no copy, and the bytes read per token
 * are the GGUF bytes.
 *
 * Values and order: those of int8.cu (its top comment). X is quantized per call by the same
 * kernel into the same workspace (qmm_cuda_int8_quantize_x, n_pad = 8). Per output y[t][i],
 * per chunk c of 16 32-blocks (512 elements), p = 0, then for each 32-block (sub-block, for
 * q6_K) of the chunk in increasing order
 *     p = fmaf((float)isum, dx * d_w, p);   min types: p = fmaf(s, mn_w, p)
 * with isum the exact integer dot of the block's int8 quants (here by dp4a, an exact integer
 * sum) and d_w, mn_w the repack's f32 values (the same single operations on the same fields:
 * i8_unpack<T> in int8.cu); then y = p_0 + p_1 + ... in chunk order. The results are those of
 * the repack kernels bit for bit (tests/test_cuda.c, test_int8_order_exact), so the int8
 * strategy gives the same output whichever kernel runs, for every n.
 *
 * Work: one thread per (row, chunk, token) computes that chunk's p for its token, in the
 * order above. A CTA of 128 threads takes R consecutive rows (R * C * NT of these tasks, C =
 * chunks per row); its rows are one contiguous byte range of W, copied to shared memory by
 * coalesced cp.async (16-byte pieces; 4-byte pieces for q6_K, whose rows are 4-byte aligned
 * only), then each thread reads its chunk's bytes from there a group at a time (the group
 * holds whole blocks: 8 legacy blocks or one super-block), as 16-byte (4-byte for q6_K)
 * shared loads into registers; fields at any byte offset are then picked out of the registers
 * by funnel shifts at offsets fixed at compile time. Its X quants are read from global memory
 * (two 16-byte loads per block and token, L1-resident), dx and s beside them. The chunk
 * partials meet in shared memory and one thread per (row, token) adds them in chunk order.
 *
 * Types: q4_0, q8_0, q4_K, q5_K, q6_K (qmm_cuda_int8_gemv_ok; the other int8 types keep the
 * repack's kernel). Shapes: rows whose byte length is a multiple of the copy piece (16 bytes:
 * q4_0 and q8_0 with k % 256 == 0, q4_K and q5_K always; 4 bytes: q6_K with an even number
 * of super-blocks), W 16-byte aligned, and one row with its partials within the shared-memory
 * opt-in (QMM_I8G_SMEM_MAX).
 */
#include <stdint.h>

#include "cuda/cuda_internal.h"
#include "cuda/dequant.cuh"
#include "cuda/int8_layout.cuh"

namespace {

constexpr int kThreads = 128;
constexpr int kChunkBlocks = 16;    /* 32-blocks per chunk of the int8 order (I8_KS in int8.cu) */
constexpr int kXRows = QMM_CUDA_INT8_GEMV_N; /* n_pad of the quantized X (I8_SKINNY_ROWS in int8.cu) */
constexpr int kSmemTarget = 40960;  /* bytes of W rows per CTA to aim for */
#define QMM_I8G_SMEM_MAX (96 * 1024) /* at most this much shared memory per CTA */

/* ---- picking fields out of a word array at byte offsets known at compile time ---- */

__device__ __forceinline__ uint32_t g32(const uint32_t *w, int o) {
    const int i = o >> 2, s = o & 3;
    return s == 0 ? w[i] : __funnelshift_r(w[i], w[i + 1], 8 * s);
}
__device__ __forceinline__ uint32_t g16(const uint32_t *w, int o) { /* o even */
    return (w[o >> 2] >> (8 * (o & 3))) & 0xFFFFu;
}
__device__ __forceinline__ int g8(const uint32_t *w, int o) { return (int)((w[o >> 2] >> (8 * (o & 3))) & 0xFFu); }

__device__ __forceinline__ int dp4a(uint32_t a, uint32_t b, int c) { return __dp4a((int)a, (int)b, c); }

/* Per type: CB bytes per chunk (16 32-blocks), GB bytes per group, BPG 32-blocks per group,
 * CPY the copy piece and shared load width (16 or 4), NW words of registers per group (enough
 * for every group's aligned cover), SPB sub-blocks per 32-block, MIN whether a min term
 * follows, and block(): 32-block b of a group whose bytes start at byte o of the words w,
 * against the block's X quants x (8 words, elements 4j..4j+3 in word j): isum, d_w, mn_w per
 * sub-block, as i8_unpack<T> defines them. */
template <int T> struct i8g;

template <> struct i8g<QMM_TYPE_Q4_0> {
    static constexpr int CB = 288, GB = 144, BPG = 8, CPY = 16, NW = 36, SPB = 1;
    static constexpr bool MIN = false;
    static __device__ __forceinline__ void block(const uint32_t *w, int o, int b, const uint32_t (&x)[8],
                                                 int (&is)[2], float (&dw)[2], float (&mw)[2]) {
        const int ob = o + 18 * b;
        int acc = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t q = g32(w, ob + 2 + 4 * i);
            /* bytes 16(q - 8) as s8: nibble moved to the high half, sign bit flipped */
            acc = dp4a(((q << 4) & 0xF0F0F0F0u) ^ 0x80808080u, x[i], acc);
            acc = dp4a((q & 0xF0F0F0F0u) ^ 0x80808080u, x[4 + i], acc);
        }
        is[0] = acc >> 4; /* exact: acc is 16 * isum */
        dw[0] = qmm_cuda_h2f((uint16_t)g16(w, ob));
        mw[0] = 0.0f;
    }
};

template <> struct i8g<QMM_TYPE_Q8_0> {
    static constexpr int CB = 544, GB = 136, BPG = 4, CPY = 16, NW = 36, SPB = 1;
    static constexpr bool MIN = false;
    static __device__ __forceinline__ void block(const uint32_t *w, int o, int b, const uint32_t (&x)[8],
                                                 int (&is)[2], float (&dw)[2], float (&mw)[2]) {
        const int ob = o + 34 * b;
        int acc = 0;
#pragma unroll
        for (int i = 0; i < 8; i++) acc = dp4a(g32(w, ob + 2 + 4 * i), x[i], acc);
        is[0] = acc;
        dw[0] = qmm_cuda_h2f((uint16_t)g16(w, ob));
        mw[0] = 0.0f;
    }
};

/* q4_K, q5_K: super-block = group; 32-block sb = 2cc + s takes nibble s of qs[32cc + l]
 * (q5_K: plus 16 * bit 2cc + s of qh[l]); scales and mins by qmm_cuda_scale_min_k4. */
template <int BYTES, int QS, bool HIGH> struct i8g_k45 {
    static constexpr int CB = 2 * BYTES, GB = BYTES, BPG = 8, CPY = 16, NW = BYTES / 4, SPB = 1;
    static constexpr bool MIN = true;
    static __device__ __forceinline__ void block(const uint32_t *w, int o, int sb, const uint32_t (&x)[8],
                                                 int (&is)[2], float (&dw)[2], float (&mw)[2]) {
        const int cc = sb >> 1, s = sb & 1;
        int acc = 0;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            uint32_t v = (g32(w, o + QS + 32 * cc + 4 * i) >> (4 * s)) & 0x0F0F0F0Fu;
            if (HIGH) v |= ((g32(w, o + 16 + 4 * i) >> (2 * cc + s)) & 0x01010101u) << 4;
            acc = dp4a(v, x[i], acc);
        }
        is[0] = acc;
        uint8_t sc12[12];
#pragma unroll
        for (int j = 0; j < 12; j++) sc12[j] = (uint8_t)g8(w, o + 4 + j);
        int sc, mn;
        qmm_cuda_scale_min_k4(sb, sc12, &sc, &mn);
        dw[0] = __fmul_rn(qmm_cuda_h2f((uint16_t)g16(w, o)), (float)sc);
        mw[0] = -__fmul_rn(qmm_cuda_h2f((uint16_t)g16(w, o + 2)), (float)mn);
    }
};
template <> struct i8g<QMM_TYPE_Q4_K> : i8g_k45<144, 16, false> {};
template <> struct i8g<QMM_TYPE_Q5_K> : i8g_k45<176, 48, true> {};

/* q6_K: super-block = group (210 bytes: the second of a chunk starts 2 bytes past a word);
 * 32-block 4h + p: low nibble (p >> 1) of ql[64h + 32(p & 1) + l], bits 2p of qh[32h + l],
 * two 16-element sub-blocks with scales[8h + 2p + hh]. */
template <> struct i8g<QMM_TYPE_Q6_K> {
    static constexpr int CB = 420, GB = 210, BPG = 8, CPY = 4, NW = 53, SPB = 2;
    static constexpr bool MIN = false;
    static __device__ __forceinline__ void block(const uint32_t *w, int o, int c8, const uint32_t (&x)[8],
                                                 int (&is)[2], float (&dw)[2], float (&mw)[2]) {
        const int h = c8 >> 2, p = c8 & 3;
        int acc[2] = {0, 0};
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const uint32_t lo = (g32(w, o + 64 * h + 32 * (p & 1) + 4 * i) >> (4 * (p >> 1))) & 0x0F0F0F0Fu;
            const uint32_t hi = ((g32(w, o + 128 + 32 * h + 4 * i) >> (2 * p)) & 0x03030303u) << 4;
            /* bytes 4(q - 32) as s8 (q < 64) */
            acc[i >> 2] = dp4a(((lo | hi) << 2) ^ 0x80808080u, x[i], acc[i >> 2]);
        }
        const float dd = qmm_cuda_h2f((uint16_t)g16(w, o + 208));
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            is[hh] = acc[hh] >> 2; /* exact: acc is 4 * isum */
            dw[hh] = __fmul_rn(dd, (float)(int8_t)g8(w, o + 192 + 8 * h + 2 * p + hh));
            mw[hh] = 0.0f;
        }
    }
};

/* Loads group g of a chunk whose bytes start at chunk (shared, 4-byte aligned; 16-byte
 * aligned when CPY = 16) into words w; returns the byte offset of the group in w. */
template <int T>
__device__ __forceinline__ int i8g_load(const uint8_t *chunk, int g, uint32_t (&w)[i8g<T>::NW]) {
    typedef i8g<T> D;
    const int gs = g * D::GB, a = gs & ~(D::CPY - 1);
    if constexpr (D::CPY == 16) {
        const uint4 *src = (const uint4 *)(chunk + a);
#pragma unroll
        for (int i = 0; i < D::NW / 4; i++) {
            const uint4 v = src[i];
            w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
        }
    } else {
        const uint32_t *src = (const uint32_t *)(chunk + a);
#pragma unroll
        for (int i = 0; i < D::NW; i++) w[i] = src[i];
    }
    return gs - a;
}

/* grid: ceil(m / R) CTAs of kThreads; dynamic shared memory: R row_bytes (rounded up to 16)
 * of W, then R * C * NT floats of chunk partials. */
template <int T, int NT>
__global__ void __launch_bounds__(kThreads, 4) i8g_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m,
                                                       int nblk, int R, const int8_t *__restrict__ xq,
                                                       const float *__restrict__ xd, const float *__restrict__ xs,
                                                       int64_t k_pad, int nc, float *__restrict__ y, int64_t ldy) {
    typedef i8g<T> D;
    constexpr int SPB = D::SPB;
    extern __shared__ __align__(16) uint8_t sm[];
    const int tid = threadIdx.x, C = (nblk + kChunkBlocks - 1) / kChunkBlocks;
    const int64_t r0 = (int64_t)blockIdx.x * R;
    const int rows = (int)(m - r0 < R ? m - r0 : R);
    const size_t wbytes = (size_t)rows * row_bytes, wpad = ((size_t)R * row_bytes + 15) & ~(size_t)15;
    float *part = (float *)(sm + wpad);
    {
        const uint8_t *src = w + (size_t)r0 * row_bytes;
        const int pieces = (int)(wbytes / D::CPY);
        for (int i = tid; i < pieces; i += kThreads) {
            const unsigned s = (unsigned)__cvta_generic_to_shared(sm + (size_t)i * D::CPY);
            if constexpr (D::CPY == 16)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src + (size_t)i * 16));
            else
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src + (size_t)i * 4));
        }
        i8_commit();
        i8_wait<0>();
        __syncthreads();
    }
    const int tasks = rows * C * NT;
    for (int task = tid; task < tasks; task += kThreads) {
        const int t = task % NT, rc = task / NT, r = rc / C, c = rc - r * C;
        float p = 0.0f;
        if (t < nc) {
            const int b0 = c * kChunkBlocks, nb = min(kChunkBlocks, nblk - b0);
            const uint8_t *chunk = sm + (size_t)r * row_bytes + (size_t)c * D::CB;
            const int8_t *xr = xq + (int64_t)t * k_pad + 32 * (int64_t)b0;
#pragma unroll
            for (int g = 0; g < kChunkBlocks / D::BPG; g++) {
                if (g * D::BPG >= nb) break;
                uint32_t wv[D::NW];
                const int o = i8g_load<T>(chunk, g, wv);
#pragma unroll
                for (int b = 0; b < D::BPG; b++) {
                    const int bl = g * D::BPG + b;
                    if (bl >= nb) break;
                    const uint4 xa = __ldg((const uint4 *)(xr + 32 * bl)), xb = __ldg((const uint4 *)(xr + 32 * bl + 16));
                    const uint32_t xw[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
                    const float dx = __ldg(xd + (int64_t)(b0 + bl) * kXRows + t);
                    int is[2];
                    float dwv[2], mwv[2];
                    D::block(wv, o, b, xw, is, dwv, mwv);
#pragma unroll
                    for (int h = 0; h < SPB; h++) {
                        p = __fmaf_rn(__int2float_rn(is[h]), __fmul_rn(dx, dwv[h]), p);
                        if (D::MIN) p = __fmaf_rn(__ldg(xs + ((int64_t)(b0 + bl) * SPB + h) * kXRows + t), mwv[h], p);
                    }
                }
            }
        }
        part[task] = p;
    }
    __syncthreads();
    for (int o = tid; o < rows * NT; o += kThreads) {
        const int r = o / NT, t = o % NT;
        if (t >= nc) continue;
        const float *pr = part + (size_t)r * C * NT + t;
        float v = pr[0];
        for (int c = 1; c < C; c++) v = __fadd_rn(v, pr[(size_t)c * NT]);
        y[(int64_t)t * ldy + r0 + r] = v;
    }
}

template <int T> bool i8g_shape_ok(size_t row_bytes) { return row_bytes % i8g<T>::CPY == 0; }

/* Rows per CTA: about one task per thread, within kSmemTarget bytes of W (at least one row). */
static int i8g_rows(size_t row_bytes, int C, int NT) {
    int R = kThreads / (C * NT);
    const int by_smem = (int)(kSmemTarget / row_bytes);
    if (R > by_smem) R = by_smem;
    return R < 1 ? 1 : R;
}

static size_t i8g_smem(size_t row_bytes, int R, int C, int NT) {
    return (((size_t)R * row_bytes + 15) & ~(size_t)15) + (size_t)R * C * NT * sizeof(float);
}

template <int T, int NT>
cudaError_t i8g_launch1(const uint8_t *w, size_t row_bytes, int64_t m, int nblk, const int8_t *xq, const float *xd,
                        const float *xs, int64_t k_pad, int nc, float *y, int64_t ldy, cudaStream_t s) {
    const int C = (nblk + kChunkBlocks - 1) / kChunkBlocks, R = i8g_rows(row_bytes, C, NT);
    const size_t smem = i8g_smem(row_bytes, R, C, NT);
    if (smem > QMM_I8G_SMEM_MAX) return cudaErrorInvalidConfiguration;
    static unsigned long long done = 0;
    if (smem > 48 * 1024) {
        const cudaError_t e = i8_smem_attr(i8g_kernel<T, NT>, QMM_I8G_SMEM_MAX, &done);
        if (e != cudaSuccess) return e;
    }
    const int64_t grid = (m + R - 1) / R;
    if (grid > 0x7FFFFFFF) return cudaErrorInvalidConfiguration;
    i8g_kernel<T, NT><<<(unsigned)grid, kThreads, smem, s>>>(w, row_bytes, m, nblk, R, xq, xd, xs, k_pad, nc, y, ldy);
    return cudaGetLastError();
}

template <int T>
cudaError_t i8g_launch(const uint8_t *w, size_t row_bytes, int64_t m, int nblk, const int8_t *xq, const float *xd,
                       const float *xs, int64_t k_pad, int nc, float *y, int64_t ldy, cudaStream_t s) {
    if (nc <= 1) return i8g_launch1<T, 1>(w, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, s);
    if (nc <= 2) return i8g_launch1<T, 2>(w, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, s);
    if (nc <= 4) return i8g_launch1<T, 4>(w, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, s);
    return i8g_launch1<T, 8>(w, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, s);
}

int g_i8g_mode = -1; /* qmm_cuda_int8_force_gemv */

} // namespace

extern "C" void qmm_cuda_int8_force_gemv(int mode) { g_i8g_mode = mode == 0 || mode == 1 ? mode : -1; }

extern "C" bool qmm_cuda_int8_gemv_ok(int type, const void *w, size_t row_bytes, int64_t k) {
    if (g_i8g_mode == 0 || ((uintptr_t)w & 15u) != 0 || k <= 0 || k % 32 != 0) return false;
    bool shape = false;
    switch (type) {
    case QMM_TYPE_Q4_0: shape = i8g_shape_ok<QMM_TYPE_Q4_0>(row_bytes); break;
    case QMM_TYPE_Q8_0: shape = i8g_shape_ok<QMM_TYPE_Q8_0>(row_bytes); break;
    case QMM_TYPE_Q4_K: shape = i8g_shape_ok<QMM_TYPE_Q4_K>(row_bytes); break;
    case QMM_TYPE_Q5_K: shape = i8g_shape_ok<QMM_TYPE_Q5_K>(row_bytes); break;
    case QMM_TYPE_Q6_K: shape = i8g_shape_ok<QMM_TYPE_Q6_K>(row_bytes); break;
    default: return false;
    }
    /* the largest CTA (one row, eight tokens) must fit */
    const int C = (int)((k / 32 + kChunkBlocks - 1) / kChunkBlocks);
    return shape && i8g_smem(row_bytes, 1, C, 8) <= QMM_I8G_SMEM_MAX;
}

extern "C" cudaError_t qmm_cuda_int8_gemv(int type, const void *w, size_t row_bytes, int64_t m, int64_t k, int nc,
                                          const int8_t *xq, const float *xd, const float *xs, int64_t k_pad,
                                          float *y, int64_t ldy, cudaStream_t stream) {
    if (nc < 1 || nc > kXRows || !qmm_cuda_int8_gemv_ok(type, w, row_bytes, k)) return cudaErrorInvalidValue;
    const uint8_t *wb = (const uint8_t *)w;
    const int nblk = (int)(k / 32);
    switch (type) {
    case QMM_TYPE_Q4_0: return i8g_launch<QMM_TYPE_Q4_0>(wb, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, stream);
    case QMM_TYPE_Q8_0: return i8g_launch<QMM_TYPE_Q8_0>(wb, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, stream);
    case QMM_TYPE_Q4_K: return i8g_launch<QMM_TYPE_Q4_K>(wb, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, stream);
    case QMM_TYPE_Q5_K: return i8g_launch<QMM_TYPE_Q5_K>(wb, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, stream);
    case QMM_TYPE_Q6_K: return i8g_launch<QMM_TYPE_Q6_K>(wb, row_bytes, m, nblk, xq, xd, xs, k_pad, nc, y, ldy, stream);
    default: return cudaErrorInvalidValue;
    }
}
