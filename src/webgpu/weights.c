/*
 * weights.c — weights on a WebGPU device: the raw GGUF rows, uploaded once into storage
 * buffers that the kernels read as array<u32>.
 *
 * Layout: row r at word r * row_words of its buffer, row_words = ceil(row_bytes / 4) (the
 * row's bytes unchanged, zero bytes up to the next word), then QMM_WGPU_W_PAD zero bytes.
 * A matrix larger than one storage binding (maxStorageBufferBindingSize, also maxBufferSize
 * and the 32-bit byte addresses of the kernels) is split by rows into several buffers;
 * matmul dispatches each one on its range of output columns.
 *
 * Row shifts (wgsl/common.wgsl, "scaling"): of the types only f32, bf16 and mxfp4 decode to
 * f32 subnormals (an element, or an E8M0 scale of 0x00 or 0x01), which a device that
 * flushes subnormals would turn into 0. A row of those types whose largest |w| is finite,
 * nonzero and below 2^-40 is uploaded multiplied by 2^s, s = -ilogb(largest |w|) (f32 and
 * bf16 elements scaled, mxfp4's E8M0 bytes raised by s: exact, no value leaves the normal
 * range); s per row goes into a buffer of m i32 (binding 6; 0 for every other row and type),
 * and the kernels divide the row's outputs by 2^s. Rows with small and normal values mixed
 * are uploaded as they are (their subnormal values may be flushed by such a device).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/types.h"
#include "formats/blocks.h"
#include "formats/fp16.h"
#include "webgpu/webgpu_internal.h"

#define UPLOAD_PIECE ((size_t)32 << 20)

static void free_weights(qmm_wgpu_weights *ww) {
    if (ww == NULL) return;
    for (int i = 0; i < ww->nchunks; i++) {
        if (ww->chunks[i].buf == NULL) continue;
        W.wgpuBufferDestroy(ww->chunks[i].buf);
        W.wgpuBufferRelease(ww->chunks[i].buf);
    }
    if (ww->rshift != NULL) {
        W.wgpuBufferDestroy(ww->rshift);
        W.wgpuBufferRelease(ww->rshift);
    }
    free(ww->chunks);
    free(ww);
}

static bool has_subnormal_values(qmm_type type) {
    return type == QMM_TYPE_F32 || type == QMM_TYPE_BF16 || type == QMM_TYPE_MXFP4;
}

/* The shift of one row (0 unless its largest |w| is finite, nonzero and below 2^-40);
 * tmp holds k floats. */
static int32_t row_shift(qmm_type type, const void *row, int64_t k, float *tmp) {
    qmm_type_traits_get(type)->to_float(row, tmp, k);
    float mx = 0.0f;
    for (int64_t i = 0; i < k; i++) {
        if (!isfinite(tmp[i])) return 0;
        const float a = fabsf(tmp[i]);
        if (a > mx) mx = a;
    }
    if (mx == 0.0f || mx >= 0x1p-40f) return 0;
    return -ilogbf(mx);
}

/* Row `row` (row_bytes of it) multiplied by 2^s in place (s > 0, from row_shift). */
static void scale_row(qmm_type type, uint8_t *row, int64_t k, int32_t s) {
    if (type == QMM_TYPE_F32) {
        float *v = (float *)(void *)row;
        for (int64_t i = 0; i < k; i++) v[i] = ldexpf(v[i], s);
    } else if (type == QMM_TYPE_BF16) {
        qmm_bf16 *v = (qmm_bf16 *)(void *)row;
        for (int64_t i = 0; i < k; i++) v[i] = qmm_fp32_to_bf16(ldexpf(qmm_bf16_to_fp32(v[i]), s));
    } else { /* mxfp4: raise each block's E8M0 byte (a block above 254 has only zero codes) */
        block_mxfp4 *b = (block_mxfp4 *)(void *)row;
        for (int64_t i = 0; i < k / QK_MXFP4; i++) {
            const int32_t e = (int32_t)b[i].e + s;
            b[i].e = (uint8_t)(e > 254 ? 254 : e);
        }
    }
}

/* Upload rows [row0, row0 + rows) into chunk buffer b, in pieces of whole rows (each row
 * multiplied by 2^shift[r] where shift is not NULL). */
