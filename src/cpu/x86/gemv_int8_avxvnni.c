/*
 * gemv_int8_avxvnni.c — the int8 gemv on native blocks with AVX-VNNI (vpdpbusd on ymm): the
 * kernels of gemv_int8_avx2_impl.h, the same source as gemv_int8_avx2.c with the dot product
 * of 4 byte pairs in one instruction. Built with -mavxvnni; runs only where the CPU has it.
 */
#define QMM_I8_AVXVNNI 1
#include "cpu/x86/gemv_int8_avx2_impl.h"
