/*
 * dequant.cuh — device dequantization of one element of a packed GGUF row, per type.
 *
 * qmm_cuda_dequant<T>(row, e) returns element e of the row whose first block is at `row`,
 * bit-identical to the CPU's qmm_dequantize_row_* (src/formats/): the same float operations
 * in the same order, each rounded once (__fmul_rn/__fsub_rn/__fadd_rn forbid the FMA
 * contraction nvcc would otherwise apply); f16 scales converted exactly (the integer conversion
 * of fp16.h here; the unit decoders of qmm_cuda_part use the hardware cvt.f32.f16, the same
 * value for every finite and infinite input, and an exact two-instruction int-to-float for
 * small quants). Layout facts: ggml's ggml-common.h / ggml-quants.c (dequantize_row_*).
 *
 * The float, legacy and K-quant types have their own decoders here; the unit-codec types
 * (formats/type_list.h) get theirs generated from the shared codecs (section "Unit-codec
 * types"), and every type has a descriptor qmm_cuda_type<T> that the kernels read (section
 * "The device-side type descriptor").
 *
 * Alignment: blocks of the legacy and K-quant types have even sizes, so their rows sit at
 * even byte offsets and 16-bit loads of d/dmin are aligned; everything else is read byte by
 * byte (unit codecs read every block byte by byte: a block may be 17 bytes long).
 */
#ifndef QMM_CUDA_DEQUANT_CUH
#define QMM_CUDA_DEQUANT_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "formats/blocks.h"
#include "formats/type_list.h"
#include "qmm.h"

/* binary16 bits -> float32, exact; NaN made quiet with sign and payload kept (fp16.h). */
__device__ __forceinline__ float qmm_cuda_h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    const uint32_t man = h & 0x3FFu;
    if (exp == 0x1F) return __uint_as_float(sign | 0x7F800000u | (man << 13) | (man ? 0x00400000u : 0));
    if (exp != 0) return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
    if (man == 0) return __uint_as_float(sign);
    const int s = __clz((int)man) - 21; /* shifts that bring the leading one to bit 10 */
    return __uint_as_float(sign | ((uint32_t)(113 - s) << 23) | (((man << s) & 0x3FFu) << 13));
}

/* binary16 bits -> float32 by the hardware conversion (cvt.f32.f16, no .ftz; one instruction
 * instead of qmm_cuda_h2f's branches): exact, the same bits as qmm_cuda_h2f, for every finite
 * and infinite value (f16 subnormals become f32 normals); a NaN becomes a NaN whose payload
 * may differ. Used only for scales (d, dmin) of the unit decoders (qmm_cuda_part), which are
 * then multiplied or added: a NaN scale gives NaN elements, as on the CPU, and no test or
 * contract compares NaN payloads (test_dequantize_bit_exact counts two NaNs as equal; the
 * f32 class compares NaN/Inf classes). Element values of f16 W keep qmm_cuda_h2f. */
__device__ __forceinline__ float qmm_cuda_h2f_scale(uint16_t h) {
    return __half2float(__ushort_as_half(h));
}

/* Quant fields without shifts: the bits of a field that sits at bit p of a word, q * 2^p
 * (already masked in place, q * 2^p < 2^22), ORed into the mantissa of 1.5 * 2^23 give the
 * float 1.5 * 2^23 + q * 2^p exactly, and subtracting the exact constant 1.5 * 2^23 +
 * off * 2^p leaves (q - off) * 2^p exactly: one LOP3 (mask and OR together) and one FADD per
 * element. The decoders then multiply by qmm_cuda_scale_p(s, p) = s * 2^-p, an exact power-of-
 * two scaling for every scale they use (0, Inf, NaN, or |s| >= 2^-24: f16 scales and their
 * products with integer sub-block scales; p <= 14), so the product is the same real number
 * as (q - off) * s and rounds to the same float: bit-identical to
 * __fmul_rn((float)(q - off), s). Fields at bit 16 or above are read from the word shifted
 * right by 16 (one shift per word, not per element). */
__device__ __forceinline__ float qmm_cuda_field(uint32_t bits_at_p, int p, int off) {
    return __fsub_rn(__uint_as_float(bits_at_p | 0x4B400000u), 12582912.0f + (float)off * (float)(1u << p));
}
__device__ __forceinline__ float qmm_cuda_scale_p(float s, int p) {
    return p == 0 ? s : __fmul_rn(s, __uint_as_float((uint32_t)(127 - p) << 23));
}

__device__ __forceinline__ uint16_t qmm_cuda_ld16(const uint8_t *p) {
    return *(const uint16_t *)p;
}

/* q4_K/q5_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes: j < 4: low 6
 * bits of q[j] and q[j + 4]; j >= 4: low/high nibble of q[j + 4] with the top 2 bits of q[j - 4]
 * and q[j]. Written without branches (the three bytes q[j & 3], q[(j & 3) + 4], q[(j & 3) + 8]
 * are always loaded, then selected) so that calls for the same sub-block — the elements of one
 * quad or group — fold into one decode. */
__device__ __forceinline__ void qmm_cuda_scale_min_k4(int j, const uint8_t *q, int *sc, int *mn) {
    const int i = j & 3;
    const int a = q[i], b = q[i + 4], c = q[i + 8];
    *sc = j < 4 ? (a & 63) : ((c & 0xF) | ((a >> 6) << 4));
    *mn = j < 4 ? (b & 63) : ((c >> 4) | ((b >> 6) << 4));
}

template <int T> __device__ float qmm_cuda_dequant(const uint8_t *row, int64_t e);

