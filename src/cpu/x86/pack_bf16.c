/*
 * pack_bf16.c — packs any weight type into bf16 AMX B-tiles (layout in x86_kernels.h); f32
 * weights as three bf16 parts (hi, mid, lo) for the f32-accurate bf16x3 GEMM.
 * Portable C (no -m flags): it runs once per weights object, at creation, on OpenMP threads
 * (row groups of 16 split statically; each group is written by one thread).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/types.h"
#include "cpu/x86/x86_kernels.h"
#include "formats/fp16.h"

float qmm_x86_bf16_row_scale(const float *v, int64_t k) {
    float amax = 0.0f;
    for (int64_t p = 0; p < k; p++) amax = fmaxf(amax, fabsf(v[p]));
    if (!(amax > 0.0f) || !isfinite(amax) || (amax >= 0x1p-40f && amax <= 0x1p40f)) return 1.0f;
    return ldexpf(1.0f, ilogbf(amax));
}

qmm_status qmm_x86_bf16_tiles_pack(qmm_type type, int64_t m, int64_t k, const void *rows,
                                   size_t row_stride, int n_threads,
                                   qmm_x86_bf16_tiles *out) {
    const qmm_type_traits *t = qmm_type_traits_get(type);
    if (t == NULL || t->to_float == NULL)
        return qmm_error(QMM_ERR_INTERNAL, "bf16 tile packing: type %d has no to_float",
                         (int)type);
    const int64_t m_pad = (m + QMM_X86_TILE_M - 1) / QMM_X86_TILE_M * QMM_X86_TILE_M;
    const int64_t k_pad = (k + QMM_X86_TILE_K - 1) / QMM_X86_TILE_K * QMM_X86_TILE_K;
    const int parts = type == QMM_TYPE_F32 ? 3 : 1;
    size_t elems, bytes;
    if (!qmm_mul_size((size_t)m_pad, (size_t)k_pad, &elems) ||
        !qmm_mul_size(elems, sizeof(uint16_t) * (size_t)parts, &bytes))
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "bf16 tile packing: %lld x %lld overflows",
                         (long long)m, (long long)k);
    uint16_t *data = aligned_alloc(64, bytes);
    float *row_scale = aligned_alloc(64, ((size_t)m_pad * sizeof(float) + 63) / 64 * 64);
    if (data == NULL || row_scale == NULL) {
        free(data);
        free(row_scale);
        data = NULL;
    }
    if (data == NULL)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY,
                         "bf16 tile packing: cannot allocate %zu bytes for %lld x %lld weights",
                         bytes, (long long)m, (long long)k);
    const int64_t kc = k_pad / QMM_X86_TILE_K, groups = m_pad / QMM_X86_TILE_M;
    int failed = 0, nonfinite = 0;
#pragma omp parallel num_threads(n_threads < 1 ? 1 : n_threads) reduction(| : failed, nonfinite)
    {
        float *row = malloc((size_t)k_pad * sizeof(float));
        if (row == NULL) failed = 1;
#pragma omp for schedule(static)
        for (int64_t g = 0; g < groups; g++) {
            if (row == NULL) continue;
            for (int64_t j = 0; j < QMM_X86_TILE_M; j++) {
                const int64_t i = g * QMM_X86_TILE_M + j;
                if (i < m)
                    t->to_float((const unsigned char *)rows + (size_t)i * row_stride, row, k);
                else
                    memset(row, 0, (size_t)k * sizeof(float));
                memset(row + k, 0, (size_t)(k_pad - k) * sizeof(float));
                for (int64_t p = 0; p < k; p++) nonfinite |= !isfinite(row[p]);
                row_scale[i] = qmm_x86_bf16_row_scale(row, k);
                if (row_scale[i] != 1.0f) { /* divide by 2^e exactly (2^-e may overflow) */
                    const int e = ilogbf(row_scale[i]);
                    for (int64_t p = 0; p < k; p++) row[p] = ldexpf(row[p], -e);
                }
                for (int part = 0; part < parts; part++) {
                    uint16_t *pdata = data + (size_t)part * elems;
                    for (int64_t c = 0; c < kc; c++) {
                        uint16_t *tile = pdata + (size_t)(g * kc + c) * (QMM_X86_TILE_M * QMM_X86_TILE_K);
                        float *src = row + c * QMM_X86_TILE_K;
                        for (int e = 0; e < QMM_X86_TILE_K; e++) {
                            const uint16_t b = qmm_fp32_to_bf16(src[e]);
                            tile[(e / 2) * 32 + 2 * j + e % 2] = b;
                            /* residual for the next part (exact; 0 for Inf/NaN) */
                            src[e] = isfinite(src[e]) ? src[e] - qmm_bf16_to_fp32(b) : 0.0f;
                        }
                    }
                }
            }
        }
        free(row);
    }
    if (failed) {
        free(data);
        free(row_scale);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "bf16 tile packing: cannot allocate row buffers");
    }
    out->data = data;
    out->row_scale = row_scale;
    out->parts = parts;
    out->nonfinite = nonfinite != 0;
    out->m = m;
    out->k = k;
    out->m_pad = m_pad;
    out->k_pad = k_pad;
    return QMM_OK;
}

void qmm_x86_bf16_tiles_free(qmm_x86_bf16_tiles *t) {
    if (t == NULL) return;
    free(t->data);
    free(t->row_scale);
    memset(t, 0, sizeof *t);
}
