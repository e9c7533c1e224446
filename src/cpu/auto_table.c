/*
 * auto_table.c — the data `auto` reads on the CPU (qmm_cpu_auto_row, cpu_internal.h), and
 * the lookup, which takes the rows of a tuning file made on this machine (auto_tuned.c,
 * docs/TUNING.md) before these.
 *
 * The amx rows were measured on a 2-core Sapphire Rapids VM (2 threads, quiet machine, every
 * row verified; the numbers: bench/results/cpu-spr-amx-session1.md .. -session3.md), with
 *   qmm bench --shape 4608x1024 --n 1,2,3,4,6,8 --strategy gemv,fused --iters 9 --csv
 *   qmm bench --shape 4608x1024,1024x4608 --n 1,2,4,8,16 --strategy gemv,int8,fused --iters 9
 *             --types q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K --csv
 *   qmm bench --shape 4608x1024,1024x4608,3072x1024,1024x1024,512x1024 --types q4_0,q8_0,q4_K
 *             --strategy int8,fused --n 16,17,20,24,32,33,40,48 --iters 9 --csv
 *   qmm bench --shape 4608x1024,1024x4608 --types q4_1,q5_0,q5_1,q5_K --strategy int8,fused
 *             --n 8,12,16,24,32,48 --iters 7 --csv
 * int8_max_n is the largest n where int8 beat both gemv and fused on every shape; gemv_max_n
 * the largest n where gemv beat fused.
 *
 * The avx2 rows were measured on the same Sapphire Rapids VM forced to level avx2 with AVX-VNNI
 * off (QMM_CPU_ISA=avx2 QMM_CPU_AVX_VNNI=off: the vpmaddubsw int8 kernels of an AVX2-only CPU;
 * AVX-VNNI only makes int8 faster), not on an AVX2-only machine, 2 threads, while the machine
 * was loaded by other jobs (load average 7-17): `qmm bench` medians were multiples of the
 * scheduler tick, so the best of 9-15 interleaved calls (dev/int8_ab.c, W rotated over 2-8
 * copies) decided, with
 *   int8_ab q4_0,q4_K,q6_K,q8_0,iq4_xs,q5_K 4608x1024,1024x4608 1,2,4,8,16,32,64,128
 *           gemv=avx2:off:gemv,int8=avx2:off:int8,fused=avx2:off:fused 15 2 8
 *   int8_ab q4_1,q5_0,q5_1,q2_K,q3_K,iq4_nl,mxfp4,nvfp4 4608x1024,1024x4608 1,4,16,64,128
 *           gemv=avx2:off:gemv,int8=avx2:off:int8,fused=avx2:off:fused 9 2 4
 *   int8_ab <all 14 types> 4608x1024 256,512 int8=avx2:off:int8,fused=avx2:off:fused 3-5 2 2
 * (the numbers: bench/results/cpu-spr-avx2-int8.md). The int8 gemv beat gemv_avx2 and
 * fused_portable at every n measured, 1..512, by 1.5-2x at n = 128..512 (fused_portable was then
 * the only fused path at avx2). Above 512, the same VM at QMM_CPU_ISA=avx2 QMM_CPU_AVX_VNNI=0
 * with fused_avx2, 2 threads, hot caches, every row verified:
 *   qmm bench --threads 2 --iters 5 --warmup 1 --caches hot --types <the 14 int8 types>
 *             --shape 1024x1024,4608x1024 --n 1024,2048 --strategy int8,fused
 * (bench/results/spr-avx2-int8-vs-fused-large-n.json): int8 took 1.15-2.24x less time than
 * fused_avx2 on every point, so int8 runs every n (INT8_OPEN). gemv_max_n (gemv
 * vs fused above that) is the largest n of those grids where gemv_avx2 beat fused_portable on
 * both shapes. Types without an int8 kernel at avx2 take the default row; measured the same way
 * for f32, f16, bf16 (gemv_avx2 ahead of fused_portable through n = 4-8) and iq2_xxs, iq3_s,
 * tq2_0 (gemv_portable and fused_portable within noise of each other for n <= 32), it stayed
 * (the float types and the grid i-quants / tq types have measured rows since: below).
 *
 * The avx2 rows of f32, f16, bf16 (gemv_avx2 vs fused_avx2, the same summation order) were
 * measured on the same VM at QMM_CPU_ISA=avx2 while other work loaded it (load average 9-15),
 * so by CPU time per call with the two strategies alternated in one process, 1 thread:
 *   QMM_CPU_ISA=avx2 build/cpu_ab TYPE M K N gemv,fused 9 1 (dev/cpu_ab.c)   for TYPE in f32, f16, bf16,
 *   M x K in 4608x1024, 1024x4608, 512x1024, N in 2, 4, 5, 6, 8, 16, 32
 * (bench/results/cpu-spr-avx2-fused.md has the numbers): gemv was faster through n = 5
 * on 4608x1024 and 1024x4608, fused from n = 6 (on 512x1024, whose W stays in L2, from n = 4).
 * The other avx2 types have no measured row: the default row (gemv through n = 8, the decode
 * regime) stands.
 *
 * The avx512 rows (AVX-512 with VNNI, without AMX: Zen 4/5, Cascade Lake to Ice Lake) are the
 * shared rows of the tuning files that `qmm tune --quick --threads 2` and `qmm tune --threads 2`
 * (cold: W from memory) wrote on a 2-core AMD EPYC (Zen 5) VM; both gave these rows (the files and the
 * sweeps that judged them: bench/results/zen5-tune-check/, quick-cold-0 and full-cold;
 * README.md there). The fit chose int8 (the VNNI gemv, the avx2 int8 GEMM with VNNI) over the
 * whole grid (n = 1..512) for every type that has an int8 kernel (with single points where gemv
 * was faster, e.g. q5_K and mxfp4 512x1024 n = 8 by 1.2-1.3x); the types without one run
 * fused_avx2 from n = 1, the float types gemv through n = 2 (f32) or 8 (f16, bf16). The grid
 * i-quants and tq1_0, tq2_0 (whose gemv decodes by to_float into L1, gemv_tofloat_impl.h, as
 * fused_avx2 does: the two run within about 10-25% of each other) take gemv at n = 1: `qmm
 * tune --threads 2 --types iq1_s,iq1_m,iq2_xxs,iq2_xs,iq2_s,iq3_xxs,iq3_s,tq1_0,tq2_0` (cold)
 * on the same VM chose gemv <= 1 for all nine (its worst point 1.00-1.10x the best; fused
 * from n = 1, the row before, up to 1.95-2.09x, at 512x1024 n = 1, where fused_avx2 runs one
 * thread below its work threshold and gemv two: bench/results/zen5-tune-check/gemv-tofloat/).
 * The avx2 rows of the same nine are gemv <= 1 too: the same tune at QMM_CPU_ISA=avx2 gave
 * fused from n = 1 with an own row gemv <= 1 for 512x1024 (compiled-in rows have no shape
 * classes); over its measurements gemv <= 1 is at worst 1.07-1.16x the best, fused from n = 1
 * 1.47-2.15x, the default row (gemv <= 8) 1.24-1.39x (gemv-tofloat/tune-avx2.txt). Like the
 * tuning files, a row holds its grid's last n for every larger n (INT8_OPEN): n > 512 was not
 * measured. Measured on one CPU: `qmm tune` on another replaces them there.
 *
 * aarch64 (levels neon, dotprod, i8mm): NOTHING IS MEASURED (no ARM machine was available;
 * docs/ARM64.md). The default row there is chosen from instruction counts, not timings: the
 * int8 strategy for n = 1..8 where an int8 kernel exists for the type (about 20-40
 * instructions per 32 weights against ~100 for the portable f32 path's decode and panel),
 * else gemv through n = 8 (gemv_neon), fused above (fused_neon: the same kernel, same bits).
 */
