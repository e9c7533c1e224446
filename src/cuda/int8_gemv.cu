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
 * kernel into the same workspace (in a layout of its own, below). Per output y[t][i],
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
 * order above. Groups of R consecutive rows (R * C * NT of these tasks, C = chunks per row;
 * about one task per thread of a CTA of up to 128) are walked by persistent CTAs (as many as
 * fit on the device at once): a group's rows are one contiguous byte range of W, copied to
 * shared memory by coalesced cp.async (16-byte pieces; 4-byte pieces for q6_K, whose rows are
 * 4-byte aligned only) into one of two buffers while the CTA computes the previous group from
 * the other. Each thread reads its chunk's bytes from shared memory a group of blocks at a time
 * (8 legacy blocks, 4 for q8_0, or one super-block), as 16-byte (4-byte for q6_K) shared loads
 * into registers; fields at any byte offset are then picked out of the registers by funnel
 * shifts at offsets fixed at compile time. X is quantized into a layout interleaved by chunk
 * (int8.cu, i8_x_at: block b of every chunk and token side by side), so the consecutive tasks
 * of a warp read consecutive 32-byte X blocks (two 16-byte loads per block and token, L1- and
 * L2-resident) and consecutive dx and s. The chunk partials meet in shared memory and one
 * thread per (row, token) adds them in chunk order.
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
constexpr int kSmemTarget = 24576;  /* bytes of W rows per buffer (two per CTA) to aim for */
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
        dw[0] = qmm_cuda_h2f_scale((uint16_t)g16(w, ob));
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
        dw[0] = qmm_cuda_h2f_scale((uint16_t)g16(w, ob));
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
        dw[0] = __fmul_rn(qmm_cuda_h2f_scale((uint16_t)g16(w, o)), (float)sc);
        mw[0] = -__fmul_rn(qmm_cuda_h2f_scale((uint16_t)g16(w, o + 2)), (float)mn);
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
        const float dd = qmm_cuda_h2f_scale((uint16_t)g16(w, o + 208));
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

/* (float)v for |v| < 2^22, exactly, by two float-pipe instructions: the bits of 1.5 * 2^23 + v
 * read as a float, minus 1.5 * 2^23 (int8.cu's MMA epilogue does the same). */
__device__ __forceinline__ float i8g_i2f(int v) { return __fsub_rn(__int_as_float(0x4B400000 + v), 12582912.0f); }

/* p of one chunk: its nb 32-blocks (FULL: all 16) in order, W from chunk (shared memory), X
 * from slot0 on (consecutive blocks slot_step apart). */
template <int T, bool FULL>
__device__ __forceinline__ float i8g_chunk(const uint8_t *chunk, int nb, const int8_t *__restrict__ xq,
                                           const float *__restrict__ xd, const float *__restrict__ xs,
                                           uint32_t slot0, uint32_t slot_step) {
    typedef i8g<T> D;
    float p = 0.0f;
#pragma unroll
    for (int gr = 0; gr < kChunkBlocks / D::BPG; gr++) {
        if (!FULL && gr * D::BPG >= nb) break;
        uint32_t wv[D::NW];
        const int o = i8g_load<T>(chunk, gr, wv);
#pragma unroll
        for (int b = 0; b < D::BPG; b++) {
            const int bl = gr * D::BPG + b;
            if (!FULL && bl >= nb) break;
            const uint32_t u = slot0 + (uint32_t)bl * slot_step;
            const uint4 *xp = (const uint4 *)(xq + 32 * (size_t)u);
            const uint4 xa = __ldg(xp), xb = __ldg(xp + 1);
            const uint32_t xw[8] = {xa.x, xa.y, xa.z, xa.w, xb.x, xb.y, xb.z, xb.w};
            const float dx = __ldg(xd + u);
            int is[2];
            float dwv[2], mwv[2];
            D::block(wv, o, b, xw, is, dwv, mwv);
#pragma unroll
            for (int h = 0; h < D::SPB; h++) {
                p = __fmaf_rn(i8g_i2f(is[h]), __fmul_rn(dx, dwv[h]), p);
                if (D::MIN) p = __fmaf_rn(__ldg(xs + (size_t)u * D::SPB + h), mwv[h], p);
            }
        }
    }
    return p;
}

