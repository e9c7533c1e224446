/*
 * webgpu_geometry.h — the fused WebGPU kernel's geometry as `qmm bench` takes it: the
 * environment variables WG_M, WG_N, TILE_K, TILE_M, TILE_N (the seed benchmark's knobs) set
 * the values, the flags --wg-m, --wg-n, --tile-k, --tile-m, --tile-n replace them. Each is
 * parsed strictly. TILE_M and TILE_N are refused unless 4: the kernel holds its 4 x 4 thread
 * tile in four named vec4 accumulators, so any other value would compute a fraction of the
 * tile. WG_M, WG_N and TILE_K are then checked by the library against what the kernel
 * supports and the adapter's limits (qmm_webgpu_set_fused_geometry) before anything runs.
 */
#ifndef QMM_TOOL_WEBGPU_GEOMETRY_H
#define QMM_TOOL_WEBGPU_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "qmm.h"

typedef struct webgpu_geometry {
    int64_t wg_m, wg_n, tile_k, tile_m, tile_n; /* 0: not given (the library's default) */
    bool from_flags;                            /* a geometry flag was given */
    bool from_env;                              /* a geometry variable was set */
} webgpu_geometry;

/* The environment's values (strict; false with a message on a bad one). */
bool webgpu_geometry_env(webgpu_geometry *g);
/* Handle a long option if it is one of the geometry flags: 1 handled, 0 not a geometry
 * flag, -1 a bad value (message printed). */
int webgpu_geometry_flag(webgpu_geometry *g, const char *name, const char *value);
/* The long options (name, has_arg = required) for getopt_long tables; ids from `first`. */
#define WEBGPU_GEOMETRY_FLAGS 5
extern const char *const webgpu_geometry_flag_names[WEBGPU_GEOMETRY_FLAGS];
/* TILE_M / TILE_N checks (no device needed): false with a message. */
bool webgpu_geometry_check_tiles(const webgpu_geometry *g);
/* Apply to a WebGPU context (the unset values keep the context's): false with the library's
 * reason printed, naming where the value came from. */
bool webgpu_geometry_apply(qmm_context *ctx, const webgpu_geometry *g);
/* One line describing the adapter, API, driver, limits and features used, and the fused
 * geometry of ctx. */
void webgpu_describe(qmm_context *ctx, char *buf, size_t len);

#endif /* QMM_TOOL_WEBGPU_GEOMETRY_H */