#include "cpu/cpu_internal.h"

#define NO_INT8 1, 0
/* int8 for every larger n too (the grid's last n is open-ended, as in a tuning file) */
#define INT8_OPEN INT32_MAX

static const qmm_cpu_auto_row auto_rows[] = {
    /* isa, type, int8_min_n, int8_max_n, gemv_max_n */
#if defined(QMM_ARCH_X86_64)
    {QMM_CPU_ISA_AMX, QMM_TYPE_F32, NO_INT8, 8},
    {QMM_CPU_ISA_AMX, QMM_TYPE_F16, NO_INT8, 0},
    {QMM_CPU_ISA_AMX, QMM_TYPE_BF16, NO_INT8, 0},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q4_0, 1, 32, 4},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q4_1, 1, 24, 4},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q5_0, 1, 32, 4},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q5_1, 1, 16, 2},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q8_0, 2, 32, 1},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q2_K, 1, 8, 4},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q3_K, 1, 8, 2},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q4_K, 1, 24, 4},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q5_K, 1, 16, 3},
    {QMM_CPU_ISA_AMX, QMM_TYPE_Q6_K, 1, 8, 1},
    /* the codebook types (gemv_int8_codebook_avx512.c, pack_int8_codebook.c,
     * gemv_codebook_avx512.c): measured below */
    {QMM_CPU_ISA_AMX, QMM_TYPE_IQ4_NL, 1, 32, 2},
    {QMM_CPU_ISA_AMX, QMM_TYPE_IQ4_XS, 1, 32, 1},
    {QMM_CPU_ISA_AMX, QMM_TYPE_MXFP4, 1, 32, 2},
    {QMM_CPU_ISA_AMX, QMM_TYPE_NVFP4, 1, 8, 1},
    /* avx2: the int8 strategy (its gemv below n = 8, its GEMM from there) for every n */
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q4_0, 1, INT8_OPEN, 16},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q4_1, 1, INT8_OPEN, 16},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q5_0, 1, INT8_OPEN, 16},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q5_1, 1, INT8_OPEN, 16},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q8_0, 1, INT8_OPEN, 8},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q2_K, 1, INT8_OPEN, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q3_K, 1, INT8_OPEN, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q4_K, 1, INT8_OPEN, 8},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q5_K, 1, INT8_OPEN, 4},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_Q6_K, 1, INT8_OPEN, 64},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ4_NL, 1, INT8_OPEN, 16},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ4_XS, 1, INT8_OPEN, 32},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_MXFP4, 1, INT8_OPEN, 16},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_NVFP4, 1, INT8_OPEN, 16},
    /* avx512 without AMX (above): int8 over the whole grid; fused for the types without it */
    {QMM_CPU_ISA_AVX512, QMM_TYPE_F32, NO_INT8, 2},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_F16, NO_INT8, 8},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_BF16, NO_INT8, 8},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q4_0, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q4_1, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q5_0, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q5_1, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q8_0, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q2_K, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q3_K, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q4_K, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q5_K, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_Q6_K, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ4_NL, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ4_XS, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_MXFP4, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_NVFP4, 1, INT8_OPEN, 0},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ2_XXS, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ2_XS, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ2_S, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ3_XXS, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ3_S, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ1_S, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_IQ1_M, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_TQ1_0, NO_INT8, 1},
    {QMM_CPU_ISA_AVX512, QMM_TYPE_TQ2_0, NO_INT8, 1},
    /* avx2, the grid i-quants and tq types (above) */
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ2_XXS, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ2_XS, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ2_S, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ3_XXS, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ3_S, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ1_S, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_IQ1_M, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_TQ1_0, NO_INT8, 1},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_TQ2_0, NO_INT8, 1},
    /* avx2, float weights (above) */
    {QMM_CPU_ISA_AVX2, QMM_TYPE_F32, NO_INT8, 5},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_F16, NO_INT8, 5},
    {QMM_CPU_ISA_AVX2, QMM_TYPE_BF16, NO_INT8, 5},
