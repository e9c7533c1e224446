/*
 * cuda_internal.h — the CUDA backend's state and its kernel launchers (C linkage, callable
 * from C and CUDA). Every launcher enqueues work on `stream` and returns the launch status
 * (cudaGetLastError after the launch); none allocates, synchronizes or copies to the host,
 * so all are safe inside CUDA graph capture.
 *
 * Memory of one weights object on the device (docs/CUDA.md, "Memory"):
 *   q      the packed GGUF rows, m rows of row_bytes (rows compacted: stride = row_bytes),
 *          the only allocation made at creation;
 *   w16, w8, i8_*  the copies of cached_f16, fp8 and int8 (qmm_cuda_copy), each made by the
 *          first matmul of its strategy on these weights when the context's qmm_cache_policy
 *          allows it (backend.c, "Lazy copies"), NULL until then.
 * Context workspace: scratch of the strategies (dequant_sgemm's f32 W, m*k*4 bytes; X in f16,
 * fp8 or int8 for one chunk of QMM_CUDA_X_CHUNK tokens) and the staging rows of the value check
 * at creation and of the f16 / fp8 copies; grown on the first call that needs more (never
 * during graph capture), never shrunk.
 */
#ifndef QMM_CUDA_INTERNAL_H
#define QMM_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "core/internal.h" /* C declarations: included with C linkage */

/* Tokens per cuBLAS call of the f16 path: X rows are converted to f16 this many at a time. */
#define QMM_CUDA_X_CHUNK 4096
/* Tokens handled together by one gemv launch (registers per thread grow with it). */
#define QMM_CUDA_GEMV_TOKENS 8
/* Bytes of cuBLAS workspace given to the handle at context creation (cublasSetWorkspace). */
#define QMM_CUDA_CUBLAS_WORKSPACE ((size_t)32 << 20)
/* Staging for W dequantized to f32 by chunks of rows (the value check at creation, the f16 and
 * fp8 copies): the context workspace holds at least this much (or one row) while staging. */
#define QMM_CUDA_STAGING_BYTES ((size_t)16 << 20)

/* cuBLASLt objects of the fp8 matmul for one (m_pad, k_pad, n_pad): they depend on the shapes
 * only, never on data or on which weights (so two layers of one shape share an entry and can
 * never alias each other's data). Made on the first fp8 call of a shape, then reused. */
typedef struct qmm_cuda_fp8_plan {
    int64_t m_pad, k_pad, n_pad; /* 0: empty slot */
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
} qmm_cuda_fp8_plan;

/* fp8 plans kept per context (round-robin replacement beyond this). */
#define QMM_CUDA_FP8_PLANS 32

typedef struct qmm_cuda_context {
    int device;
    cudaStream_t stream;
    bool own_stream;
    cublasHandle_t cublas;
    cublasLtHandle_t lt;    /* fp8 strategy */
    cublasLtMatmulDesc_t fp8_desc;                 /* shape-independent, made at first use */
    qmm_cuda_fp8_plan fp8_plans[QMM_CUDA_FP8_PLANS];
    int fp8_next;                                  /* next slot to replace */
    int cc;                 /* compute capability, 10*major + minor */
    void *cublas_workspace;
    void *workspace;        /* see the top of this file */
    size_t workspace_bytes;
    /* Workspaces replaced by a larger one after a matmul was captured into a CUDA graph: such
     * a graph may still read them, so they are freed with the context, not when replaced. */
    void **retired;
    int n_retired, cap_retired;
    bool captured;          /* some matmul of this context ran while its stream was captured */
    int *flag;              /* one device int for checks at weights creation */
    cudaEvent_t timer_start, timer_stop;
    bool timer_started;
    /* qmm_graph_begin / _end / _replay: the kept graph and its replay events. */
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    bool graph_capturing;
    cudaEvent_t graph_start, graph_stop;
} qmm_cuda_context;

