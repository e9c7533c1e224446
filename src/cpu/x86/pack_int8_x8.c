/*
 * pack_int8_x8.c — the W layout of the AVX2 int8 GEMM (gemm_int8_avx2.h): blocks of 8
 * interleaved rows, unsigned int8 quants u = q + offset and the dequantizer's float scales (and
 * mins) per row and 32-element block, or for q2_K, q3_K, q6_K the integer scales of the two
 * 16-element sub-blocks next to the super-block's float d.
 *
 * Quants of at most 4 bits (q4_0, q4_1, q4_K, q2_K, q3_K, and the 4-bit codebook indices of
 * iq4_nl, iq4_xs, mxfp4) are stored as nibbles, the others as bytes (the layout and the memory
 * in gemm_int8_avx2.h and docs/KERNELS.md).
 * The 32-element-block types are unpacked by pack_int8.c's qmm_x86_int8_unpack_row (the AMX
 * tiles' formulas: q and the float scale d, min mn with d * q + mn = to_float; the codebook
 * types' q is the codebook value, mapped back to an index of the same value); q2_K, q3_K and
 * q6_K here, with the dequantizer's bit layout (quants_k.c): element e of a super-block is in
 * sub-block e / 16, and (d * sc) * q (q2_K: minus dmin * m) is to_float with the same float
 * operands. qmm_x86_gemm_int8_avx2_unpack_row rebuilds the floats from the packed record, which
 * tests/test_int8_avx2.c compares bit for bit with to_float.
 * Portable C (no -m flags): runs once per weights object, on OpenMP threads.
 * Format source: ggml-common.h / ggml-quants.c (block structs, dequantize_row_q2_K/q3_K/q6_K).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "cpu/x86/gemm_int8_avx2.h"
#include "cpu/x86/gemm_int8_avx2_layout.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/blocks.h"
#include "formats/codec_fp4.h"
#include "formats/codec_iq4.h"
#include "formats/fp16.h"

/* How a type is packed; false for a type the GEMM does not handle. */
typedef struct x8_config {
    qmm_x8_kind kind;
    int offset;
    bool has_min, nibbles;
    const int8_t *codebook; /* 16 values of the 4-bit index, or NULL */
} x8_config;

static bool type_config(qmm_type type, x8_config *c) {
    memset(c, 0, sizeof *c);
    switch (type) {
    case QMM_TYPE_Q4_0: c->kind = QMM_X8_K32_U4; c->offset = 8; c->nibbles = true; return true;
    case QMM_TYPE_Q4_1:
    case QMM_TYPE_Q4_K: c->kind = QMM_X8_K32_U4; c->has_min = c->nibbles = true; return true;
    case QMM_TYPE_Q5_0: c->kind = QMM_X8_K32_U5; c->offset = 16; return true;
    case QMM_TYPE_Q5_1:
    case QMM_TYPE_Q5_K: c->kind = QMM_X8_K32_U5; c->has_min = true; return true;
    case QMM_TYPE_Q8_0: c->kind = QMM_X8_K32_U8; c->offset = 128; return true;
    case QMM_TYPE_MXFP4: /* values -12..12: u = value + 12 in 0..24 */
        c->kind = QMM_X8_K32_U5; c->offset = 12; c->nibbles = true;
        c->codebook = qmm_kvalues_e2m1;
        return true;
    case QMM_TYPE_IQ4_NL: /* values -127..113 */
    case QMM_TYPE_IQ4_XS:
        c->kind = QMM_X8_K32_U8; c->offset = 128; c->nibbles = true;
        c->codebook = qmm_iq4_values;
        return true;
    case QMM_TYPE_Q6_K: c->kind = QMM_X8_K16; c->offset = 32; return true;
    case QMM_TYPE_Q3_K: c->kind = QMM_X8_K16; c->offset = 4; c->nibbles = true; return true;
    case QMM_TYPE_Q2_K: c->kind = QMM_X8_K16; c->nibbles = true; return true;
    default: return false;
    }
}

bool qmm_x86_gemm_int8_avx2_has_type(qmm_type type) {
    x8_config c;
    return type_config(type, &c);
}

static size_t qbytes_of(const x8_config *c) { return c->nibbles ? 128 : 256; }

static size_t rec_bytes_of(qmm_type type, const x8_config *c) {
    size_t b = qbytes_of(c) + 32; /* quants, d */
    if (c->has_min || c->kind == QMM_X8_K16) b += 32; /* mn or (sc0, sc1) */
    if (type == QMM_TYPE_Q2_K) b += 64;                /* (m0, m1), -dmin */
    return b;
}

