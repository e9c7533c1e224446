/*
 * qmm.h — quantized matrix multiplication for GGUF weights.
 *
 * The one operation (all matrices row-major):
 *
 *     Y[n][m] = sum over k of X[n][k] * W[m][k]            FLOPs = 2*m*k*n
 *
 *   W  weights: m rows (output features) of k elements (input features). Each row is a
 *      sequence of quantization blocks along k, exactly the bytes of a GGUF tensor whose
 *      ne = [k, m]. Consecutive rows are `row_stride` bytes apart (>= qmm_row_bytes(type, k)).
 *   X  activations: n rows (tokens) of k float32, row i at x + i*ldx, ldx >= k (elements).
 *   Y  output: n rows of m float32, row i at y + i*ldy, ldy >= m (elements).
 *
 *   n = 1..8 is decode (the GEMV regime); n >= 16 is prefill (the GEMM regime).
 *
 * Pointers X and Y live in the memory space of the context's backend: host memory for
 * QMM_BACKEND_CPU, device memory for QMM_BACKEND_CUDA (as with cuBLAS), addresses inside
 * buffers from qmm_buffer_alloc (or imported WGPUBuffers, qmm_webgpu.h) for
 * QMM_BACKEND_WEBGPU. Weights are always given as host bytes at creation; the library copies
 * (and may repack or upload) them.
 *
 * Types are GGML's block formats, bit-exact: see docs/FORMATS.md and ggml's ggml-common.h /
 * ggml-quants.c and the Python reference gguf.quants, which are the authority.
 *
 * Correctness: every path is checked against the reference (dequantize exactly, accumulate
 * in float64, round once to float32; qmm_matmul_ref). Paths that quantize activations or use
 * reduced-precision inputs document their error bound in docs/KERNELS.md.
 *
 * Errors: every function that can fail returns a qmm_status. On failure nothing is written
 * to any output, and qmm_last_error() returns a sentence naming the offending value.
 * The library never exits and never prints unless QMM_LOG=info|debug is set.
 *
 * Threads: a qmm_weights object belongs to the context that made it; its values never change
 * after creation (a backend may build cached layouts of it on the first matmul that needs
 * them: qmm_cache_policy, qmm_weights_memory). A context (with its weights) may be used by
 * one thread at a time: give each thread its own context and weights, or serialize the calls
 * on a shared context with a lock (also calls taking a const qmm_weights *, since a matmul may
 * add a cached layout). Different contexts never share mutable state (tests/test_threads.c).
 */
#ifndef QMM_H
#define QMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define QMM_API
#elif defined(__GNUC__)
#  define QMM_API __attribute__((visibility("default")))
#else
#  define QMM_API
#endif

/* ---------------------------------------------------------------------------------------
 * Status and errors
 * ------------------------------------------------------------------------------------- */

/** Result of every fallible call. QMM_OK is 0; every error is a positive value. */
typedef enum qmm_status {
    QMM_OK = 0,
    QMM_ERR_INVALID_ARGUMENT = 1, /**< null pointer, bad shape, stride, flag or value */
    QMM_ERR_UNSUPPORTED = 2,      /**< type, strategy, backend or ISA not available here */
    QMM_ERR_OUT_OF_MEMORY = 3,    /**< an allocation failed (host or device) */
    QMM_ERR_IO = 4,               /**< open/read/mmap of a file failed */
    QMM_ERR_FORMAT = 5,           /**< malformed or hostile GGUF file */
    QMM_ERR_BACKEND = 6,          /**< a CUDA/cuBLAS/driver call failed (text in last error) */
    QMM_ERR_NUMERIC = 7,          /**< non-finite scale found when validation was asked for */
    QMM_ERR_INTERNAL = 8          /**< a bug in qmm; please report it */
} qmm_status;

/** Short constant name of a status, e.g. "QMM_ERR_FORMAT". Never NULL. */
QMM_API const char *qmm_status_str(qmm_status status);

/**
 * The sentence describing the last error raised on the calling thread (thread-local),
 * e.g. "qmm_matmul: ldx (100) < k (128)". Empty string if none. Valid until the next qmm
 * call on this thread.
 */
QMM_API const char *qmm_last_error(void);

/** Library version as "MAJOR.MINOR.PATCH". */
QMM_API const char *qmm_version(void);

/* ---------------------------------------------------------------------------------------
 * Types (the type table). Numeric values are GGML's ggml_type ids, so a GGUF tensor's
 * type field maps directly.
 * ------------------------------------------------------------------------------------- */