/* The copies of W a strategy reads (qmm_cache_policy); QMM_CUDA_COPIES: none. */
typedef enum qmm_cuda_copy {
    QMM_CUDA_COPY_F16 = 0,  /* cached_f16: w16 */
    QMM_CUDA_COPY_FP8 = 1,  /* fp8: w8, w8_scale */
    QMM_CUDA_COPY_INT8 = 2, /* int8: i8_q, i8_d, i8_mn */
    QMM_CUDA_COPIES = 3
} qmm_cuda_copy;

typedef struct qmm_cuda_weights {
    uint8_t *q;      /* packed rows, stride row_bytes */
    size_t q_bytes;  /* m * row_bytes */
    /* Measured at creation over every dequantized element: f16_fits false when some value is
     * non-finite or rounds beyond the f16 range (|w| >= 65520); nonfinite when some value is
     * Inf or NaN (checked only when f16_fits is false). */
    bool f16_fits, nonfinite;
    uint16_t *w16;   /* f16 copy (m*k, row-major), or NULL while not made */
    uint8_t *w8;     /* fp8: E4M3 W, m_pad x k_pad (padding zero), or NULL while not made */
    float *w8_scale; /* fp8: per-row scale (m_pad floats, padding 0) */
    int64_t m_pad, k_pad; /* m, k rounded up to 16 (cuBLASLt FP8 alignment) */
    /* int8 strategy (int8.cu; NULL while not made, always for the types without a repacker):
     * quants in the fragment order of mma.m16n8k32 (nibbles for q4_0, q4_1, q4_K),
     * qmm_cuda_int8_quant_bytes(type, m8, k8) bytes (m8, k8 = m, k rounded up to 128 by
     * qmm_cuda_int8_pad), per sub-block scale i8_d and min i8_mn (min types only, else NULL) as
     * [k8 / G][m8] floats (G = qmm_cuda_int8_sub_block, rows permuted within 64-row groups);
     * padding zero. Layout: the top of int8.cu, docs/CUDA.md "int8". */
    int8_t *i8_q;
    float *i8_d, *i8_mn;
    /* Bytes each copy takes once made (0: the type has no such copy). */
    size_t copy_bytes[QMM_CUDA_COPIES];
    /* auto ran out of device memory preparing this strategy for these weights (its copy or
     * the workspace it needs): auto does not choose it again for them. */
    bool auto_skip[QMM_STRATEGY_COUNT];
    /* fused ran out of device memory making the int8 repack it reads: it keeps to the
     * shared-memory kernel for these weights (and auto skips int8 for them). */
    bool fused_no_repack;
} qmm_cuda_weights;

/*
 * What `auto` runs on one GPU class for one weight type (src/cuda/auto_table.c): without
 * QMM_FLAG_BATCH_INVARIANT, the first that applies of
 *   cached_f16  n >= f16_min_n, W fits f16 and the cache policy lets W hold its f16 copy;
 *   fp8         n >= fp8_min_n, sm_89+, W finite and the policy lets W hold its fp8 copy;
 *   gemv        n <= gemv_max_n and n * m * k <= gemv_rows_max_work where int8 would read
 *               the GGUF rows at this n (qmm_cuda_int8_gemv_ok, n <= 8, policy, sm_80+),
 *               else n * m * k <= gemv_max_work;
 *   dequant_hgemm  n >= hgemm_min_n, W fits f16, m and k within cuBLAS's int range (no copy:
 *               W dequantized to f16 per call into the bounded context workspace);
 *   fused       n >= fused_min_n, W fits f16 and fused reads the int8 repack now (a type with
 *               a repacker, the policy lets W hold that copy, not during capture: half.cu);
 *   int8        n >= int8_min_n, a type with a repacker and the policy lets W hold its copy;
 *   gemv        n <= gemv_max_n;
 *   fused       W fits f16;
 *   dequant_sgemm  with QMM_CACHE_UNLIMITED (its f32 scratch is m*k*4 bytes of workspace);
 *   gemv        otherwise.
 * An n threshold of INT64_MAX never applies.
 */
