/*
 * weights.c — weights on a WebGPU device: the raw GGUF rows, uploaded once into storage
 * buffers that the kernels read as array<u32>.
 *
 * Layout: row r at word r * row_words of its buffer, row_words = ceil(row_bytes / 4) (the
 * row's bytes unchanged, zero bytes up to the next word), then QMM_WGPU_W_PAD zero bytes.
 * A matrix larger than one storage binding (maxStorageBufferBindingSize, also maxBufferSize
 * and the 32-bit byte addresses of the kernels) is split by rows into several buffers;
 * matmul dispatches each one on its range of output columns.
 */
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

#define UPLOAD_PIECE ((size_t)32 << 20)

static void free_weights(qmm_wgpu_weights *ww) {
    if (ww == NULL) return;
    for (int i = 0; i < ww->nchunks; i++) {
        if (ww->chunks[i].buf == NULL) continue;
        W.wgpuBufferDestroy(ww->chunks[i].buf);
        W.wgpuBufferRelease(ww->chunks[i].buf);
    }
    free(ww->chunks);
    free(ww);
}

/* Upload rows [row0, row0 + rows) into chunk buffer b, in pieces of whole rows. */
static qmm_status upload_rows(qmm_wgpu_context *c, WGPUBuffer b, const uint8_t *data, size_t row_stride,
                              size_t row_bytes, uint32_t row_words, int64_t row0, int64_t rows) {
    const size_t stride = (size_t)row_words * 4;
    if (row_stride == stride) { /* already the device layout: straight from the caller's bytes */
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
        for (int64_t i = 0; i < cnt; i++)
            memcpy(tmp + (size_t)i * stride, data + (size_t)(row0 + r + i) * row_stride, row_bytes);
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
    for (int i = 0; i < ww->nchunks && st == QMM_OK; i++) {
        qmm_wgpu_chunk *ch = &ww->chunks[i];
        ch->row0 = (int64_t)i * per;
        ch->rows = w->m - ch->row0 < per ? w->m - ch->row0 : per;
        ch->bytes = (uint64_t)ch->rows * stride + QMM_WGPU_W_PAD;
        /* buffers are zero-initialized by WebGPU: the padding and the row tails stay zero */
        st = qmm_wgpu_buffer_create(c, ch->bytes, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst,
                                    "qmm_weights_create (weights buffer)", &ch->buf);
        if (st == QMM_OK)
            st = upload_rows(c, ch->buf, data, row_stride, w->row_bytes, ww->row_words, ch->row0, ch->rows);
    }
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
 * to whole u32 words, and the tail padding of each chunk); no copies are ever made. */
void qmm_wgpu_weights_memory(const qmm_weights *w, qmm_weights_memory_info *out) {
    const qmm_wgpu_weights *ww = w->backend;
    size_t bytes = 0;
    for (int i = 0; ww != NULL && i < ww->nchunks; i++) bytes += (size_t)ww->chunks[i].bytes;
    out->gguf_bytes = bytes;
}
