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

#endif /* QMM_FORMATS_BLOCKS_H */
