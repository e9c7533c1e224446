/*
 * gemm_int8_avxvnni.c — the AVX2 int8 GEMM's kernel with AVX-VNNI (vpdpbusd, vpdpwssd on ymm):
 * gemm_int8_avx2_impl.h compiled with QMM_X8_VNNI 1. Same bits as the vpmaddubsw kernel of
 * gemm_int8_avx2.c (the integer sums are exact in both). Built with -mavx2 -mfma -mf16c
 * -mavxvnni (CMakeLists.txt: files ending _avxvnni.c); called only where the CPU has AVX-VNNI.
 */
#define QMM_X8_VNNI 1
#define QMM_X8_TASK qmm_x8_task_avxvnni
#include "cpu/x86/gemm_int8_avx2_impl.h"
