/*
 * cpu_features.h — what the x86 CPU and the operating system let the CPU backend use.
 *
 * Detection reads CPUID (instruction-set bits) and XGETBV (which register states the OS
 * saves: YMM for AVX2, ZMM/opmask for AVX-512, XTILECFG/XTILEDATA for AMX). On Linux the
 * AMX tile data state is disabled per process until asked for with
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18); qmm asks once, on first use.
 *
 * The backend runs one ISA level, chosen at context creation: the highest level the CPU
 * and OS support, or the one named by the environment variable QMM_CPU_ISA
 * (generic|avx2|avx512|amx). Naming a level this machine lacks is an error.
 * Levels are cumulative: amx implies avx512 implies avx2.
 */
#ifndef QMM_CPU_FEATURES_H
#define QMM_CPU_FEATURES_H

#include <stdbool.h>

#include "qmm.h"

/** ISA levels of the CPU backend, lowest to highest. */
typedef enum qmm_cpu_isa {
    QMM_CPU_ISA_GENERIC = 0, /**< portable C only */
    QMM_CPU_ISA_AVX2 = 1,    /**< AVX2 + FMA + F16C, OS saves YMM */
    QMM_CPU_ISA_AVX512 = 2,  /**< AVX-512 F/BW/VL/DQ/VNNI, OS saves ZMM and opmask */
    QMM_CPU_ISA_AMX = 3,     /**< AMX-TILE/INT8/BF16 + AVX512-BF16, tile data permitted */
    QMM_CPU_ISA_COUNT = 4
} qmm_cpu_isa;

/** Raw feature bits found by CPUID and XGETBV (and the AMX permission request). */
typedef struct qmm_cpu_features {
    bool avx2, fma, f16c;
    bool avx_vnni;    /**< AVX-VNNI: vpdpbusd on xmm/ymm (VEX), CPUID.(7,1):EAX[4] */
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16, avx512fp16;
    bool amx_tile, amx_int8, amx_bf16;
    bool os_ymm;      /**< XCR0 bits 1-2: SSE and AVX state enabled */
    bool os_zmm;      /**< XCR0 bits 5-7: opmask, ZMM_Hi256, Hi16_ZMM enabled */
    bool os_amx;      /**< XCR0 bits 17-18: XTILECFG and XTILEDATA enabled */
    bool amx_permitted; /**< Linux granted tile data use to this process */
} qmm_cpu_features;

/** The machine's features, detected once (thread-safe). Never NULL. */
const qmm_cpu_features *qmm_cpu_features_get(void);

/** The CPU's model name: the CPUID brand string (leaves 0x80000002..4) with surrounding
 * spaces removed, e.g. "Intel(R) Xeon(R) Processor"; "unknown" where CPUID has none. Detected
 * once (thread-safe); never NULL. */
const char *qmm_cpu_brand(void);

/** The highest ISA level this CPU and OS can run (AMX only if the permission was granted). */
qmm_cpu_isa qmm_cpu_isa_best(void);

/** True if this machine can run `isa` (every level up to qmm_cpu_isa_best). */
bool qmm_cpu_isa_supported(qmm_cpu_isa isa);

/** "generic", "avx2", "avx512", "amx"; NULL for an unknown value. */
const char *qmm_cpu_isa_name(qmm_cpu_isa isa);

/** Parse a level name (as qmm_cpu_isa_name). Errors: QMM_ERR_INVALID_ARGUMENT if unknown. */
qmm_status qmm_cpu_isa_from_name(const char *name, qmm_cpu_isa *out);

/**
 * The level a new CPU context runs: QMM_CPU_ISA from the environment if set, otherwise
 * qmm_cpu_isa_best(). Errors: QMM_ERR_INVALID_ARGUMENT for an unknown name in QMM_CPU_ISA,
 * QMM_ERR_UNSUPPORTED when it names a level this CPU/OS lacks (the sentence says which
 * feature is missing). `out` is set only on success.
 */
qmm_status qmm_cpu_isa_select(qmm_cpu_isa *out);

/**
 * Whether a new CPU context at level `isa` may run the AVX-VNNI kernels (int8 on ymm): the
 * level is avx2 or above, the CPU has AVX-VNNI, and the environment variable QMM_CPU_AVX_VNNI
 * is not "off" (nor "0"); "off" makes an AVX-VNNI machine run the AVX2 kernels that AVX2-only
 * CPUs run (for tests and measurements). Errors: QMM_ERR_INVALID_ARGUMENT for a value other
 * than "off", "0", "auto" or empty. `out` is set only on success.
 */
qmm_status qmm_cpu_avx_vnni_select(qmm_cpu_isa isa, bool *out);

#endif /* QMM_CPU_FEATURES_H */
