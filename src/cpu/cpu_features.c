/*
 * cpu_features.c — CPUID/XGETBV detection, the Linux AMX permission request, the aarch64
 * hardware-capability detection, and the QMM_CPU_ISA override. Bit positions: Intel SDM vol.
 * 2A (CPUID leaf 1 and leaf 7) and vol. 1 ch. 13 (XCR0); the permission call: Linux
 * Documentation/arch/x86/xstate.rst; aarch64: Linux arch/arm64/include/uapi/asm/hwcap.h and
 * Documentation/arch/arm64/elf_hwcaps.rst.
 * This file must stay free of ISA-specific compiler flags: it only reads bits.
 */
#include "cpu/cpu_features.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#if defined(__x86_64__) || defined(__i386__)
#  include <cpuid.h>
#  define QMM_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)
#  include <sys/auxv.h>
#  define QMM_ARM64_HWCAP 1
/* The bits of AT_HWCAP / AT_HWCAP2 read here (stable Linux ABI; the values of asm/hwcap.h). */
#  define QMM_HWCAP_FP (1ul << 0)
#  define QMM_HWCAP_ASIMD (1ul << 1)
#  define QMM_HWCAP_FPHP (1ul << 9)
#  define QMM_HWCAP_ASIMDHP (1ul << 10)
#  define QMM_HWCAP_ASIMDDP (1ul << 20)
#  define QMM_HWCAP_SVE (1ul << 22)
#  define QMM_HWCAP2_SVE2 (1ul << 1)
#  define QMM_HWCAP2_I8MM (1ul << 13)
#  define QMM_HWCAP2_BF16 (1ul << 14)
#endif
#if defined(__linux__) && defined(__x86_64__)
#  include <sys/syscall.h>
#  include <unistd.h>
#  define QMM_ARCH_GET_XCOMP_PERM 0x1022
#  define QMM_ARCH_REQ_XCOMP_PERM 0x1023
#  define QMM_XFEATURE_XTILEDATA 18
#endif

static qmm_cpu_features g_features;
static char g_brand[49];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(QMM_X86)
static uint64_t read_xcr0(void) {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((uint64_t)edx << 32) | eax;
}

/* Ask Linux for permission to use AMX tile data in this process (idempotent). */
static bool request_amx_permission(void) {
#if defined(QMM_ARCH_REQ_XCOMP_PERM)
    if (syscall(SYS_arch_prctl, QMM_ARCH_REQ_XCOMP_PERM, QMM_XFEATURE_XTILEDATA) != 0)
        return false;
    unsigned long mask = 0;
    if (syscall(SYS_arch_prctl, QMM_ARCH_GET_XCOMP_PERM, &mask) != 0) return false;
    return (mask >> QMM_XFEATURE_XTILEDATA) & 1u;
#else
    return false;
#endif
}
#endif

/* The brand string of CPUID leaves 0x80000002..0x80000004 (48 bytes, NUL-padded), trimmed. */
static void detect_brand(void) {
    snprintf(g_brand, sizeof g_brand, "unknown");
#if defined(QMM_X86)
    unsigned r[12];
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000004u) return;
    for (unsigned i = 0; i < 3; i++)
        __cpuid(0x80000002u + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
    char raw[49];
    memcpy(raw, r, 48);
    raw[48] = '\0';
    const char *s = raw;
    while (*s == ' ') s++;
    size_t len = strlen(s);
    while (len > 0 && s[len - 1] == ' ') len--;
    if (len > 0) snprintf(g_brand, sizeof g_brand, "%.*s", (int)len, s);
#endif
}

static void detect(void) {
    qmm_cpu_features *f = &g_features;
    memset(f, 0, sizeof *f);
    detect_brand();
#if defined(QMM_X86)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    bool osxsave = (c >> 27) & 1u;
    f->fma = (c >> 12) & 1u;
    f->f16c = (c >> 29) & 1u;
    bool avx = (c >> 28) & 1u;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f->avx2 = (b >> 5) & 1u;
        f->avx512f = (b >> 16) & 1u;
        f->avx512dq = (b >> 17) & 1u;
        f->avx512bw = (b >> 30) & 1u;
        f->avx512vl = (b >> 31) & 1u;
        f->avx512vnni = (c >> 11) & 1u;
        f->amx_bf16 = (d >> 22) & 1u;
        f->avx512fp16 = (d >> 23) & 1u;
        f->amx_tile = (d >> 24) & 1u;
        f->amx_int8 = (d >> 25) & 1u;
        __cpuid_count(7, 1, a, b, c, d);
        f->avx_vnni = (a >> 4) & 1u;
        f->avx512bf16 = (a >> 5) & 1u;
    }
    if (osxsave && avx) {
        uint64_t xcr0 = read_xcr0();
        f->os_ymm = (xcr0 & 0x6) == 0x6;
        f->os_zmm = f->os_ymm && (xcr0 & 0xe0) == 0xe0;
        f->os_amx = f->os_zmm && (xcr0 & 0x60000) == 0x60000;
    }
    if (f->os_amx && f->amx_tile && f->amx_bf16 && f->amx_int8)
        f->amx_permitted = request_amx_permission();
