/*
 * int8_blocks.h — the per-block pieces of the aarch64 int8 class (arm_kernels.h), shared by
 * the gemv (gemv_int8_impl.h: _neon.c, _dotprod.c) and the i8mm GEMM (gemm_int8_i8mm.c), so
 * that every kernel forms the same integers and the same double operations:
 *
 *   wblk_decode(TYPE, row, b, ...)  one 32-element block b of a W row as two int8x16 (elements
 *                                   0..15, 16..31, natural order; the integer quant the
 *                                   dequantizer multiplies, offsets applied) and its scales;
 *   wblk_t(TYPE, ws, ia, ib, sa, sb) the block's T (arm_kernels.h) from the exact int32 dots of
 *                                   the two 16-element halves (ia, ib; types with one scale for
 *                                   the 32 elements get ia = the whole dot, ib = 0) and X's
 *                                   exact sums of q over the halves (sa, sb).
 *
 * Decoding per type (format source: ggml-common.h / ggml-quants.c dequantize_row_*, as
 * restated in src/formats/quants_*.c and codec_*.h):
 *   q4_0 / q4_1     the 16 qs bytes: low nibbles elements 0..15, high 16..31 (q4_0: - 8)
 *   q5_0 / q5_1     as q4, bit e of the uint32 qh OR-ed in as 16 (q5_0: - 16): DUP, TBL, CMTST
 *   q8_0            the 32 bytes as they are
 *   q2_K / q3_K     block c = 4h + p of a super-block: bits 2p..2p+1 of qs[32h + l] (USHL, AND);
 *                   q3_K: - 4 where bit c of hmask[l] is clear; 16-element sub-block scales
 *   q4_K / q5_K     block c: low (c even) or high nibbles of qs[32(c/2) + l]; q5_K: bit c of
 *                   qh[l] as 16; 6-bit scale and min per block (qmm_kq_get_scale_min_k4)
 *   q6_K            block p of half hf: nibbles of ql[64hf + 32(p&1) + l] (low for p < 2), bits
 *                   2p..2p+1 of qh[32hf + l] as bits 4, 5 (USHL by 4 - 2p), - 32; int8 scales
 *   iq4_nl, mxfp4   q4_0's nibbles through the 16-entry codebook (TBL)
 *   iq4_xs          sub-block ib as iq4_nl on qs[16 ib ..], integer scale ls - 32
 *   nvfp4           X block h of a 64-element block: sub-blocks 2h, 2h + 1 (8 bytes each: low
 *                   nibbles elements 0..7, high 8..15) put in element order by ZIP1/ZIP2 of
 *                   64-bit lanes, then the E2M1 codebook (TBL); UE4M3 half scales
 * Include only from files built for aarch64 (arm_neon.h; no extension needed here).
 */
#ifndef QMM_CPU_ARM_INT8_BLOCKS_H
#define QMM_CPU_ARM_INT8_BLOCKS_H

#include <arm_neon.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/arm/arm_kernels.h"
#include "cpu/int8_types.h"
#include "formats/blocks.h"
#include "formats/codec_fp4.h"
#include "formats/codec_iq4.h"
#include "formats/kquant_search.h"

#define QMM_ARM_INL static inline __attribute__((always_inline))

/* Blocks of 32 that share a super-block's scales: 8 for the 256-element types, 2 for nvfp4
 * (one W block), else 2 (two W blocks per step, so the parity of b is known in each). */
QMM_ARM_INL int wblk_group(qmm_type t) { return qmm_i8_block_elems(t) == QK_K ? 8 : 2; }

/* f16 bits at p to double, exactly (FCVT). */
QMM_ARM_INL double wblk_half(const void *p) {
    __fp16 h;
    memcpy(&h, p, sizeof h);
    return (double)h;
}

/* The scales of one super-block (8 blocks of 32; for the other types one or two W blocks). */
typedef struct wgroup {
    uint8_t sc8[16], mn8[16]; /* q2_K: the 4-bit scales and mins per half */
    int8_t sc3[16];           /* q3_K: the signed 6-bit scales per half (q6_K reads its own) */
    double dsc[8], dmn[8];  /* d * sc and -dmin * mn per block (q4_K, q5_K; iq4_xs d (ls - 32)),
                             * exact in double */
    double d, dm;           /* d, and -dmin (q2_K) */
    double nv[4];           /* nvfp4: the four UE4M3 half scales of the block */
    const unsigned char *blk;
} wgroup;