size_t qmm_x86_gemm_int8_avx2_packed_bytes(qmm_type type, int64_t m, int64_t k) {
    x8_config c;
    if (!type_config(type, &c) || m < 1 || k < 32 || k % 32 != 0) return 0;
    const int64_t groups = (m + QMM_X8_ROWS - 1) / QMM_X8_ROWS;
    size_t recs, bytes;
    if (!qmm_mul_size((size_t)groups, (size_t)(k / 32), &recs) ||
        !qmm_mul_size(recs, rec_bytes_of(type, &c), &bytes))
        return 0;
    return bytes;
}

/* ---------------------------------------------------------------------------------------
 * q2_K, q3_K, q6_K: per element u (unsigned quant), per 16-element sub-block the integer scale
 * sc (and q2_K's integer min m), per super-block d (and q2_K's dmin).
 * ------------------------------------------------------------------------------------- */

/* q3_K's signed 6-bit scale of sub-block j (quants_k.c's q3_K_scale). */
static int q3k_scale(const uint8_t *scales, int j) {
    const int lo = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
    const int hi = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

static void unpack_k16(qmm_type type, const unsigned char *row, int64_t k, uint8_t *u, int *sc,
                       int *mins, float *d, float *dmin) {
    for (int64_t s = 0; s < k / QK_K; s++) {
        uint8_t *us = u + s * QK_K;
        int *scs = sc + s * 16, *ms = mins + s * 16;
        if (type == QMM_TYPE_Q6_K) {
            block_q6_K b;
            memcpy(&b, row + (size_t)s * sizeof b, sizeof b);
            d[s] = qmm_fp16_to_fp32(b.d);
            dmin[s] = 0.0f;
            for (int h = 0; h < 2; h++)
                for (int p = 0; p < 4; p++)
                    for (int l = 0; l < 32; l++) {
                        const int lo = (b.ql[64 * h + l + 32 * (p & 1)] >> (4 * (p >> 1))) & 0xF;
                        const int hi = (b.qh[32 * h + l] >> (2 * p)) & 3;
                        us[128 * h + 32 * p + l] = (uint8_t)(lo | (hi << 4));
                    }
            for (int j = 0; j < 16; j++) scs[j] = b.scales[j], ms[j] = 0;
        } else if (type == QMM_TYPE_Q3_K) {
            block_q3_K b;
            memcpy(&b, row + (size_t)s * sizeof b, sizeof b);
            d[s] = qmm_fp16_to_fp32(b.d);
            dmin[s] = 0.0f;
            for (int h = 0; h < 2; h++)
                for (int p = 0; p < 4; p++)
                    for (int l = 0; l < 32; l++) {
                        const int lo = (b.qs[32 * h + l] >> (2 * p)) & 3;
                        const int hb = (b.hmask[l] >> (4 * h + p)) & 1;
                        us[128 * h + 32 * p + l] = (uint8_t)(lo + 4 * hb); /* q = u - 4 */
                    }
            for (int j = 0; j < 16; j++) scs[j] = q3k_scale(b.scales, j), ms[j] = 0;
        } else { /* q2_K */
            block_q2_K b;
            memcpy(&b, row + (size_t)s * sizeof b, sizeof b);
            d[s] = qmm_fp16_to_fp32(b.d);
            dmin[s] = qmm_fp16_to_fp32(b.dmin);
            for (int h = 0; h < 2; h++)
                for (int p = 0; p < 4; p++)
                    for (int l = 0; l < 32; l++)
                        us[128 * h + 32 * p + l] = (uint8_t)((b.qs[32 * h + l] >> (2 * p)) & 3);
            for (int j = 0; j < 16; j++) scs[j] = b.scales[j] & 0xF, ms[j] = b.scales[j] >> 4;
        }
    }
}

static void put_f32(unsigned char *at, int r, float v) { memcpy(at + 4 * r, &v, 4); }

static void put_pair(unsigned char *at, int r, int a, int b) {
    const int16_t p[2] = {(int16_t)a, (int16_t)b};
    memcpy(at + 4 * r, p, 4);
}

/* Lane r of a record's quant vectors from the 32 u (or indices) of one row's block. */
static void put_quants(const qmm_x86_int8_x8 *w, unsigned char *rec, int r, const uint8_t *u32) {
    for (int v = 0; v < 8; v++)
        for (int e = 0; e < 4; e++) {
            if (w->qbytes == 256) rec[32 * v + 4 * r + e] = u32[4 * v + e];
            else rec[32 * (v / 2) + 4 * r + e] |= (uint8_t)(u32[4 * v + e] << (4 * (v % 2)));
        }
}

/* Per-thread buffers for one row. */
typedef struct row_buf {
    int8_t *q;
    uint8_t *u;
    float *d, *mn, *dsup, *dmin;
    int *sc, *mins;
} row_buf;

static bool row_buf_alloc(row_buf *b, int64_t k) {
    b->q = malloc((size_t)k);
    b->u = malloc((size_t)k);
    b->d = malloc((size_t)(k / 32) * sizeof(float));
    b->mn = malloc((size_t)(k / 32) * sizeof(float));
    b->dsup = malloc((size_t)(k / 32) * sizeof(float));
    b->dmin = malloc((size_t)(k / 32) * sizeof(float));
    b->sc = malloc((size_t)(k / 16) * sizeof(int));
    b->mins = malloc((size_t)(k / 16) * sizeof(int));
    return b->q && b->u && b->d && b->mn && b->dsup && b->dmin && b->sc && b->mins;
}

static void row_buf_free(row_buf *b) {
    free(b->q);
    free(b->u);
    free(b->d);
    free(b->mn);
    free(b->dsup);
    free(b->dmin);
    free(b->sc);
    free(b->mins);
}

/* The index of a codebook value (the first of equal values: mxfp4's 0 and -0 are both 0). */
static uint8_t codebook_index(const int8_t *cb, int8_t v) {
    for (int i = 0; i < 16; i++)
        if (cb[i] == v) return (uint8_t)i;
    return 0; /* not reached: q came from the same codebook */
}

/* Pack W row i (< m) into lane i % 8 of its group's records. */
static void pack_row(const qmm_x86_int8_x8 *w, const int8_t *codebook, const unsigned char *row,
                     int64_t i, row_buf *b) {
    const int64_t k = w->k, kc = k / 32, g = i / QMM_X8_ROWS;
    const int r = (int)(i % QMM_X8_ROWS);
    unsigned char *recs = w->data + (size_t)g * (size_t)kc * w->rec_bytes;
    if (w->kind == QMM_X8_K16) {
        unpack_k16(w->type, row, k, b->u, b->sc, b->mins, b->dsup, b->dmin);
        for (int64_t c = 0; c < kc; c++) {
            unsigned char *rec = recs + (size_t)c * w->rec_bytes, *meta = rec + w->qbytes;
            put_quants(w, rec, r, b->u + 32 * c);
            put_f32(meta + QMM_X8_REC_D, r, b->dsup[c / 8]);
            put_pair(meta + QMM_X8_REC_SC, r, b->sc[2 * c], b->sc[2 * c + 1]);
            if (w->type == QMM_TYPE_Q2_K) {
                put_pair(meta + QMM_X8_REC_M01, r, b->mins[2 * c], b->mins[2 * c + 1]);
                put_f32(meta + QMM_X8_REC_NDMIN, r, -b->dmin[c / 8]);
            }
        }
        return;
    }
    qmm_x86_int8_unpack_row(w->type, row, k, b->q, b->d, b->mn);
    for (int64_t e = 0; e < k; e++)
        b->u[e] = codebook != NULL ? codebook_index(codebook, b->q[e]) : (uint8_t)(b->q[e] + w->offset);
    for (int64_t c = 0; c < kc; c++) {
        unsigned char *rec = recs + (size_t)c * w->rec_bytes, *meta = rec + w->qbytes;
        put_quants(w, rec, r, b->u + 32 * c);
        put_f32(meta + QMM_X8_REC_D, r, b->d[c]);
        if (w->has_min) put_f32(meta + QMM_X8_REC_MN, r, b->mn[c]);
    }
}

qmm_status qmm_x86_gemm_int8_avx2_pack(qmm_type type, int64_t m, int64_t k, const void *rows,
                                       size_t row_stride, int n_threads, qmm_x86_int8_x8 *out) {
    qmm_x86_int8_x8 w;
    memset(&w, 0, sizeof w);
    x8_config cfg;
    if (!type_config(type, &cfg))
        return qmm_error(QMM_ERR_INTERNAL, "int8_avx2 packing: type %d is not handled", (int)type);
    w.kind = cfg.kind;
    w.offset = cfg.offset;
    w.has_min = cfg.has_min;
    w.has_lut = cfg.codebook != NULL;
    for (int i = 0; i < 16 && w.has_lut; i++) w.lut[i] = (uint8_t)(cfg.codebook[i] + cfg.offset);
    const int64_t bs = w.kind == QMM_X8_K16 || type == QMM_TYPE_Q4_K || type == QMM_TYPE_Q5_K ||
                               type == QMM_TYPE_IQ4_XS ? QK_K : 32;
    if (k < bs || k % bs != 0)
        return qmm_error(QMM_ERR_INTERNAL, "int8_avx2 packing: k=%lld is not a multiple of %lld",
                         (long long)k, (long long)bs);
    const size_t bytes = qmm_x86_gemm_int8_avx2_packed_bytes(type, m, k);
    if (bytes == 0)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "int8_avx2 packing: %lld x %lld overflows",
                         (long long)m, (long long)k);
    w.type = type;
    w.m = m;
    w.k = k;
    w.m_pad = (m + QMM_X8_ROWS - 1) / QMM_X8_ROWS * QMM_X8_ROWS;
    w.qbytes = qbytes_of(&cfg);
    w.rec_bytes = rec_bytes_of(type, &cfg);
    w.bytes = bytes;
    w.data = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (w.data == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY,
                         "int8_avx2 packing: cannot allocate %zu bytes for %lld x %lld weights",
                         bytes, (long long)m, (long long)k);
    /* padding rows (and every byte a row does not write) are zero: u = 0, scales 0 */
    memset(w.data, 0, bytes);
    int failed = 0;
#pragma omp parallel num_threads(n_threads < 1 ? 1 : n_threads) reduction(| : failed)
    {
        row_buf b;
        if (!row_buf_alloc(&b, k)) failed = 1;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m; i++) {
            if (failed) continue;
            pack_row(&w, cfg.codebook, (const unsigned char *)rows + (size_t)i * row_stride, i, &b);
        }
        row_buf_free(&b);
    }
    if (failed) {
        free(w.data);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "int8_avx2 packing: cannot allocate row buffers");
    }
    *out = w;
    return QMM_OK;
}