typedef struct qmm_cuda_auto_row {
    int cc;             /* compute capability 10*major + minor of the class; 0: every GPU */
    int type;           /* a qmm_type, or -1: every type without its own row in the class */
    int64_t f16_min_n, fp8_min_n, gemv_max_n, gemv_max_work, fused_min_n, int8_min_n;
    int64_t gemv_rows_max_work; /* gemv's bound against int8 on the GGUF rows (int8_gemv.cu) */
    int64_t hgemm_min_n;        /* dequant_hgemm from this n (it makes no copy: any policy) */
} qmm_cuda_auto_row;

/* The row for (cc, type): its own, else the class's row for every type, else the row of
 * every GPU for the type, else the row of every GPU and type. */
qmm_cuda_auto_row qmm_cuda_auto_lookup(int cc, int type);

/* True if the CUDA kernels have a descriptor for `type` (qmm_cuda_type, dequant.cuh) whose
 * block size and bytes are these (the type table's): checked at weights creation. */
bool qmm_cuda_type_check(int type, int64_t block_size, size_t block_bytes);

/* dst[r*k + e] = element e of row r (row r at src + r*row_bytes), bit-identical to the CPU's
 * qmm_dequantize_row_* (m rows of k elements, device memory). */
cudaError_t qmm_cuda_dequantize(int type, const void *src, size_t row_bytes, int64_t m,
                                int64_t k, float *dst, cudaStream_t stream);

/* The same values rounded to f16 (RNE): dst[r*k + e] equals the f16 copy cached_f16 makes
 * (f32_to_f16 of qmm_cuda_dequantize's output). dequant_hgemm's per-call W. */
cudaError_t qmm_cuda_dequantize_f16(int type, const void *src, size_t row_bytes, int64_t m,
                                    int64_t k, uint16_t *dst, cudaStream_t stream);
/* Test and bench aid: 0 makes qmm_cuda_dequantize_f16 decode every type by groups of 8
 * (qmm_cuda_group8, the float types' kernel), 1 every quant type by its unit decoder
 * (qmm_cuda_part), -1 (the default) each type by the kernel dequant.cu picks for it.
 * Process-global; the halves do not depend on it. */
void qmm_cuda_f16_decoder(int mode);

/* Test aid: the same through the unit codec's generic decoder (qmm_unit_<name>, 8-element
 * units) even for a type with a fast decoder (codebook16.cuh), so that both are checked
 * against the CPU. cudaErrorInvalidValue for a type that is not a unit-codec type. */
cudaError_t qmm_cuda_dequantize_codec(int type, const void *src, size_t row_bytes, int64_t m,
                                      int64_t k, float *dst, cudaStream_t stream);

/* dst = f32 -> f16 (round to nearest even) of count floats; *flag |= 1 if any source value is
 * non-finite or rounds beyond the f16 range (|x| >= 65520). *flag is not reset here. dst may
 * be NULL: then only the check runs. */
cudaError_t qmm_cuda_f32_to_f16(const float *src, int64_t count, uint16_t *dst, int *flag,
                                cudaStream_t stream);

/* dst[i*k + e] = f16(x[i*ldx + e]) for n rows of k (activations to f16, round to nearest even;
 * |x| >= 65520 becomes +-Inf). */
cudaError_t qmm_cuda_x_to_f16(const float *x, int64_t n, int64_t k, int64_t ldx, uint16_t *dst,
                              cudaStream_t stream);

/* gemv: y[t*ldy + r] = sum_e W[r][e] * x[t*ldx + e], W dequantized on the fly, f32 math; four
 * one warp per row r (8 rows per block), tokens in groups of QMM_CUDA_GEMV_TOKENS. A result depends only on its row
 * of W and its row of X (fixed reduction order): batch-invariant. */