/* The scales a block's T needs. */
typedef struct wscale {
    int32_t sa, sb; /* integer scales of the halves (q2_K, q3_K, q6_K) */
    int32_t ma, mb; /* integer min scales of the halves (q2_K) */
    double d, dm;   /* the block's float scale and float min (0 if none), each an exact product
                     * of the format's fields; q2_K, q3_K, q6_K: the super-block's d (and -dmin);
                     * nvfp4: the halves' scales */
} wscale;

/* Group g of a row (blocks wblk_group(t) * g ..): the super-block's scales. */
/* 8 small unsigned integers (bytes of v) times the float f, exactly (f has at most 11
 * significant bits, the integers 6), as 8 doubles at out. */
QMM_ARM_INL void wblk_scaled8(uint8x8_t v, float f, double out[8]) {
    const uint16x8_t h = vmovl_u8(v);
    const float32x4_t lo = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(h))), f);
    const float32x4_t hi = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_high_u16(h))), f);
    vst1q_f64(out, vcvt_f64_f32(vget_low_f32(lo)));
    vst1q_f64(out + 2, vcvt_high_f64_f32(lo));
    vst1q_f64(out + 4, vcvt_f64_f32(vget_low_f32(hi)));
    vst1q_f64(out + 6, vcvt_high_f64_f32(hi));
}

/* f16 bits at p to float, exactly. */
QMM_ARM_INL float wblk_half_f(const void *p) {
    __fp16 h;
    memcpy(&h, p, sizeof h);
    return (float)h;
}

