/*
 * amx_tiles.h — loading and releasing the AMX tile configuration, shared by the AMX kernels.
 *
 * The 64-byte configuration (palette 1) is written to an aligned struct and loaded with
 * inline-asm `ldtilecfg` with a memory clobber: with gcc 12 the `_tile_loadconfig` intrinsic
 * lets the compiler drop the stores that fill the struct, the CPU then loads an all-zero
 * configuration and the first tile load faults (SIGILL). Tests run n >= 2 to catch it.
 */
#ifndef QMM_CPU_X86_AMX_TILES_H
#define QMM_CPU_X86_AMX_TILES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct __attribute__((aligned(64))) qmm_amx_tilecfg {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} qmm_amx_tilecfg;

/* Configure tmm0..7 on the calling thread: tile i has rows[i] rows of colsb[i] bytes. */
static inline void qmm_amx_tiles_configure(const uint16_t colsb[8], const uint8_t rows[8]) {
    qmm_amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 8; i++) {
        cfg.colsb[i] = colsb[i];
        cfg.rows[i] = rows[i];
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg) : "memory");
}

/* Release the tile state of the calling thread. */
static inline void qmm_amx_tiles_release(void) { __asm__ volatile("tilerelease" ::: "memory"); }

/* The four f32 accumulator tiles tmm0..tmm3 of a 16-row X block at the start of a k range:
 * zero (first) or the partial sums stored at `acc` (four 16 x 16 f32 tiles, 1 KiB apart). */
static inline void qmm_amx_acc_begin(const float *acc, bool first) {
    if (first) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    } else {
        _tile_loadd(0, acc, 64);
        _tile_loadd(1, acc + 256, 64);
        _tile_loadd(2, acc + 512, 64);
        _tile_loadd(3, acc + 768, 64);
    }
}

#endif /* QMM_CPU_X86_AMX_TILES_H */
