/*
 * auto_table.c — the WebGPU backend's per-call geometry rule, as data: with the fused
 * geometry left to the library (no qmm_webgpu_set_fused_geometry call), a dispatch of at
 * least `min_workgroups` workgroups of the geometry wg_m x wg_n x tile_k runs with TILE_K
 * `tile_k` instead. Every geometry gives the same bits (each output sums over k in order), so
 * the rule never changes a result.
 *
 * Measured on the lent H200 through Vulkan (bench/results/h200-webgpu-clocks.md, "The
 * production kernel at other geometries", run 2: `qmm bench --backend webgpu` with TILE_K=16
 * against the default on the LFM2.5-350M shapes at n = 512 and 2048): 16 x 16 x 16 was
 * 1.10-1.41x faster from 384 workgroups of 64 x 64 outputs on (3072x1024 and 4608x1024 at
 * n = 512, every shape with m >= 1024 at n = 2048), 0.83-1.00x at 256 and fewer. Other GPUs:
 * not measured; the same rule.
 */
#include "webgpu/webgpu_internal.h"

typedef struct {
    int wg_m, wg_n, tile_k;     /* the context's geometry */
    int64_t min_workgroups;     /* from this many workgroups per dispatch on */
    int use_tile_k;             /* ... this TILE_K (smaller than tile_k) */
} tile_k_rule;

static const tile_k_rule k_rules[] = {
    {16, 16, 32, 384, 16},
};

int qmm_wgpu_auto_tile_k(const qmm_wgpu_context *c, int64_t m, int64_t n, int64_t *min_workgroups) {
    if (min_workgroups) *min_workgroups = 0;
    for (size_t i = 0; i < sizeof k_rules / sizeof k_rules[0]; i++) {
        const tile_k_rule *r = &k_rules[i];
        if (r->wg_m != c->wg_m || r->wg_n != c->wg_n || r->tile_k != c->tile_k) continue;
        if (min_workgroups) *min_workgroups = r->min_workgroups;
        const int64_t wgs = ((m + 4 * r->wg_m - 1) / (4 * r->wg_m)) * ((n + 4 * r->wg_n - 1) / (4 * r->wg_n));
        /* use_tile_k < tile_k: less workgroup memory than the geometry the context checked */
        if (m > 0 && n > 0 && wgs >= r->min_workgroups) return r->use_tile_k;
        return c->tile_k;
    }
    return c->tile_k;
}
