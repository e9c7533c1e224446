/*
 * buffers.c — X/Y memory of a WebGPU context: the address table, allocation, upload and
 * download in any alignment, and the caller's buffers (qmm_webgpu_buffer_import).
 *
 * qmm_buffer_alloc returns the address of a PROT_NONE reservation of the buffer's size (no
 * memory behind it: a host access faults); qmm calls map an address inside a reservation
 * to its WGPUBuffer and byte offset, so `x + i * ldx` and sub-ranges work as with device
 * pointers. Buffers are rounded up to whole 4-byte words (WebGPU copies move words); an
 * upload or download that starts or ends inside a word reads the edge words and merges, so
 * no byte outside the range is changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qmm_webgpu.h"
#include "webgpu/webgpu_internal.h"

static size_t page_round(size_t bytes) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + page - 1) / page * page;
}

static qmm_status table_add(qmm_wgpu_context *c, size_t bytes, WGPUBuffer b, uint64_t buf_bytes,
                            bool imported, void **out) {
    if (c->nbufs == c->cap_bufs) {
        const size_t cap = c->cap_bufs ? 2 * c->cap_bufs : 16;
        qmm_wgpu_buffer *nb = realloc(c->bufs, cap * sizeof *nb);
        if (nb == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU: out of host memory");
        c->bufs = nb;
        c->cap_bufs = cap;
    }
    const size_t reserved = page_round(bytes);
    void *p = mmap(NULL, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU: reserving %zu bytes of address space "
                         "for a buffer failed", reserved);
    qmm_wgpu_buffer *e = &c->bufs[c->nbufs++];
    e->base = (uintptr_t)p;
    e->bytes = bytes;
    e->reserved = reserved;
    e->buf = b;
    e->buf_bytes = buf_bytes;
    e->imported = imported;
    *out = p;
    return QMM_OK;
}

static void entry_release(qmm_wgpu_context *c, qmm_wgpu_buffer *e) {
    qmm_wgpu_binds_forget(c, e->buf);
    if (!e->imported) W.wgpuBufferDestroy(e->buf);
    W.wgpuBufferRelease(e->buf);
    munmap((void *)e->base, e->reserved);
}

qmm_status qmm_wgpu_buffer_alloc(qmm_context *ctx, size_t bytes, void **out) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    qmm_status st = qmm_wgpu_check_device(c, "qmm_buffer_alloc");
    if (st != QMM_OK) return st;
    if (bytes > UINT64_MAX - 4 || bytes > SIZE_MAX / 2)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_buffer_alloc: %zu bytes is too large", bytes);
    const uint64_t size = ((uint64_t)bytes + 3) & ~(uint64_t)3;
    WGPUBuffer b = NULL;
    st = qmm_wgpu_buffer_create(c, size, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc |
                                WGPUBufferUsage_CopyDst, "qmm_buffer_alloc", &b);
    if (st != QMM_OK) return st;
    st = table_add(c, bytes, b, size, false, out);
    if (st != QMM_OK) {
        W.wgpuBufferDestroy(b);
        W.wgpuBufferRelease(b);
    }
    return st;
}

void qmm_wgpu_buffer_free(qmm_context *ctx, void *p) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    for (size_t i = 0; i < c->nbufs; i++) {
        if (c->bufs[i].base != (uintptr_t)p) continue;
        entry_release(c, &c->bufs[i]);
        c->bufs[i] = c->bufs[--c->nbufs];
        return;
    }
}

void qmm_wgpu_buffers_release(qmm_wgpu_context *c) {
    for (size_t i = 0; i < c->nbufs; i++) entry_release(c, &c->bufs[i]);
    c->nbufs = 0;
}

qmm_status qmm_wgpu_lookup(qmm_wgpu_context *c, const void *p, size_t bytes, const char *name,
                           const qmm_wgpu_buffer **buf, uint64_t *offset) {
    const uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < c->nbufs; i++) {
        const qmm_wgpu_buffer *e = &c->bufs[i];
        if (a < e->base || a - e->base >= e->reserved) continue;
        if (a - e->base > e->bytes || bytes > e->bytes - (a - e->base))
            return qmm_error(QMM_ERR_INVALID_ARGUMENT, "%s: %zu bytes at offset %zu run past the "
                             "end of its WebGPU buffer (%zu bytes)", name, bytes,
                             (size_t)(a - e->base), e->bytes);
        *buf = e;
        *offset = a - e->base;
        return QMM_OK;
    }
    *buf = NULL;
    *offset = 0;
    return qmm_error(QMM_ERR_INVALID_ARGUMENT, "%s (%p) is not in a buffer of this WebGPU context "
                     "(use qmm_buffer_alloc or qmm_webgpu_buffer_import)", name, p);
}

/* ---------------------------------------------------------------------------------------
 * Writes and reads at any alignment
 * ------------------------------------------------------------------------------------- */

