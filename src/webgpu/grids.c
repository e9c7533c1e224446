/*
 * grids.c — the storage buffer G (binding 4 of every pipeline) holding the grid i-quants'
 * tables of src/formats/iq_grids.h, in the word layout wgsl/types/iqgrids.wgsl names
 * (G_KSIGNS, G_IQ2XXS, ...). Made once per context; the offsets below must equal those.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/iq_grids.h"
#include "webgpu/webgpu_internal.h"

enum {
    G_KSIGNS = 0, G_IQ2XXS = 32, G_IQ2XS = 544, G_IQ2S = 1568, G_IQ3XXS = 3616, G_IQ3S = 3872,
    G_IQ1S = 4384, G_WORDS = 4384 + 2 * 2048
};
_Static_assert(G_IQ2XXS == G_KSIGNS + 128 / 4 && G_IQ2XS == G_IQ2XXS + 2 * 256 &&
               G_IQ2S == G_IQ2XS + 2 * 512 && G_IQ3XXS == G_IQ2S + 2 * 1024 &&
               G_IQ3S == G_IQ3XXS + 256 && G_IQ1S == G_IQ3S + 512,
               "the table offsets of wgsl/types/iqgrids.wgsl");

static void put64(uint32_t *g, int off, const uint64_t *t, int n) {
    for (int i = 0; i < n; i++) {
        g[off + 2 * i] = (uint32_t)t[i];
        g[off + 2 * i + 1] = (uint32_t)(t[i] >> 32);
    }
}

qmm_status qmm_wgpu_grids_init(qmm_wgpu_context *c) {
    uint32_t *g = calloc(G_WORDS, sizeof *g); /* per call: contexts share no mutable state */
    if (g == NULL) return qmm_error(QMM_ERR_OUT_OF_MEMORY, "WebGPU backend: out of host memory");
    for (int i = 0; i < 128; i++) g[G_KSIGNS + i / 4] |= (uint32_t)ksigns_iq2xs[i] << (8 * (i % 4));
    put64(g, G_IQ2XXS, iq2xxs_grid, 256);
    put64(g, G_IQ2XS, iq2xs_grid, 512);
    put64(g, G_IQ2S, iq2s_grid, 1024);
    memcpy(g + G_IQ3XXS, iq3xxs_grid, 256 * sizeof(uint32_t));
    memcpy(g + G_IQ3S, iq3s_grid, 512 * sizeof(uint32_t));
    put64(g, G_IQ1S, iq1s_grid, 2048);
    const uint64_t bytes = (uint64_t)G_WORDS * sizeof *g;
    qmm_status st = qmm_wgpu_buffer_create(c, bytes, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst,
                                           "creating the i-quant grid buffer", &c->grids);
    if (st == QMM_OK) st = qmm_wgpu_write(c, c->grids, 0, g, bytes);
    free(g);
    return st;
}
