/*
 * matmul.c — strategies of the WebGPU backend and the dispatch of a matmul.
 *
 * A call becomes dispatches of one kernel over (weights buffer, rows, tokens) pieces:
 *   - one per weights buffer (weights.c splits W by rows at the storage binding limit),
 *   - rows cut so that no dispatch has more workgroups than maxComputeWorkgroupsPerDimension,
 *   - tokens cut likewise, and so that each X and Y binding window fits the binding limit
 *     (when a whole X or Y buffer is larger than one binding).
 * Before the fused kernel's dispatches of a token window, one xscale.wgsl dispatch writes the
 * shifts of its X rows (binding 5; common.wgsl says what they are for); gemv finds them
 * itself (gemv.wgsl), so a decode call is one dispatch.
 * Up to QMM_WGPU_PARAM_SLOTS dispatches go into one compute pass of one command buffer,
 * their parameters into slots of the context's uniform buffer (dynamic offsets), written
 * with wgpuQueueWriteBuffer just before the submit (queue order makes reuse safe); bind
 * groups are cached per (W buffer, X window, Y window). Nothing is allocated per call
 * beyond the command encoder and buffer WebGPU needs; nothing waits for the GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

/* ---------------------------------------------------------------------------------------
 * Strategies
 * ------------------------------------------------------------------------------------- */

qmm_status qmm_wgpu_resolve(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                            qmm_strategy requested, qmm_strategy *out) {
    (void)w;
    const bool invariant = (ctx->params.flags & QMM_FLAG_BATCH_INVARIANT) != 0;
    switch (requested) {
    case QMM_STRATEGY_AUTO:
        /* gemv reads W once per GV_TOKENS tokens, fused once per 4 WG_N tokens: gemv for
         * decode sizes. Batch-invariant: one kernel for every n (both are invariant). */
        *out = invariant || n <= QMM_WGPU_AUTO_GEMV_MAX_N ? QMM_STRATEGY_GEMV : QMM_STRATEGY_FUSED;
        return QMM_OK;
    case QMM_STRATEGY_GEMV:
    case QMM_STRATEGY_FUSED:
        *out = requested;
        return QMM_OK;
    case QMM_STRATEGY_REF:
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy ref runs on the CPU backend only");
    case QMM_STRATEGY_INT8:
    case QMM_STRATEGY_DEQUANT_SGEMM:
    case QMM_STRATEGY_CACHED_F16:
    case QMM_STRATEGY_FP8:
    case QMM_STRATEGY_DEQUANT_HGEMM:
        return qmm_error(QMM_ERR_UNSUPPORTED, "strategy %s is not implemented on the WebGPU "
                         "backend (it has gemv and fused, both F32 class)",
                         qmm_strategy_name(requested));
    default:
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "unknown strategy %d", (int)requested);
    }
}