cudaError_t qmm_cuda_gemv(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                          int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy,
                          cudaStream_t stream);

/* fused: the same product on tensor cores: W tiles dequantized to f16 in shared memory, X
 * rounded to f16, products accumulated in f32 (mma.sync m16n8k16, see fused.cu). Fixed tiling for every n:
 * batch-invariant. Requires W to fit f16 (checked by the caller). */
cudaError_t qmm_cuda_fused(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                           int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy,
                           cudaStream_t stream);

/* fp8: row r of `rows` rows of k floats at src + r*ld -> dst + r*k_pad as E4M3 with
 * scale[r] = max|row| / 448 (1 for a zero row), columns k..k_pad-1 zero; rows rows..rows_pad-1
 * written as zeros with scale 0 (every call). *flag |= 1 on a non-finite value (flag may be
 * NULL). One block per row. */
cudaError_t qmm_cuda_fp8_rows(const float *src, int64_t rows, int64_t rows_pad, int64_t k,
                              int64_t ld, int64_t k_pad, uint8_t *dst, float *scale, int *flag,
                              cudaStream_t stream);

/* fp8 epilogue: y[t*ldy + r] = (d[t*ldd + r] * sw[r]) * sx[t] for t < n, r < m (f32, in this
 * order). */
cudaError_t qmm_cuda_fp8_epilogue(const float *d, int64_t ldd, const float *sw, const float *sx,
                                  int64_t m, int64_t n, float *y, int64_t ldy, cudaStream_t stream);

/* ---- int8 strategy (int8.cu; layouts and rules at the top of that file, docs/CUDA.md) ---- */

/* True for the types the int8 strategy repacks (q4_0, q4_1, q5_0, q5_1, q8_0, q2_K..q6_K:
 * the descriptors' int8 flag). */
bool qmm_cuda_int8_has_type(int type);
/* Sub-block size G of the repacked scales: 16 for q2_K, q3_K, q6_K, else 32. */
int qmm_cuda_int8_sub_block(int type);
/* True for types whose repacked value has a min term (q4_1, q5_1, q2_K, q4_K, q5_K). */
bool qmm_cuda_int8_has_min(int type);
/* v rounded up to the int8 granule (128): m8, k8 of the repacked W, padded X rows. */
int64_t qmm_cuda_int8_pad(int64_t v);
/* Bytes of the repacked quants of `type` for m_pad x k_pad (half of m_pad * k_pad for the
 * nibble types q4_0, q4_1, q4_K). */
size_t qmm_cuda_int8_quant_bytes(int type, int64_t m_pad, int64_t k_pad);
/* Context workspace bytes the int8 matmul needs for weights of k columns (X of one chunk of
 * QMM_CUDA_X_CHUNK rows quantized: k8 bytes + 12 bytes of scales per 32 elements per row;
 * then 16 MiB for split-k partials). */
size_t qmm_cuda_int8_workspace_bytes(int64_t k);

/* Repack m rows of `type` (row i at w + i*row_bytes, device) into q (fragment order,
 * qmm_cuda_int8_quant_bytes bytes), d and mn ([k_pad/G][m_pad] floats, rows permuted; mn only
 * for min types, may be NULL otherwise) so that d*q (+ mn) is bit-identical to the type's
 * dequantization; padding written as zeros. m_pad = qmm_cuda_int8_pad(m), k_pad =
 * qmm_cuda_int8_pad(k). cudaErrorInvalidValue for a type without int8 support. */
cudaError_t qmm_cuda_int8_pack(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                               int64_t m_pad, int64_t k_pad, void *q, float *d, float *mn,
                               cudaStream_t stream);
/* Test aid: the same values in plain order: q m_pad x k_pad int8 row-major, d and mn
 * [k_pad/G][m_pad] in row order. */
