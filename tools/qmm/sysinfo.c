/* sysinfo.c — CPU name, features, cache size and memory bandwidth (see sysinfo.h). */
#include "sysinfo.h"

#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_features.h"

double sysinfo_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sysinfo_cpu_name(char *buf, size_t len) {
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (v == NULL) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strcspn(v, "\n");
        snprintf(buf, len, "%.*s", (int)n, v);
        break;
    }
    fclose(f);
}

void sysinfo_cpu_features(char *buf, size_t len) {
    /* The library's own detection (x86-64: CPUID + XGETBV + the Linux AMX permission;
     * aarch64: AT_HWCAP / AT_HWCAP2), so the header lists exactly what qmm's CPU backend
     * sees. */
    const qmm_cpu_features *c = qmm_cpu_features_get();
    const bool ymm = c->os_ymm, zmm = c->os_ymm && c->os_zmm, amx = c->os_amx && c->amx_permitted;
    struct { const char *name; bool on; } f[] = {
        {"avx2", ymm && c->avx2},
        {"fma", ymm && c->fma},
        {"f16c", ymm && c->f16c},
        {"avx-vnni", ymm && c->avx_vnni},
        {"avx512f", zmm && c->avx512f},
        {"avx512bw", zmm && c->avx512bw},
        {"avx512vl", zmm && c->avx512vl},
        {"avx512vnni", zmm && c->avx512vnni},
        {"avx512bf16", zmm && c->avx512bf16},
        {"amx-tile", amx && c->amx_tile},
        {"amx-int8", amx && c->amx_int8},
        {"amx-bf16", amx && c->amx_bf16},
        {"asimd", c->asimd},
        {"asimdhp", c->asimdhp},
        {"asimddp", c->asimddp},
        {"i8mm", c->i8mm},
        {"bf16", c->bf16},
        {"sve", c->sve},
        {"sve2", c->sve2},
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (!f[i].on) continue;
        int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", f[i].name);
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
}

const char *sysinfo_cpu_isa(void) {
    static char buf[48];
    qmm_cpu_isa isa;
    bool vnni = false;
    if (qmm_cpu_isa_select(&isa) != QMM_OK || qmm_cpu_avx_vnni_select(isa, &vnni) != QMM_OK)
        return "unavailable";
    /* the AVX-VNNI kernels run at level avx2 only (higher levels have their own) */
#if defined(QMM_ARCH_X86_64)
    const bool avx_vnni_level = isa == QMM_CPU_ISA_AVX2 && vnni;
#else
    const bool avx_vnni_level = false && vnni;
#endif
    snprintf(buf, sizeof buf, "%s%s", qmm_cpu_isa_name(isa), avx_vnni_level ? "+avx-vnni" : "");
    return buf;
}

static size_t sysfs_cache_bytes(int index) {
    char path[128], text[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    size_t v = 0;
    if (fgets(text, sizeof text, f)) {
        char *end;
        unsigned long long n = strtoull(text, &end, 10);
        if (end != text) {
            v = (size_t)n;
            if (*end == 'K') v *= 1024;
            else if (*end == 'M') v *= 1024 * 1024;
        }
    }
    fclose(f);
    return v;
}

size_t sysinfo_llc_bytes(void) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l3 > 0) return (size_t)l3;
    size_t best = 0;
    for (int i = 0; i < 8; i++) {
        size_t v = sysfs_cache_bytes(i);
        if (v > best) best = v;
    }
    if (best > 0) return best;
    return l2 > 0 ? (size_t)l2 : 0;
}

void *sysinfo_stream_buffer_alloc(size_t bytes, int threads) {
    bytes = (bytes + 63) / 64 * 64;
    uint64_t *p = aligned_alloc(64, bytes);
    if (p == NULL) return NULL;
    const int64_t words = (int64_t)(bytes / sizeof *p);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < words; i++) p[i] = (uint64_t)i * 0x9E3779B97F4A7C15ull;
    return p;
}

unsigned long long sysinfo_stream_read(const void *buf, size_t bytes, int threads) {
    const uint64_t *p = buf;
    const int64_t words = (int64_t)(bytes / sizeof *p);
    uint64_t acc = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(^ : acc)
    for (int64_t i = 0; i < words; i++) acc ^= p[i];
    return acc;
}

double sysinfo_read_bandwidth(const void *buf, size_t bytes, int threads, double seconds) {
    volatile unsigned long long sink = 0;
    sink ^= sysinfo_stream_read(buf, bytes, threads); /* warm the threads and the TLB */
    double best = 0.0, start = sysinfo_now();
    for (int pass = 0; pass < 2 || sysinfo_now() - start < seconds; pass++) {
        double t0 = sysinfo_now();
        sink ^= sysinfo_stream_read(buf, bytes, threads);
        double dt = sysinfo_now() - t0;
        if (dt > 0 && bytes / dt > best) best = bytes / dt;
        if (pass >= 1000) break;
    }
    (void)sink;
    return best / 1e9;
}
