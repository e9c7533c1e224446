/*
 * auto_table.c — the data `auto` reads on CUDA (qmm_cuda_auto_row, cuda_internal.h; the order
 * of the choices is written there). Which copies of W a choice may make is the context's
 * qmm_cache_policy, applied in backend.c; these rows only say from which n each path wins.
 *
 * The sm_90 row was measured on an H200 with bench/cuda_bench (built and run by
 * `bench/gpu_run.sh bench`; device time of 100 calls replayed in a CUDA graph, every line
 * verified against qmm_matmul_ref first) on the LFM2.5-350M shapes for q4_0, q4_K, q6_K and
 * f16 at n = 1, 8, 512; docs/CUDA.md ("auto and batch invariance") gives the numbers that set
 * each threshold. fused_min_n: fused on the int8 repack against int8, q4_0, q4_K, q6_K, q8_0 on
 * the LFM shapes at n = 16, 64, 512, 2048 (`bash bench/half_run.sh`, step prefill;
 * bench/results/h200-fused-repack.md): fused is faster or within 7% at every point,
 * so it takes int8's place from n = 9 wherever it can read the repack. gemv_max_work: gemv,
 * int8 (its n <= 8 kernel on the repack) and fused at n = 2, 4, 8, 9 on the same shapes and
 * types (step small of the same script): gemv wins while n * m * k stays below about 10M
 * multiply-adds (1024x1024 through n = 9, 3072x1024 through n = 2..4, 4608x1024 q4_0 at n = 2),
 * the int8 kernel above it (1024x4608 from n = 2: 6.2 vs 8.9 us; 4608x1024 n = 8: 6.1 vs 10.7);
 * misses of the single line: q4_K 4608x1024 n = 2 (gemv 7.5, int8 6.2), 3072x1024 n = 4 (int8
 * 5.9, gemv 4.8). gemv_rows_max_work, where int8 reads the GGUF rows instead (int8_gemv.cu: q4_0,
 * q8_0, q4_K, q5_K, q6_K at n <= 8): gemv against that kernel at n = 1, 2, 4, 8 on the LFM shapes
 * for q4_0, q4_K, q6_K, q8_0 (`bash bench/i8g_run.sh`, step small;
 * bench/results/h200-int8-gguf-rows.md): of the thresholds 1M..10M, 4M multiply-adds gives every
 * type the smallest mean time over the best of the two (within 1.4% of it; the worst point 14%,
 * q6_K 3072x1024 n = 2). With it gemv keeps 512x1024 through n = 7, 1024x1024 through n = 3 and
 * 3072x1024 at n = 1; int8 takes 4608x1024 and 1024x4608 from n = 1 (1024x4608 q4_0: 4.2 vs
 * 5.2 us) and every decode shape (4096x14336 q4_0: 14.2 vs 25.9 us).
 * gemv_max_n = 9: gemv still wins at n = 9 on 1024x1024 and 512x1024 (5.3 vs fused 7.4 us),
 * although its token group is 8 (a second pass over W). The row for every other GPU is the same rule, not measured there. To re-measure (every
 * strategy, the crossovers between n = 1 and 512, copies allowed so that every path runs):
 *   qmm bench --backend cuda --cache unlimited --types q4_0,q4_K,q6_K,q8_0
 *             --strategy gemv,int8,fused,cached_f16,fp8 --n 1,2,4,8,9,16,32,64,512
 * (`bench/gpu_run.sh auto_sweep`); hgemm_min_n: `HALF_STEPS=hgemm bash bench/half_run.sh`.
 */
/*
 * hgemm_min_n: dequant_hgemm (W dequantized to f16 per call, cuBLAS; no copy) against fused on
 * the int8 repack and int8 on the LFM shapes for q4_0, q4_K, q5_K, q6_K, q8_0 at n = 16, 32, 64,
 * 128, 256, 512, 2048 (`HALF_STEPS=hgemm bash bench/half_run.sh`;
 * bench/results/h200-hgemm.md): from n = 256 it is faster than both on every shape
 * and type (0.49-0.93x the better one's time); at n = 128 faster on four shapes (0.72-0.92x)
 * and slower on 1024x4608 (1.03-1.18x), with the smaller sum over the shapes; at n = 64 slower
 * at 14 of the 25 (type, shape) points and in the sum for every type. So 128. Graph time: in
 * single calls (host submission included) dequant_hgemm's three launches make it slower than
 * fused at most of these points (the results file has both).
 */
#include "cuda/cuda_internal.h"

#define ANY_TYPE (-1)

static const qmm_cuda_auto_row auto_rows[] = {
    /* cc, type, f16_min_n, fp8_min_n, gemv_max_n, gemv_max_work, fused_min_n, int8_min_n,
     * gemv_rows_max_work, hgemm_min_n */
    {90, ANY_TYPE, 2, 2, 9, 10000000, 9, 1, 4000000, 128},
    {0, ANY_TYPE, 2, 2, 9, 10000000, 9, 1, 4000000, 128},
};

qmm_cuda_auto_row qmm_cuda_auto_lookup(int cc, int type) {
    /* most specific first: (cc, type), (cc, any), (any GPU, type), (any GPU, any) */
    const int want_cc[4] = {cc, cc, 0, 0}, want_type[4] = {type, ANY_TYPE, type, ANY_TYPE};
    for (int pass = 0; pass < 4; pass++)
        for (size_t i = 0; i < sizeof auto_rows / sizeof auto_rows[0]; i++)
            if (auto_rows[i].cc == want_cc[pass] && auto_rows[i].type == want_type[pass])
                return auto_rows[i];
    return auto_rows[sizeof auto_rows / sizeof auto_rows[0] - 1];
}