cudaError_t qmm_cuda_int8_pack_rows(int type, const void *w, size_t row_bytes, int64_t m, int64_t k,
                                    int64_t m_pad, int64_t k_pad, int8_t *q, float *d, float *mn,
                                    cudaStream_t stream);

/* Quantize n rows of k floats (x + j*ldx, k a multiple of 32) per 32-element block with the
 * CPU's int8 rule (qmm_x86_int8_quantize_row): q (n_pad x k_pad bytes), dx and s32
 * ([k_pad/32][n_pad] floats: dx = max|x|/127, s32 = dx*sum(q)), s16 ([k_pad/16][n_pad]:
 * dx*sum of each 16-element half). Rows n..n_pad-1 and blocks k/32..k_pad/32-1 are written as
 * zeros. A block holding a NaN gets dx = NaN. */
cudaError_t qmm_cuda_int8_quantize_x(const float *x, int64_t n, int64_t n_pad, int64_t k,
                                     int64_t ldx, int64_t k_pad, int8_t *q, float *dx, float *s32,
                                     float *s16, cudaStream_t stream);

/* int8 strategy: y[t*ldy + i] for t < n, i < m in the int8 order (int8.cu: per chunk of 16
 * blocks p = fmaf((float)isum, dx*d_w, p) (+ fmaf(s, mn_w, p)) over its blocks in increasing
 * order from 0; y = p_0 + p_1 + ... in chunk order), from the repacked W (wq, wd, wm as made
 * by qmm_cuda_int8_pack for m, k) and X quantized per call into `workspace` (>=
 * qmm_cuda_int8_workspace_bytes(k)) in chunks of QMM_CUDA_X_CHUNK rows. Integer mma.sync on
 * tensor cores (sm_80+); chunks of n <= 8: qmm_cuda_int8_gemv on the GGUF rows w (stride
 * row_bytes) where qmm_cuda_int8_gemv_ok, else the repack's skinny kernel. wq may be NULL when
 * n <= 8 and qmm_cuda_int8_gemv_ok (cudaErrorInvalidValue otherwise). Batch-invariant and
 * deterministic: every kernel gives the same bits. */
cudaError_t qmm_cuda_int8_matmul(int type, const void *w, size_t row_bytes, const void *wq,
                                 const float *wd, const float *wm, int64_t m, int64_t k, int64_t n,
                                 const float *x, int64_t ldx, float *y, int64_t ldy, void *workspace,
                                 cudaStream_t stream);

/* ---- int8 for n <= 8 on the GGUF bytes (int8_gemv.cu; the int8 order, dp4a) ---- */

#define QMM_CUDA_INT8_GEMV_N 8 /* calls of at most this many tokens (the skinny kernel's n) */
/* Tokens per launch of qmm_cuda_int8_gemv for nc tokens (1, 2, 4, 8): the X rows it reads,
 * the n_pad of its X layout. */
static inline int qmm_cuda_int8_gemv_nt(int64_t nc) { return nc <= 1 ? 1 : nc <= 2 ? 2 : nc <= 4 ? 4 : 8; }

/* Whether qmm_cuda_int8_gemv takes these GGUF rows (W at w, stride row_bytes, k columns): q4_0,
 * q8_0, q4_K, q5_K, q6_K with rows a multiple of the copy piece, W 16-byte aligned, a row
 * within the kernel's shared memory; false while qmm_cuda_int8_force_gemv(0) holds. */
bool qmm_cuda_int8_gemv_ok(int type, const void *w, size_t row_bytes, int64_t k);
/* y[t*ldy + i] (t < nc <= 8, i < m) in the int8 order from the GGUF rows and X quantized
 * with n_pad = qmm_cuda_int8_gemv_nt(nc) in the chunk-interleaved layout of int8.cu's i8_x_at
 * (xq, xd, and xs = s32 or, for q6_K, s16; qmm_cuda_int8_matmul does both). */