QMM_ARM_INL void wgroup_load(qmm_type t, const unsigned char *row, int64_t g, wgroup *gr) {
    if (wblk_group(t) == 8) {
        const unsigned char *blk = row + (size_t)g * qmm_i8_block_bytes(t);
        gr->blk = blk;
        if (t == QMM_TYPE_Q4_K || t == QMM_TYPE_Q5_K) {
            /* the 8 six-bit scales and mins four at a time in 32-bit words (the layout of
             * qmm_kq_get_scale_min_k4: bytes 0..3 scales 0..3, 4..7 mins 0..3, low 6 bits;
             * bytes 8..11 the low 4 bits of scales (low nibble) and mins (high nibble) 4..7,
             * whose top 2 bits are the top 2 bits of bytes 0..3 / 4..7) */
            const uint8_t *sp = t == QMM_TYPE_Q5_K ? ((const block_q5_K *)blk)->scales
                                                   : ((const block_q4_K *)blk)->scales;
            uint32_t a, b, c;
            memcpy(&a, sp, 4);
            memcpy(&b, sp + 4, 4);
            memcpy(&c, sp + 8, 4);
            const uint32_t sc_hi = (c & 0x0F0F0F0Fu) | (((a >> 6) & 0x03030303u) << 4);
            const uint32_t mn_hi = ((c >> 4) & 0x0F0F0F0Fu) | (((b >> 6) & 0x03030303u) << 4);
            const uint64_t sc8 = (a & 0x3F3F3F3Fu) | (uint64_t)sc_hi << 32;
            const uint64_t mn8 = (b & 0x3F3F3F3Fu) | (uint64_t)mn_hi << 32;
            wblk_scaled8(vcreate_u8(sc8), wblk_half_f(blk), gr->dsc);
            wblk_scaled8(vcreate_u8(mn8), -wblk_half_f(blk + 2), gr->dmn);
        } else if (t == QMM_TYPE_Q2_K) {
            const block_q2_K *p = (const block_q2_K *)blk;
            const uint8x16_t v = vld1q_u8(p->scales);
            vst1q_u8(gr->sc8, vandq_u8(v, vdupq_n_u8(0x0F)));
            vst1q_u8(gr->mn8, vshrq_n_u8(v, 4));
            gr->d = wblk_half(&p->d);
            gr->dm = -wblk_half(&p->dmin);
        } else if (t == QMM_TYPE_Q3_K) {
            /* sub-block j: low 4 bits in the low (j < 8) or high nibble of byte j % 8, top 2
             * bits in bit pair j / 4 of byte 8 + j % 4; stored with an offset of 32 */
            const block_q3_K *p = (const block_q3_K *)blk;
            const uint8x8_t a = vld1_u8(p->scales);
            const uint8x16_t lo = vcombine_u8(vand_u8(a, vdup_n_u8(0x0F)), vshr_n_u8(a, 4));
            uint32_t c;
            memcpy(&c, p->scales + 8, 4);
            static const int8_t hs[16] = {0, 0, 0, 0, -2, -2, -2, -2, -4, -4, -4, -4, -6, -6, -6, -6};
            const uint8x16_t hi = vandq_u8(vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(c)), vld1q_s8(hs)),
                                           vdupq_n_u8(3));
            vst1q_s8(gr->sc3, vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hi, 4))), vdupq_n_s8(32)));
            gr->d = wblk_half(&p->d);
        } else if (t == QMM_TYPE_Q6_K) {
            gr->d = wblk_half(&((const block_q6_K *)blk)->d);
        } else { /* iq4_xs: ls of sub-block ib = low nibble of scales_l[ib / 2] shifted by
                  * 4 (ib % 2) | bits 2ib..2ib+1 of scales_h << 4; d * (ls - 32) */
            const block_iq4_xs *p = (const block_iq4_xs *)blk;
            uint32_t l4;
            memcpy(&l4, p->scales_l, 4);
            const uint8x8_t l = vcreate_u8(l4);
            const uint8x8_t lo = vzip1_u8(vand_u8(l, vdup_n_u8(0x0F)), vshr_n_u8(l, 4));
            static const int16_t hs[8] = {0, -2, -4, -6, -8, -10, -12, -14};
            const uint16x8_t h = vandq_u16(vshlq_u16(vdupq_n_u16(p->scales_h), vld1q_s16(hs)), vdupq_n_u16(3));
            const int16x8_t ls = vsubq_s16(vreinterpretq_s16_u16(vorrq_u16(vmovl_u8(lo), vshlq_n_u16(h, 4))),
                                           vdupq_n_s16(32));
            const float d = wblk_half_f(&p->d);
            const float32x4_t f0 = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(ls))), d);
            const float32x4_t f1 = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(ls))), d);
            vst1q_f64(gr->dsc, vcvt_f64_f32(vget_low_f32(f0)));
            vst1q_f64(gr->dsc + 2, vcvt_high_f64_f32(f0));
            vst1q_f64(gr->dsc + 4, vcvt_f64_f32(vget_low_f32(f1)));
            vst1q_f64(gr->dsc + 6, vcvt_high_f64_f32(f1));
        }
    } else if (t == QMM_TYPE_NVFP4) {
        const block_nvfp4 *p = (const block_nvfp4 *)(row + (size_t)g * sizeof(block_nvfp4));
        gr->blk = (const unsigned char *)p;
        /* the four UE4M3 half scales at once (qmm_ue4m3_to_fp32's bits: exponent field E =
         * bits 3..6 and mantissa M: E > 0 gives (E + 119) << 23 | M << 20, E = 0 gives
         * M * 2^-10 (0x00 too); 0x7F gives 0; bit 7 is ignored except that 0xFF is not 0x7F) */
        uint32_t four;
        memcpy(&four, p->d, sizeof four);
        const uint32x4_t v = vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(four))));
        const uint32x4_t e = vandq_u32(vshrq_n_u32(v, 3), vdupq_n_u32(15)), man = vandq_u32(v, vdupq_n_u32(7));
        const uint32x4_t normal = vorrq_u32(vshlq_n_u32(vaddq_u32(e, vdupq_n_u32(119)), 23), vshlq_n_u32(man, 20));
        const float32x4_t sub = vmulq_f32(vcvtq_f32_u32(man), vdupq_n_f32(0x1p-10f));
        float32x4_t f = vbslq_f32(vceqq_u32(e, vdupq_n_u32(0)), sub, vreinterpretq_f32_u32(normal));
        f = vbslq_f32(vceqq_u32(v, vdupq_n_u32(0x7F)), vdupq_n_f32(0.0f), f);
        vst1q_f64(gr->nv, vcvt_f64_f32(vget_low_f32(f)));
        vst1q_f64(gr->nv + 2, vcvt_high_f64_f32(f));
    } else {
        gr->blk = row + (size_t)(2 * g) * qmm_i8_block_bytes(t);
    }
}