template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_F32>(const uint8_t *row, int64_t e) {
    return ((const float *)row)[e];
}
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_F16>(const uint8_t *row, int64_t e) {
    return qmm_cuda_h2f(((const uint16_t *)row)[e]);
}
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_BF16>(const uint8_t *row, int64_t e) {
    return __uint_as_float((uint32_t)((const uint16_t *)row)[e] << 16);
}

/* q4_0: (q - 8) * d; element j low nibble of qs[j], j+16 high nibble of qs[j]. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q4_0>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK4_0) * sizeof(block_q4_0);
    const int j = (int)(e % QK4_0);
    const uint8_t byte = b[2 + (j & 15)];
    const int q = (j < 16 ? (byte & 0xF) : (byte >> 4)) - 8;
    return __fmul_rn((float)q, qmm_cuda_h2f(qmm_cuda_ld16(b)));
}
/* q4_1: q * d + m. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q4_1>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK4_1) * sizeof(block_q4_1);
    const int j = (int)(e % QK4_1);
    const uint8_t byte = b[4 + (j & 15)];
    const int q = j < 16 ? (byte & 0xF) : (byte >> 4);
    return __fadd_rn(__fmul_rn((float)q, qmm_cuda_h2f(qmm_cuda_ld16(b))), qmm_cuda_h2f(qmm_cuda_ld16(b + 2)));
}
/* q5_0: (q - 16) * d; bit 4 of element j is bit j of the little-endian uint32 qh. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q5_0>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK5_0) * sizeof(block_q5_0);
    const int j = (int)(e % QK5_0);
    const uint8_t byte = b[6 + (j & 15)];
    const int hb = (b[2 + (j >> 3)] >> (j & 7)) & 1;
    const int q = ((j < 16 ? (byte & 0xF) : (byte >> 4)) | (hb << 4)) - 16;
    return __fmul_rn((float)q, qmm_cuda_h2f(qmm_cuda_ld16(b)));
}
/* q5_1: q * d + m. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q5_1>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK5_1) * sizeof(block_q5_1);
    const int j = (int)(e % QK5_1);
    const uint8_t byte = b[8 + (j & 15)];
    const int hb = (b[4 + (j >> 3)] >> (j & 7)) & 1;
    const int q = (j < 16 ? (byte & 0xF) : (byte >> 4)) | (hb << 4);
    return __fadd_rn(__fmul_rn((float)q, qmm_cuda_h2f(qmm_cuda_ld16(b))), qmm_cuda_h2f(qmm_cuda_ld16(b + 2)));
}
/* q8_0: q * d. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q8_0>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK8_0) * sizeof(block_q8_0);
    const int j = (int)(e % QK8_0);
    return __fmul_rn((float)(int8_t)b[2 + j], qmm_cuda_h2f(qmm_cuda_ld16(b)));
}

/* K-quants: element e of a 256-block as 128*h + 32*p + l (h < 2, p < 4, l < 32). */

/* q2_K: dl*q - ml, dl = d*(sc & 15), ml = dmin*(sc >> 4), sc = scales[8h + 2p + l/16],
 * q = bits 2p..2p+1 of qs[32h + l]. Offsets: scales 0, qs 16, d 80, dmin 82. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q2_K>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK_K) * sizeof(block_q2_K);
    const int i = (int)(e % QK_K), h = i >> 7, p = (i >> 5) & 3, l = i & 31;
    const uint8_t sc = b[8 * h + 2 * p + (l >> 4)];
    const float dl = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 80)), (float)(sc & 0xF));
    const float ml = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 82)), (float)(sc >> 4));
    const int q = (b[16 + 32 * h + l] >> (2 * p)) & 3;
    return __fsub_rn(__fmul_rn(dl, (float)q), ml);
}
/* q3_K: d*(sc-32) * (q - (hbit ? 0 : 4)); hbit = bit 4h+p of hmask[l]; 6-bit scale j=8h+2p+l/16:
 * low nibble of scales[j%8] (j<8 low, else high), top 2 bits at pair j/4 of scales[8 + j%4].
 * Offsets: hmask 0, qs 32, scales 96, d 108. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q3_K>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK_K) * sizeof(block_q3_K);
    const int i = (int)(e % QK_K), h = i >> 7, p = (i >> 5) & 3, l = i & 31;
    const uint8_t *scales = b + 96;
    const int j = 8 * h + 2 * p + (l >> 4);
    const int lo = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
    const int hi = (scales[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
    const float dl = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 108)), (float)((lo | (hi << 4)) - 32));
    const int q = ((b[32 + 32 * h + l] >> (2 * p)) & 3) - ((b[l] >> (4 * h + p)) & 1 ? 0 : 4);
    return __fmul_rn(dl, (float)q);
}
/* q4_K: d*sc*q - dmin*mn; element 64c + 32s + l: nibble s of qs[32c + l], sub-block 2c + s.
 * Offsets: d 0, dmin 2, scales 4, qs 16. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q4_K>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK_K) * sizeof(block_q4_K);
    const int i = (int)(e % QK_K), c = i >> 6, s = (i >> 5) & 1, l = i & 31;
    int sc, mn;
    qmm_cuda_scale_min_k4(2 * c + s, b + 4, &sc, &mn);
    const float d1 = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b)), (float)sc);
    const float m1 = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 2)), (float)mn);
    const int q = (b[16 + 32 * c + l] >> (4 * s)) & 0xF;
    return __fsub_rn(__fmul_rn(d1, (float)q), m1);
}
/* q5_K: as q4_K plus 16 when bit 2c + s of qh[l] is set. Offsets: d 0, dmin 2, scales 4,
 * qh 16, qs 48. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q5_K>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK_K) * sizeof(block_q5_K);
    const int i = (int)(e % QK_K), c = i >> 6, s = (i >> 5) & 1, l = i & 31;
    int sc, mn;
    qmm_cuda_scale_min_k4(2 * c + s, b + 4, &sc, &mn);
    const float d1 = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b)), (float)sc);
    const float m1 = __fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 2)), (float)mn);
    const int q = ((b[48 + 32 * c + l] >> (4 * s)) & 0xF) + (((b[16 + l] >> (2 * c + s)) & 1) ? 16 : 0);
    return __fsub_rn(__fmul_rn(d1, (float)q), m1);
}
/* q6_K: d*sc*(q-32); low nibble (p>>1 selects high) of ql[64h + l + 32(p&1)], high bits pair p
 * of qh[32h + l], scale scales[8h + 2p + l/16]. Offsets: ql 0, qh 128, scales 192, d 208. */