cudaError_t qmm_cuda_int8_gemv(int type, const void *w, size_t row_bytes, int64_t m, int64_t k, int nc,
                               const int8_t *xq, const float *xd, const float *xs, float *y, int64_t ldy,
                               cudaStream_t stream);
/* Whether the X quantizer's code on the current device triggers programmatic dependents
 * (compiled for sm_90+): qmm_cuda_int8_gemv's launch overlaps it only then. */
bool qmm_cuda_int8_quantizer_triggers(void);
/* Test and bench aid: 0 keeps n <= 8 on the repack's skinny kernel; 1 or -1 (the default)
 * runs qmm_cuda_int8_gemv where it takes the shape. Process-global; results do not depend on
 * it. */
void qmm_cuda_int8_force_gemv(int mode);

/* Test and bench aid: force the int8 GEMM's tile configuration (0: 64x64, 1: 128x64, 2: 64x128
 * W rows x X rows; -1: chosen per shape) and split-k (0 no, 1 yes where the partials fit;
 * -1: chosen). Process-global; results do not depend on it. */
void qmm_cuda_int8_force(int cfg, int split);

/* ---- fused on the int8 repack (half.cu; values and fragment order at the top of that file) ---- */

/* Context workspace bytes of the repack kernel for weights of k columns (X of one chunk of
 * QMM_CUDA_X_CHUNK rows in f16, then 16 MiB of split-k partials). */
size_t qmm_cuda_half_workspace_bytes(int64_t k);
/* fused: y[t*ldy + i] = sum_e f16(x[t][e]) * f16(w[i][e]) (f32 accumulation, chains of
 * mma.sync m16n8k16 over k, or of wgmma m64nNk16 on sm_90a), W the int8 repack (wq, wd, wm as for qmm_cuda_int8_matmul), X
 * rounded to f16 into `workspace` (>= qmm_cuda_half_workspace_bytes(k)) per chunk of
 * QMM_CUDA_X_CHUNK rows. invariant: one chain per output (no split-k), so a row's result does
 * not depend on n. W must fit f16 (the caller checks). sm_80+. */
cudaError_t qmm_cuda_half_matmul(int type, const void *wq, const float *wd, const float *wm,
                                 int64_t m, int64_t k, int64_t n, const float *x, int64_t ldx,
                                 float *y, int64_t ldy, bool invariant, void *workspace,
                                 cudaStream_t stream);
/* Test and bench aid: force the tile configuration (0 .. qmm_cuda_half_configs() - 1,
 * half.cu's k_h16_cfg; -1: the heuristic's; one beyond the device's shared memory, or a wgmma
 * one where wgmma cannot run, is ignored) and the split-k count (1..16, still never in
 * invariant mode; -1: chosen). Process-global. */
void qmm_cuda_half_force(int cfg, int split);
/* The number of tile configurations, and whether configuration cfg is a wgmma one (1; 0:
 * mma.sync; -1: no such configuration). */
int qmm_cuda_half_configs(void);
int qmm_cuda_half_config_wgmma(int cfg);
/* Whether the wgmma configurations run on the current device (sm_90a code on a 9.0 GPU). */
int qmm_cuda_half_wgmma_available(void);
/* Whether it must (a build whose only sm_90 code is sm_90a, on a 9.0 device): for the tests. */
int qmm_cuda_half_wgmma_expected(void);
/* Reads, once per device, which code of half.cu the current device loaded (whether wgmma can
 * run there); called at context creation (a synchronous copy: never inside a capture). */
void qmm_cuda_half_probe(void);

/* Test aid: spin for about `ns` nanoseconds on the device, then copy count floats src -> dst.
 * Used to check that qmm_matmul waits for earlier work on the caller's stream. */
cudaError_t qmm_cuda_delayed_copy(float *dst, const float *src, int64_t count, uint64_t ns,
                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* QMM_CUDA_INTERNAL_H */