/* Copies the rows of group g (rows gR .. gR + R - 1, those below m) to dst by cp.async, all
 * threads, one commit group. */
template <int CPY>
__device__ __forceinline__ void i8g_copy(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m, int R, int64_t g,
                                         uint8_t *dst) {
    const int64_t r0 = g * R;
    const int rows = (int)(m - r0 < R ? m - r0 : R);
    const uint8_t *src = w + (size_t)r0 * row_bytes;
    const int pieces = (int)((size_t)rows * row_bytes / CPY);
    for (int i = threadIdx.x; i < pieces; i += blockDim.x) {
        const unsigned s = (unsigned)__cvta_generic_to_shared(dst + (size_t)i * CPY);
        if constexpr (CPY == 16)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src + (size_t)i * 16));
        else
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src + (size_t)i * 4));
    }
    i8_commit();
}

/* Persistent CTAs (grid <= groups) of at most kThreads threads walk the groups of R rows
 * g = blockIdx.x, + gridDim.x, ...: the next group's rows are copied into the other of two
 * shared buffers while this one's tasks run. Dynamic shared memory: two buffers of R row_bytes
 * (rounded up to 16) of W, then R * C * NT floats of chunk partials. Which CTA takes which
 * group changes no result. (Each thread loading its chunk from global memory instead, no
 * staging and 16-20 warps per SM, was no faster: bench/results/h200-int8-gguf-rows.md.) */
template <int T, int NT>
__global__ void __launch_bounds__(kThreads, 5) i8g_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t m,
                                                       int nblk, int R, int64_t groups, const int8_t *__restrict__ xq,
                                                       const float *__restrict__ xd, const float *__restrict__ xs,
                                                       int nc, float *__restrict__ y, int64_t ldy) {
    typedef i8g<T> D;
    extern __shared__ __align__(16) uint8_t sm[];
    const int tid = threadIdx.x, nt = blockDim.x, C = (nblk + kChunkBlocks - 1) / kChunkBlocks;
    const size_t wpad = ((size_t)R * row_bytes + 15) & ~(size_t)15;
    float *part = (float *)(sm + 2 * wpad);
    int64_t g = blockIdx.x;
    if (g < groups) i8g_copy<D::CPY>(w, row_bytes, m, R, g, sm);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* launched with programmatic serialization after the X quantizer (sm_90+): the first
     * group's W copy is under way; X is read only after the quantizer's grid has finished */
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    for (int it = 0; g < groups; it++, g += gridDim.x) {
        const int64_t r0 = g * R;
        const uint8_t *buf = sm + (it & 1) * wpad;
        if (g + gridDim.x < groups) i8g_copy<D::CPY>(w, row_bytes, m, R, g + gridDim.x, sm + ((it + 1) & 1) * wpad);
        else i8_commit(); /* an empty group: the wait below stays "all but the newest" */
        i8_wait<1>();
        __syncthreads(); /* this group's rows are in buf; the previous group's partials are read */
        const int rows = (int)(m - r0 < R ? m - r0 : R), tasks = rows * C * NT;
        for (int task = tid; task < tasks; task += nt) {
            const int t = task % NT, rc = task / NT, r = rc / C, c = rc - r * C;
            float p = 0.0f;
            if (t < nc) {
                const int nb = min(kChunkBlocks, nblk - c * kChunkBlocks);
                const uint8_t *chunk = buf + (size_t)r * row_bytes + (size_t)c * D::CB;
                /* X of block bl of this chunk and token: slot (bl * C + c) * NT + t of the
                 * interleaved layout (int8.cu, i8_x_at): consecutive tasks, consecutive slots */
                const uint32_t slot0 = (uint32_t)(c * NT + t), slot_step = (uint32_t)(C * NT);
                p = nb == kChunkBlocks ? i8g_chunk<T, true>(chunk, nb, xq, xd, xs, slot0, slot_step)
                                       : i8g_chunk<T, false>(chunk, nb, xq, xd, xs, slot0, slot_step);
            }
            part[task] = p;
        }
        __syncthreads(); /* the partials are written; buf is free for the copy after next */
        for (int o = tid; o < rows * NT; o += nt) {
            const int r = o / NT, t = o % NT;
            if (t >= nc) continue;
            const float *pr = part + (size_t)r * C * NT + t;
            float v = pr[0];
            for (int c = 1; c < C; c++) v = __fadd_rn(v, pr[(size_t)c * NT]);
            y[(int64_t)t * ldy + r0 + r] = v;
        }
    }
    i8_wait<0>();
}

