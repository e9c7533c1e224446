/*
 * codec.h — what a type's codec is made of, shared by C and CUDA code.
 *
 * A *unit codec* is one function per type that decodes one unit — 8 consecutive elements of
 * one block — into floats, written once and compiled for the host (the type table's
 * dequantizer, src/formats/quants_unit.c) and for the GPU (the CUDA decoders,
 * src/cuda/dequant.cuh):
 *
 *     QMM_HD void qmm_unit_<name>(const uint8_t *block, int u, float out[QMM_UNIT])
 *
 * decodes elements QMM_UNIT*u .. QMM_UNIT*u + QMM_UNIT-1 of the block at `block` (u in
 * 0 .. block_size/QMM_UNIT - 1), bit-identical to ggml's dequantize_row_<name> and to
 * gguf.quants. Rules for a codec:
 *   - read the block byte by byte (qmm_ld16 / qmm_ld32): blocks sit at any byte offset
 *     (a block may be an odd number of bytes long, e.g. 17);
 *   - float arithmetic only through qmm_mul / qmm_add / qmm_sub (each rounded once: nvcc
 *     would otherwise contract a*b+c into one FMA and the bits would differ from ggml's);
 *   - tables through QMM_TABLE (one definition, a host and a device copy).
 * Next to the codec, the type's layout facts (qmm_type_layout, below) say where its scales
 * are and what values it can produce; the type table (src/core/types.c) carries both.
 */
#ifndef QMM_FORMATS_CODEC_H
#define QMM_FORMATS_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/blocks.h"

#define QMM_UNIT 8 /* elements per unit of a unit codec */

#if defined(__CUDACC__)
#  define QMM_HD static __host__ __device__ __forceinline__
#else
#  define QMM_HD static inline
#endif

/* A constant table with one definition and a copy for each side: declare with
 *   QMM_TABLE(uint64_t, qmm_grid_x, 256, { ... });
 * and read with QMM_T(qmm_grid_x)[i] inside a QMM_HD function. */
#if defined(__CUDACC__)
#  define QMM_TABLE(type, name, n, ...)                                                      \
    static const type name[n] = __VA_ARGS__;                                                 \
    static __device__ const type name##_dev[n] = __VA_ARGS__
#  if defined(__CUDA_ARCH__)
#    define QMM_T(name) name##_dev
#  else
#    define QMM_T(name) name
#  endif
#else
#  define QMM_TABLE(type, name, n, ...) static const type name[n] = __VA_ARGS__
#  define QMM_T(name) name
#endif

/* ---------------------------------------------------------------------------------------
 * Loads and float operations
 * ------------------------------------------------------------------------------------- */

QMM_HD uint32_t qmm_ld16(const uint8_t *p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8); }
QMM_HD uint32_t qmm_ld32(const uint8_t *p) { return qmm_ld16(p) | (qmm_ld16(p + 2) << 16); }
QMM_HD uint64_t qmm_ld64(const uint8_t *p) { return (uint64_t)qmm_ld32(p) | ((uint64_t)qmm_ld32(p + 4) << 32); }

QMM_HD float qmm_bits_f32(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    union { uint32_t u; float f; } v;
    v.u = u;
    return v.f;
#endif
}

#if defined(__CUDA_ARCH__)
QMM_HD float qmm_mul(float a, float b) { return __fmul_rn(a, b); }
QMM_HD float qmm_add(float a, float b) { return __fadd_rn(a, b); }
QMM_HD float qmm_sub(float a, float b) { return __fsub_rn(a, b); }
#else
QMM_HD float qmm_mul(float a, float b) { return a * b; }
QMM_HD float qmm_add(float a, float b) { return a + b; }
QMM_HD float qmm_sub(float a, float b) { return a - b; }
#endif

/* binary16 bits -> float32, exact for every input (the rule of fp16.h, integer-only). */
QMM_HD float qmm_h2f(uint32_t h) {
    const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0x1F) return qmm_bits_f32(sign | 0x7F800000u | (man << 13) | (man ? 0x00400000u : 0));
    if (exp != 0) return qmm_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0) return qmm_bits_f32(sign);
    uint32_t e = 113;
    while (!(man & 0x400u)) {
        man <<= 1;
        e--;
    }
    return qmm_bits_f32(sign | (e << 23) | ((man & 0x3FFu) << 13));
}

/* ---------------------------------------------------------------------------------------
 * Layout facts
 * ------------------------------------------------------------------------------------- */

/* How a scale field is stored. */
typedef enum qmm_scale_kind {
    QMM_SCALE_NONE = 0, /* ends a field list */
    QMM_SCALE_F16,      /* IEEE binary16: not finite when the exponent bits are all ones */
    QMM_SCALE_BF16,     /* bfloat16: likewise */
    QMM_SCALE_F32,      /* IEEE binary32: likewise */
    QMM_SCALE_E8M0,     /* one byte, 2^(e-127) (OCP MX); 0xFF is NaN in the MX definition */
    QMM_SCALE_UE4M3,    /* one byte, unsigned E4M3; 0x7F and 0xFF are NaN in E4M3 */
    QMM_SCALE_F16_IQ1M, /* an f16 spread over the top nibbles of four uint16 scales */
} qmm_scale_kind;

/* `count` consecutive scale fields of one kind, starting at byte `offset` of a block. */
typedef struct qmm_scale_field {
    uint16_t offset;
    uint8_t kind;       /* qmm_scale_kind */
    uint8_t count;      /* >= 1 */
} qmm_scale_field;

#define QMM_MAX_SCALE_FIELDS 3

/* What kernels, validation, generators and tests need to know about a block format. */
typedef struct qmm_type_layout {
    int16_t block_size; /* elements per block */
    int16_t block_bytes;/* bytes per block (sizeof the block struct) */
    /* every field that holds a float scale or minimum (f16 d, dmin, m; E8M0; UE4M3) */
    qmm_scale_field scales[QMM_MAX_SCALE_FIELDS];
    int16_t sub_block;  /* elements sharing one sub-block scale (= block size when none) */
    bool has_min;       /* value = d*q - min (or d*q + m): the min is a second scale field */
    /* |element| <= max_q * |scale field value| for every block: the largest quant magnitude
     * times the largest sub-block scale (e.g. 8 for q4_0, 127 for a 16-entry int8 codebook, 15 * 63
     * for q4_K's sub-scale times quant). Generators and error bounds use it. */
    float max_q;
} qmm_type_layout;

#endif /* QMM_FORMATS_CODEC_H */