QMM_ARM_INL int8x16_t wblk_s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

/* The 16 bytes at p as low nibbles and high nibbles. */
QMM_ARM_INL void wblk_nibbles(const uint8_t *p, uint8x16_t *lo, uint8x16_t *hi) {
    const uint8x16_t v = vld1q_u8(p);
    *lo = vandq_u8(v, vdupq_n_u8(0x0F));
    *hi = vshrq_n_u8(v, 4);
}

/* Bit e of the little-endian uint32 at qh as 0x10 in byte e of h0 (e < 16) or h1 (e >= 16). */
QMM_ARM_INL void wblk_fifth_bits(const uint8_t *qh, uint8x16_t *h0, uint8x16_t *h1) {
    uint32_t bits;
    memcpy(&bits, qh, sizeof bits);
    static const uint8_t idx[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                    2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    static const uint8_t sel[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t v = vreinterpretq_u8_u32(vdupq_n_u32(bits)), s = vld1q_u8(sel);
    const uint8x16_t b16 = vdupq_n_u8(0x10);
    *h0 = vandq_u8(vtstq_u8(vqtbl1q_u8(v, vld1q_u8(idx)), s), b16);
    *h1 = vandq_u8(vtstq_u8(vqtbl1q_u8(v, vld1q_u8(idx + 16)), s), b16);
}

/* Block c (0 .. wblk_group(t) - 1) of group gr: the W integers and the scales. */
QMM_ARM_INL void wblk_decode(qmm_type t, const wgroup *gr, int c, int8x16_t *w0, int8x16_t *w1,
                             wscale *ws) {
    ws->sa = 1;
    ws->sb = 0;
    ws->ma = ws->mb = 0;
    ws->dm = 0.0;
    switch (t) {
    case QMM_TYPE_Q4_0: case QMM_TYPE_Q4_1: case QMM_TYPE_Q5_0: case QMM_TYPE_Q5_1: {
        const unsigned char *blk = gr->blk + (size_t)c * qmm_i8_block_bytes(t);
        const uint8_t *qs = t == QMM_TYPE_Q4_0   ? ((const block_q4_0 *)blk)->qs
                            : t == QMM_TYPE_Q4_1 ? ((const block_q4_1 *)blk)->qs
                            : t == QMM_TYPE_Q5_0 ? ((const block_q5_0 *)blk)->qs
                                                 : ((const block_q5_1 *)blk)->qs;
        uint8x16_t lo, hi;
        wblk_nibbles(qs, &lo, &hi);
        if (t == QMM_TYPE_Q5_0 || t == QMM_TYPE_Q5_1) {
            uint8x16_t h0, h1;
            wblk_fifth_bits(t == QMM_TYPE_Q5_0 ? ((const block_q5_0 *)blk)->qh
                                               : ((const block_q5_1 *)blk)->qh,
                            &h0, &h1);
            lo = vorrq_u8(lo, h0);
            hi = vorrq_u8(hi, h1);
        }
        *w0 = wblk_s8(lo);
        *w1 = wblk_s8(hi);
        if (t == QMM_TYPE_Q4_0 || t == QMM_TYPE_Q5_0) {
            const int8x16_t off = vdupq_n_s8(t == QMM_TYPE_Q4_0 ? 8 : 16);
            *w0 = vsubq_s8(*w0, off);
            *w1 = vsubq_s8(*w1, off);
        } else { /* q4_1, q5_1: the f16 m after d, times the sum of the block's q_x */
            ws->dm = wblk_half(blk + 2);
        }
        ws->d = wblk_half(blk);
        break;
    }
    case QMM_TYPE_Q8_0: {
        const block_q8_0 *p = (const block_q8_0 *)(gr->blk + (size_t)c * sizeof(block_q8_0));
        *w0 = vld1q_s8(p->qs);
        *w1 = vld1q_s8(p->qs + 16);
        ws->d = wblk_half(&p->d);
        break;
    }
    case QMM_TYPE_IQ4_NL: case QMM_TYPE_MXFP4: {
        const bool nl = t == QMM_TYPE_IQ4_NL;
        const unsigned char *blk = gr->blk + (size_t)c * qmm_i8_block_bytes(t);
        const int8x16_t book = vld1q_s8(nl ? QMM_T(qmm_iq4_values) : QMM_T(qmm_kvalues_e2m1));
        uint8x16_t lo, hi;
        wblk_nibbles(nl ? ((const block_iq4_nl *)blk)->qs : ((const block_mxfp4 *)blk)->qs, &lo, &hi);
        *w0 = vqtbl1q_s8(book, lo);
        *w1 = vqtbl1q_s8(book, hi);
        ws->d = nl ? wblk_half(blk) : (double)qmm_e8m0_to_fp32_half(((const block_mxfp4 *)blk)->e);
        break;
    }
    case QMM_TYPE_NVFP4: {
        const block_nvfp4 *p = (const block_nvfp4 *)gr->blk;
        const int8x16_t book = vld1q_s8(QMM_T(qmm_kvalues_e2m1));
        uint8x16_t lo, hi;
        wblk_nibbles(p->qs + 16 * c, &lo, &hi);
        const uint64x2_t l64 = vreinterpretq_u64_u8(lo), h64 = vreinterpretq_u64_u8(hi);
        *w0 = vqtbl1q_s8(book, vreinterpretq_u8_u64(vzip1q_u64(l64, h64)));
        *w1 = vqtbl1q_s8(book, vreinterpretq_u8_u64(vzip2q_u64(l64, h64)));
        ws->d = gr->nv[2 * c];
        ws->dm = gr->nv[2 * c + 1];
        break;
    }
    case QMM_TYPE_Q4_K: case QMM_TYPE_Q5_K: {
        const bool five = t == QMM_TYPE_Q5_K;
        const uint8_t *qs = five ? ((const block_q5_K *)gr->blk)->qs : ((const block_q4_K *)gr->blk)->qs;
        const uint8x16_t v0 = vld1q_u8(qs + 32 * (c / 2)), v1 = vld1q_u8(qs + 32 * (c / 2) + 16);
        uint8x16_t a = c & 1 ? vshrq_n_u8(v0, 4) : vandq_u8(v0, vdupq_n_u8(0x0F));
        uint8x16_t b = c & 1 ? vshrq_n_u8(v1, 4) : vandq_u8(v1, vdupq_n_u8(0x0F));
        if (five) {
            const uint8_t *qh = ((const block_q5_K *)gr->blk)->qh;
            const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << c)), b16 = vdupq_n_u8(0x10);
            a = vorrq_u8(a, vandq_u8(vtstq_u8(vld1q_u8(qh), bit), b16));
            b = vorrq_u8(b, vandq_u8(vtstq_u8(vld1q_u8(qh + 16), bit), b16));
        }
        *w0 = wblk_s8(a);
        *w1 = wblk_s8(b);
        ws->d = gr->dsc[c];
        ws->dm = gr->dmn[c];
        break;
    }
    case QMM_TYPE_Q2_K: case QMM_TYPE_Q3_K: {
        const bool three = t == QMM_TYPE_Q3_K;
        const uint8_t *qs = three ? ((const block_q3_K *)gr->blk)->qs : ((const block_q2_K *)gr->blk)->qs;
        const int h = c / 4, p = c % 4;
        const int8x16_t sh = vdupq_n_s8((int8_t)(-2 * p));
        const uint8x16_t m3 = vdupq_n_u8(3);
        const uint8x16_t a = vandq_u8(vshlq_u8(vld1q_u8(qs + 32 * h), sh), m3);
        const uint8x16_t b = vandq_u8(vshlq_u8(vld1q_u8(qs + 32 * h + 16), sh), m3);
        if (three) { /* q - 4 where the high bit is clear: q + (bit ? 4 : 0) - 4 */
            const uint8_t *hm = ((const block_q3_K *)gr->blk)->hmask;
            const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << c)), b4 = vdupq_n_u8(4);
            const int8x16_t m4 = vdupq_n_s8(4);
            *w0 = vsubq_s8(wblk_s8(vorrq_u8(a, vandq_u8(vtstq_u8(vld1q_u8(hm), bit), b4))), m4);
            *w1 = vsubq_s8(wblk_s8(vorrq_u8(b, vandq_u8(vtstq_u8(vld1q_u8(hm + 16), bit), b4))), m4);
            ws->sa = gr->sc3[2 * c];
            ws->sb = gr->sc3[2 * c + 1];
        } else {
            *w0 = wblk_s8(a);
            *w1 = wblk_s8(b);
            ws->sa = gr->sc8[2 * c];
            ws->sb = gr->sc8[2 * c + 1];
            ws->ma = gr->mn8[2 * c];
            ws->mb = gr->mn8[2 * c + 1];
            ws->dm = gr->dm;
        }
        ws->d = gr->d;
        break;
    }
    case QMM_TYPE_Q6_K: {
        const block_q6_K *p = (const block_q6_K *)gr->blk;
        const int hf = c / 4, q = c % 4;
        const uint8_t *ql = p->ql + 64 * hf + 32 * (q & 1), *qh = p->qh + 32 * hf;
        const uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16);
        const uint8x16_t low4 = vdupq_n_u8(0x0F), c30 = vdupq_n_u8(0x30);
        const uint8x16_t n0 = q < 2 ? vandq_u8(l0, low4) : vshrq_n_u8(l0, 4);
        const uint8x16_t n1 = q < 2 ? vandq_u8(l1, low4) : vshrq_n_u8(l1, 4);
        const int8x16_t sh = vdupq_n_s8((int8_t)(4 - 2 * q)); /* bits 2q, 2q + 1 to 4, 5 */
        const uint8x16_t h0 = vandq_u8(vshlq_u8(vld1q_u8(qh), sh), c30);
        const uint8x16_t h1 = vandq_u8(vshlq_u8(vld1q_u8(qh + 16), sh), c30);
        const int8x16_t m32 = vdupq_n_s8(32);
        *w0 = vsubq_s8(wblk_s8(vorrq_u8(n0, h0)), m32);
        *w1 = vsubq_s8(wblk_s8(vorrq_u8(n1, h1)), m32);
        ws->sa = p->scales[2 * c];
        ws->sb = p->scales[2 * c + 1];
        ws->d = gr->d;
        break;
    }
    default: { /* iq4_xs */
        const block_iq4_xs *p = (const block_iq4_xs *)gr->blk;
        const int8x16_t book = vld1q_s8(QMM_T(qmm_iq4_values));
        uint8x16_t lo, hi;
        wblk_nibbles(p->qs + 16 * c, &lo, &hi);
        *w0 = vqtbl1q_s8(book, lo);
        *w1 = vqtbl1q_s8(book, hi);
        ws->d = gr->dsc[c];
        break;
    }
    }
}

/* T of one block (arm_kernels.h) from the exact int32 dots ia, ib of the halves (types
 * without half scales: ia the whole block's dot, ib unused) and X's sums of q: xa, xb over the
 * halves (q2_K), s32 over the block as a double (the 32-element types with a minimum). Every
 * product is exact in double (integers below 2^28 times at most 30-bit scales), so T has one
 * rounding at most. */
QMM_ARM_INL double wblk_t(qmm_type t, const wscale *ws, int32_t ia, int32_t ib, int32_t xa, int32_t xb,
                          double s32) {
    if (t == QMM_TYPE_NVFP4) return fma((double)ib, ws->dm, (double)ia * ws->d);
    if (qmm_i8_sub16(t)) {
        const double p = (double)(ws->sa * ia + ws->sb * ib) * ws->d;
        return t == QMM_TYPE_Q2_K ? fma((double)(ws->ma * xa + ws->mb * xb), ws->dm, p) : p;
    }
    const double p = (double)ia * ws->d;
    if (qmm_i8_has_min(t)) return fma(s32, ws->dm, p);
    return p;
}

#endif /* QMM_CPU_ARM_INT8_BLOCKS_H */