void qmm_x86_gemm_int8_avx2_free(qmm_x86_int8_x8 *w) {
    if (w == NULL) return;
    free(w->data);
    memset(w, 0, sizeof *w);
}

static float get_f32(const unsigned char *at, int r) {
    float v;
    memcpy(&v, at + 4 * r, 4);
    return v;
}

static int get_half(const unsigned char *at, int r, int which) {
    int16_t p[2];
    memcpy(p, at + 4 * r, 4);
    return p[which];
}

/* u of element e (0..31) of lane r of a record (through the codebook for the index types). */
static int get_u(const qmm_x86_int8_x8 *w, const unsigned char *rec, int r, int e) {
    const int v = e / 4;
    int u = w->qbytes == 256 ? rec[32 * v + 4 * r + e % 4]
                             : (rec[32 * (v / 2) + 4 * r + e % 4] >> (4 * (v % 2))) & 0xF;
    return w->has_lut ? w->lut[u] : u;
}

void qmm_x86_gemm_int8_avx2_unpack_row(const qmm_x86_int8_x8 *w, int64_t i, float *out) {
    const int64_t kc = w->k / 32, g = i / QMM_X8_ROWS;
    const int r = (int)(i % QMM_X8_ROWS);
    const unsigned char *recs = w->data + (size_t)g * (size_t)kc * w->rec_bytes;
    for (int64_t c = 0; c < kc; c++) {
        const unsigned char *rec = recs + (size_t)c * w->rec_bytes, *meta = rec + w->qbytes;
        const float d = get_f32(meta + QMM_X8_REC_D, r);
        for (int e = 0; e < 32; e++) {
            const int q = get_u(w, rec, r, e) - w->offset;
            float v;
            if (w->kind == QMM_X8_K16) {
                v = (d * (float)get_half(meta + QMM_X8_REC_SC, r, e / 16)) * (float)q;
                if (w->type == QMM_TYPE_Q2_K)
                    v = v - (-get_f32(meta + QMM_X8_REC_NDMIN, r)) *
                                (float)get_half(meta + QMM_X8_REC_M01, r, e / 16);
            } else {
                v = d * (float)q;
                if (w->has_min) v = v + get_f32(meta + QMM_X8_REC_MN, r);
            }
            out[32 * c + e] = v;
        }
    }
}