typedef enum qmm_type {
    QMM_TYPE_F32 = 0,   /**< IEEE binary32, block of 1, 4 bytes */
    QMM_TYPE_F16 = 1,   /**< IEEE binary16, block of 1, 2 bytes */
    QMM_TYPE_Q4_0 = 2,  /**< 32 elements, 18 bytes: f16 d, 16 bytes nibbles; (q-8)*d */
    QMM_TYPE_Q4_1 = 3,  /**< 32 elements, 20 bytes: f16 d, f16 m, nibbles; q*d + m */
    QMM_TYPE_Q5_0 = 6,  /**< 32 elements, 22 bytes: f16 d, 4 bytes high bits, nibbles; (q-16)*d */
    QMM_TYPE_Q5_1 = 7,  /**< 32 elements, 24 bytes: f16 d, f16 m, high bits, nibbles; q*d + m */
    QMM_TYPE_Q8_0 = 8,  /**< 32 elements, 34 bytes: f16 d, 32 int8; q*d */
    QMM_TYPE_Q2_K = 10, /**< 256 elements, 84 bytes: 16 4-bit scale/min pairs, 2-bit quants, f16 d, dmin */
    QMM_TYPE_Q3_K = 11, /**< 256 elements, 110 bytes: high-bit mask, 2-bit quants, 12 bytes 6-bit scales, f16 d */
    QMM_TYPE_Q4_K = 12, /**< 256 elements, 144 bytes: f16 d, dmin, 12 bytes 6-bit scales/mins, 128 bytes nibbles */
    QMM_TYPE_Q5_K = 13, /**< 256 elements, 176 bytes: f16 d, dmin, scales, 32 bytes high bits, nibbles */
    QMM_TYPE_Q6_K = 14, /**< 256 elements, 210 bytes: 128 bytes low nibbles, 64 bytes high 2 bits, 16 int8 scales, f16 d */
    QMM_TYPE_Q8_K = 15, /**< 256 elements, 292 bytes: f32 d, 256 int8, 16 int16 block sums (activations only) */
    QMM_TYPE_IQ2_XXS = 16, /**< 256 elements, 66 bytes: f16 d; 8 groups of 8 from a 256-entry grid, signs, 4-bit scales */
    QMM_TYPE_IQ2_XS = 17,  /**< 256 elements, 74 bytes: f16 d; 512-entry grid, signs, 4-bit scales per 16 */
    QMM_TYPE_IQ3_XXS = 18, /**< 256 elements, 98 bytes: f16 d; groups of 4 from a 256-entry grid, signs, scales */
    QMM_TYPE_IQ1_S = 19,   /**< 256 elements, 50 bytes: f16 d; 2048-entry ternary grid, 3-bit scales, delta sign */
    QMM_TYPE_IQ4_NL = 20,  /**< 32 elements, 18 bytes: f16 d, 16 bytes nibbles; d * codebook[q] (16 int8 values) */
    QMM_TYPE_IQ3_S = 21,   /**< 256 elements, 110 bytes: f16 d; 512-entry grid, explicit signs, 4-bit scales */
    QMM_TYPE_IQ2_S = 22,   /**< 256 elements, 82 bytes: f16 d; 1024-entry grid, explicit signs, 4-bit scales */
    QMM_TYPE_IQ4_XS = 23,  /**< 256 elements, 136 bytes: f16 d, 6-bit scales per 32, nibbles into iq4_nl's codebook */
    QMM_TYPE_IQ1_M = 29,   /**< 256 elements, 56 bytes: 2048-entry ternary grid, 3-bit scales holding an f16 d */
    QMM_TYPE_BF16 = 30,    /**< bfloat16, block of 1, 2 bytes */
    QMM_TYPE_TQ1_0 = 34,   /**< 256 elements, 54 bytes: ternary, 5 values per byte in base 3, f16 d */
    QMM_TYPE_TQ2_0 = 35,   /**< 256 elements, 66 bytes: ternary, 2 bits per value, f16 d */
    QMM_TYPE_MXFP4 = 39,   /**< 32 elements, 17 bytes: E8M0 scale, 16 bytes of E2M1 nibbles (OCP MX) */
    QMM_TYPE_NVFP4 = 40,   /**< 64 elements, 36 bytes: 4 UE4M3 scales (one per 16), 32 bytes of E2M1 nibbles */
    QMM_TYPE_COUNT = 41    /**< one past the largest id; ids in between may be unsupported */
} qmm_type;

/** True if `type` is an id in the table that qmm implements (any of the above). */
QMM_API bool qmm_type_is_supported(int type);

/** Lower-case GGML name ("q4_K", "bf16"), or NULL for an unsupported id. */
QMM_API const char *qmm_type_name(qmm_type type);

/**
 * Look up a type by its GGML name (case-sensitive as GGML spells it: "q4_K", "f16";
 * upper-case spellings like "Q4_K" are accepted too).
 * Errors: QMM_ERR_INVALID_ARGUMENT if name/out is NULL or the name is unknown.
 */
QMM_API qmm_status qmm_type_from_name(const char *name, qmm_type *out);

/** Elements per block (1, 32 or 256), or 0 for an unsupported id. */
QMM_API int64_t qmm_type_block_size(qmm_type type);

/** Bytes per block (e.g. 144 for q4_K), or 0 for an unsupported id. */
QMM_API size_t qmm_type_block_bytes(qmm_type type);

/** True if the type may be used as weights in qmm_weights_create (all but q8_K). */
QMM_API bool qmm_type_is_weight(qmm_type type);

/** True if qmm_quantize_rows has a reference quantizer for the type (false for most
 * i-quants, whose ggml quantizers search grids or need an importance matrix). */
QMM_API bool qmm_type_has_quantizer(qmm_type type);

/**
 * Packed bytes of one row of k elements: (k / block_size) * block_bytes.
 * Errors: QMM_ERR_UNSUPPORTED for an unknown type; QMM_ERR_INVALID_ARGUMENT if k <= 0, k is
 * not a multiple of the block size, or the size overflows. `out` untouched on error.
 */