qmm_status qmm_wgpu_describe(const qmm_context *ctx, const qmm_weights *w, int64_t n,
                             qmm_strategy resolved, const char **kernel, qmm_precision *precision) {
    (void)ctx;
    (void)w;
    (void)n;
    switch (resolved) {
    case QMM_STRATEGY_GEMV: *kernel = "gemv_wgsl"; break;
    case QMM_STRATEGY_FUSED: *kernel = "fused_regtile_wgsl"; break;
    default:
        return qmm_error(QMM_ERR_INTERNAL, "WebGPU describe: strategy %d is not resolved", (int)resolved);
    }
    *precision = QMM_PRECISION_F32;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * Bind groups
 * ------------------------------------------------------------------------------------- */

void qmm_wgpu_binds_forget(qmm_wgpu_context *c, WGPUBuffer b) {
    for (int i = 0; i < QMM_WGPU_BIND_CACHE; i++) {
        qmm_wgpu_bind *e = &c->binds[i];
        if (e->group && (e->w == b || e->x == b || e->y == b)) {
            W.wgpuBindGroupRelease(e->group);
            memset(e, 0, sizeof *e);
        }
    }
}

void qmm_wgpu_binds_release(qmm_wgpu_context *c) {
    for (int i = 0; i < QMM_WGPU_BIND_CACHE; i++)
        if (c->binds[i].group) W.wgpuBindGroupRelease(c->binds[i].group);
    memset(c->binds, 0, sizeof c->binds);
}

static qmm_status bind_group(qmm_wgpu_context *c, const qmm_wgpu_weights *ww, const qmm_wgpu_chunk *ch,
                             WGPUBuffer x, uint64_t xo, uint64_t xs, WGPUBuffer y, uint64_t yo,
                             uint64_t ys, WGPUBindGroup *out) {
    int victim = 0;
    for (int i = 0; i < QMM_WGPU_BIND_CACHE; i++) {
        qmm_wgpu_bind *e = &c->binds[i];
        if (e->group && e->w == ch->buf && e->x == x && e->xo == xo && e->xs == xs && e->y == y &&
            e->yo == yo && e->ys == ys) {
            e->used = ++c->clock;
            *out = e->group;
            return QMM_OK;
        }
        if (c->binds[victim].group && (!e->group || e->used < c->binds[victim].used)) victim = i;
    }
    WGPUBindGroupEntry be[QMM_WGPU_BINDINGS];
    memset(be, 0, sizeof be);
    be[0].binding = 0;
    be[0].buffer = ch->buf;
    be[0].size = ch->bytes;
    be[1].binding = 1;
    be[1].buffer = x;
    be[1].offset = xo;
    be[1].size = xs;
    be[2].binding = 2;
    be[2].buffer = y;
    be[2].offset = yo;
    be[2].size = ys;
    be[3].binding = 3;
    be[3].buffer = c->params;
    be[3].size = sizeof(qmm_wgpu_params);
    be[4].binding = 4;
    be[4].buffer = c->grids;
    be[4].size = W.wgpuBufferGetSize(c->grids);
    be[5].binding = 5;
    be[5].buffer = c->xshift;
    be[5].size = c->xshift_tokens * 4;
    be[6].binding = 6;
    be[6].buffer = ww->rshift;
    be[6].size = ww->rshift_bytes;
    WGPUBindGroupDescriptor d;
    memset(&d, 0, sizeof d);
    d.layout = c->bgl;
    d.entryCount = QMM_WGPU_BINDINGS;
    d.entries = be;
    qmm_wgpu_scope_push(c);
    WGPUBindGroup g = W.wgpuDeviceCreateBindGroup(c->device, &d);
    qmm_status st = qmm_wgpu_scope_pop(c, "qmm_matmul: creating a bind group", NULL);
    if (st != QMM_OK) {
        if (g) W.wgpuBindGroupRelease(g);
        return st;
    }
    qmm_wgpu_bind *e = &c->binds[victim];
    if (e->group) W.wgpuBindGroupRelease(e->group);
    e->w = ch->buf;
    e->x = x;
    e->xo = xo;
    e->xs = xs;
    e->y = y;
    e->yo = yo;
    e->ys = ys;
    e->group = g;
    e->used = ++c->clock;
    *out = g;
    return QMM_OK;
}

/* ---------------------------------------------------------------------------------------
 * Dispatch
 * ------------------------------------------------------------------------------------- */

/* A binding window [off, off + size) covering bytes [lo, hi) of buffer b (whole buffer when
 * it fits one binding). */
static void window(const qmm_wgpu_context *c, const qmm_wgpu_buffer *b, uint64_t lo, uint64_t hi,
                   uint64_t *off, uint64_t *size) {
    if (b->buf_bytes <= c->limits.maxStorageBufferBindingSize) {
        *off = 0;
        *size = b->buf_bytes;
        return;
    }
    const uint64_t align = c->limits.minStorageBufferOffsetAlignment ? c->limits.minStorageBufferOffsetAlignment : 256;
    *off = lo / align * align;
    uint64_t end = (hi + 3) & ~(uint64_t)3;
    if (end > b->buf_bytes) end = b->buf_bytes;
    *size = end - *off;
}

static qmm_status flush(qmm_wgpu_context *c, qmm_wgpu_pending *q) {
    if (q->count == 0) return QMM_OK;
    memset(q->slots, 0, (size_t)q->count * QMM_WGPU_PARAM_STRIDE);
    for (int i = 0; i < q->count; i++)
        memcpy(q->slots + (size_t)i * QMM_WGPU_PARAM_STRIDE, &q->p[i], sizeof q->p[i]);
    qmm_status st = qmm_wgpu_write(c, c->params, 0, q->slots, (uint64_t)q->count * QMM_WGPU_PARAM_STRIDE);
    if (st != QMM_OK) return st;
    qmm_wgpu_scope_push(c);
    WGPUCommandEncoder enc = W.wgpuDeviceCreateCommandEncoder(c->device, NULL);
    WGPUComputePassDescriptor pd;
    memset(&pd, 0, sizeof pd);
    WGPUPassTimestampWrites tw;
    pd.timestampWrites = qmm_wgpu_timer_pass(c, &tw);
    WGPUComputePassEncoder pass = W.wgpuCommandEncoderBeginComputePass(enc, &pd);
    for (int i = 0; i < q->count; i++) {
        const uint32_t dyn = (uint32_t)(i * QMM_WGPU_PARAM_STRIDE);
        if (i == 0 || q->pl[i] != q->pl[i - 1]) W.wgpuComputePassEncoderSetPipeline(pass, q->pl[i]);
        W.wgpuComputePassEncoderSetBindGroup(pass, 0, q->g[i], 1, &dyn);
        W.wgpuComputePassEncoderDispatchWorkgroups(pass, q->gx[i], q->gy[i], 1);
    }
    W.wgpuComputePassEncoderEnd(pass);
    W.wgpuComputePassEncoderRelease(pass);
    st = qmm_wgpu_scope_pop(c, "qmm_matmul: encoding", NULL);
    if (st != QMM_OK) {
        W.wgpuCommandEncoderRelease(enc);
        return st;
    }
    q->count = 0;
    return qmm_wgpu_submit(c, enc, "qmm_matmul");
}

qmm_status qmm_wgpu_xshift_reserve(qmm_wgpu_context *c, uint64_t tokens) {
    if (c->xshift != NULL && tokens <= c->xshift_tokens) return QMM_OK;
    if (tokens < QMM_WGPU_XSHIFT_MIN_TOKENS) tokens = QMM_WGPU_XSHIFT_MIN_TOKENS;
    WGPUBuffer b;
    qmm_status st = qmm_wgpu_buffer_create(c, tokens * 4, WGPUBufferUsage_Storage,
                                           "qmm_matmul: the X row shift buffer", &b);
    if (st != QMM_OK) return st;
    if (c->xshift != NULL) {
        qmm_wgpu_binds_release(c); /* every cached bind group names the old buffer */
        W.wgpuBufferDestroy(c->xshift);
        W.wgpuBufferRelease(c->xshift);
    }
    c->xshift = b;
    c->xshift_tokens = tokens;
    return QMM_OK;
}

qmm_status qmm_wgpu_run(qmm_context *ctx, const qmm_weights *w, qmm_wgpu_kernel kernel,
                        WGPUComputePipeline pipeline, int wg_m, int wg_n, int64_t n,
                        const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    const qmm_wgpu_weights *ww = w->backend;
    qmm_status st = qmm_wgpu_check_device(c, "qmm_matmul");
    if (st != QMM_OK) return st;
    const int64_t m = w->m, k = w->k;
    const uint64_t xbytes = ((uint64_t)(n - 1) * (uint64_t)ldx + (uint64_t)k) * 4;
    const uint64_t ybytes = ((uint64_t)(n - 1) * (uint64_t)ldy + (uint64_t)m) * 4;
    const qmm_wgpu_buffer *xb, *yb;
    uint64_t xoff, yoff;
    st = qmm_wgpu_lookup(c, x, (size_t)xbytes, "qmm_matmul: x", &xb, &xoff);
    if (st == QMM_OK) st = qmm_wgpu_lookup(c, y, (size_t)ybytes, "qmm_matmul: y", &yb, &yoff);
    if (st != QMM_OK) return st;
    if (xb->buf == yb->buf)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: x and y are in the same WebGPU "
                         "buffer; WebGPU forbids binding one buffer as read-only and as writable "
                         "storage in one dispatch: give them separate buffers");
    if (xoff % 4 != 0 || yoff % 4 != 0)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "qmm_matmul: %s is not 4-byte aligned in its "
                         "buffer (byte offset %llu)", xoff % 4 ? "x" : "y",
                         (unsigned long long)(xoff % 4 ? xoff : yoff));
    if (ldx > UINT32_MAX || ldy > UINT32_MAX)
        return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_matmul: ldx (%lld) or ldy (%lld) exceeds the "
                         "WebGPU kernels' 32-bit strides", (long long)ldx, (long long)ldy);

    const uint64_t limit = c->limits.maxStorageBufferBindingSize;
    const uint64_t align = c->limits.minStorageBufferOffsetAlignment ? c->limits.minStorageBufferOffsetAlignment : 256;
    const uint64_t maxwg = c->limits.maxComputeWorkgroupsPerDimension;
    const int64_t rows_per_wg = kernel == QMM_WGPU_KERNEL_GEMV ? QMM_WGPU_GEMV_ROWS : 4 * wg_m;
    const int64_t toks_per_wg = kernel == QMM_WGPU_KERNEL_GEMV ? QMM_WGPU_GEMV_TOKENS : 4 * wg_n;
    /* tokens per dispatch: the grid limit, then the binding windows of X and Y */
    int64_t tmax = (int64_t)maxwg * toks_per_wg;
    if (xb->buf_bytes > limit) {
        if ((uint64_t)k * 4 + align + 4 > limit)
            return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_matmul: one row of X (k = %lld) exceeds the "
                             "device's storage binding limit (%llu bytes)", (long long)k,
                             (unsigned long long)limit);
        const int64_t t = (int64_t)((limit - align - 4 - (uint64_t)k * 4) / ((uint64_t)ldx * 4)) + 1;
        if (t < tmax) tmax = t;
    }
    if (yb->buf_bytes > limit) {
        if ((uint64_t)m * 4 + align + 4 > limit)
            return qmm_error(QMM_ERR_UNSUPPORTED, "qmm_matmul: one row of Y (m = %lld) exceeds the "
                             "device's storage binding limit (%llu bytes)", (long long)m,
                             (unsigned long long)limit);
        const int64_t t = (int64_t)((limit - align - 4 - (uint64_t)m * 4) / ((uint64_t)ldy * 4)) + 1;
        if (t < tmax) tmax = t;
    }
    const int64_t rmax = (int64_t)maxwg * rows_per_wg;

    if ((uint64_t)(n < tmax ? n : tmax) > c->xshift_tokens) {
        st = qmm_wgpu_xshift_reserve(c, (uint64_t)(n < tmax ? n : tmax));
        if (st != QMM_OK) return st;
    }
    WGPUComputePipeline xscale;
    st = qmm_wgpu_xscale_pipeline(c, &xscale);
    if (st != QMM_OK) return st;

    qmm_wgpu_pending *q = &c->pend;
    q->count = 0;
    /* token windows outermost: the X row shifts of a window serve every chunk and row piece */
    for (int64_t t0 = 0; t0 < n && st == QMM_OK; t0 += tmax) {
        const int64_t nt = n - t0 < tmax ? n - t0 : tmax;
        const uint64_t xlo = xoff + (uint64_t)t0 * (uint64_t)ldx * 4;
        const uint64_t xhi = xoff + ((uint64_t)(t0 + nt - 1) * (uint64_t)ldx + (uint64_t)k) * 4;
        uint64_t xo, xs;
        window(c, xb, xlo, xhi, &xo, &xs);
        if ((xlo - xo) / 4 > UINT32_MAX) {
            st = qmm_error(QMM_ERR_UNSUPPORTED, "qmm_matmul: an element offset exceeds the kernels' "
                           "32-bit indices");
            break;
        }
        for (int ci = 0; ci < ww->nchunks && st == QMM_OK; ci++) {
            const qmm_wgpu_chunk *ch = &ww->chunks[ci];
            for (int64_t r0 = 0; r0 < ch->rows && st == QMM_OK; r0 += rmax) {
                const int64_t rows = ch->rows - r0 < rmax ? ch->rows - r0 : rmax;
                const uint64_t ylo = yoff + ((uint64_t)t0 * (uint64_t)ldy + (uint64_t)(ch->row0 + r0)) * 4;
                const uint64_t yhi = yoff + ((uint64_t)(t0 + nt - 1) * (uint64_t)ldy + (uint64_t)m) * 4;
                uint64_t yo, ys;
                window(c, yb, ylo, yhi, &yo, &ys);
                if ((ylo - yo) / 4 > UINT32_MAX) {
                    st = qmm_error(QMM_ERR_UNSUPPORTED, "qmm_matmul: an element offset exceeds the "
                                   "kernels' 32-bit indices");
                    break;
                }
                WGPUBindGroup g;
                st = bind_group(c, ww, ch, xb->buf, xo, xs, yb->buf, yo, ys, &g);
                if (st != QMM_OK) break;
                qmm_wgpu_params pp;
                memset(&pp, 0, sizeof pp);
                pp.rows = (uint32_t)rows;
                pp.k = (uint32_t)k;
                pp.n = (uint32_t)nt;
                pp.row_words = ww->row_words;
                pp.ldx = (uint32_t)ldx;
                pp.ldy = (uint32_t)ldy;
                pp.x_off = (uint32_t)((xlo - xo) / 4);
                pp.y_off = (uint32_t)((ylo - yo) / 4);
                pp.w_row0 = (uint32_t)r0;
                pp.r_off = (uint32_t)(ch->row0 + r0);
                if (ci == 0 && r0 == 0 && kernel == QMM_WGPU_KERNEL_FUSED) {
                    /* the window's X row shifts, before its first dispatch */
                    q->p[q->count] = pp;
                    q->pl[q->count] = xscale;
                    q->g[q->count] = g;
                    q->gx[q->count] = (uint32_t)((uint64_t)nt < maxwg ? (uint64_t)nt : maxwg);
                    q->gy[q->count] = 1;
                    if (++q->count == QMM_WGPU_PARAM_SLOTS) st = flush(c, q);
                    if (st != QMM_OK) break;
                }
                q->p[q->count] = pp;
                q->pl[q->count] = pipeline;
                q->g[q->count] = g;
                q->gx[q->count] = (uint32_t)((rows + rows_per_wg - 1) / rows_per_wg);
                q->gy[q->count] = (uint32_t)((nt + toks_per_wg - 1) / toks_per_wg);
                if (q->gx[q->count] > maxwg || q->gy[q->count] > maxwg) {
                    st = qmm_error(QMM_ERR_INTERNAL, "qmm_matmul: a dispatch of %u x %u workgroups "
                                   "exceeds maxComputeWorkgroupsPerDimension (%llu)", q->gx[q->count],
                                   q->gy[q->count], (unsigned long long)maxwg);
                    break;
                }
                if (++q->count == QMM_WGPU_PARAM_SLOTS) st = flush(c, q);
            }
        }
    }
    if (st == QMM_OK) st = flush(c, q);
    q->count = 0;
    return st;
}