template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_Q6_K>(const uint8_t *row, int64_t e) {
    const uint8_t *b = row + (e / QK_K) * sizeof(block_q6_K);
    const int i = (int)(e % QK_K), h = i >> 7, p = (i >> 5) & 3, l = i & 31;
    const int lo = (b[64 * h + l + 32 * (p & 1)] >> (4 * (p >> 1))) & 0xF;
    const int hi = (b[128 + 32 * h + l] >> (2 * p)) & 3;
    const int q = (lo | (hi << 4)) - 32;
    const float sc = (float)(int8_t)b[192 + 8 * h + 2 * p + (l >> 4)];
    return __fmul_rn(__fmul_rn(qmm_cuda_h2f(qmm_cuda_ld16(b + 208)), sc), (float)q);
}

/* ---------------------------------------------------------------------------------------
 * Block parts: a row is cut into units of whole-register work for one thread (used by gemv
 * and by the dequantize kernel of dequant.cu; fused decodes through qmm_cuda_dequant and
 * qmm_cuda_group8).
 *
 * qmm_cuda_part<T>::units(k) is the number of units of a row of k elements;
 * qmm_cuda_part<T>::decode(row, u, k, f) loads the bytes of unit u with the widest loads the
 * block layout's alignment allows (2 bytes for 18/22/34/110/210-byte blocks, 4 for q4_1,
 * q5_1, q2_K, 16 for q4_K, q5_K; rows start at row*row_bytes of a cudaMalloc base), decodes
 * every element of the unit in registers and calls f(e, w) for each (e = element index in
 * the row), in a fixed order. The values are the same float operations as
 * qmm_cuda_dequant<T> and src/formats/ (bit-identical; test_dequantize_bit_exact runs the
 * dequantize kernel, which is built on these). Units of one block are consecutive, so
 * consecutive threads read consecutive bytes. Float types: units of 4 elements, the last
 * one cut at k. Unit-codec types: units of QMM_UNIT elements through the codec, or 16
 * (codebook16.cuh).
 * ------------------------------------------------------------------------------------- */

/* 4 bytes at an address that is only 2-byte aligned (little-endian). */
__device__ __forceinline__ uint32_t qmm_cuda_ld32_a2(const uint8_t *p) {
    const uint16_t *h = (const uint16_t *)p;
    return (uint32_t)h[0] | ((uint32_t)h[1] << 16);
}
__device__ __forceinline__ uint32_t qmm_cuda_ld32(const uint8_t *p) { return *(const uint32_t *)p; }
__device__ __forceinline__ uint4 qmm_cuda_ld128(const uint8_t *p) { return *(const uint4 *)p; }
__device__ __forceinline__ uint32_t qmm_cuda_u4_word(const uint4 &v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

template <int T> struct qmm_cuda_part;

/* Float types: 4 elements per unit. */
template <int T> struct qmm_cuda_part_float {
    static constexpr int kUnit = 4;
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return (k + kUnit - 1) / kUnit; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t k, F f) {
        const int64_t e0 = u * kUnit;
        if (e0 + kUnit <= k) {
#pragma unroll
            for (int j = 0; j < kUnit; j++) f(e0 + j, qmm_cuda_dequant<T>(row, e0 + j));
        } else {
            for (int j = 0; e0 + j < k; j++) f(e0 + j, qmm_cuda_dequant<T>(row, e0 + j));
        }
    }
};
template <> struct qmm_cuda_part<QMM_TYPE_F32> : qmm_cuda_part_float<QMM_TYPE_F32> {};
template <> struct qmm_cuda_part<QMM_TYPE_F16> : qmm_cuda_part_float<QMM_TYPE_F16> {};
template <> struct qmm_cuda_part<QMM_TYPE_BF16> : qmm_cuda_part_float<QMM_TYPE_BF16> {};

/* Legacy 32-element blocks with 4-bit quants (q4_0, q4_1, q5_0, q5_1): 4 units per block;
 * unit i holds qs bytes 4i..4i+3, i.e. elements 4i+j (low nibbles) and 16+4i+j (high).
 * QS: offset of qs; QH: offset of qh (or -1); MIN: whether an f16 min follows d; A4: whether
 * the block is 4-byte aligned; OFF: value subtracted from q when there is no min. */