QMM_API qmm_status qmm_row_bytes(qmm_type type, int64_t k, size_t *out);

/**
 * Quantize `nrows` rows of k float32 (row i at src + i*k) into packed blocks of `type`
 * (row i at dst + i*qmm_row_bytes(type,k)), with GGML's reference quantizer
 * (quantize_row_*_ref): the bytes equal GGML's and gguf.quants'.
 * Errors: NULL pointers, nrows < 0, k not a multiple of the block size, unknown type;
 * QMM_ERR_UNSUPPORTED for a type qmm has no reference quantizer for (most i-quants:
 * docs/FORMATS.md; use qmm_random_rows).
 */
QMM_API qmm_status qmm_quantize_rows(qmm_type type, const float *src, void *dst,
                                     int64_t nrows, int64_t k);

/**
 * Dequantize `nrows` packed rows of k elements (row i at src + i*row_bytes) to float32
 * (row i at dst + i*k), bit-identical to GGML's dequantize_row_*.
 * Errors: as qmm_quantize_rows.
 */
QMM_API qmm_status qmm_dequantize_rows(qmm_type type, const void *src, float *dst,
                                       int64_t nrows, int64_t k);

/**
 * Fill `nrows` packed rows of k elements with random valid blocks, the same bytes for the
 * same seed on every machine: every byte random, then every scale field (f16 d, dmin, m;
 * E8M0; UE4M3) set to a random finite value such that elements are about `scale` in
 * magnitude, clamped to what the field can hold (f16 scales at most 65504; E8M0 so that every
 * element stays finite): elements are always finite. The way to make weights of a type that
 * has no reference quantizer.
 * Errors: as qmm_quantize_rows; scale not in (0, 1e30).
 */
QMM_API qmm_status qmm_random_rows(qmm_type type, uint64_t seed, double scale, void *dst,
                                   int64_t nrows, int64_t k);

/**
 * Check packed rows for non-finite scale fields (f16/bf16/f32 d, dmin, m, and an E8M0 byte
 * 0xFF or a UE4M3 byte 0x7F/0xFF, NaN in their formats' definitions). Returns QMM_OK if all
 * are finite, QMM_ERR_NUMERIC naming the first bad row and block otherwise.
 */
QMM_API qmm_status qmm_validate_rows(qmm_type type, const void *src, int64_t nrows,
                                     int64_t k, size_t row_stride);

/* ---------------------------------------------------------------------------------------
 * The reference (the oracle): host memory only, single-threaded, slow and exact.
 * ------------------------------------------------------------------------------------- */

/**
 * Y = X * W^T with W dequantized exactly, products and sums in float64, one rounding to
 * float32 per output. Shapes and strides as at the top of this file; host pointers.
 * Errors: QMM_ERR_INVALID_ARGUMENT for NULL pointers, m/k/n <= 0, k not a multiple of the
 * block size, row_stride < row bytes, ldx < k, ldy < m, x and y overlapping;
 * QMM_ERR_UNSUPPORTED for q8_K or an unknown type; QMM_ERR_OUT_OF_MEMORY. Y untouched on error.
 */
QMM_API qmm_status qmm_matmul_ref(qmm_type type, int64_t m, int64_t k, const void *w,
                                  size_t row_stride, int64_t n, const float *x, int64_t ldx,
                                  float *y, int64_t ldy);

/* ---------------------------------------------------------------------------------------
 * Contexts, weights, matmul
 * ------------------------------------------------------------------------------------- */

/** Where a context computes, and so which memory space X and Y pointers live in. */
typedef enum qmm_backend {
    QMM_BACKEND_CPU = 0,   /**< host memory; portable C plus runtime-dispatched x86 SIMD */
    QMM_BACKEND_CUDA = 1,  /**< NVIDIA GPUs; device pointers; ordered on the context's stream */
    QMM_BACKEND_WEBGPU = 2 /**< WebGPU through wgpu-native (loaded at run time; Vulkan on Linux);
                                X and Y in WebGPU buffers; ordered on the device's queue */
} qmm_backend;

/** "cpu", "cuda" or "webgpu" (NULL for an unknown value). */
QMM_API const char *qmm_backend_name(qmm_backend backend);
/** True if this build and machine can run `backend` (CUDA: built with CUDA and a GPU found;
 *  WebGPU: built with it, wgpu-native loadable and a Vulkan/Metal/D3D12 adapter found). */
QMM_API bool qmm_backend_available(qmm_backend backend);
/**
 * QMM_OK if `backend` can run here; otherwise the status a context creation would give
 * (QMM_ERR_UNSUPPORTED: not built, library missing, no device), with qmm_last_error()
 * saying why (e.g. every path wgpu-native was looked for).
 */
QMM_API qmm_status qmm_backend_check(qmm_backend backend);