#elif defined(QMM_ARM64_HWCAP)
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->fp = (hw & QMM_HWCAP_FP) != 0;
    f->asimd = (hw & QMM_HWCAP_ASIMD) != 0;
    f->fphp = (hw & QMM_HWCAP_FPHP) != 0;
    f->asimdhp = (hw & QMM_HWCAP_ASIMDHP) != 0;
    f->asimddp = (hw & QMM_HWCAP_ASIMDDP) != 0;
    f->sve = (hw & QMM_HWCAP_SVE) != 0;
    f->sve2 = (hw2 & QMM_HWCAP2_SVE2) != 0;
    f->i8mm = (hw2 & QMM_HWCAP2_I8MM) != 0;
    f->bf16 = (hw2 & QMM_HWCAP2_BF16) != 0;
#endif
}

const qmm_cpu_features *qmm_cpu_features_get(void) {
    pthread_once(&g_once, detect);
    return &g_features;
}

const char *qmm_cpu_brand(void) {
    pthread_once(&g_once, detect);
    return g_brand;
}

/* The first feature `isa` needs that this machine lacks, or NULL if it has them all. */
static const char *missing_feature(qmm_cpu_isa isa) {
    const qmm_cpu_features *f = qmm_cpu_features_get();
    (void)f;
#if defined(QMM_ARCH_X86_64)
    if (isa >= QMM_CPU_ISA_AVX2) {
        if (!f->avx2) return "the CPU lacks AVX2";
        if (!f->fma) return "the CPU lacks FMA";
        if (!f->f16c) return "the CPU lacks F16C";
        if (!f->os_ymm) return "the OS does not enable AVX (YMM) state in XCR0";
    }
    if (isa >= QMM_CPU_ISA_AVX512) {
        if (!f->avx512f) return "the CPU lacks AVX512F";
        if (!f->avx512bw) return "the CPU lacks AVX512BW";
        if (!f->avx512vl) return "the CPU lacks AVX512VL";
        if (!f->avx512dq) return "the CPU lacks AVX512DQ";
        if (!f->avx512vnni) return "the CPU lacks AVX512-VNNI";
        if (!f->os_zmm) return "the OS does not enable AVX-512 (ZMM, opmask) state in XCR0";
    }
    if (isa >= QMM_CPU_ISA_AMX) {
        if (!f->avx512bf16) return "the CPU lacks AVX512-BF16";
        if (!f->amx_tile) return "the CPU lacks AMX-TILE";
        if (!f->amx_bf16) return "the CPU lacks AMX-BF16";
        if (!f->amx_int8) return "the CPU lacks AMX-INT8";
        if (!f->os_amx) return "the OS does not enable AMX tile state in XCR0";
        if (!f->amx_permitted)
            return "Linux refused AMX tile data (arch_prctl ARCH_REQ_XCOMP_PERM)";
    }
#elif defined(QMM_ARCH_AARCH64)
#  if !defined(QMM_ARM64_HWCAP)
    if (isa >= QMM_CPU_ISA_NEON) return "no hardware-capability detection on this OS (Linux only)";
#  endif
    if (isa >= QMM_CPU_ISA_NEON) {
        if (!f->fp) return "the CPU lacks FP (HWCAP_FP)";
        if (!f->asimd) return "the CPU lacks Advanced SIMD (HWCAP_ASIMD)";
    }
    if (isa >= QMM_CPU_ISA_DOTPROD && !f->asimddp)
        return "the CPU lacks the dot product instructions (HWCAP_ASIMDDP)";
    if (isa >= QMM_CPU_ISA_I8MM && !f->i8mm)
        return "the CPU lacks the int8 matrix multiply instructions (HWCAP2_I8MM)";
#endif
    return NULL;
}

bool qmm_cpu_isa_supported(qmm_cpu_isa isa) {
    if ((int)isa < 0 || isa >= QMM_CPU_ISA_COUNT) return false;
    return missing_feature(isa) == NULL;
}

qmm_cpu_isa qmm_cpu_isa_best(void) {
    qmm_cpu_isa best = QMM_CPU_ISA_GENERIC;
    for (int i = QMM_CPU_ISA_GENERIC + 1; i < QMM_CPU_ISA_COUNT; i++)
        if (qmm_cpu_isa_supported((qmm_cpu_isa)i)) best = (qmm_cpu_isa)i;
        else break;
    return best;
}