static qmm_status write_words(qmm_wgpu_context *c, WGPUBuffer b, uint64_t offset, const void *src,
                              uint64_t bytes) {
    qmm_wgpu_scope_push(c);
    W.wgpuQueueWriteBuffer(c->queue, b, offset, src, (size_t)bytes);
    return qmm_wgpu_scope_pop(c, "writing a buffer (wgpuQueueWriteBuffer)", NULL);
}

qmm_status qmm_wgpu_write(qmm_wgpu_context *c, WGPUBuffer b, uint64_t offset, const void *src,
                          uint64_t bytes) {
    if (bytes == 0) return QMM_OK;
    const uint8_t *s = src;
    const uint64_t end = offset + bytes;
    const uint64_t a0 = offset & ~(uint64_t)3, a1 = (end + 3) & ~(uint64_t)3;
    if (a0 == offset && a1 == end) return write_words(c, b, offset, src, bytes);
    /* edge words: read, merge, write back (the words between go straight) */
    uint8_t head[4], tail[4];
    qmm_status st = qmm_wgpu_read(c, b, a0, head, 4);
    if (st != QMM_OK) return st;
    if (a1 - a0 == 4) {
        memcpy(head + (offset - a0), s, (size_t)bytes);
        return write_words(c, b, a0, head, 4);
    }
    st = qmm_wgpu_read(c, b, a1 - 4, tail, 4);
    if (st != QMM_OK) return st;
    const uint64_t h = 4 - (offset - a0); /* source bytes in the head word */
    memcpy(head + (offset - a0), s, (size_t)h);
    const uint64_t t = end - (a1 - 4);     /* source bytes in the tail word */
    memcpy(tail, s + bytes - t, (size_t)t);
    st = write_words(c, b, a0, head, 4);
    if (st == QMM_OK && a1 - 4 > a0 + 4) st = write_words(c, b, a0 + 4, s + h, a1 - 4 - (a0 + 4));
    if (st == QMM_OK) st = write_words(c, b, a1 - 4, tail, 4);
    return st;
}

typedef struct map_result {
    volatile int done;
    WGPUMapAsyncStatus status;
    char msg[256];
} map_result;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2) {
    (void)u2;
    map_result *r = u1;
    r->status = status;
    size_t n = message.data == NULL ? 0 : message.length == WGPU_STRLEN ? strlen(message.data) : message.length;
    if (n >= sizeof r->msg) n = sizeof r->msg - 1;
    if (n) memcpy(r->msg, message.data, n);
    r->msg[n] = '\0';
    r->done = 1;
}

static qmm_status staging_reserve(qmm_wgpu_context *c, uint64_t bytes) {
    if (c->staging_bytes >= bytes) return QMM_OK;
    if (c->staging) {
        W.wgpuBufferDestroy(c->staging);
        W.wgpuBufferRelease(c->staging);
        c->staging = NULL;
        c->staging_bytes = 0;
    }
    qmm_status st = qmm_wgpu_buffer_create(c, bytes, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst,
                                           "creating the download staging buffer", &c->staging);
    if (st == QMM_OK) c->staging_bytes = bytes;
    return st;
}

qmm_status qmm_wgpu_read(qmm_wgpu_context *c, WGPUBuffer b, uint64_t offset, void *dst, uint64_t bytes) {
    uint8_t *d = dst;
    const uint64_t end = offset + bytes;
    uint64_t pos = offset & ~(uint64_t)3;
    while (pos < end) {
        uint64_t piece = ((end + 3) & ~(uint64_t)3) - pos;
        if (piece > QMM_WGPU_STAGING_MAX) piece = QMM_WGPU_STAGING_MAX;
        qmm_status st = staging_reserve(c, piece < 256 ? 256 : piece);
        if (st != QMM_OK) return st;
        WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(c->device, NULL);
        W.wgpuCommandEncoderCopyBufferToBuffer(enc, b, pos, c->staging, 0, piece);
        st = qmm_wgpu_submit(c, enc, "reading a buffer (copy to the staging buffer)");
        if (st != QMM_OK) return st;
        map_result mr;
        memset(&mr, 0, sizeof mr);
        WGPUBufferMapCallbackInfo mi;
        memset(&mi, 0, sizeof mi);
        mi.mode = WGPUCallbackMode_AllowSpontaneous;
        mi.callback = on_map;
        mi.userdata1 = &mr;
        qmm_wgpu_scope_push(c);
        W.wgpuBufferMapAsync(c->staging, WGPUMapMode_Read, 0, (size_t)piece, mi);
        st = qmm_wgpu_scope_pop(c, "reading a buffer (wgpuBufferMapAsync)", NULL);
        qmm_status ws = qmm_wgpu_wait(c, &mr.done, "reading a buffer (waiting for the map)");
        if (st != QMM_OK) return st;
        if (ws != QMM_OK) return ws;
        if (mr.status != WGPUMapAsyncStatus_Success)
            return qmm_error(QMM_ERR_BACKEND, "WebGPU: reading a buffer: mapping the staging "
                             "buffer failed (status %d): %s", (int)mr.status, mr.msg);
        const uint8_t *m = W.wgpuBufferGetConstMappedRange(c->staging, 0, (size_t)piece);
        if (m == NULL) {
            W.wgpuBufferUnmap(c->staging);
            return qmm_error(QMM_ERR_BACKEND, "WebGPU: reading a buffer: no mapped range");
        }
        /* bytes [max(pos, offset), min(pos + piece, end)) of the range */
        const uint64_t from = pos > offset ? pos : offset;
        const uint64_t to = pos + piece < end ? pos + piece : end;
        memcpy(d + (from - offset), m + (from - pos), (size_t)(to - from));
        W.wgpuBufferUnmap(c->staging);
        pos += piece;
    }
    return qmm_wgpu_check_device(c, "reading a buffer");
}