#endif
    {QMM_CPU_ISA_GENERIC, QMM_TYPE_COUNT, NO_INT8, 8}, /* none: the table is never empty */
};
/* The codebook rows (iq4_nl, iq4_xs, mxfp4, nvfp4): the strategies called alternately in one
 * process, and
 *   qmm bench --shape 4608x1024,1024x4608 --types iq4_nl,iq4_xs,mxfp4,nvfp4
 *             --strategy gemv,int8,fused --n 1,2,4,8,16,32,64,512 --iters 7 --csv
 * the numbers: bench/results/cpu-spr-codebook.md. */

/* The row for a (level, type) that has none: gemv through the decode regime, then fused.
 * At the amx level a type without a measured row takes fused_amx_bf16 from n = 1 (its gemv,
 * for the grid i-quants and tq types the to_float rows, was not measured against it). At avx2 the types without a row have no int8 kernel: gemv
 * (gemv_avx2; for the grid i-quants and tq types its to_float rows) through n = 8, then fused.
 * (avx512 has a row for every type.) */
static qmm_cpu_auto_row default_row(qmm_cpu_isa isa, qmm_type type) {
#if defined(QMM_ARCH_X86_64)
    return (qmm_cpu_auto_row){isa, type, NO_INT8, isa >= QMM_CPU_ISA_AMX ? 0 : 8};
#elif defined(QMM_ARCH_AARCH64)
    /* not measured (above): int8 for n = 1..8 where the type has an int8 kernel (resolve
     * checks), gemv through n = 8 */
    if (isa >= QMM_CPU_ISA_NEON) return (qmm_cpu_auto_row){isa, type, 1, 8, 8};
    return (qmm_cpu_auto_row){isa, type, NO_INT8, 8};
#else
    return (qmm_cpu_auto_row){isa, type, NO_INT8, 8};
#endif
}

