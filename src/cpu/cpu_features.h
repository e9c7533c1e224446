/*
 * cpu_features.h — what the CPU and the operating system let the CPU backend use.
 *
 * x86-64: detection reads CPUID (instruction-set bits) and XGETBV (which register states the
 * OS saves: YMM for AVX2, ZMM/opmask for AVX-512, XTILECFG/XTILEDATA for AMX). On Linux the
 * AMX tile data state is disabled per process until asked for with
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18); qmm asks once, on first use.
 * aarch64: detection reads the kernel's hardware capabilities, getauxval(AT_HWCAP) and
 * getauxval(AT_HWCAP2) (Linux; Documentation/arch/arm64/elf_hwcaps.rst), which already say
 * what the OS enables (e.g. SVE state).
 * Other 64-bit targets: no SIMD kernels, the generic level only.
 *
 * The backend runs one ISA level, chosen at context creation: the highest level the CPU
 * and OS support, or the one named by the environment variable QMM_CPU_ISA
 * (x86-64: generic|avx2|avx512|amx; aarch64: generic|neon|dotprod|i8mm). Naming a level this
 * machine lacks, or a level of another architecture, is an error. Levels are cumulative:
 * amx implies avx512 implies avx2; i8mm implies dotprod implies neon.
 *
 * Which kernel set a build holds follows the compiler's target (__x86_64__, __aarch64__),
 * unless the build defines QMM_NO_SIMD_KERNELS (CMake: QMM_SIMD=OFF, or a processor without
 * a kernel set): then only the generic level exists. QMM_ARCH_X86_64 / QMM_ARCH_AARCH64 below
 * say which set it is; code that names a level or a kernel of one set is compiled under them.
 */
#ifndef QMM_CPU_FEATURES_H
#define QMM_CPU_FEATURES_H

#include <stdbool.h>

#include "qmm.h"

#if !defined(QMM_NO_SIMD_KERNELS) && defined(__x86_64__)
#  define QMM_ARCH_X86_64 1  /* src/cpu/x86/ is built */
#elif !defined(QMM_NO_SIMD_KERNELS) && defined(__aarch64__)
#  define QMM_ARCH_AARCH64 1 /* src/cpu/arm/ is built */
#endif

/** ISA levels of the CPU backend, lowest to highest: one ordered set per architecture
 * (the values compare within a build; the names say which set). */
typedef enum qmm_cpu_isa {
    QMM_CPU_ISA_GENERIC = 0, /**< portable C only */
#if defined(QMM_ARCH_X86_64)
    QMM_CPU_ISA_AVX2 = 1,    /**< AVX2 + FMA + F16C, OS saves YMM */
    QMM_CPU_ISA_AVX512 = 2,  /**< AVX-512 F/BW/VL/DQ/VNNI, OS saves ZMM and opmask */
    QMM_CPU_ISA_AMX = 3,     /**< AMX-TILE/INT8/BF16 + AVX512-BF16, tile data permitted */
    QMM_CPU_ISA_COUNT = 4
#elif defined(QMM_ARCH_AARCH64)
    QMM_CPU_ISA_NEON = 1,    /**< FP + Advanced SIMD (HWCAP_FP, HWCAP_ASIMD; Armv8.0) */
    QMM_CPU_ISA_DOTPROD = 2, /**< neon + SDOT/UDOT (HWCAP_ASIMDDP; Armv8.2 DotProd) */
    QMM_CPU_ISA_I8MM = 3,    /**< dotprod + SMMLA/UMMLA/USMMLA (HWCAP2_I8MM; Armv8.6 I8MM) */
    QMM_CPU_ISA_COUNT = 4
#else
    QMM_CPU_ISA_COUNT = 1
#endif
} qmm_cpu_isa;

/** Raw feature bits: x86-64 CPUID and XGETBV (and the AMX permission request), aarch64
 * AT_HWCAP / AT_HWCAP2. */
typedef struct qmm_cpu_features {
    bool avx2, fma, f16c;
    bool avx_vnni;    /**< AVX-VNNI: vpdpbusd on xmm/ymm (VEX), CPUID.(7,1):EAX[4] */
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16, avx512fp16;
    bool amx_tile, amx_int8, amx_bf16;
    bool os_ymm;      /**< XCR0 bits 1-2: SSE and AVX state enabled */
    bool os_zmm;      /**< XCR0 bits 5-7: opmask, ZMM_Hi256, Hi16_ZMM enabled */
    bool os_amx;      /**< XCR0 bits 17-18: XTILECFG and XTILEDATA enabled */
    bool amx_permitted; /**< Linux granted tile data use to this process */
    /* aarch64 (AT_HWCAP, AT_HWCAP2); all false elsewhere */
    bool fp, asimd;   /**< HWCAP_FP, HWCAP_ASIMD: scalar FP and Advanced SIMD (NEON) */
    bool fphp, asimdhp; /**< HWCAP_FPHP, HWCAP_ASIMDHP: half-precision arithmetic (Armv8.2) */
    bool asimddp;     /**< HWCAP_ASIMDDP: SDOT/UDOT */
    bool i8mm;        /**< HWCAP2_I8MM: SMMLA/UMMLA/USMMLA, USDOT */
    bool bf16;        /**< HWCAP2_BF16: BFDOT/BFMMLA */
    bool sve, sve2;   /**< HWCAP_SVE, HWCAP2_SVE2 (reported; no kernel uses SVE) */
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

/** "generic", then "avx2", "avx512", "amx" (x86-64) or "neon", "dotprod", "i8mm" (aarch64);
 * NULL for a value outside this build's levels. */
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
