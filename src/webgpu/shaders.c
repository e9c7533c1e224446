/*
 * shaders.c — WGSL modules and compute pipelines.
 *
 * A module is assembled from the embedded files (wgsl_sources.c, generated from
 * src/webgpu/wgsl at build time), in this order:
 *   1. the kernel file (fused.wgsl, gemv.wgsl, or a candidate's text: first, so that the line
 *      and column of an error in it are its own);
 *   2. the kernel's geometry constants (WG_M, WG_N, TILE_K; GV_ROWS, GV_LANES, GV_TOKENS;
 *      none for xscale.wgsl, the X row shifts run before either kernel);
 *   3. common.wgsl (bindings, parameters, byte reads, load_w8), the shared decoder snippets
 *      (types/kscale.wgsl, types/codebook16.wgsl, types/iqgrids.wgsl) and the weight type's
 *      decoder types/<type>.wgsl (qmm_dec8).
 * WGSL declarations at module scope may come in any order, so the kernel can use what
 * follows it. Every pipeline has the one explicit layout made here (so a candidate must use
 * the production bindings), and production pipelines are cached per (kernel, type, geometry).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgpu/webgpu_internal.h"

const char *qmm_wgsl_find(const char *name) {
    for (int i = 0; i < qmm_wgsl_file_count; i++)
        if (strcmp(qmm_wgsl_files[i].name, name) == 0) return qmm_wgsl_files[i].text;
    return NULL;
}

static const char *type_file(qmm_type type, char *buf, size_t len) {
    const char *name = qmm_type_name(type);
    if (name == NULL) return NULL;
    snprintf(buf, len, "types/%s.wgsl", name);
    return qmm_wgsl_find(buf);
}

bool qmm_wgpu_has_type(qmm_type type) {
    char buf[64];
    return type_file(type, buf, sizeof buf) != NULL;
}

const char *qmm_wgpu_kernel_text(qmm_wgpu_kernel kernel) {
    switch (kernel) {
    case QMM_WGPU_KERNEL_GEMV: return qmm_wgsl_find("gemv.wgsl");
    case QMM_WGPU_KERNEL_XSCALE: return qmm_wgsl_find("xscale.wgsl");
    default: return qmm_wgsl_find("fused.wgsl");
    }
}

static bool one_of(int v, const int *set, int n) {
    for (int i = 0; i < n; i++)
        if (set[i] == v) return true;
    return false;
}

qmm_status qmm_wgpu_check_geometry(const qmm_wgpu_context *c, int wg_m, int wg_n, int tile_k) {
    static const int wg[] = {2, 4, 8, 16, 32}, tk[] = {8, 16, 32, 64};
    if (!one_of(wg_m, wg, 5))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "fused geometry: WG_M = %d is not one of 2, 4, "
                         "8, 16, 32 (threads per workgroup along m)", wg_m);
    if (!one_of(wg_n, wg, 5))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "fused geometry: WG_N = %d is not one of 2, 4, "
                         "8, 16, 32 (threads per workgroup along n)", wg_n);
    if (!one_of(tile_k, tk, 4))
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "fused geometry: TILE_K = %d is not one of 8, "
                         "16, 32, 64 (a multiple of the 8-element decode and of the 4-step unroll)",
                         tile_k);
    const uint32_t threads = (uint32_t)(wg_m * wg_n);
    if (threads > c->limits.maxComputeInvocationsPerWorkgroup)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "fused geometry: WG_M x WG_N = %d x %d = %u "
                         "threads exceed the device's maxComputeInvocationsPerWorkgroup (%u)",
                         wg_m, wg_n, threads, c->limits.maxComputeInvocationsPerWorkgroup);
    if ((uint32_t)wg_m > c->limits.maxComputeWorkgroupSizeX ||
        (uint32_t)wg_n > c->limits.maxComputeWorkgroupSizeY)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "fused geometry: workgroup %d x %d exceeds the "
                         "device's maxComputeWorkgroupSizeX/Y (%u, %u)", wg_m, wg_n,
                         c->limits.maxComputeWorkgroupSizeX, c->limits.maxComputeWorkgroupSizeY);
    const uint32_t smem = (uint32_t)(16 * tile_k * (wg_m + wg_n));
    if (smem > c->limits.maxComputeWorkgroupStorageSize)
        return qmm_error(QMM_ERR_INVALID_ARGUMENT, "fused geometry: WG_M = %d, WG_N = %d, TILE_K "
                         "= %d need %u bytes of workgroup memory (4 bytes x TILE_K x 4 (WG_M + "
                         "WG_N)); the device allows %u", wg_m, wg_n, tile_k, smem,
                         c->limits.maxComputeWorkgroupStorageSize);
    return QMM_OK;
}

char *qmm_wgpu_source(const char *kernel_text, qmm_wgpu_kernel kernel, qmm_type type, int wg_m,
                      int wg_n, int tile_k) {
    char tf[64];
    const char *decoder = type_file(type, tf, sizeof tf);
    const char *common = qmm_wgsl_find("common.wgsl");
    const char *kscale = qmm_wgsl_find("types/kscale.wgsl");
    const char *cb16 = qmm_wgsl_find("types/codebook16.wgsl");
    const char *grids = qmm_wgsl_find("types/iqgrids.wgsl");
    if (decoder == NULL || common == NULL || kscale == NULL || cb16 == NULL || grids == NULL ||
        kernel_text == NULL)
        return NULL;
    char consts[256];
    if (kernel == QMM_WGPU_KERNEL_XSCALE)
        consts[0] = '\0';
    else if (kernel == QMM_WGPU_KERNEL_GEMV)
        snprintf(consts, sizeof consts, "\nconst GV_ROWS: u32 = %du;\nconst GV_LANES: u32 = %du;\n"
                 "const GV_TOKENS: u32 = %du;\n", QMM_WGPU_GEMV_ROWS, QMM_WGPU_GEMV_LANES,
                 QMM_WGPU_GEMV_TOKENS);
    else
        snprintf(consts, sizeof consts, "\nconst WG_M: u32 = %du;\nconst WG_N: u32 = %du;\n"
                 "const TILE_K: u32 = %du;\n", wg_m, wg_n, tile_k);
    const char *parts[] = {kernel_text, consts, common, "\n", kscale, "\n", cb16, "\n", grids, "\n",
                           decoder, "\n"};
    size_t len = 1;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) len += strlen(parts[i]);
    char *s = malloc(len), *p = s;
    if (s == NULL) return NULL;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const size_t n = strlen(parts[i]);
        memcpy(p, parts[i], n);
        p += n;
    }
    *p = '\0';
    return s;
}

qmm_status qmm_wgpu_layout_init(qmm_wgpu_context *c) {
    WGPUBindGroupLayoutEntry e[QMM_WGPU_BINDINGS];
    memset(e, 0, sizeof e);
    for (int i = 0; i < QMM_WGPU_BINDINGS; i++) {
        e[i].binding = (uint32_t)i;
        e[i].visibility = WGPUShaderStage_Compute;
    }
    e[0].buffer.type = WGPUBufferBindingType_ReadOnlyStorage; /* W */
    e[1].buffer.type = WGPUBufferBindingType_ReadOnlyStorage; /* X */
    e[2].buffer.type = WGPUBufferBindingType_Storage;         /* Y */
    e[3].buffer.type = WGPUBufferBindingType_Uniform;         /* P */
    e[3].buffer.hasDynamicOffset = 1;
    e[3].buffer.minBindingSize = sizeof(qmm_wgpu_params);
    e[4].buffer.type = WGPUBufferBindingType_ReadOnlyStorage; /* G: the i-quant grids */
    e[5].buffer.type = WGPUBufferBindingType_Storage;         /* S: the X row shifts */
    e[6].buffer.type = WGPUBufferBindingType_ReadOnlyStorage; /* R: the W row shifts */
    WGPUBindGroupLayoutDescriptor bd;
    memset(&bd, 0, sizeof bd);
    bd.entryCount = QMM_WGPU_BINDINGS;
    bd.entries = e;
    qmm_wgpu_scope_push(c);
    c->bgl = W.wgpuDeviceCreateBindGroupLayout(c->device, &bd);
    WGPUPipelineLayoutDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.bindGroupLayoutCount = 1;
    pd.bindGroupLayouts = &c->bgl;
    c->layout = W.wgpuDeviceCreatePipelineLayout(c->device, &pd);
    return qmm_wgpu_scope_pop(c, "creating the bind group and pipeline layouts", NULL);
}