/* Strategy fused's two kernels at levels avx2 and avx512 outside batch-invariant mode
 * (x86_backend.h): fused_gemm_avx2 from this n, fused_avx2 (the dot-product kernel of the
 * gemv order) below it, where fused_gemm_avx2's per-call W panel (convert and interleave
 * every element) is not yet paid for. Measured on the Zen 3 VM (2 threads, hot caches, the two
 * kernels called alternately in one process):
 *   build/cpu_ab TYPE 4608 1024 N fused,bi-fused 15-21 2    (dev/cpu_ab.c; bi-fused runs
 *   fused_avx2 at these n), TYPE in f32, f16, bf16, iq2_xxs, tq2_0, q4_K, q8_0, N in 16, 32,
 *   64 (and 8 for f32, f16, bf16); and 1024 4608 for f32, f16
 * (bench/results/zen3-fused-gemm-crossover.md): fused_avx2 ahead or level through n = 16 for
 * every type, split at n = 32, fused_gemm_avx2 ahead or level at n = 64 for every type (median
 * speed 0.97-1.21x fused_avx2's; at n = 512 1.3-2.0x for the float types,
 * bench/results/zen3-float-bi-vs-default/). One value for every type and both
 * levels: not measured per type or on an AVX-512 CPU. */
#define FUSED_GEMM_MIN_N 64

int64_t qmm_cpu_fused_gemm_min_n(qmm_cpu_isa isa, qmm_type type) {
    (void)isa;
    (void)type;
    return FUSED_GEMM_MIN_N;
}

/* Whether tuned row `t` is for `type` with a shape class that holds m x k. */
static bool tuned_row_holds(const qmm_cpu_auto_tuned_row *t, qmm_type type, int64_t m,
                            int64_t k) {
    return t->row.type == type && (t->m_min == 0 || m >= t->m_min) &&
           (t->m_max == 0 || m <= t->m_max) && (t->k_min == 0 || k >= t->k_min) &&
           (t->k_max == 0 || k <= t->k_max);
}

qmm_cpu_auto_row qmm_cpu_auto_lookup(const qmm_cpu_auto_rows *tuned, qmm_cpu_isa isa,
                                     qmm_type type, int64_t m, int64_t k, bool *from_file) {
    if (from_file != NULL) *from_file = false;
    for (size_t i = 0; tuned != NULL && i < tuned->count; i++)
        if (tuned_row_holds(&tuned->rows[i], type, m, k)) {
            if (from_file != NULL) *from_file = true;
            qmm_cpu_auto_row r = tuned->rows[i].row;
            r.isa = isa;
            return r;
        }
    for (size_t i = 0; i < sizeof auto_rows / sizeof auto_rows[0]; i++)
        if (auto_rows[i].isa == isa && auto_rows[i].type == type) return auto_rows[i];
    return default_row(isa, type);
}

const char *qmm_cpu_auto_compiled_name(qmm_cpu_isa isa) {
    static const char *const names[QMM_CPU_ISA_COUNT] = {
        "compiled-in table for generic",
#if defined(QMM_ARCH_X86_64)
        "compiled-in table for avx2", "compiled-in table for avx512", "compiled-in table for amx",
#elif defined(QMM_ARCH_AARCH64)
        "compiled-in table for neon", "compiled-in table for dotprod", "compiled-in table for i8mm",
#endif
    };
    return (int)isa >= 0 && isa < QMM_CPU_ISA_COUNT ? names[isa] : "compiled-in table";
}