template <int BYTES, int QS, int QH, bool MIN, bool A4, int OFF> struct qmm_cuda_part_legacy4 {
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / 32 * 4; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        const uint8_t *b = row + (u >> 2) * BYTES;
        const int i = (int)(u & 3);
        const int64_t e0 = (u >> 2) * 32;
        /* qs bytes 4i..4i+3 as two 16-bit halves (bytes 4i, 4i+1 and 4i+2, 4i+3) */
        uint32_t qlo, qhi;
        if (A4) {
            qlo = qmm_cuda_ld32(b + QS + 4 * i);
            qhi = qlo >> 16;
        } else {
            qlo = qmm_cuda_ld16(b + QS + 4 * i);
            qhi = qmm_cuda_ld16(b + QS + 4 * i + 2);
        }
        const uint32_t qh = QH >= 0 ? (A4 ? qmm_cuda_ld32(b + QH) : qmm_cuda_ld32_a2(b + QH)) : 0u;
        const float d = qmm_cuda_h2f_scale(qmm_cuda_ld16(b));
        const float mn = MIN ? qmm_cuda_h2f_scale(qmm_cuda_ld16(b + 2)) : 0.0f;
#pragma unroll
        for (int half = 0; half < 2; half++) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int jj = 16 * half + 4 * i + j;
                /* the nibble of qs byte j (low: half 0, high: half 1) sits at bit p of its half */
                const int p = 8 * (j & 1) + 4 * half;
                uint32_t bits = (j < 2 ? qlo : qhi) & (0xFu << p);
                if (QH >= 0) bits |= ((qh >> jj) & 1u) << (p + 4);
                /* (float)(q - OFF) * d resp. (float)q * d + m, exact field (qmm_cuda_field) */
                const float w = MIN ? __fadd_rn(__fmul_rn(qmm_cuda_field(bits, p, 0), qmm_cuda_scale_p(d, p)), mn)
                                    : __fmul_rn(qmm_cuda_field(bits, p, OFF), qmm_cuda_scale_p(d, p));
                f(e0 + jj, w);
            }
        }
    }
};
template <> struct qmm_cuda_part<QMM_TYPE_Q4_0> : qmm_cuda_part_legacy4<18, 2, -1, false, false, 8> {};
template <> struct qmm_cuda_part<QMM_TYPE_Q4_1> : qmm_cuda_part_legacy4<20, 4, -1, true, true, 0> {};
template <> struct qmm_cuda_part<QMM_TYPE_Q5_0> : qmm_cuda_part_legacy4<22, 6, 2, false, false, 16> {};
template <> struct qmm_cuda_part<QMM_TYPE_Q5_1> : qmm_cuda_part_legacy4<24, 8, 4, true, true, 0> {};

/* q8_0: 4 units per block, unit i = elements 8i..8i+7 (qs bytes 8i..8i+7). */
template <> struct qmm_cuda_part<QMM_TYPE_Q8_0> {
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / 32 * 4; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        const uint8_t *b = row + (u >> 2) * sizeof(block_q8_0);
        const int i = (int)(u & 3);
        const int64_t e0 = (u >> 2) * 32 + 8 * i;
        uint32_t h[4]; /* qs bytes 8i..8i+7 as four 16-bit halves */
#pragma unroll
        for (int t = 0; t < 4; t++) h[t] = qmm_cuda_ld16(b + 2 + 8 * i + 2 * t);
        const float d = qmm_cuda_h2f_scale(qmm_cuda_ld16(b));
#pragma unroll
        for (int j = 0; j < 8; j++) {
            /* int8 q at bit p of its half: q ^ 0x80 = q + 128 as an unsigned field, off 128 */
            const int p = 8 * (j & 1);
            const uint32_t bits = (h[j >> 1] ^ (0x80u << p)) & (0xFFu << p);
            f(e0 + j, __fmul_rn(qmm_cuda_field(bits, p, 128), qmm_cuda_scale_p(d, p)));
        }
    }
};

/* q2_K: 16 units per super-block, unit (h, c) = elements 128h + 32p + 4c + j (p, j < 4). */
template <> struct qmm_cuda_part<QMM_TYPE_Q2_K> {
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / QK_K * 16; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        const uint8_t *b = row + (u >> 4) * sizeof(block_q2_K);
        const int h = (int)((u >> 3) & 1), c = (int)(u & 7);
        const int64_t e0 = (u >> 4) * QK_K + 128 * h + 4 * c;
        const uint32_t qs = qmm_cuda_ld32(b + 16 + 32 * h + 4 * c);
        const float d = qmm_cuda_h2f_scale(qmm_cuda_ld16(b + 80)), dmin = qmm_cuda_h2f_scale(qmm_cuda_ld16(b + 82));
#pragma unroll
        for (int p = 0; p < 4; p++) {
            const uint8_t sc = b[8 * h + 2 * p + (c >> 2)];
            const float dl = __fmul_rn(d, (float)(sc & 0xF)), ml = __fmul_rn(dmin, (float)(sc >> 4));
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int pos = 8 * j + 2 * p, f0 = pos & 15; /* bit of q in qs, in its half */
                const uint32_t bits = (pos >= 16 ? qs >> 16 : qs) & (3u << f0);
                f(e0 + 32 * p + j, __fsub_rn(__fmul_rn(qmm_cuda_scale_p(dl, f0), qmm_cuda_field(bits, f0, 0)), ml));
            }
        }
    }
};