static const char *const isa_names[QMM_CPU_ISA_COUNT] = {
    "generic",
#if defined(QMM_ARCH_X86_64)
    "avx2", "avx512", "amx",
#elif defined(QMM_ARCH_AARCH64)
    "neon", "dotprod", "i8mm",
#endif
};
#if defined(QMM_ARCH_X86_64)
#  define ISA_NAMES_TEXT "generic, avx2, avx512 or amx"
#  define ISA_NAMES_LIST "generic, avx2, avx512, amx"
#  define ISA_ARCH_TEXT "x86-64"
#elif defined(QMM_ARCH_AARCH64)
#  define ISA_NAMES_TEXT "generic, neon, dotprod or i8mm"
#  define ISA_NAMES_LIST "generic, neon, dotprod, i8mm"
#  define ISA_ARCH_TEXT "aarch64"
#else
#  define ISA_NAMES_TEXT "generic"
#  define ISA_NAMES_LIST "generic"
#  define ISA_ARCH_TEXT "the portable C path"
#endif

/* Every level name of every kernel set and its architecture: a name of another set is a
 * level this build cannot run (QMM_ERR_UNSUPPORTED), not an unknown word. */
static const struct {
    const char *name, *arch;
} all_levels[] = {{"avx2", "x86-64"}, {"avx512", "x86-64"}, {"amx", "x86-64"},
                  {"neon", "aarch64"}, {"dotprod", "aarch64"}, {"i8mm", "aarch64"}};

static const char *foreign_arch(const char *name) {
    for (size_t i = 0; i < sizeof all_levels / sizeof all_levels[0]; i++)
        if (strcmp(name, all_levels[i].name) == 0) return all_levels[i].arch;
    return NULL;
}

const char *qmm_cpu_isa_name(qmm_cpu_isa isa) {
    if ((int)isa < 0 || isa >= QMM_CPU_ISA_COUNT) return NULL;
    return isa_names[isa];
}

qmm_status qmm_cpu_isa_from_name(const char *name, qmm_cpu_isa *out) {
    if (name == NULL || out == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_cpu_isa_from_name: NULL argument");
    for (int i = 0; i < QMM_CPU_ISA_COUNT; i++) {
        if (strcmp(name, isa_names[i]) == 0) {
            *out = (qmm_cpu_isa)i;
            return QMM_OK;
        }
    }
    return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                     "unknown CPU ISA level \"%s\" (expected " ISA_NAMES_TEXT ")", name);
}

qmm_status qmm_cpu_isa_select(qmm_cpu_isa *out) {
    const char *env = getenv("QMM_CPU_ISA");
    if (env == NULL || env[0] == '\0') {
        *out = qmm_cpu_isa_best();
        return QMM_OK;
    }
    qmm_cpu_isa isa = QMM_CPU_ISA_GENERIC;
    if (qmm_cpu_isa_from_name(env, &isa) != QMM_OK) {
        const char *arch = foreign_arch(env);
        if (arch != NULL)
            return qmm_error(QMM_ERR_UNSUPPORTED,
                             "QMM_CPU_ISA=%s is a level of %s; this build runs %s (levels "
                             ISA_NAMES_LIST ")", env, arch, ISA_ARCH_TEXT);
        return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                         "QMM_CPU_ISA=\"%s\" is not one of " ISA_NAMES_LIST, env);
    }
    const char *why = missing_feature(isa);
    if (why != NULL)
        return qmm_error(QMM_ERR_UNSUPPORTED,
                         "QMM_CPU_ISA=%s cannot run on this machine: %s (best level here: %s)",
                         env, why, isa_names[qmm_cpu_isa_best()]);
    *out = isa;
    return QMM_OK;
}

qmm_status qmm_cpu_avx_vnni_select(qmm_cpu_isa isa, bool *out) {
    const char *env = getenv("QMM_CPU_AVX_VNNI");
    bool allowed = true;
    if (env != NULL && env[0] != '\0') {
        if (strcmp(env, "off") == 0 || strcmp(env, "0") == 0) allowed = false;
        else if (strcmp(env, "auto") != 0)
            return qmm_error(QMM_ERR_INVALID_ARGUMENT,
                             "QMM_CPU_AVX_VNNI=\"%s\" is not one of off, 0, auto", env);
    }
#if defined(QMM_ARCH_X86_64)
    const qmm_cpu_features *f = qmm_cpu_features_get();
    *out = allowed && isa >= QMM_CPU_ISA_AVX2 && f->avx_vnni && f->os_ymm;
#else
    (void)isa;
    *out = false && allowed; /* no AVX-VNNI kernels outside x86-64 */
#endif
    return QMM_OK;
}
