/* presets.c — the model shape table (see presets.h). */
#include "presets.h"

#include <stddef.h>
#include <string.h>

/* LFM2.5-350M: hidden 1024, FFN 4608, 16 layers = 10 short-convolution layers (in_proj
 * 1024 -> 3*1024, out_proj 1024 -> 1024) + 6 GQA attention layers (q and out 1024 x 1024,
 * k and v 512 x 1024), each layer with a gated FFN (gate, up 4608 x 1024; down 1024 x 4608).
 * 32 + 16 + 10 + 22 + 12 = 92 projection GEMMs per forward pass. */
static const bench_shape lfm25_350m[] = {
    {"ffn_gate/up", 4608, 1024, 32},
    {"ffn_down", 1024, 4608, 16},
    {"conv_in_proj", 3072, 1024, 10},
    {"conv_out/attn_q/attn_out", 1024, 1024, 22},
    {"attn_k/v", 512, 1024, 12},
};

static const bench_preset presets[] = {
    {"lfm2.5-350m",
     "LFM2.5-350M projections (10 conv + 6 attention layers, FFN 4608): 92 GEMMs per chunk",
     lfm25_350m, (int)(sizeof lfm25_350m / sizeof lfm25_350m[0])},
};

#define N_PRESETS ((int)(sizeof presets / sizeof presets[0]))

const bench_preset *bench_preset_find(const char *name) {
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

const bench_preset *bench_preset_default(void) { return &presets[0]; }

const bench_preset *bench_preset_at(int i) { return i >= 0 && i < N_PRESETS ? &presets[i] : NULL; }