/**
 * How a matmul is computed (docs/CONTRACT.md, "Strategies"). AUTO takes the fastest path measured for
 * the type and n, whatever its precision class: on an AMX CPU, int8 for decode sizes (X
 * quantized per 32-block; class INT8) and AMX-BF16 fused above (class HALF); at level avx2,
 * int8 for the types that have an int8 kernel; on CUDA, among
 * the paths the context's qmm_cache_policy lets the weights hold memory for: with the default
 * policy gemv (class F32) while n x m x k is small, int8 (class INT8) for larger products up to
 * n = 8 (at n = 1 too: a 4096 x 14336 decode; on the GGUF bytes, no copy, for q4_0, q8_0, q4_K,
 * q5_K, q6_K), fused (class HALF) above, and from n = 128 dequant_hgemm (class HALF; W
 * dequantized to f16 per call, no copy kept); with QMM_CACHE_UNLIMITED the same at n = 1 and
 * cached_f16 above (docs/CUDA.md, "auto").
 * qmm_matmul_path names the kernel and its class; force GEMV (exact, F32 class) or another
 * strategy when a class matters.
 */
typedef enum qmm_strategy {
    QMM_STRATEGY_AUTO = 0,          /**< the backend picks by type and n (measured thresholds) */
    QMM_STRATEGY_REF = 1,           /**< the float64 reference (CPU only) */
    QMM_STRATEGY_GEMV = 2,          /**< stream W once per token batch; small n */
    QMM_STRATEGY_FUSED = 3,         /**< dequantize W tiles into fast memory inside the GEMM */
    QMM_STRATEGY_INT8 = 4,          /**< quantize X to int8 blocks, integer dot products */
    QMM_STRATEGY_DEQUANT_SGEMM = 5, /**< dequantize W to f32 scratch, then BLAS SGEMM */
    QMM_STRATEGY_CACHED_F16 = 6,    /**< W dequantized once to an f16 copy, HGEMM f32-acc (CUDA) */
    QMM_STRATEGY_FP8 = 7,           /**< E4M3 W and X with per-row scales, cuBLASLt (CUDA sm_89+) */
    QMM_STRATEGY_DEQUANT_HGEMM = 8, /**< W dequantized to f16 per call (bounded scratch, no copy
                                         kept), HGEMM f32-acc: cached_f16's numerics (CUDA) */
    QMM_STRATEGY_COUNT = 9
} qmm_strategy;

/** "auto", "ref", "gemv", "fused", "int8", "dequant_sgemm", "cached_f16", "fp8", "dequant_hgemm";
 *  NULL if unknown. */
QMM_API const char *qmm_strategy_name(qmm_strategy strategy);
/** Parse a strategy name. Errors: QMM_ERR_INVALID_ARGUMENT for NULL or unknown names. */
QMM_API qmm_status qmm_strategy_from_name(const char *name, qmm_strategy *out);

/** Context flags (bitwise OR). */
enum {
    /** Output row j depends only on X row j, bit for bit, for every n (no n-dependent paths).
     *  AUTO then takes one strategy for every n: on the CPU the one its table takes for
     *  prefill (int8 where that is int8, as at levels avx2 and avx512, else fused), on CUDA
     *  and WebGPU gemv; a forced strategy keeps one kernel order for every n, or is refused. */
    QMM_FLAG_BATCH_INVARIANT = 1u << 0,
    /** qmm_weights_create checks every scale is finite (QMM_ERR_NUMERIC otherwise). */
    QMM_FLAG_VALIDATE = 1u << 1
};

/**
 * How much device memory CUDA weights may hold beyond their GGUF bytes (the context's
 * qmm_context_params.cache). A CUDA weights object is created with its GGUF bytes (plus, if a
 * default kernel reads another layout, one repacked copy made at creation: repacked_bytes in
 * qmm_weights_memory_info). The strategies cached_f16 (an f16 copy of W: 2 bytes per weight),
 * fp8 (an E4M3 copy: 1 byte per weight plus a scale per row) and int8 (W repacked to int8 with
 * a scale per sub-block: 1.06x the GGUF bytes for q8_0 to 4.6x for q2_K; on CUDA not for
 * calls of n <= 8 on q4_0, q8_0, q4_K, q5_K, q6_K rows, which it reads as they are) read a copy, made
 * by their first matmul on these weights and kept until the weights are freed. Which copies
 * may be made ("the copies" below: everything beyond what creation makes):
 *
 *   QMM_CACHE_DEFAULT    GGUF bytes plus at most the int8 repack: AUTO makes no copy, except
 *                        the exact int8 repack when it is at most 2x the GGUF bytes (q4_0,
 *                        q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K; not q2_K, q3_K);
 *                        a strategy set with qmm_context_set_strategy (or QMM_STRATEGY) makes
 *                        its copy on its first call, whatever its size.
 *   QMM_CACHE_NONE       no copies: cached_f16, fp8 and int8 return QMM_ERR_UNSUPPORTED (not
 *                        int8 where it reads the GGUF bytes, above); AUTO chooses among the
 *                        paths that read the GGUF bytes (gemv, fused, that int8,
 *                        dequant_hgemm).
 *   QMM_CACHE_LIMIT      the copies of one weights object stay within cache_limit times its
 *                        GGUF bytes, for AUTO and forced strategies alike (a forced strategy
 *                        whose copy would not fit returns QMM_ERR_UNSUPPORTED, saying so); AUTO
 *                        takes the fastest path whose copy fits.
 *   QMM_CACHE_UNLIMITED  AUTO may make every copy where it is faster (cached_f16 from n = 2:
 *                        3.6x the bytes of q4_0 weights); forced strategies as DEFAULT.
 *
 * Lazy copies: the first matmul of a strategy on a weights object that has no copy for it
 * allocates and fills the copy, and may grow the context's workspace, before its own kernels;
 * all of it is queued on the context's stream (ordered after the caller's earlier work), and
 * it may block the host (cudaMalloc; a growing workspace waits for the stream). It cannot run
 * while the stream is captured into a CUDA graph: then a forced strategy returns
 * QMM_ERR_UNSUPPORTED and AUTO takes a path that needs nothing new, so call each (weights,
 * strategy) once before capturing. Out of device memory while making a copy: a forced
 * strategy returns QMM_ERR_OUT_OF_MEMORY (nothing written), AUTO runs its next choice (and
 * does not try that copy again for these weights). The CPU backend ignores the policy (its
 * AMX tiles are made on the first call that needs them, qmm_weights_memory reports them).
 */
