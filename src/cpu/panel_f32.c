/*
 * panel_f32.c — the portable f32 panel kernel (contract in cpu_internal.h) and the table
 * the f32 paths choose their panel kernel from.
 *
 * Plain C for baseline x86-64 (no -m flags): the lane loops have a constant trip count of
 * QMM_CPU_LANES so gcc -O3 turns each lane array into SSE registers. Four W rows are done
 * per X row (4 x 8 lane accumulators = 8 xmm registers) so each X load feeds four rows.
 * No reassociation happens: the compiler keeps every lane's adds in order (no -ffast-math).
 */
#include "cpu/cpu_internal.h"
#if defined(QMM_ARCH_X86_64)
#include "cpu/x86/panel_f32_avx2.h"
#endif

/* Add panel dots of one X row with four W rows (w0..w3) into out[0..3]. */
static void dot_1x4(int64_t len, const float *restrict x, const float *restrict w0,
                    const float *restrict w1, const float *restrict w2,
                    const float *restrict w3, double *restrict out) {
    float a0[QMM_CPU_LANES] = {0}, a1[QMM_CPU_LANES] = {0};
    float a2[QMM_CPU_LANES] = {0}, a3[QMM_CPU_LANES] = {0};
    int64_t p = 0;
    for (; p + QMM_CPU_LANES <= len; p += QMM_CPU_LANES) {
        for (int l = 0; l < QMM_CPU_LANES; l++) {
            float xv = x[p + l];
            a0[l] += xv * w0[p + l];
            a1[l] += xv * w1[p + l];
            a2[l] += xv * w2[p + l];
            a3[l] += xv * w3[p + l];
        }
    }
    /* Tail: element p + l goes to lane l. A constant-trip loop with a guard (not a loop to
     * len) keeps the lane arrays in registers in the main loop above. */
    for (int l = 0; l < QMM_CPU_LANES; l++) {
        if (p + l < len) {
            float xv = x[p + l];
            a0[l] += xv * w0[p + l];
            a1[l] += xv * w1[p + l];
            a2[l] += xv * w2[p + l];
            a3[l] += xv * w3[p + l];
        }
    }
    out[0] += (double)qmm_cpu_lane_reduce(a0);
    out[1] += (double)qmm_cpu_lane_reduce(a1);
    out[2] += (double)qmm_cpu_lane_reduce(a2);
    out[3] += (double)qmm_cpu_lane_reduce(a3);
}

/* Add the panel dot of one X row with one W row into *out (same order as dot_1x4). */
static void dot_1x1(int64_t len, const float *restrict x, const float *restrict w,
                    double *restrict out) {
    float a[QMM_CPU_LANES] = {0};
    int64_t p = 0;
    for (; p + QMM_CPU_LANES <= len; p += QMM_CPU_LANES)
        for (int l = 0; l < QMM_CPU_LANES; l++) a[l] += x[p + l] * w[p + l];
    for (int l = 0; l < QMM_CPU_LANES; l++)
        if (p + l < len) a[l] += x[p + l] * w[p + l];
    *out += (double)qmm_cpu_lane_reduce(a);
}

void qmm_cpu_panel_f32_portable(int64_t mr, int64_t nr, int64_t len, const float *w,
                                int64_t ldw, const float *x, int64_t ldx, double *acc,
                                int64_t ldacc) {
    for (int64_t j = 0; j < nr; j++) {
        const float *xj = x + j * ldx;
        double *aj = acc + j * ldacc;
        int64_t r = 0;
        for (; r + 4 <= mr; r += 4) {
            const float *wr = w + r * ldw;
            dot_1x4(len, xj, wr, wr + ldw, wr + 2 * ldw, wr + 3 * ldw, aj + r);
        }
        for (; r < mr; r++) dot_1x1(len, xj, w + r * ldw, aj + r);
    }
}

#if defined(QMM_ARCH_X86_64)
/* The AVX2 kernel runs at levels avx2 and above (the context checked the CPU has them). */
static bool at_least_avx2(qmm_cpu_isa isa) { return isa >= QMM_CPU_ISA_AVX2; }
#endif

/* Best first. ISA kernels (src/cpu/x86/panel_f32_avx2.c, ...) are added above "portable". */
static const qmm_cpu_panel_f32_kernel panel_kernels[] = {
#if defined(QMM_ARCH_X86_64)
    {.name = "avx2", .available = at_least_avx2, .exact_order = true,
     .run = qmm_cpu_panel_f32_avx2},
#endif
    {.name = "portable", .available = NULL, .exact_order = true,
     .run = qmm_cpu_panel_f32_portable},
};

const qmm_cpu_panel_f32_kernel *qmm_cpu_panel_f32_select(qmm_cpu_isa isa) {
    const size_t count = sizeof panel_kernels / sizeof panel_kernels[0];
    for (size_t i = 0; i < count; i++)
        if (panel_kernels[i].available == NULL || panel_kernels[i].available(isa))
            return &panel_kernels[i];
    return &panel_kernels[count - 1];
}
