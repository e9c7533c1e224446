/*
 * auto_table.c — the WebGPU backend's per-call geometry rule, as data: with the fused
 * geometry left to the library (no qmm_webgpu_set_fused_geometry call), a dispatch of at
 * least `min_workgroups` workgroups of the geometry wg_m x wg_n x tile_k runs with TILE_K
 * `tile_k` instead. Every geometry gives the same bits (each output sums over k in order), so
 * the rule never changes a result.
 *
 * No rule now: with the X tile loaded 8 elements per thread (wgsl/fused.wgsl, x_tile8), TILE_K
 * 32 was faster than 16 on every LFM2.5-350M shape at n = 512 and 2048 on the lent H200
 * through Vulkan (1.02-1.38x; bench/results/h200-webgpu-xload.md, the TILE_K table, both from
 * `qmm bench --candidate` at --tile-k 16 and 32 in one device call). The rule of the earlier
 * kernel (TILE_K 16 from 384 workgroups of 16 x 16 x 32, bench/results/h200-webgpu-tile-k.md)
 * was dropped with it. Other GPUs: not measured.
 */
#include "webgpu/webgpu_internal.h"

typedef struct {
    int wg_m, wg_n, tile_k;     /* the context's geometry */
    int64_t min_workgroups;     /* from this many workgroups per dispatch on */
    int use_tile_k;             /* ... this TILE_K (smaller than tile_k) */
} tile_k_rule;

static const tile_k_rule k_rules[] = {
    {0, 0, 0, 0, 0}, /* none (a geometry of 0 threads matches no context) */
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