qmm_status qmm_wgpu_matmul(qmm_context *ctx, const qmm_weights *w, qmm_strategy s, int64_t n,
                           const float *x, int64_t ldx, float *y, int64_t ldy) {
    qmm_wgpu_context *c = qmm_wgpu_ctx(ctx);
    qmm_wgpu_kernel kernel;
    switch (s) {
    case QMM_STRATEGY_GEMV: kernel = QMM_WGPU_KERNEL_GEMV; break;
    case QMM_STRATEGY_FUSED: kernel = QMM_WGPU_KERNEL_FUSED; break;
    default:
        return qmm_error(QMM_ERR_INTERNAL, "WebGPU matmul: strategy %s reached the backend",
                         qmm_strategy_name(s));
    }
    WGPUComputePipeline pl;
    const int tile_k = kernel == QMM_WGPU_KERNEL_FUSED && c->geometry_auto ? qmm_wgpu_auto_tile_k(c, w->m, n, NULL)
                                                                           : c->tile_k;
    qmm_status st = qmm_wgpu_pipeline_get(c, kernel, w->type, c->wg_m, c->wg_n, tile_k, &pl);
    if (st != QMM_OK) return st;
    return qmm_wgpu_run(ctx, w, kernel, pl, c->wg_m, c->wg_n, n, x, ldx, y, ldy);
}