qmm_status qmm_wgpu_compile(qmm_wgpu_context *c, const char *source, const char *what,
                            WGPUComputePipeline *out, char **log) {
    WGPUShaderSourceWGSL src;
    memset(&src, 0, sizeof src);
    src.chain.sType = WGPUSType_ShaderSourceWGSL;
    src.code = qmm_wgpu_str(source);
    WGPUShaderModuleDescriptor md;
    memset(&md, 0, sizeof md);
    md.nextInChain = &src.chain;
    qmm_wgpu_scope_push(c);
    /* Trusted (no index clamps, no loop-bounding counters) unless the context asks for
     * wgpu's checks: docs/WEBGPU.md "Shader checks". */
    WGPUShaderModule module = c->shader_checks
        ? W.wgpuDeviceCreateShaderModule(c->device, &md)
        : W.wgpuDeviceCreateShaderModuleTrusted(c->device, &md, WGPUShaderRuntimeChecks_None);
    qmm_status st = qmm_wgpu_scope_pop(c, what, log);
    if (st != QMM_OK) {
        if (module) W.wgpuShaderModuleRelease(module);
        return st;
    }
    WGPUComputePipelineDescriptor pd;
    memset(&pd, 0, sizeof pd);
    pd.layout = c->layout;
    pd.compute.module = module;
    pd.compute.entryPoint = qmm_wgpu_str("main");
    qmm_wgpu_scope_push(c);
    WGPUComputePipeline p = W.wgpuDeviceCreateComputePipeline(c->device, &pd);
    st = qmm_wgpu_scope_pop(c, what, log);
    W.wgpuShaderModuleRelease(module);
    if (st != QMM_OK) {
        if (p) W.wgpuComputePipelineRelease(p);
        return st;
    }
    *out = p;
    return QMM_OK;
}

