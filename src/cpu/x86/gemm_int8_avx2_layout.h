/*
 * gemm_int8_avx2_layout.h — byte offsets inside the records of the AVX2 int8 GEMM, shared by
 * the packer (pack_int8_x8.c), the X quantizer and the kernels (gemm_int8_avx2*.c). The W
 * record is described in gemm_int8_avx2.h.
 *
 * X is held in quads of 4 rows (n padded to a multiple of 4 with zero rows); quad q's k/32
 * block records are consecutive, record (q, c) at xq + (q * (k / 32) + c) * QMM_X8_XREC:
 *   [0, 128)    the int8 quants of block c of the 4 rows, row j at 32 j;
 *   [128, 144)  4 floats dx_j;  [144, 160) 4 floats s_j = dx_j * sum(q_j);
 *   [160, 176)  4 int32 -offset * sum(q_j) (the type's offset);
 *   [176, 192)  4 int32 words: (sum of q_j over elements 0..15, over 16..31) as int16 pairs.
 */
#ifndef QMM_CPU_X86_GEMM_INT8_AVX2_LAYOUT_H
#define QMM_CPU_X86_GEMM_INT8_AVX2_LAYOUT_H

/* Offsets from the end of a record's quants (qmm_x86_int8_x8.qbytes). */
#define QMM_X8_REC_D 0       /* 8 float scales */
#define QMM_X8_REC_MN 32     /* 8 float mins (min types) */
#define QMM_X8_REC_SC 32     /* K16: (sc0, sc1) int16 pairs */
#define QMM_X8_REC_M01 64    /* q2_K: (m0, m1) */
#define QMM_X8_REC_NDMIN 96  /* q2_K: 8 floats -dmin */

#define QMM_X8_XREC 192      /* bytes of one X quad record */
#define QMM_X8_XR_DX 128
#define QMM_X8_XR_S 144
#define QMM_X8_XR_OFF 160
#define QMM_X8_XR_SX 176

/* The kernels' task: the 4 x 8 tiles of W groups [g0, g1) x X quads [q0, q1) (quantized X at
 * xq) into y (gemm_int8_avx2_impl.h): vpmaddubsw (gemm_int8_avx2.c) or AVX-VNNI
 * (gemm_int8_avxvnni.c). */
#include <stdint.h>

#include "cpu/x86/gemm_int8_avx2.h"

void qmm_x8_task_avx2(const qmm_x86_int8_x8 *w, const unsigned char *xq, int64_t n, int64_t g0,
                      int64_t g1, int64_t q0, int64_t q1, float *y, int64_t ldy);
void qmm_x8_task_avxvnni(const qmm_x86_int8_x8 *w, const unsigned char *xq, int64_t n,
                         int64_t g0, int64_t g1, int64_t q0, int64_t q1, float *y, int64_t ldy);

#endif /* QMM_CPU_X86_GEMM_INT8_AVX2_LAYOUT_H */
