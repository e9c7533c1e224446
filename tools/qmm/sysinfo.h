/*
 * sysinfo.h — what the benchmark header says about the machine: CPU model name, the ISA
 * features qmm's kernels could use, the last-level cache size, and a measured memory read
 * bandwidth.
 */
#ifndef QMM_TOOL_SYSINFO_H
#define QMM_TOOL_SYSINFO_H

#include <stddef.h>

/* CPU model name from /proc/cpuinfo ("model name"), or "unknown". Writes at most len bytes. */
void sysinfo_cpu_name(char *buf, size_t len);

/* Space-separated ISA features that CPUID reports AND the OS has enabled (XCR0, and for
 * AMX the Linux permission), as the library's CPU backend detects them (cpu_features.h):
 * avx2 fma f16c avx512f avx512bw avx512vl avx512vnni avx512bf16 amx-tile amx-int8 amx-bf16;
 * on aarch64 the AT_HWCAP / AT_HWCAP2 bits asimd asimdhp asimddp i8mm bf16 sve sve2. */
void sysinfo_cpu_features(char *buf, size_t len);

/* The ISA level a CPU context runs ("generic", "avx2", "avx512", "amx"; on aarch64
 * "generic", "neon", "dotprod", "i8mm"; QMM_CPU_ISA may lower it), or "unavailable" if QMM_CPU_ISA names a level this machine lacks. */
const char *sysinfo_cpu_isa(void);

/* Size in bytes of the largest data/unified cache level (L3, else L2), 0 if unknown. */
size_t sysinfo_llc_bytes(void);

/*
 * A buffer of `bytes` for memory-bandwidth measurement and cache flushing, first touched by
 * `threads` OpenMP threads (so its pages sit near the threads that read it). NULL if out
 * of memory. Free with free().
 */
void *sysinfo_stream_buffer_alloc(size_t bytes, int threads);

/*
 * Read `bytes` of `buf` with `threads` OpenMP threads once and return a value derived from
 * it (so the reads cannot be optimized out). Used to evict the caches between timed calls.
 */
unsigned long long sysinfo_stream_read(const void *buf, size_t bytes, int threads);

/*
 * Measured read bandwidth in GB/s (1e9 bytes/s): repeated multi-threaded reads of `buf`
 * (which should be larger than the last-level cache) for about `seconds`; the best pass.
 */
double sysinfo_read_bandwidth(const void *buf, size_t bytes, int threads, double seconds);

/* Monotonic clock in seconds. */
double sysinfo_now(void);

#endif /* QMM_TOOL_SYSINFO_H */