qmm_status qmm_wgpu_upload(qmm_context *ctx, void *dst, const void *src, size_t bytes) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    const qmm_wgpu_buffer *e = NULL;
    uint64_t off = 0;
    qmm_status st = qmm_wgpu_check_device(c, "qmm_buffer_upload");
    if (st == QMM_OK) st = qmm_wgpu_lookup(c, dst, bytes, "qmm_buffer_upload: dst", &e, &off);
    if (st == QMM_OK) st = qmm_wgpu_write(c, e->buf, off, src, bytes);
    if (st == QMM_OK) st = qmm_wgpu_sync(c); /* "returns when the copy is complete" */
    return st;
}

qmm_status qmm_wgpu_download(qmm_context *ctx, void *dst, const void *src, size_t bytes) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    const qmm_wgpu_buffer *e = NULL;
    uint64_t off = 0;
    qmm_status st = qmm_wgpu_check_device(c, "qmm_buffer_download");
    if (st == QMM_OK) st = qmm_wgpu_lookup(c, src, bytes, "qmm_buffer_download: src", &e, &off);
    if (st == QMM_OK) st = qmm_wgpu_read(c, e->buf, off, dst, bytes);
    return st;
}

/* ---------------------------------------------------------------------------------------
 * The caller's buffers (qmm_webgpu.h)
 * ------------------------------------------------------------------------------------- */

qmm_status qmm_webgpu_buffer_import(qmm_context *ctx, void *wgpu_buffer, size_t bytes, void **out) {
    if (ctx == NULL || wgpu_buffer == NULL || out == NULL || bytes == 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_webgpu_buffer_import: %s",
                         bytes == 0 ? "bytes is 0" : "NULL argument");
    if (ctx->params.backend != QMM_BACKEND_WEBGPU)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_webgpu_buffer_import: the context's backend "
                         "is %s, not webgpu", qmm_backend_name(ctx->params.backend));
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    WGPUBuffer b = (WGPUBuffer)wgpu_buffer;
    const uint64_t size = W.wgpuBufferGetSize(b);
    const WGPUBufferUsage usage = W.wgpuBufferGetUsage(b);
    const WGPUBufferUsage need = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    if ((usage & need) != need)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_webgpu_buffer_import: the buffer's usage "
                         "0x%llx lacks Storage, CopySrc or CopyDst", (unsigned long long)usage);
    if (bytes > size)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_webgpu_buffer_import: bytes (%zu) > the "
                         "buffer's size (%llu)", bytes, (unsigned long long)size);
    W.wgpuBufferAddRef(b);
    qmm_status st = table_add(c, bytes, b, size, true, out);
    if (st != QMM_OK) W.wgpuBufferRelease(b);
    return st;
}

qmm_status qmm_webgpu_buffer_handle(qmm_context *ctx, const void *p, void **wgpu_buffer,
                                    uint64_t *offset) {
    if (ctx == NULL || p == NULL || wgpu_buffer == NULL || offset == NULL)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_webgpu_buffer_handle: NULL argument");
    if (ctx->params.backend != QMM_BACKEND_WEBGPU)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_webgpu_buffer_handle: the context's backend "
                         "is %s, not webgpu", qmm_backend_name(ctx->params.backend));
    const qmm_wgpu_buffer *e = NULL;
    uint64_t off = 0;
    qmm_status st = qmm_wgpu_lookup(qmm_wgpu_ctx(ctx), p, 0, "qmm_webgpu_buffer_handle: p", &e, &off);
    if (st != QMM_OK) return st;
    *wgpu_buffer = e->buf;
    *offset = off;
    return QMM_OK;
}