qmm_status qmm_wgpu_pipeline_get(qmm_wgpu_context *c, qmm_wgpu_kernel kernel, qmm_type type,
                                 int wg_m, int wg_n, int tile_k, WGPUComputePipeline *out) {
    if (kernel == QMM_WGPU_KERNEL_GEMV) wg_m = wg_n = tile_k = 0; /* gemv's geometry is fixed */
    for (int i = 0; i < c->npipes; i++) {
        const qmm_wgpu_pipeline *p = &c->pipes[i];
        if (p->kernel == (int)kernel && p->type == (int)type && p->wg_m == wg_m && p->wg_n == wg_n &&
            p->tile_k == tile_k) {
            *out = p->pipeline;
            return QMM_OK;
        }
    }
    if (c->npipes == QMM_WGPU_PIPELINES)
        return qmm_error(QMM_ERR_UNSUPPORTED, "WebGPU: more than %d pipelines on one context "
                         "(kernel x type x fused geometry)", QMM_WGPU_PIPELINES);
    char *src = qmm_wgpu_source(qmm_wgpu_kernel_text(kernel), kernel, type, wg_m, wg_n, tile_k);
    if (src == NULL)
        return qmm_error(QMM_ERR_INTERNAL, "WebGPU: no WGSL source for kernel %d, type %s",
                         (int)kernel, qmm_type_name(type));
    char what[96];
    snprintf(what, sizeof what, "compiling the %s kernel for %s",
             kernel == QMM_WGPU_KERNEL_GEMV ? "gemv" : "fused", qmm_type_name(type));
    WGPUComputePipeline pl = NULL;
    qmm_status st = qmm_wgpu_compile(c, src, what, &pl, NULL);
    free(src);
    if (st != QMM_OK) return st;
    qmm_wgpu_pipeline *p = &c->pipes[c->npipes++];
    p->kernel = (int)kernel;
    p->type = (int)type;
    p->wg_m = wg_m;
    p->wg_n = wg_n;
    p->tile_k = tile_k;
    p->candidate = false;
    p->pipeline = pl;
    *out = pl;
    return QMM_OK;
}

qmm_status qmm_wgpu_xscale_pipeline(qmm_wgpu_context *c, WGPUComputePipeline *out) {
    if (c->xscale == NULL) {
        /* any type's decoder completes the module (common.wgsl's load_w8 names qmm_dec8) */
        char *src = qmm_wgpu_source(qmm_wgpu_kernel_text(QMM_WGPU_KERNEL_XSCALE),
                                    QMM_WGPU_KERNEL_XSCALE, QMM_TYPE_F32, 0, 0, 0);
        if (src == NULL) return qmm_error(QMM_ERR_INTERNAL, "WebGPU: no WGSL source for xscale");
        const qmm_status st = qmm_wgpu_compile(c, src, "compiling the xscale kernel", &c->xscale, NULL);
        free(src);
        if (st != QMM_OK) return st;
    }
    *out = c->xscale;
    return QMM_OK;
}

void qmm_wgpu_pipelines_release(qmm_wgpu_context *c) {
    for (int i = 0; i < c->npipes; i++) W.wgpuComputePipelineRelease(c->pipes[i].pipeline);
    c->npipes = 0;
    if (c->xscale) W.wgpuComputePipelineRelease(c->xscale);
    c->xscale = NULL;
}