/* q3_K: 16 units per super-block, unit (h, c) = elements 128h + 32p + 4c + j (p, j < 4). */
template <> struct qmm_cuda_part<QMM_TYPE_Q3_K> {
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / QK_K * 16; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        const uint8_t *b = row + (u >> 4) * sizeof(block_q3_K);
        const int h = (int)((u >> 3) & 1), c = (int)(u & 7);
        const int64_t e0 = (u >> 4) * QK_K + 128 * h + 4 * c;
        const uint32_t hm = qmm_cuda_ld32_a2(b + 4 * c);
        /* qs bytes 4c..4c+3 of the half h as 16-bit halves (bytes 0, 1 and 2, 3) */
        const uint32_t qsh[2] = {qmm_cuda_ld16(b + 32 + 32 * h + 4 * c), qmm_cuda_ld16(b + 32 + 32 * h + 4 * c + 2)};
        const uint8_t *scales = b + 96;
        const float d = qmm_cuda_h2f_scale(qmm_cuda_ld16(b + 108));
#pragma unroll
        for (int p = 0; p < 4; p++) {
            const int js = 8 * h + 2 * p + (c >> 2);
            const int lo = js < 8 ? (scales[js] & 0xF) : (scales[js - 8] >> 4);
            const int hi = (scales[8 + (js & 3)] >> (2 * (js >> 2))) & 3;
            const float dl = __fmul_rn(d, (float)((lo | (hi << 4)) - 32));
#pragma unroll
            for (int j = 0; j < 4; j++) {
                /* q = low 2 bits - (hmask bit ? 0 : 4) = u - 4 with the 3-bit field u = low bits +
                 * 4 * hmask bit, at bit f0 of its half */
                const int f0 = 8 * (j & 1) + 2 * p;
                uint32_t bits = qsh[j >> 1] & (3u << f0);
                bits |= ((hm >> (8 * j + 4 * h + p)) & 1u) << (f0 + 2);
                f(e0 + 32 * p + j, __fmul_rn(qmm_cuda_scale_p(dl, f0), qmm_cuda_field(bits, f0, 4)));
            }
        }
    }
};

/* q4_K / q5_K: 8 units per super-block, unit (c, half) = elements 64c + 32s + 16half + j
 * (s < 2, j < 16): one 16-byte load of qs (and of qh for q5_K). */
template <int T, int QS, bool HIGH> struct qmm_cuda_part_k45 {
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / QK_K * 8; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        const int bytes = HIGH ? (int)sizeof(block_q5_K) : (int)sizeof(block_q4_K);
        const uint8_t *b = row + (u >> 3) * bytes;
        const int c = (int)((u >> 1) & 3), half = (int)(u & 1);
        const int64_t e0 = (u >> 3) * QK_K + 64 * c + 16 * half;
        const uint4 qs = qmm_cuda_ld128(b + QS + 32 * c + 16 * half);
        const uint4 qh = HIGH ? qmm_cuda_ld128(b + 16 + 16 * half) : make_uint4(0, 0, 0, 0);
        const float d = qmm_cuda_h2f_scale(qmm_cuda_ld16(b)), dmin = qmm_cuda_h2f_scale(qmm_cuda_ld16(b + 2));
#pragma unroll
        for (int s = 0; s < 2; s++) {
            int sc, mn;
            qmm_cuda_scale_min_k4(2 * c + s, b + 4, &sc, &mn);
            const float d1 = __fmul_rn(d, (float)sc), m1 = __fmul_rn(dmin, (float)mn);
#pragma unroll
            for (int j = 0; j < 16; j++) {
                const uint32_t wq = qmm_cuda_u4_word(qs, j >> 2);
                const int pos = 8 * (j & 3) + 4 * s, p = pos & 15; /* bit of the nibble, in its half */
                uint32_t bits = (pos >= 16 ? wq >> 16 : wq) & (0xFu << p);
                if (HIGH) bits |= ((qmm_cuda_u4_word(qh, j >> 2) >> (8 * (j & 3) + 2 * c + s)) & 1u) << (p + 4);
                f(e0 + 32 * s + j, __fsub_rn(__fmul_rn(qmm_cuda_scale_p(d1, p), qmm_cuda_field(bits, p, 0)), m1));
            }
        }
    }
};
template <> struct qmm_cuda_part<QMM_TYPE_Q4_K> : qmm_cuda_part_k45<QMM_TYPE_Q4_K, 16, false> {};
template <> struct qmm_cuda_part<QMM_TYPE_Q5_K> : qmm_cuda_part_k45<QMM_TYPE_Q5_K, 48, true> {};

/* q6_K: 16 units per super-block, unit (h, c) = elements 128h + 32p + 4c + j (p, j < 4). */
template <> struct qmm_cuda_part<QMM_TYPE_Q6_K> {
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / QK_K * 16; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        const uint8_t *b = row + (u >> 4) * sizeof(block_q6_K);
        const int h = (int)((u >> 3) & 1), c = (int)(u & 7);
        const int64_t e0 = (u >> 4) * QK_K + 128 * h + 4 * c;
        /* ql bytes as 16-bit halves: qlh[p & 1][0] = bytes 0, 1 and [1] = bytes 2, 3 of the word */
        const uint32_t qlh[2][2] = {{qmm_cuda_ld16(b + 64 * h + 4 * c), qmm_cuda_ld16(b + 64 * h + 4 * c + 2)},
                                    {qmm_cuda_ld16(b + 64 * h + 32 + 4 * c), qmm_cuda_ld16(b + 64 * h + 32 + 4 * c + 2)}};
        const uint32_t qh = qmm_cuda_ld32_a2(b + 128 + 32 * h + 4 * c);
        const float d = qmm_cuda_h2f_scale(qmm_cuda_ld16(b + 208));
#pragma unroll
        for (int p = 0; p < 4; p++) {
            const float sc = (float)(int8_t)b[192 + 8 * h + 2 * p + (c >> 2)];
            const float ds = __fmul_rn(d, sc);
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int f0 = 8 * (j & 1) + 4 * (p >> 1); /* bit of the low nibble in its half */
                uint32_t bits = qlh[p & 1][j >> 1] & (0xFu << f0);
                bits |= ((qh >> (8 * j + 2 * p)) & 3u) << (f0 + 4);
                f(e0 + 32 * p + j, __fmul_rn(qmm_cuda_scale_p(ds, f0), qmm_cuda_field(bits, f0, 32)));
            }
        }
    }
};