template <int T> bool i8g_shape_ok(size_t row_bytes) { return row_bytes % i8g<T>::CPY == 0; }

/* Rows per group: about one task per thread, within kSmemTarget bytes of W per buffer (at
 * least one row), and at most m / (2 * SMs) so that small matrices still reach every SM. */
static int i8g_rows(size_t row_bytes, int64_t m, int C, int NT) {
    int64_t R = kThreads / (C * NT);
    const int64_t by_smem = (int64_t)(kSmemTarget / row_bytes), by_sms = m / (2 * (int64_t)i8_sms());
    if (R > by_smem) R = by_smem;
    if (R > by_sms) R = by_sms;
    return R < 1 ? 1 : (int)R;
}

static size_t i8g_smem(size_t row_bytes, int R, int C, int NT) {
    return 2 * (((size_t)R * row_bytes + 15) & ~(size_t)15) + (size_t)R * C * NT * sizeof(float);
}

/* cudaOccupancyMaxActiveBlocksPerMultiprocessor of kernel f at (threads, smem) on the current
 * device, cached in `cache` (one table per kernel instantiation; the answer depends only on the
 * kernel, the device, threads and smem, the shared-memory opt-in being raised before the first
 * ask). Each entry is one word holding its key (device, threads, smem) and the answer, stored
 * whole by a compare-exchange into the first empty slot, so the slots fill in order and never
 * change; threads that race store the same entry (or one entry twice). A full table asks the
 * runtime on every launch; results never depend on it. */
constexpr int kOccSlots = 16;
template <class K>
static cudaError_t i8g_occupancy(K f, int threads, size_t smem, std::atomic<unsigned long long> (&cache)[kOccSlots],
                                 int *occ) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    /* bits 0-23 smem, 24-35 threads, 40-45 device, 48-59 the answer, 63 valid */
    const bool keyed = dev >= 0 && dev < 64 && threads > 0 && threads < 4096 && smem < (1u << 24);
    const unsigned long long val = 0xFFFull << 48,
                             key = 1ull << 63 | (unsigned long long)dev << 40 | (unsigned long long)threads << 24 | smem;
    if (keyed)
        for (int i = 0; i < kOccSlots; i++) {
            const unsigned long long v = cache[i].load(std::memory_order_relaxed);
            if (v == 0) break; /* the slots past an empty one are empty */
            if ((v & ~val) == key) {
                *occ = (int)((v & val) >> 48);
                return cudaSuccess;
            }
        }
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(occ, f, threads, smem);
    if (e != cudaSuccess || !keyed || *occ < 0 || *occ > 0xFFF) return e;
    const unsigned long long entry = key | (unsigned long long)*occ << 48;
    for (int i = 0; i < kOccSlots; i++) {
        unsigned long long v = 0;
        if (cache[i].compare_exchange_strong(v, entry, std::memory_order_relaxed) || (v & ~val) == key) break;
    }
    return cudaSuccess;
}