typedef enum qmm_cache_policy {
    QMM_CACHE_DEFAULT = 0,
    QMM_CACHE_NONE = 1,
    QMM_CACHE_LIMIT = 2,
    QMM_CACHE_UNLIMITED = 3
} qmm_cache_policy;

/** Parameters of a context. Get defaults from qmm_context_default_params(). */
typedef struct qmm_context_params {
    qmm_backend backend;   /**< default QMM_BACKEND_CPU */
    int n_threads;         /**< CPU worker threads; 0 = all online cores (default 0) */
    qmm_strategy strategy; /**< default QMM_STRATEGY_AUTO; the env QMM_STRATEGY overrides AUTO */
    /** The tuning file AUTO reads (docs/TUNING.md): NULL (default) = the environment
     *  QMM_TUNE_FILE if set, else the default location for this machine (see
     *  qmm_context_tuning); "" = none (the compiled-in table); a path = that file, which must
     *  exist and match this machine and qmm version (else context creation fails). Copied. */
    const char *tune_file;
    unsigned flags;        /**< QMM_FLAG_*; default 0 */
    int cuda_device;       /**< CUDA device ordinal (default 0) */
    void *cuda_stream;     /**< a cudaStream_t owned by the caller, or NULL to create one */
    qmm_cache_policy cache;/**< copies of W the backend may make (default QMM_CACHE_DEFAULT) */
    double cache_limit;    /**< QMM_CACHE_LIMIT: copies <= this x GGUF bytes (finite, >= 0;
                                default 0; must be 0 with the other policies) */
    void *webgpu_device;   /**< a WGPUDevice owned by the caller (with webgpu_queue), or NULL:
                                the context creates its own instance, adapter and device */
    void *webgpu_queue;    /**< that device's WGPUQueue (qmm_webgpu.h) */
    bool webgpu_shader_checks; /**< compile qmm's WGSL with wgpu's runtime checks (index
                                clamps, loop bounds); default false: the kernels are compiled as
                                trusted, their indices being in range by construction and the
                                same bits either way (docs/WEBGPU.md "Shader checks") */
} qmm_context_params;

typedef struct qmm_context qmm_context; /**< opaque: backend state, threads, workspaces */
typedef struct qmm_weights qmm_weights; /**< opaque: one weight matrix on a context's backend */

/** Default parameters (CPU, all cores, auto strategy, no flags, QMM_CACHE_DEFAULT). */
QMM_API qmm_context_params qmm_context_default_params(void);

/**
 * Create a context. `params` may be NULL for defaults. The env var QMM_STRATEGY (a strategy
 * name), if set, replaces an AUTO strategy; an unparseable value is an error. The tuning file
 * is chosen and read here (params.tune_file, QMM_TUNE_FILE, the default location: see
 * qmm_context_tuning and docs/TUNING.md).
 * Errors: QMM_ERR_INVALID_ARGUMENT (bad params or env), QMM_ERR_UNSUPPORTED (backend not
 * built or no device; a tuning file named by params.tune_file or QMM_TUNE_FILE that was made
 * for another machine, thread count, ISA level or qmm version, or a tuning file named for a
 * backend that reads none), QMM_ERR_IO (that file cannot be read), QMM_ERR_FORMAT (that file
 * is not a valid tuning file: truncated, corrupt, an unknown field or format version),
 * QMM_ERR_BACKEND, QMM_ERR_OUT_OF_MEMORY. *out is set only on success.
 */
QMM_API qmm_status qmm_context_create(const qmm_context_params *params, qmm_context **out);

/** Free a context (NULL is a no-op). Weights made with it must be freed first. */
QMM_API void qmm_context_free(qmm_context *ctx);

/** The parameters the context runs with (threads resolved to a count, strategy after env). */
QMM_API qmm_context_params qmm_context_get_params(const qmm_context *ctx);

/** Where a context's AUTO choices come from (qmm_context_tuning). */
typedef enum qmm_tuning_state {
    QMM_TUNING_NONE = 0,    /**< no tuning file: turned off (""), none at the default location,
                                 or a backend that reads none; AUTO uses the compiled-in table */
    QMM_TUNING_APPLIED = 1, /**< the file at `path` is in use (for the types it has rows for) */
    QMM_TUNING_IGNORED = 2  /**< the file at the default location `path` was not used: `status`
                                 and `reason` say why; AUTO uses the compiled-in table */
} qmm_tuning_state;