/* ---------------------------------------------------------------------------------------
 * Unit-codec types (formats/type_list.h): every row of QMM_UNIT_TYPES gets, with no edit
 * here, the element decoder qmm_cuda_dequant<T>, the unit decoder qmm_cuda_part<T> and the
 * descriptor qmm_cuda_type<T> below, all from the shared device decoder qmm_unit_<name>
 * (formats/codec.h; QMM_TABLE tables read from their device copy). A type with a fast
 * decoder (codebook16.cuh) takes that as its qmm_cuda_part instead.
 * ------------------------------------------------------------------------------------- */

/* Block size, bytes and unit decoder of unit-codec type T (QMM_UNIT consecutive elements,
 * unit u of a block = elements QMM_UNIT*u ..). */
template <int T> struct qmm_cuda_unit_codec;
#define QMM_CUDA_UNIT_CODEC(E, nm)                                                               \
    template <> struct qmm_cuda_unit_codec<QMM_TYPE_##E> {                                       \
        static constexpr int qk = QMM_QK_##nm, bytes = (int)sizeof(block_##nm);                   \
        static_assert(qk % QMM_UNIT == 0 && (qk & (qk - 1)) == 0, #nm ": whole units, a power of two per block"); \
        static __device__ __forceinline__ void unit(const uint8_t *b, int u, float *out) { qmm_unit_##nm(b, u, out); } \
    };
QMM_UNIT_TYPES(QMM_CUDA_UNIT_CODEC)
#undef QMM_CUDA_UNIT_CODEC

/* Element e of a row of unit-codec type T: the unit holding it decoded, the element picked
 * by selects (registers, not a local array). For the candidate kernels and fused's tails;
 * fused's groups call the codec once per 8 elements (qmm_cuda_group8). */
template <int T> __device__ __forceinline__ float qmm_cuda_unit_element(const uint8_t *row, int64_t e) {
    typedef qmm_cuda_unit_codec<T> C;
    const uint64_t i = (uint64_t)e % C::qk;
    float out[QMM_UNIT];
    C::unit(row + (uint64_t)e / C::qk * C::bytes, (int)(i / QMM_UNIT), out);
    float v = out[0];
#pragma unroll
    for (int j = 1; j < QMM_UNIT; j++) v = (int)(i % QMM_UNIT) == j ? out[j] : v;
    return v;
}
#define QMM_CUDA_UNIT_DEQUANT(E, nm)                                                            \
    template <> __device__ __forceinline__ float qmm_cuda_dequant<QMM_TYPE_##E>(const uint8_t *row, int64_t e) { \
        return qmm_cuda_unit_element<QMM_TYPE_##E>(row, e);                                      \
    }
QMM_UNIT_TYPES(QMM_CUDA_UNIT_DEQUANT)
#undef QMM_CUDA_UNIT_DEQUANT

/* Generic unit decoder of a unit-codec type: units of QMM_UNIT elements, unit u = unit
 * u % (qk / QMM_UNIT) of block u / (qk / QMM_UNIT), decoded by the codec (byte loads, the
 * codec's own float operations), f called for its elements in order. */
template <int T> struct qmm_cuda_part_unit {
    typedef qmm_cuda_unit_codec<T> C;
    static constexpr int kUnit = QMM_UNIT, kUnits = C::qk / QMM_UNIT;
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / kUnit; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        float out[QMM_UNIT];
        C::unit(row + (uint64_t)u / kUnits * C::bytes, (int)((uint64_t)u % kUnits), out);
        const int64_t e0 = u * kUnit;
#pragma unroll
        for (int j = 0; j < QMM_UNIT; j++) f(e0 + j, out[j]);
    }
};

#include "cuda/codebook16.cuh"

template <bool B, class X, class Y> struct qmm_cuda_pick { typedef X type; };
template <class X, class Y> struct qmm_cuda_pick<false, X, Y> { typedef Y type; };

#define QMM_CUDA_UNIT_PART(E, nm)                                                               \
    template <> struct qmm_cuda_part<QMM_TYPE_##E>                                               \
        : qmm_cuda_pick<qmm_cuda_cb16<QMM_TYPE_##E>::fast, qmm_cuda_part_cb16<QMM_TYPE_##E>,      \
                        qmm_cuda_part_unit<QMM_TYPE_##E>>::type {};
QMM_UNIT_TYPES(QMM_CUDA_UNIT_PART)
#undef QMM_CUDA_UNIT_PART

/* ---------------------------------------------------------------------------------------
 * The device-side type descriptor: qmm_cuda_type<T>, one per weight type, is everything the
 * kernels know about T (dequantize, gemv, fused, int8 read only this and the decoders it
 * names). A type without one does not compile into any kernel; qmm_cuda_dispatch_type
 * below reaches exactly the types that have one.
 *   qk, bytes      elements and bytes per block (qk = 1: the float types, bytes per element)
 *   part           the unit decoder qmm_cuda_part<T> (gemv, the dequantize kernel)
 *   unit, map      elements per unit of part; the lane map of part's units (gemv_pos):
 *                  map::lane(e), map::call(e): element e of a 32-unit warp step is call c
 *                  of unit `lane` (mod 32) of the step
 *   quad_row       floats per quad row of gemv's quad-major X layout (a pad chosen so that
 *                  the staging stores are free of bank conflicts for this map)
 *   gemv_unroll1   gemv warp steps unrolled at one token (measured for q4_0 and q8_0)
 *   unit_codec     elements come from a unit codec (qmm_cuda_unit_codec<T>)
 *   int8, int8_sub_block, int8_min
 *                  whether the int8 strategy repacks T (the legacy and K-quant types; it
 *                  has a repacker per type, int8.cu), its sub-block of one scale and
 *                  whether a min term follows
 * The element decoder of T is qmm_cuda_dequant<T>; fused's group decoder qmm_cuda_group8<T>.
 * ------------------------------------------------------------------------------------- */