template <int T, int NT>
cudaError_t i8g_launch1(const uint8_t *w, size_t row_bytes, int64_t m, int nblk, const int8_t *xq, const float *xd,
                        const float *xs, int nc, float *y, int64_t ldy, cudaStream_t s) {
    const int C = (nblk + kChunkBlocks - 1) / kChunkBlocks, R = i8g_rows(row_bytes, m, C, NT);
    const size_t smem = i8g_smem(row_bytes, R, C, NT);
    if (smem > QMM_I8G_SMEM_MAX) return cudaErrorInvalidConfiguration;
    static unsigned long long done = 0;
    if (smem > 48 * 1024) {
        const cudaError_t e = i8_smem_attr(i8g_kernel<T, NT>, QMM_I8G_SMEM_MAX, &done);
        if (e != cudaSuccess) return e;
    }
    const int tasks = R * C * NT, threads = tasks >= kThreads ? kThreads : (tasks + 31) / 32 * 32;
    const int64_t groups = (m + R - 1) / R;
    /* persistent: as many CTAs as are resident at once (asked once per device, threads, smem) */
    static std::atomic<unsigned long long> occ_cache[kOccSlots];
    int occ = 0;
    cudaError_t e = i8g_occupancy(i8g_kernel<T, NT>, threads, smem, occ_cache, &occ);
    if (e != cudaSuccess) return e;
    const int64_t slots = (int64_t)(occ < 1 ? 1 : occ) * i8_sms(), grid = groups < slots ? groups : slots;
    /* sm_90+: programmatic dependent launch after the X quantizer (its W copy overlaps the
     * quantizer; the kernel waits for X with griddepcontrol.wait), only where both the
     * quantizer's trigger and this kernel's wait are in the code that runs */
    static std::atomic<signed char> sm90[64];
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)grid);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = qmm_cuda_int8_quantizer_triggers() && i8_sm90_code(i8g_kernel<T, NT>, sm90) ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, i8g_kernel<T, NT>, w, row_bytes, m, nblk, R, groups, xq, xd, xs, nc, y, ldy);
}

template <int T>
cudaError_t i8g_launch(const uint8_t *w, size_t row_bytes, int64_t m, int nblk, const int8_t *xq, const float *xd,
                       const float *xs, int nc, float *y, int64_t ldy, cudaStream_t s) {
    switch (qmm_cuda_int8_gemv_nt(nc)) { /* the n_pad of X's layout */
    case 1: return i8g_launch1<T, 1>(w, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, s);
    case 2: return i8g_launch1<T, 2>(w, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, s);
    case 4: return i8g_launch1<T, 4>(w, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, s);
    default: return i8g_launch1<T, 8>(w, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, s);
    }
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
                                          const int8_t *xq, const float *xd, const float *xs, float *y,
                                          int64_t ldy, cudaStream_t stream) {
    if (nc < 1 || nc > QMM_CUDA_INT8_GEMV_N || !qmm_cuda_int8_gemv_ok(type, w, row_bytes, k)) return cudaErrorInvalidValue;
    const uint8_t *wb = (const uint8_t *)w;
    const int nblk = (int)(k / 32);
    switch (type) {
    case QMM_TYPE_Q4_0: return i8g_launch<QMM_TYPE_Q4_0>(wb, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, stream);
    case QMM_TYPE_Q8_0: return i8g_launch<QMM_TYPE_Q8_0>(wb, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, stream);
    case QMM_TYPE_Q4_K: return i8g_launch<QMM_TYPE_Q4_K>(wb, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, stream);
    case QMM_TYPE_Q5_K: return i8g_launch<QMM_TYPE_Q5_K>(wb, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, stream);
    case QMM_TYPE_Q6_K: return i8g_launch<QMM_TYPE_Q6_K>(wb, row_bytes, m, nblk, xq, xd, xs, nc, y, ldy, stream);
    default: return cudaErrorInvalidValue;
    }
}
