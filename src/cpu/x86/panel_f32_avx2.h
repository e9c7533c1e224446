/*
 * panel_f32_avx2.h — the AVX2 f32 panel kernel (panel_f32_avx2.c, built with -mavx2).
 * Portable declaration: call it only where the CPU has AVX2 (panel_f32.c's table registers
 * it for ISA levels avx2 and above).
 */
#ifndef QMM_CPU_X86_PANEL_F32_AVX2_H
#define QMM_CPU_X86_PANEL_F32_AVX2_H

#include <stdint.h>

/*
 * The f32 panel kernel of cpu_internal.h (qmm_cpu_panel_f32_fn) in the portable panel order,
 * bit for bit: for r < mr, j < nr, acc[j*ldacc + r] += (double) panel_dot(x row j, w row r,
 * len), 1 <= len <= QMM_CPU_KP, w QMM_CPU_ALIGN-aligned with ldw a multiple of 16, x any
 * alignment (never read past len in a row). Same results as qmm_cpu_panel_f32_portable,
 * NaN and Inf included (tests/test_panel.c).
 */
void qmm_cpu_panel_f32_avx2(int64_t mr, int64_t nr, int64_t len, const float *w, int64_t ldw,
                            const float *x, int64_t ldx, double *acc, int64_t ldacc);

#endif /* QMM_CPU_X86_PANEL_F32_AVX2_H */