/* Lane maps of the decoders above (the layouts are in each decoder's comment). */
struct qmm_cuda_map_float { /* f32, f16, bf16: unit = 4 consecutive elements */
    static __host__ __device__ __forceinline__ int lane(int e) { return e >> 2; }
    static __host__ __device__ __forceinline__ int call(int e) { return e & 3; }
};
struct qmm_cuda_map_legacy4 { /* q4_0 .. q5_1: element 32b + 16half + 4i + j is call 4half + j of unit 4b + i */
    static __host__ __device__ __forceinline__ int lane(int e) { return 4 * (e >> 5) + ((e >> 2) & 3); }
    static __host__ __device__ __forceinline__ int call(int e) { return 4 * ((e >> 4) & 1) + (e & 3); }
};
struct qmm_cuda_map_q8_0 { /* element 32b + 8i + j is call j of unit 4b + i */
    static __host__ __device__ __forceinline__ int lane(int e) { return 4 * (e >> 5) + ((e >> 3) & 3); }
    static __host__ __device__ __forceinline__ int call(int e) { return e & 7; }
};
struct qmm_cuda_map_k32 { /* q4_K, q5_K: element 256sb + 64c2 + 32s + 16half + j is call 16s + j of unit 8sb + 2c2 + half */
    static __host__ __device__ __forceinline__ int lane(int e) { return 8 * (e >> 8) + 2 * ((e >> 6) & 3) + ((e >> 4) & 1); }
    static __host__ __device__ __forceinline__ int call(int e) { return 16 * ((e >> 5) & 1) + (e & 15); }
};
struct qmm_cuda_map_k16 { /* q2_K, q3_K, q6_K: element 256sb + 128h + 32p + 4c4 + j is call 4p + j of unit 16sb + 8h + c4 */
    static __host__ __device__ __forceinline__ int lane(int e) { return 16 * (e >> 8) + 8 * ((e >> 7) & 1) + ((e >> 2) & 7); }
    static __host__ __device__ __forceinline__ int call(int e) { return 4 * ((e >> 5) & 3) + (e & 3); }
};
struct qmm_cuda_map_unit8 { /* generic unit codecs: unit = QMM_UNIT consecutive elements */
    static __host__ __device__ __forceinline__ int lane(int e) { return e >> 3; }
    static __host__ __device__ __forceinline__ int call(int e) { return e & 7; }
};

template <int T> struct qmm_cuda_type; /* no definition: an unknown type is a compile error */

template <int T, int QK, int BYTES, class MAP, int UNIT, int QUAD_ROW, int UNROLL1, bool UC, int I8G, bool I8MIN>
struct qmm_cuda_type_base {
    static constexpr int qk = QK, bytes = BYTES, unit = UNIT, quad_row = QUAD_ROW, gemv_unroll1 = UNROLL1;
    typedef MAP map;
    typedef qmm_cuda_part<T> part;
    static constexpr bool unit_codec = UC, int8 = I8G != 0, int8_min = I8MIN;
    static constexpr int int8_sub_block = I8G;
    static_assert(UNIT % 4 == 0 && UNIT <= 32, "gemv: whole quads, at most 32 elements per unit");
    static_assert(QUAD_ROW % 4 == 0 && QUAD_ROW >= 128, "gemv: 32 float4 per quad row, 16-byte aligned");
};

/* The legacy and K-quant types and the float types: their own decoders above. Quad rows
 * (gemv.cu): 144 is conflict-free for the float, legacy, q8_0 and 16-element K maps, 136 for
 * q4_K/q5_K (enumerated over the banks of the staging stores). */
#define QMM_CUDA_TYPE(T, QK, BYTES, MAP, UNIT, QUAD_ROW, UNROLL1, I8G, I8MIN)                     \
    template <> struct qmm_cuda_type<T>                                                          \
        : qmm_cuda_type_base<T, QK, BYTES, MAP, UNIT, QUAD_ROW, UNROLL1, false, I8G, I8MIN> {};
/*            type           qk     bytes                       map                   unit quad unroll1 int8 G, min */
QMM_CUDA_TYPE(QMM_TYPE_F32,  1,     4,                          qmm_cuda_map_float,   4,   144, 1,      0,  false)
QMM_CUDA_TYPE(QMM_TYPE_F16,  1,     2,                          qmm_cuda_map_float,   4,   144, 1,      0,  false)
QMM_CUDA_TYPE(QMM_TYPE_BF16, 1,     2,                          qmm_cuda_map_float,   4,   144, 1,      0,  false)
QMM_CUDA_TYPE(QMM_TYPE_Q4_0, QK4_0, (int)sizeof(block_q4_0),   qmm_cuda_map_legacy4, 8,   144, 4,      32, false)
QMM_CUDA_TYPE(QMM_TYPE_Q4_1, QK4_1, (int)sizeof(block_q4_1),   qmm_cuda_map_legacy4, 8,   144, 2,      32, true)
QMM_CUDA_TYPE(QMM_TYPE_Q5_0, QK5_0, (int)sizeof(block_q5_0),   qmm_cuda_map_legacy4, 8,   144, 2,      32, false)
QMM_CUDA_TYPE(QMM_TYPE_Q5_1, QK5_1, (int)sizeof(block_q5_1),   qmm_cuda_map_legacy4, 8,   144, 2,      32, true)
QMM_CUDA_TYPE(QMM_TYPE_Q8_0, QK8_0, (int)sizeof(block_q8_0),   qmm_cuda_map_q8_0,    8,   144, 4,      32, false)
QMM_CUDA_TYPE(QMM_TYPE_Q2_K, QK_K,  (int)sizeof(block_q2_K),   qmm_cuda_map_k16,     16,  144, 2,      16, true)
QMM_CUDA_TYPE(QMM_TYPE_Q3_K, QK_K,  (int)sizeof(block_q3_K),   qmm_cuda_map_k16,     16,  144, 2,      16, false)
QMM_CUDA_TYPE(QMM_TYPE_Q4_K, QK_K,  (int)sizeof(block_q4_K),   qmm_cuda_map_k32,     32,  136, 2,      32, true)
QMM_CUDA_TYPE(QMM_TYPE_Q5_K, QK_K,  (int)sizeof(block_q5_K),   qmm_cuda_map_k32,     32,  136, 2,      32, true)
QMM_CUDA_TYPE(QMM_TYPE_Q6_K, QK_K,  (int)sizeof(block_q6_K),   qmm_cuda_map_k16,     16,  144, 2,      16, false)
#undef QMM_CUDA_TYPE

