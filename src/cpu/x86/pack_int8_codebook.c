/*
 * pack_int8_codebook.c — the int8 tile packer's row unpackers for the codebook types whose
 * scale is per 32-element (sub-)block: iq4_nl, iq4_xs and mxfp4 (pack_int8.c calls these for
 * them; layout of the tiles in x86_kernels.h). Each element's int8 is its codebook value
 * (qmm_iq4_values, -127..113, or qmm_kvalues_e2m1, -12..12) and the block's float scale is the
 * one the dequantizer multiplies it by (iq4_nl: d; iq4_xs: d * (ls - 32); mxfp4:
 * 2^(e - 128), ggml_e8m0_to_fp32_half), so scale * q is the type table's to_float with the
 * same float operands and the tiles are exact. nvfp4 (one scale per 16 elements) is not
 * packed: the int8 strategy runs gemv_int8_codebook_avx512.c for it at every n.
 * Portable C (no -m flags). Format source: ggml-common.h / ggml-quants.c / ggml-impl.h.
 */
#include <stddef.h>
#include <string.h>

#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"
#include "formats/codec_fp4.h"
#include "formats/codec_iq4.h"
#include "formats/fp16.h"

bool qmm_x86_int8_codebook_tiles_has_type(qmm_type type) {
    return type == QMM_TYPE_IQ4_NL || type == QMM_TYPE_IQ4_XS || type == QMM_TYPE_MXFP4;
}

/* 32 elements from 16 bytes of nibbles (q4_0 order: low nibble of qs[j] = element j, high =
 * j + 16) through the codebook. */
static void group32(const uint8_t *qs, const int8_t *cb, int8_t *q) {
    for (int j = 0; j < 16; j++) {
        q[j] = cb[qs[j] & 0xF];
        q[j + 16] = cb[qs[j] >> 4];
    }
}

void qmm_x86_int8_codebook_unpack_row(qmm_type type, const unsigned char *row, int64_t k,
                                      int8_t *q, float *d) {
    if (type == QMM_TYPE_IQ4_NL) {
        for (int64_t b = 0; b < k / 32; b++) {
            block_iq4_nl blk;
            memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
            d[b] = qmm_fp16_to_fp32(blk.d);
            group32(blk.qs, qmm_iq4_values, q + 32 * b);
        }
    } else if (type == QMM_TYPE_MXFP4) {
        for (int64_t b = 0; b < k / 32; b++) {
            block_mxfp4 blk;
            memcpy(&blk, row + (size_t)b * sizeof blk, sizeof blk);
            d[b] = qmm_e8m0_to_fp32_half(blk.e);
            group32(blk.qs, qmm_kvalues_e2m1, q + 32 * b);
        }
    } else if (type == QMM_TYPE_IQ4_XS) {
        for (int64_t s = 0; s < k / 256; s++) {
            block_iq4_xs blk;
            memcpy(&blk, row + (size_t)s * sizeof blk, sizeof blk);
            const float dd = qmm_fp16_to_fp32(blk.d);
            for (int ib = 0; ib < 8; ib++) {
                const int ls = ((blk.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                               (((blk.scales_h >> (2 * ib)) & 3) << 4);
                d[8 * s + ib] = dd * (float)(ls - 32);
                group32(blk.qs + 16 * ib, qmm_iq4_values, q + 256 * s + 32 * ib);
            }
        }
    }
}