/** The tuning file of a context and the machine identity it is matched against. */
typedef struct qmm_tuning_info {
    qmm_tuning_state state;
    qmm_status status;        /**< IGNORED: QMM_ERR_IO, QMM_ERR_FORMAT or QMM_ERR_UNSUPPORTED
                                   (another machine or qmm version); otherwise QMM_OK */
    char path[4096];          /**< the file applied or ignored; "" when none */
    char reason[1024];        /**< one sentence: what was applied, or why no file was */
    char default_path[4096];  /**< this identity's default file, $XDG_CACHE_HOME/qmm/tune-<id>.json
                                   (else ~/.cache/qmm/...); "" when neither variable is set */
    char machine_id[32];      /**< the identity as 16 hex digits (the <id> above) */
    char device[256];         /**< CPU model (CPUID brand string) of the identity */
    char level[32];           /**< ISA level of the context ("generic", "avx2", "avx512", "amx") */
    int threads;              /**< thread count of the identity (the context's threads) */
    int n_rows;               /**< APPLIED: rows read from the file */
} qmm_tuning_info;

/**
 * Which tuning file the context uses and why (docs/TUNING.md). The file is chosen at creation:
 * params.tune_file if not NULL, else the environment QMM_TUNE_FILE if set (empty: none), else
 * the default location. A file named by the parameter or the environment must fit (this
 * machine, thread count, ISA level, qmm version, a valid file) or creation fails; a file at
 * the default location that does not fit is ignored with the reason here.
 * Errors: QMM_ERR_INVALID_ARGUMENT for NULL.
 */
QMM_API qmm_status qmm_context_tuning(const qmm_context *ctx, qmm_tuning_info *out);

/** Force a strategy for later matmuls on this context (AUTO to let it choose). */
QMM_API qmm_status qmm_context_set_strategy(qmm_context *ctx, qmm_strategy strategy);

/**
 * Make a weights object from m host rows of k elements of `type` in GGUF layout, row i at
 * data + i*row_stride (row_stride >= qmm_row_bytes(type, k)). The bytes are copied (and may
 * be repacked or uploaded); `data` may be freed after the call.
 * Errors: QMM_ERR_INVALID_ARGUMENT (NULL, m or k <= 0, k not a multiple of the block size,
 * short row_stride), QMM_ERR_UNSUPPORTED (q8_K or unknown type), QMM_ERR_NUMERIC (with
 * QMM_FLAG_VALIDATE and a non-finite scale), QMM_ERR_OUT_OF_MEMORY, QMM_ERR_BACKEND.
 */
QMM_API qmm_status qmm_weights_create(qmm_context *ctx, qmm_type type, int64_t m, int64_t k,
                                      const void *data, size_t row_stride, qmm_weights **out);

/** Free a weights object (NULL is a no-op). */
QMM_API void qmm_weights_free(qmm_weights *w);

/** Shape and type of a weights object (any out pointer may be NULL). */
QMM_API void qmm_weights_shape(const qmm_weights *w, qmm_type *type, int64_t *m, int64_t *k);

/**
 * The bytes a weights object holds, per copy, in its backend's memory space (device memory
 * for CUDA, host memory for the CPU), as allocated (padding included). Copies made later by a
 * matmul (qmm_cache_policy) show up once made.
 */
typedef struct qmm_weights_memory_info {
    qmm_backend backend;   /**< the memory space: host (CPU) or device (CUDA) */
    size_t gguf_bytes;     /**< the GGUF rows as uploaded (CUDA: m x row bytes; CPU: rows padded
                                to 64 bytes) */
    size_t repacked_bytes; /**< layouts made at creation for the default kernels (0 if none) */
    size_t f16_bytes;      /**< CUDA cached_f16: W in f16 (m x k x 2) */
    size_t fp8_bytes;      /**< CUDA fp8: W in E4M3, m and k padded to 16, and its row scales */
    size_t int8_bytes;     /**< int8 repack with its scales (and mins): CUDA int8's copy, the CPU's
                                AMX-INT8 tiles and the AVX2 int8 GEMM's 8-row records, aarch64's
                                SMMLA copy (docs/ARM64.md) */
    size_t bf16_bytes;     /**< CPU: the AMX-BF16 tiles of fused_amx_bf16 and their row scales */
    size_t total_bytes;    /**< the sum of the above */
} qmm_weights_memory_info;

/**
 * Fill *out with what `w` holds now (see qmm_weights_memory_info). Reads host-side records
 * only (no device work, no synchronization). Errors: QMM_ERR_INVALID_ARGUMENT for NULL.
 */
QMM_API qmm_status qmm_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out);

/**
 * Y[n][m] = X[n][k] * W[m][k]^T on the context's backend with its strategy.
 * x: n rows of k float32, stride ldx >= k; y: n rows of m float32, stride ldy >= m; both in
 * the backend's memory space; x and y must not overlap. n >= 1.
 * Errors: QMM_ERR_INVALID_ARGUMENT (NULL, n <= 0, ldx < k, ldy < m, weights of another
 * context), QMM_ERR_UNSUPPORTED (forced strategy not available for this type/backend),
 * QMM_ERR_BACKEND. Argument errors are found before any work starts, so Y is not written.
 * One exception (CUDA, n > 4096 with the cuBLAS-based strategies): the work runs in chunks of
 * 4096 tokens, and a device failure in a later chunk leaves the earlier chunks' rows written.
 */