/* Unit-codec types: the generic decoder (8-element units, map unit8, quad rows of 144 as
 * q8_0's identical map) or the fast one of codebook16.cuh (16-element units, quad rows of
 * 136, conflict-free for both of its maps). No int8 repacker. */
template <int T, bool FAST = qmm_cuda_cb16<T>::fast> struct qmm_cuda_unit_type
    : qmm_cuda_type_base<T, qmm_cuda_unit_codec<T>::qk, qmm_cuda_unit_codec<T>::bytes, qmm_cuda_map_unit8,
                         QMM_UNIT, 144, 2, true, 0, false> {};
template <int T> struct qmm_cuda_unit_type<T, true>
    : qmm_cuda_type_base<T, qmm_cuda_unit_codec<T>::qk, qmm_cuda_unit_codec<T>::bytes,
                         typename qmm_cuda_cb16<T>::map, 16, 136, 2, true, 0, false> {
    static_assert(qmm_cuda_cb16<T>::qk == qmm_cuda_unit_codec<T>::qk &&
                      qmm_cuda_cb16<T>::bytes == qmm_cuda_unit_codec<T>::bytes,
                  "the fast decoder's block is the codec's");
};
#define QMM_CUDA_UNIT_TYPE(E, nm) template <> struct qmm_cuda_type<QMM_TYPE_##E> : qmm_cuda_unit_type<QMM_TYPE_##E> {};
QMM_UNIT_TYPES(QMM_CUDA_UNIT_TYPE)
#undef QMM_CUDA_UNIT_TYPE

/* Elements i0 .. i0+7 (i0 a multiple of 8, inside one block) of the block at blk into v:
 * fused's group decode. Unit codecs: one codec call; the other types: the element decoder 8
 * times with indices the compiler sees stay in one block (so the 8 calls share the block's
 * loads and scale decode). */
template <int T> __device__ __forceinline__ void qmm_cuda_group8(const uint8_t *blk, unsigned i0, float (&v)[8]) {
    if constexpr (qmm_cuda_type<T>::unit_codec) {
        static_assert(QMM_UNIT == 8, "one unit per group");
        qmm_cuda_unit_codec<T>::unit(blk, (int)(i0 / QMM_UNIT), v);
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = qmm_cuda_dequant<T>(blk, (int64_t)(i0 | (unsigned)j));
    }
}

/* ---------------------------------------------------------------------------------------
 * Dispatch
 * ------------------------------------------------------------------------------------- */

/* Calls F<T>::run(args...) for the weight type `type`; returns false for a type without a
 * descriptor. Cases: the float, legacy and K-quant types, then every row of QMM_UNIT_TYPES. */
#define QMM_CUDA_TYPE_CASE(T) case T: F<T>::run(args...); return true;
#define QMM_CUDA_UNIT_CASE(E, nm) QMM_CUDA_TYPE_CASE(QMM_TYPE_##E)
template <template <int> class F, typename... A> bool qmm_cuda_dispatch_type(int type, A... args) {
    switch (type) {
        QMM_CUDA_TYPE_CASE(QMM_TYPE_F32)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_F16)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_BF16)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q4_0)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q4_1)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q5_0)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q5_1)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q8_0)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q2_K)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q3_K)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q4_K)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q5_K)
        QMM_CUDA_TYPE_CASE(QMM_TYPE_Q6_K)
        QMM_UNIT_TYPES(QMM_CUDA_UNIT_CASE)
    default: return false;
    }
}
#undef QMM_CUDA_UNIT_CASE
#undef QMM_CUDA_TYPE_CASE

/* Host-side facts of a type's descriptor (for checks against the type table and the int8
 * strategy's choices), through the dispatch. */
struct qmm_cuda_type_facts {
    int qk, bytes;
    bool int8, int8_min;
    int int8_sub_block;
};
template <int T> struct qmm_cuda_type_facts_of {
    static void run(qmm_cuda_type_facts *f) {
        typedef qmm_cuda_type<T> D;
        f->qk = D::qk;
        f->bytes = D::bytes;
        f->int8 = D::int8;
        f->int8_min = D::int8_min;
        f->int8_sub_block = D::int8_sub_block;
    }
};
/* True and *f filled for a type with a descriptor; false otherwise. */
static inline bool qmm_cuda_type_facts_get(int type, qmm_cuda_type_facts *f) {
    return qmm_cuda_dispatch_type<qmm_cuda_type_facts_of>(type, f);
}

#endif /* QMM_CUDA_DEQUANT_CUH */
