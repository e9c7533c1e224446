/*
 * auto_table.c — the data `auto` reads on the CPU (qmm_cpu_auto_row, cpu_internal.h).
 *
 * The amx rows were measured on a 2-core Sapphire Rapids VM (2 threads, quiet machine, every
 * row verified; the numbers are in docs/PERF.md, "CPU"), with
 *   qmm bench --shape 4608x1024 --n 1,2,3,4,6,8 --strategy gemv,fused --iters 9 --csv
 *   qmm bench --shape 4608x1024,1024x4608 --n 1,2,4,8,16 --strategy gemv,int8,fused --iters 9
 *             --types q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K --csv
 *   qmm bench --shape 4608x1024,1024x4608,3072x1024,1024x1024,512x1024 --types q4_0,q8_0,q4_K
 *             --strategy int8,fused --n 16,17,20,24,32,33,40,48 --iters 9 --csv
 *   qmm bench --shape 4608x1024,1024x4608 --types q4_1,q5_0,q5_1,q5_K --strategy int8,fused
 *             --n 8,12,16,24,32,48 --iters 7 --csv
 * int8_max_n is the largest n where int8 beat both gemv and fused on every shape; gemv_max_n
 * the largest n where gemv beat fused. Below the amx level nothing is measured yet: the
 * default row (gemv through n = 8, the decode regime) stands until it is.
 *
 * aarch64 (levels neon, dotprod, i8mm): NOTHING IS MEASURED (no ARM machine was available;
 * docs/ARM64.md). The default row there is chosen from instruction counts, not timings: the
 * int8 strategy for n = 1..8 where an int8 kernel exists for the type (about 10-20
 * instructions per 32 weights against ~100 for the portable f32 path's decode and panel),
 * else gemv through n = 8 (gemv_neon for f32/f16/bf16), fused above.
 */
#include "cpu/cpu_internal.h"

#define NO_INT8 1, 0

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
#endif
    {QMM_CPU_ISA_GENERIC, QMM_TYPE_COUNT, NO_INT8, 8}, /* none: the table is never empty */
};
/* The codebook rows (iq4_nl, iq4_xs, mxfp4, nvfp4): the strategies called alternately in one
 * process, and
 *   qmm bench --shape 4608x1024,1024x4608 --types iq4_nl,iq4_xs,mxfp4,nvfp4
 *             --strategy gemv,int8,fused --n 1,2,4,8,16,32,64,512 --iters 7 --csv
 * the numbers: docs/PERF.md, "CPU — the codebook types". */

/* The row for a (level, type) that has none: gemv through the decode regime, then fused.
 * At the amx level a type without a measured row has no fast gemv (only gemv_portable), so
 * fused_amx_bf16 from n = 1. */
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

qmm_cpu_auto_row qmm_cpu_auto_lookup(qmm_cpu_isa isa, qmm_type type) {
    for (size_t i = 0; i < sizeof auto_rows / sizeof auto_rows[0]; i++)
        if (auto_rows[i].isa == isa && auto_rows[i].type == type) return auto_rows[i];
    return default_row(isa, type);
}