QMM_API qmm_status qmm_matmul(qmm_context *ctx, const qmm_weights *w, int64_t n,
                              const float *x, int64_t ldx, float *y, int64_t ldy);

/**
 * The strategy qmm_matmul would run for these weights and n on this context (resolving
 * AUTO), or an error if the forced strategy is not available for the type/backend.
 */
QMM_API qmm_status qmm_matmul_strategy(const qmm_context *ctx, const qmm_weights *w,
                                       int64_t n, qmm_strategy *out);

/* ---------------------------------------------------------------------------------------
 * Comparing an output with the reference
 * ------------------------------------------------------------------------------------- */

/** How far an output is from the reference (see qmm_compare). */
typedef struct qmm_diff {
    double nmse;        /**< sum (out-ref)^2 / sum ref^2 (ggml's normalized MSE); 0 if both all 0 */
    double max_abs_err; /**< max |out - ref| over finite outputs */
    double max_rel_err; /**< max |out - ref| / max |ref|: error relative to the output's scale */
    double ref_max_abs; /**< max |ref| */
    int64_t n_nonfinite;/**< outputs that are NaN or Inf (any > 0 is a failure) */
    int64_t worst_row;  /**< row (0..n-1) of the largest |out - ref| (or first non-finite) */
    int64_t worst_col;  /**< column (0..m-1) of that element */
    double checksum_out;/**< sum of out (finite values), printed by tools to catch all-zero runs */
    double checksum_ref;/**< sum of ref */
} qmm_diff;

/**
 * Compare n rows of m floats `out` (stride ldo) with `ref` (stride ldr), host memory.
 * A non-finite ref value is compared as a mismatch too (counted in n_nonfinite).
 * Errors: QMM_ERR_INVALID_ARGUMENT for NULL pointers, n or m <= 0, strides < m.
 */
QMM_API qmm_status qmm_compare(int64_t n, int64_t m, const float *out, int64_t ldo,
                               const float *ref, int64_t ldr, qmm_diff *diff);

/**
 * True if `d` passes the limits: no non-finite value, nmse <= max_nmse and
 * max_rel_err <= max_rel. Each path documents its limits in docs/KERNELS.md.
 */
QMM_API bool qmm_diff_ok(const qmm_diff *d, double max_nmse, double max_rel);

/* ---------------------------------------------------------------------------------------
 * Buffers and timing in the backend's memory space (convenience for tools and tests)
 * ------------------------------------------------------------------------------------- */

/**
 * Allocate `bytes` (> 0) in the context's memory space: 64-byte aligned host memory for the
 * CPU, device memory (cudaMalloc) for CUDA, a WebGPU storage buffer for WebGPU (the pointer
 * is an address of a reservation that no host code may dereference). Contents are undefined.
 * Errors: QMM_ERR_INVALID_ARGUMENT, QMM_ERR_OUT_OF_MEMORY, QMM_ERR_BACKEND.
 */
QMM_API qmm_status qmm_buffer_alloc(qmm_context *ctx, size_t bytes, void **out);

/** Free a buffer from qmm_buffer_alloc on the same context (NULL is a no-op). */
QMM_API void qmm_buffer_free(qmm_context *ctx, void *buf);

/** Copy `bytes` from host memory into a context buffer; returns when the copy is complete. */
QMM_API qmm_status qmm_buffer_upload(qmm_context *ctx, void *dst, const void *src_host,
                                     size_t bytes);

/** Copy `bytes` from a context buffer to host memory, after all work queued on the context. */
QMM_API qmm_status qmm_buffer_download(qmm_context *ctx, void *dst_host, const void *src,
                                       size_t bytes);

/** Wait until all work queued on the context is complete (a no-op on the CPU). */
QMM_API qmm_status qmm_context_synchronize(qmm_context *ctx);

/**
 * Time a region of work queued on the context: qmm_timer_begin marks the start (a CUDA
 * event recorded on the stream; a monotonic clock read on the CPU), qmm_timer_end marks the
 * end, waits for it and returns the elapsed milliseconds. Not reentrant per context.
 * WebGPU: the sum of the GPU time of the compute passes of the matmuls in the region
 * (timestamp queries at each pass's start and end; needs the timestamp-query feature).
 */
QMM_API qmm_status qmm_timer_begin(qmm_context *ctx);
/** End the region begun by qmm_timer_begin; *ms gets the elapsed milliseconds (see above). */
QMM_API qmm_status qmm_timer_end(qmm_context *ctx, double *ms);

/**
 * Device time of back-to-back calls (CUDA only; the CPU returns QMM_ERR_UNSUPPORTED, time its
 * calls with qmm_timer_begin/end). qmm_graph_begin starts capturing the context's stream into
 * a CUDA graph: the qmm_matmul calls that follow are recorded, not run (each must have run
 * once before on its weights and strategy: lazy copies cannot be made during capture, see
 * qmm_cache_policy; recording queues no work, so Y is not written yet). qmm_graph_end ends the
 * capture and instantiates the graph, which the context keeps (replacing an earlier one; freed
 * with the context). qmm_graph_replay launches it `times` (>= 1) times back to back on the
 * stream and returns in *ms the milliseconds between a CUDA event recorded before the first
 * launch and one after the last (it waits for them), so *ms / (times x calls recorded) is the
 * device time of one call with the launch gaps of a graph: the figure llama-bench and ggml's
 * test-backend-ops report. Replays write Y as the recorded calls would.
 * Errors: QMM_ERR_INVALID_ARGUMENT (NULL, times < 1, qmm_graph_begin while capturing,
 * qmm_graph_end without qmm_graph_begin, qmm_graph_replay without a graph), QMM_ERR_UNSUPPORTED
 * (a CPU context), QMM_ERR_BACKEND (capture failed, e.g. work of another stream joined it; the
 * capture is ended and nothing kept).
 */
