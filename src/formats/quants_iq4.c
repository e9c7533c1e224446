/*
 * quants_iq4.c — reference quantizers of the two 4-bit non-linear types of codec_iq4.h,
 * named here by their block: 32-element blocks (f16 d, 16 bytes of nibbles: 18 bytes) and
 * 256-element super-blocks of 8 sub-blocks of 32 (f16 d, uint16 scales_h, scales_l[4],
 * 128 bytes of nibbles: 136 bytes). Both quantize to the codebook qmm_iq4_values.
 *
 * Source: ggml's ggml-quants.c (the quantize_row_<type>_impl both types share, best_index_int8,
 * nearest_int, and the quantize_row_<type>_ref entry points, which pass no importance matrix),
 * re-implemented with the same float operations in the same order (ISO C11: GCC keeps
 * -ffp-contract=off), so the bytes equal ggml's. Without an importance matrix every element is weighted by x^2.
 *   - Per block of 32: amax, and max = the first element of largest |x|; a block with
 *     amax < 1e-15 gets scale 0. Otherwise the first pass maps x * (1 / d0) to the nearest
 *     codebook entry with d0 = max / values[0] (32-element type) or -max / values[0]
 *     (super-block type), and d = sum(w q x) / sum(w q q).
 *   - Super-block type only (ggml's ntry = 7): for itry = -7 .. 7, id = (itry + values[0]) /
 *     max gives another assignment, kept when sum(w q x)^2 > best * sum(w q q); then the
 *     super-block d = -max_scale / 32 (max_scale: the block scale of largest magnitude), each
 *     block's 6-bit scale l = clamp(nearest_int(scale / d), -32, 31) and its elements re-mapped
 *     with 1 / (d * l).
 *   - 32-element type (ggml's ntry = -1): no search; d is stored and the first pass's
 *     indices kept. For a block with amax < 1e-15 ggml stores d = 0 and does not write its
 *     indices: its nibbles are whatever its index buffer held (in practice the previous block's
 *     indices, and an uninitialized buffer for the first block of a call). qmm keeps the
 *     previous block's indices too and starts each row with index 0; all of them decode to 0.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "formats/codec_iq4.h"
#include "formats/fp16.h"
#include "formats/kquant_search.h"
#include "formats/quants.h"

enum { BLOCK = 32 };

/* ggml's best_index_int8: the nearest of n sorted values by bisection (ties to the upper). */
static int best_index_int8(int n, const int8_t *val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/*
 * One block (super_block_size 32) or super-block (256) of x: writes the f16 d to dh, the
 * nibbles to q4, and for a super-block the packed 6-bit scales to scales_h / scales_l.
 * L (super_block_size indices) carries over between calls as ggml's index buffer does.
 */
static void iq4_impl(const int super_block_size, const float *x, uint8_t *dh, uint8_t *q4,
                     uint8_t *scales_h, uint8_t *scales_l, float *scales, uint8_t *L,
                     const int ntry) {
    const int8_t *values = qmm_iq4_values;
    float weight[BLOCK];

    memset(q4, 0, (size_t)super_block_size / 2);
    put16(dh, qmm_fp32_to_fp16(0.f));

    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < super_block_size / BLOCK; ++ib) {
        const float *xb = x + ib * BLOCK;
        uint8_t *Lb = L + ib * BLOCK;
        for (int j = 0; j < BLOCK; ++j) weight[j] = xb[j] * xb[j];
        float amax = 0, max = 0;
        for (int j = 0; j < BLOCK; ++j) {
            const float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < QMM_KQ_GROUP_MAX_EPS) {
            scales[ib] = 0;
            continue;
        }
        float d = ntry > 0 ? -max / values[0] : max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < BLOCK; ++j) {
            const float al = id * xb[j];
            const int l = best_index_int8(16, values, al);
            Lb[j] = (uint8_t)l;
            const float q = values[l];
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; ++itry) {
            id = (itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < BLOCK; ++j) {
                const float al = id * xb[j];
                const int l = best_index_int8(16, values, al);
                const float q = values[l];
                const float w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        const float abs_d = fabsf(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }

    if (super_block_size / BLOCK > 1) {
        const int nb = super_block_size / BLOCK;
        uint16_t sh = 0;
        const float d = -max_scale / 32;
        put16(dh, qmm_fp32_to_fp16(d));
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < nb; ++ib) {
            int l = qmm_kq_nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * l;
            const float idl = dl ? 1 / dl : 0.f;
            uint8_t *Lb = L + ib * BLOCK;
            const float *xb = x + ib * BLOCK;
            for (int j = 0; j < BLOCK; ++j) Lb[j] = (uint8_t)best_index_int8(16, values, idl * xb[j]);
            l += 32;
            const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] |= (uint8_t)(l_l << 4);
            sh |= (uint16_t)(l_h << 2 * (ib % 8));
        }
        put16(scales_h, sh);
    } else {
        put16(dh, qmm_fp32_to_fp16(scales[0]));
        if (ntry > 0) {
            const float id = scales[0] ? 1 / scales[0] : 0;
            for (int j = 0; j < super_block_size; ++j) L[j] = (uint8_t)best_index_int8(16, values, id * x[j]);
        }
    }

    for (int i = 0; i < super_block_size / 32; ++i)
        for (int j = 0; j < 16; ++j) q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void qmm_quantize_row_iq4_blocks_ref(const float *x, void *dst, int64_t k) {
    enum { BYTES = 2 + BLOCK / 2 };
    uint8_t *y = dst, L[BLOCK] = {0};
    float scale;
    for (int64_t i = 0; i < k / BLOCK; i++, x += BLOCK, y += BYTES)
        iq4_impl(BLOCK, x, y, y + 2, NULL, NULL, &scale, L, -1);
}

void qmm_quantize_row_iq4_super_blocks_ref(const float *x, void *dst, int64_t k) {
    enum { QK = 256, BYTES = 2 + 2 + 4 + QK / 2 };
    uint8_t *y = dst, L[QK];
    float scales[QK / BLOCK];
    for (int64_t i = 0; i < k / QK; i++, x += QK, y += BYTES)
        iq4_impl(QK, x, y, y + 8, y + 2, y + 4, scales, L, 7);
}