static qmm_status upload_rows(qmm_wgpu_context *c, WGPUBuffer b, const qmm_weights *w,
                              const uint8_t *data, size_t row_stride, uint32_t row_words,
                              int64_t row0, int64_t rows, const int32_t *shift) {
    const size_t stride = (size_t)row_words * 4, row_bytes = w->row_bytes;
    if (row_stride == stride && shift == NULL) { /* already the device layout: straight from the caller's bytes */
        const size_t total = (size_t)rows * stride;
        for (size_t off = 0; off < total; off += UPLOAD_PIECE) {
            const size_t piece = total - off < UPLOAD_PIECE ? total - off : UPLOAD_PIECE;
            qmm_status st = qmm_wgpu_write(c, b, off, data + (size_t)row0 * row_stride + off, piece);
            if (st != QMM_OK) return st;
        }
        return QMM_OK;
    }
    int64_t per = (int64_t)(UPLOAD_PIECE / stride);
    if (per < 1) per = 1;
    uint8_t *tmp = calloc((size_t)(per < rows ? per : rows), stride);
    if (tmp == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU weights: out of host memory");
    qmm_status st = QMM_OK;
    for (int64_t r = 0; r < rows && st == QMM_OK; r += per) {
        const int64_t cnt = rows - r < per ? rows - r : per;
        for (int64_t i = 0; i < cnt; i++) {
            uint8_t *dst = tmp + (size_t)i * stride;
            memcpy(dst, data + (size_t)(row0 + r + i) * row_stride, row_bytes);
            if (shift != NULL && shift[row0 + r + i] != 0) scale_row(w->type, dst, w->k, shift[row0 + r + i]);
        }
        st = qmm_wgpu_write(c, b, (uint64_t)r * stride, tmp, (uint64_t)cnt * stride);
    }
    free(tmp);
    return st;
}

qmm_status qmm_wgpu_weights_init(qmm_context *ctx, qmm_weights *w, const void *data, size_t row_stride) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    qmm_status st = qmm_wgpu_check_device(c, "qmm_weights_create");
    if (st != QMM_OK) return st;
    if (!qmm_wgpu_has_type(w->type))
        return qmm_error(QMM_ERR_UNSUPPORTED, "WebGPU backend: no WGSL decoder for %s weights yet "
                         "(docs/WEBGPU.md lists the types it has)", qmm_type_name(w->type));
    if (w->k > (int64_t)UINT32_MAX / 2)
        return qmm_error(QMM_ERR_UNSUPPORTED, "WebGPU backend: k (%lld) exceeds the kernels' "
                         "32-bit element indices", (long long)w->k);
    const uint64_t stride = ((uint64_t)w->row_bytes + 3) / 4 * 4;
    uint64_t limit = c->limits.maxStorageBufferBindingSize;
    if (limit > c->limits.maxBufferSize) limit = c->limits.maxBufferSize;
    if (limit > ((uint64_t)1 << 32) - 256) limit = ((uint64_t)1 << 32) - 256; /* u32 byte addresses */
    if (stride + QMM_WGPU_W_PAD > limit)
        return qmm_error(QMM_ERR_UNSUPPORTED, "WebGPU backend: one row of %s weights (k = %lld, %llu "
                         "bytes) exceeds the device's storage binding limit (%llu bytes)",
                         qmm_type_name(w->type), (long long)w->k, (unsigned long long)stride,
                         (unsigned long long)limit);
    int64_t per = (int64_t)((limit - QMM_WGPU_W_PAD) / stride);
    if (per > w->m) per = w->m;
    qmm_wgpu_weights *ww = calloc(1, sizeof *ww);
    if (ww == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU weights: out of host memory");
    ww->row_words = (uint32_t)(stride / 4);
    ww->nchunks = (int)((w->m + per - 1) / per);
    ww->chunks = calloc((size_t)ww->nchunks, sizeof *ww->chunks);
    if (ww->chunks == NULL) {
        free(ww);
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU weights: out of host memory");
    }
    int32_t *shift = NULL; /* the row shifts, where a row has one */
    if (has_subnormal_values(w->type)) {
        float *tmp = malloc((size_t)w->k * sizeof *tmp);
        shift = calloc((size_t)w->m, sizeof *shift);
        if (tmp == NULL || shift == NULL) {
            free(tmp);
            free(shift);
            free_weights(ww);
            return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU weights: out of host memory");
        }
        for (int64_t r = 0; r < w->m; r++) {
            shift[r] = row_shift(w->type, (const uint8_t *)data + (size_t)r * row_stride, w->k, tmp);
            if (shift[r] != 0) ww->scaled_rows++;
        }
        free(tmp);
        if (ww->scaled_rows == 0) {
            free(shift);
            shift = NULL;
        }
    }
    ww->rshift_bytes = (uint64_t)w->m * 4;
    st = qmm_wgpu_buffer_create(c, ww->rshift_bytes, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst,
                                "qmm_weights_create (row shift buffer)", &ww->rshift);
    if (st == QMM_OK && shift != NULL) st = qmm_wgpu_write(c, ww->rshift, 0, shift, ww->rshift_bytes);
    for (int i = 0; i < ww->nchunks && st == QMM_OK; i++) {
        qmm_wgpu_chunk *ch = &ww->chunks[i];
        ch->row0 = (int64_t)i * per;
        ch->rows = w->m - ch->row0 < per ? w->m - ch->row0 : per;
        ch->bytes = (uint64_t)ch->rows * stride + QMM_WGPU_W_PAD;
        /* buffers are zero-initialized by WebGPU: the padding and the row tails stay zero */
        st = qmm_wgpu_buffer_create(c, ch->bytes, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst,
                                    "qmm_weights_create (weights buffer)", &ch->buf);
        if (st == QMM_OK)
            st = upload_rows(c, ch->buf, w, data, row_stride, ww->row_words, ch->row0, ch->rows, shift);
    }
    free(shift);
    if (st == QMM_OK) st = qmm_wgpu_sync(c);
    if (st != QMM_OK) {
        free_weights(ww);
        return st;
    }
    w->backend = ww;
    return QMM_OK;
}

void qmm_wgpu_weights_release(qmm_weights *w) {
    qmm_wgpu_weights *ww = w->backend;
    if (ww == NULL) return;
    qmm_wgpu_context *c = qmm_wgpu_ctx(w->ctx);
    for (int i = 0; i < ww->nchunks; i++)
        if (ww->chunks[i].buf) qmm_wgpu_binds_forget(c, ww->chunks[i].buf);
    free_weights(ww);
    w->backend = NULL;
}

/* What the weights hold on the device: their storage buffers (the GGUF rows, each row padded
 * to whole u32 words, and the tail padding of each chunk: gguf_bytes) and the row shifts
 * (m x 4 bytes: repacked_bytes); no copies are ever made. */
void qmm_wgpu_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out) {
    const qmm_wgpu_weights *ww = w->backend;
    size_t bytes = 0;
    for (int i = 0; ww != NULL && i < ww->nchunks; i++) bytes += (size_t)ww->chunks[i].bytes;
    out->gguf_bytes = bytes;
    out->repacked_bytes = ww != NULL ? (size_t)ww->rshift_bytes : 0;
}
