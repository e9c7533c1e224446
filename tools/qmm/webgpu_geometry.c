/* webgpu_geometry.c — the fused WebGPU kernel's geometry knobs of qmm bench (see the header). */
#include "webgpu_geometry.h"

#include <stdio.h>
#include <string.h>

#include "opts.h"
#include "qmm_webgpu.h"

const char *const webgpu_geometry_flag_names[WEBGPU_GEOMETRY_FLAGS] = {"wg-m", "wg-n", "tile-k",
                                                                       "tile-m", "tile-n"};
static const char *const env_names[WEBGPU_GEOMETRY_FLAGS] = {"WG_M", "WG_N", "TILE_K", "TILE_M", "TILE_N"};

static int64_t *field(webgpu_geometry *g, int i) {
    int64_t *f[WEBGPU_GEOMETRY_FLAGS] = {&g->wg_m, &g->wg_n, &g->tile_k, &g->tile_m, &g->tile_n};
    return f[i];
}

bool webgpu_geometry_env(webgpu_geometry *g) {
    for (int i = 0; i < WEBGPU_GEOMETRY_FLAGS; i++) {
        bool set = false;
        int64_t v;
        if (!opt_env_i64(env_names[i], 1, 1024, &v, &set)) return false;
        if (set) {
            *field(g, i) = v;
            g->from_env = true;
        }
    }
    return true;
}

int webgpu_geometry_flag(webgpu_geometry *g, const char *name, const char *value) {
    for (int i = 0; i < WEBGPU_GEOMETRY_FLAGS; i++) {
        if (strcmp(name, webgpu_geometry_flag_names[i]) != 0) continue;
        char flag[32];
        snprintf(flag, sizeof flag, "--%s", name);
        if (!opt_i64(flag, value, 1, 1024, field(g, i))) return -1;
        g->from_flags = true;
        return 1;
    }
    return 0;
}

bool webgpu_geometry_check_tiles(const webgpu_geometry *g) {
    const int64_t t[2] = {g->tile_m, g->tile_n};
    for (int i = 0; i < 2; i++) {
        if (t[i] == 0 || t[i] == 4) continue;
        fprintf(stderr, "qmm bench: %s = %lld (--%s or %s): the fused kernel's thread tile is 4 x 4, "
                        "held in four named vec4 accumulators with the loops unrolled by hand; "
                        "any other value would compute only part of the tile, so only 4 is "
                        "accepted\n", i ? "TILE_N" : "TILE_M", (long long)t[i], i ? "tile-n" : "tile-m",
                i ? "TILE_N" : "TILE_M");
        return false;
    }
    return true;
}

bool webgpu_geometry_apply(qmm_context *ctx, const webgpu_geometry *g) {
    int m, n, k;
    if (!g->from_flags && !g->from_env) return true; /* the library's geometry and its per-call rule */
    if (qmm_webgpu_get_fused_geometry(ctx, &m, &n, &k) != QMM_OK) {
        fprintf(stderr, "qmm bench: %s\n", qmm_last_error());
        return false;
    }
    if (g->wg_m) m = (int)g->wg_m;
    if (g->wg_n) n = (int)g->wg_n;
    if (g->tile_k) k = (int)g->tile_k;
    if (qmm_webgpu_set_fused_geometry(ctx, m, n, k) != QMM_OK) {
        fprintf(stderr, "qmm bench: WG_M=%d WG_N=%d TILE_K=%d (from %s) cannot run here: %s\n", m, n, k,
                g->from_flags && g->from_env ? "the flags and the environment"
                : g->from_flags              ? "--wg-m/--wg-n/--tile-k"
                                             : "the environment WG_M/WG_N/TILE_K",
                qmm_last_error());
        return false;
    }
    return true;
}

void webgpu_describe(qmm_context *ctx, char *buf, size_t len) {
    qmm_webgpu_info i;
    int m = 0, n = 0, k = 0, k_auto = 0;
    int64_t minw = 0;
    if (qmm_webgpu_get_info(ctx, &i) != QMM_OK || qmm_webgpu_get_fused_geometry(ctx, &m, &n, &k) != QMM_OK ||
        qmm_webgpu_fused_tile_k(ctx, (int64_t)1 << 20, (int64_t)1 << 20, &k_auto, &minw) != QMM_OK) {
        snprintf(buf, len, "webgpu (%s)", qmm_last_error());
        return;
    }
    char rule[96] = "", sg[48] = "";
    if (i.subgroup_max_size != 0)
        snprintf(sg, sizeof sg, " (subgroups of %u-%u)", i.subgroup_min_size, i.subgroup_max_size);
    if (minw > 0)
        snprintf(rule, sizeof rule, " (%d from %lld workgroups per dispatch: src/webgpu/auto_table.c)", k_auto,
                 (long long)minw);
    snprintf(buf, len, "webgpu %s (%s, %s; driver %s; wgpu-native 0x%08x%s); limits used: storage "
             "binding %.0f MiB, buffer %.0f MiB, workgroup storage %u KiB, %u invocations, %u "
             "workgroups per dimension; features enabled:%s%s; offered, not used:%s%s%s; shaders %s; fused WG_M x WG_N = %d x %d threads of 4 x 4, "
             "TILE_K %d%s; gemv 4 rows x 64 lanes, 4 tokens", i.adapter, i.backend_api,
             i.adapter_type, i.driver[0] ? i.driver : "unknown", i.wgpu_version,
             i.caller_device ? ", the caller's device" : "",
             (double)i.max_storage_buffer_binding_size / 1048576.0,
             (double)i.max_buffer_size / 1048576.0, i.max_compute_workgroup_storage_size / 1024,
             i.max_compute_invocations_per_workgroup, i.max_compute_workgroups_per_dimension,
             i.timestamp_query ? " timestamp-query" : "", i.shader_f16 ? " shader-f16" : "",
             i.adapter_subgroups ? " subgroups" : "",
             i.adapter_cooperative_matrix ? " native:cooperative-matrix" : "",
             i.adapter_subgroups || i.adapter_cooperative_matrix ? sg : " none",
             i.shader_checks ? "with wgpu's runtime checks" : "trusted (no runtime checks)", m, n, k, rule);
}
