/*
 * blocks.h — GGML block structs, shared by C and CUDA code.
 *
 * Byte layouts follow ggml's ggml-common.h (the authority, with gguf.quants). Every struct is
 * packed by construction (only uint8/int8/uint16 members after an aligned first member) and
 * its size is checked at compile time. f16 fields are stored as raw IEEE-754 binary16 bits.
 */
#ifndef QMM_FORMATS_BLOCKS_H
#define QMM_FORMATS_BLOCKS_H

#include <stdint.h>

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK_K 256
#define K_SCALE_SIZE 12

typedef uint16_t qmm_half; /* IEEE binary16 bits */
typedef uint16_t qmm_bf16; /* bfloat16 bits */

/* q4_0: value = (q - 8) * d; element j in the low nibble of qs[j], element j+16 in the high. */
typedef struct { qmm_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
/* q4_1: value = q * d + m. */
typedef struct { qmm_half d; qmm_half m; uint8_t qs[QK4_1 / 2]; } block_q4_1;
/* q5_0: value = (q - 16) * d; bit 4 of element j is bit j of the little-endian uint32 qh. */
typedef struct { qmm_half d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0;
/* q5_1: value = q * d + m. */
typedef struct { qmm_half d; qmm_half m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1;
/* q8_0: value = q * d. */
typedef struct { qmm_half d; int8_t qs[QK8_0]; } block_q8_0;

/* q2_K: 16 sub-blocks of 16; scales[i] = scale (low 4 bits) | min (high 4 bits);
 * value = d * sc * q - dmin * mn, q in 0..3. */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; qmm_half d; qmm_half dmin; } block_q2_K;
/* q3_K: 16 sub-blocks of 16; 6-bit signed scales (offset 32) packed in 12 bytes; hmask holds
 * the high bit (set = no subtraction of 4); value = d * (sc - 32) * (q - (hbit ? 0 : 4)). */
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; qmm_half d; } block_q3_K;
/* q4_K: 8 sub-blocks of 32; 6-bit scales and mins packed in 12 bytes;
 * value = d * sc * q - dmin * mn. */
typedef struct { qmm_half d; qmm_half dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
/* q5_K: as q4_K plus a fifth bit per element in qh. */
typedef struct { qmm_half d; qmm_half dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
/* q6_K: 16 sub-blocks of 16; value = d * scales[i] * (q - 32), q = 4 low bits | 2 high bits << 4. */
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; qmm_half d; } block_q6_K;
/* q8_K (activations only): value = q * d; bsums[i] = sum of qs[16i .. 16i+15]. */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;

/* The i-quants, ternary and FP4 types (ggml-common.h). Their element formulas are in each
 * type's codec (src/formats/codec_*.h); here only the byte layout. */
#define QK4_NL 32
#define QK_MXFP4 32
#define QK_NVFP4 64
#define QK_NVFP4_SUB 16

typedef struct { qmm_half d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
typedef struct { qmm_half d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
typedef struct { qmm_half d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; } block_iq2_s;
typedef struct { qmm_half d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
typedef struct { qmm_half d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; } block_iq3_s;
typedef struct { qmm_half d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
typedef struct { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } block_iq1_m;
typedef struct { qmm_half d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
typedef struct { qmm_half d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; } block_iq4_xs;
typedef struct { uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; uint8_t qh[QK_K / 64]; qmm_half d; } block_tq1_0;
typedef struct { uint8_t qs[QK_K / 4]; qmm_half d; } block_tq2_0;
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;
typedef struct { uint8_t d[QK_NVFP4 / QK_NVFP4_SUB]; uint8_t qs[QK_NVFP4 / 2]; } block_nvfp4;

/* Elements per block by type name, QMM_QK_<name> = the block_size of the type's layout
 * (the type table; for a unit-codec type qmm_layout_<name> in its codec): for code that needs
 * a type's block size as a compile-time constant from its name (X-macro lists:
 * formats/type_list.h, src/cpu/int8_types.h; C++ cannot read the layout object in a constant
 * expression; the CUDA descriptors, src/cuda/dequant.cuh, check the two agree at weights
 * creation). */
#define QMM_QK_q4_0 QK4_0
#define QMM_QK_q4_1 QK4_1
#define QMM_QK_q5_0 QK5_0
#define QMM_QK_q5_1 QK5_1
#define QMM_QK_q8_0 QK8_0
#define QMM_QK_q2_K QK_K
#define QMM_QK_q3_K QK_K
#define QMM_QK_q4_K QK_K
#define QMM_QK_q5_K QK_K
#define QMM_QK_q6_K QK_K
#define QMM_QK_iq2_xxs QK_K
#define QMM_QK_iq2_xs QK_K
#define QMM_QK_iq2_s QK_K
#define QMM_QK_iq3_xxs QK_K
#define QMM_QK_iq3_s QK_K
#define QMM_QK_iq1_s QK_K
#define QMM_QK_iq1_m QK_K
#define QMM_QK_iq4_nl QK4_NL
#define QMM_QK_iq4_xs QK_K
#define QMM_QK_tq1_0 QK_K
#define QMM_QK_tq2_0 QK_K
#define QMM_QK_mxfp4 QK_MXFP4
#define QMM_QK_nvfp4 QK_NVFP4

#if defined(__cplusplus)
#  define QMM_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#  define QMM_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
QMM_STATIC_ASSERT(sizeof(block_q4_0) == 18, "block_q4_0 size");
QMM_STATIC_ASSERT(sizeof(block_q4_1) == 20, "block_q4_1 size");
QMM_STATIC_ASSERT(sizeof(block_q5_0) == 22, "block_q5_0 size");
QMM_STATIC_ASSERT(sizeof(block_q5_1) == 24, "block_q5_1 size");
QMM_STATIC_ASSERT(sizeof(block_q8_0) == 34, "block_q8_0 size");
QMM_STATIC_ASSERT(sizeof(block_q2_K) == 84, "block_q2_K size");
QMM_STATIC_ASSERT(sizeof(block_q3_K) == 110, "block_q3_K size");
QMM_STATIC_ASSERT(sizeof(block_q4_K) == 144, "block_q4_K size");
QMM_STATIC_ASSERT(sizeof(block_q5_K) == 176, "block_q5_K size");
QMM_STATIC_ASSERT(sizeof(block_q6_K) == 210, "block_q6_K size");
QMM_STATIC_ASSERT(sizeof(block_q8_K) == 292, "block_q8_K size");
QMM_STATIC_ASSERT(sizeof(block_iq2_xxs) == 66, "block_iq2_xxs size");
QMM_STATIC_ASSERT(sizeof(block_iq2_xs) == 74, "block_iq2_xs size");
QMM_STATIC_ASSERT(sizeof(block_iq2_s) == 82, "block_iq2_s size");
QMM_STATIC_ASSERT(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs size");
QMM_STATIC_ASSERT(sizeof(block_iq3_s) == 110, "block_iq3_s size");
QMM_STATIC_ASSERT(sizeof(block_iq1_s) == 50, "block_iq1_s size");
QMM_STATIC_ASSERT(sizeof(block_iq1_m) == 56, "block_iq1_m size");
QMM_STATIC_ASSERT(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");
QMM_STATIC_ASSERT(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");
QMM_STATIC_ASSERT(sizeof(block_tq1_0) == 54, "block_tq1_0 size");
QMM_STATIC_ASSERT(sizeof(block_tq2_0) == 66, "block_tq2_0 size");
QMM_STATIC_ASSERT(sizeof(block_mxfp4) == 17, "block_mxfp4 size");
QMM_STATIC_ASSERT(sizeof(block_nvfp4) == 36, "block_nvfp4 size");

#endif /* QMM_FORMATS_BLOCKS_H */