QMM_API qmm_status qmm_graph_begin(qmm_context *ctx);
/** End the capture begun by qmm_graph_begin and keep its graph (see above). */
QMM_API qmm_status qmm_graph_end(qmm_context *ctx);
/** Launch the kept graph `times` times back to back; *ms = their elapsed time (see above). */
QMM_API qmm_status qmm_graph_replay(qmm_context *ctx, int64_t times, double *ms);

/** The accelerator a context runs on, as qmm_context_device_info reports it. */
typedef struct qmm_device_info {
    char name[256];          /**< e.g. "NVIDIA H200" */
    int sm_count;            /**< streaming multiprocessors */
    int compute_capability;  /**< 10 * major + minor, e.g. 90 */
    double sm_clock_mhz;     /**< peak SM clock the driver reports */
    double mem_clock_mhz;    /**< peak memory clock the driver reports */
    int mem_bus_bits;        /**< memory bus width */
    long long l2_bytes;      /**< L2 cache size */
    long long mem_bytes;     /**< device memory size */
    double copy_gbps;        /**< measured: device-to-device copy of 1 GiB, (read + write bytes) / s */
    /** Dense peak of the kernels of each qmm_precision class in TFLOP/s (tensor cores for
     *  HALF/INT8/FP8, FP32 cores for F32) from sm_count, sm_clock and the per-SM rates of
     *  the architecture (the vendor's datasheet figures for sm_90 / Hopper); 0 when the
     *  architecture is not in qmm's table. Indexed by qmm_precision. */
    double peak_tflops[4];
} qmm_device_info;

/**
 * Describe the device of a CUDA context and measure its copy bandwidth (allocates 2 GiB of
 * scratch device memory for the measurement, frees it, synchronizes the context's stream: call
 * it outside timed regions and graph capture). A WebGPU context fills only `name` (the
 * adapter; qmm_webgpu_get_info in qmm_webgpu.h describes it fully), the rest 0.
 * Errors: QMM_ERR_INVALID_ARGUMENT (NULL), QMM_ERR_UNSUPPORTED (a CPU context),
 * QMM_ERR_OUT_OF_MEMORY, QMM_ERR_BACKEND.
 */
QMM_API qmm_status qmm_context_device_info(qmm_context *ctx, qmm_device_info *out);

/* ---------------------------------------------------------------------------------------
 * Which kernel runs, and how close to the reference it is documented to be
 * ------------------------------------------------------------------------------------- */

/** Numerical class of a kernel: what its inputs are rounded to before the products. */
typedef enum qmm_precision {
    QMM_PRECISION_F32 = 0,  /**< exact W, f32 X, f32/f64 sums: nmse <= 1e-10, max_rel <= 1e-5 */
    QMM_PRECISION_HALF = 1, /**< W and X rounded to bf16/f16, f32 sums: 1e-5, 1e-2 */
    QMM_PRECISION_INT8 = 2, /**< X quantized per block to int8, integer dots: 5e-4, 2e-2 */
    QMM_PRECISION_FP8 = 3   /**< W and X in E4M3 with per-row scales: 5e-3, 1e-1 */
} qmm_precision;

/** The path qmm_matmul takes for given weights and n (see qmm_matmul_path). */
typedef struct qmm_path {
    qmm_strategy strategy;  /**< the resolved strategy (never AUTO) */
    const char *kernel;     /**< implementation name, e.g. "fused_amx_bf16", "cublas_sgemm" */
    qmm_precision precision;/**< numerical class of the kernel */
    double max_nmse;        /**< documented limit of qmm_diff.nmse vs qmm_matmul_ref */
    double max_rel_err;     /**< documented limit of qmm_diff.max_rel_err vs qmm_matmul_ref */
    /** When the context's strategy is AUTO: which table made the choice, e.g. "compiled-in
     *  table for amx" or "tuning file /home/u/.cache/qmm/tune-0123456789abcdef.json" (valid
     *  while the context lives); NULL when a strategy was forced. */
    const char *auto_table;
} qmm_path;

/**
 * Describe the path qmm_matmul would take for these weights and n on this context: the
 * strategy after AUTO, the kernel's name, its precision class and the error limits that the
 * tests and `qmm bench` hold it to (docs/KERNELS.md, docs/CUDA.md justify each). The limits
 * are for realistic data (many outputs, no catastrophic cancellation).
 * Errors: as qmm_matmul_strategy.
 */
QMM_API qmm_status qmm_matmul_path(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                                   qmm_path *out);

/** The error limits of a precision class (the values listed in qmm_precision). */
QMM_API void qmm_precision_limits(qmm_precision precision, double *max_nmse, double *max_rel_err);

#ifdef __cplusplus
}
#endif

#endif /* QMM_H */
