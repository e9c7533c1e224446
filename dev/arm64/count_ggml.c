/*
 * count_ggml.c — calls ggml's aarch64 dot product for one weight type (ggml-cpu/arch/arm/
 * quants.c, compiled separately at the same -march) on m random rows of k elements against
 * one random activation row in ggml's activation type (q8_0, q8_1 or q8_K), for qemu's
 * instruction counter (count_insns.sh). The bytes are random: the NEON paths have no
 * data-dependent branches, so the count does not depend on them. The data are made for 256
 * rows whatever m is (only the dot products differ between two runs).
 *   count_ggml <type> <m <= 256> <k> [2]
 * With 2 (a build with +i8mm; q4_0, q4_1, q8_0, q4_K, q6_K): ggml's SMMLA path, nrc = 2, one
 * call per pair of W rows against two activation rows (2 x 2 outputs).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*dot_fn)(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy,
                       size_t by, int nrc);
#define DECL(name) void name(int, float *, size_t, const void *, size_t, const void *, size_t, int);
DECL(ggml_vec_dot_q4_0_q8_0) DECL(ggml_vec_dot_q4_1_q8_1) DECL(ggml_vec_dot_q5_0_q8_0)
DECL(ggml_vec_dot_q5_1_q8_1) DECL(ggml_vec_dot_q8_0_q8_0) DECL(ggml_vec_dot_q2_K_q8_K)
DECL(ggml_vec_dot_q3_K_q8_K) DECL(ggml_vec_dot_q4_K_q8_K) DECL(ggml_vec_dot_q5_K_q8_K)
DECL(ggml_vec_dot_q6_K_q8_K) DECL(ggml_vec_dot_iq4_nl_q8_0) DECL(ggml_vec_dot_iq4_xs_q8_K)
DECL(ggml_vec_dot_mxfp4_q8_0) DECL(ggml_vec_dot_nvfp4_q8_0)

/* what quants.c needs from the rest of ggml (not reached by these paths' counts) */
float ggml_table_f32_ue4m3[256];
void quantize_row_q8_K_ref(const float *x, void *y, int64_t k) { (void)x; (void)y; (void)k; }

static const struct {
    const char *name;
    dot_fn fn;
    int qk;           /* elements per weight block */
    size_t wbytes;    /* bytes per weight block */
    int yk;           /* elements per activation block */
    size_t ybytes;
} types[] = {
    {"q4_0", ggml_vec_dot_q4_0_q8_0, 32, 18, 32, 34},      {"q4_1", ggml_vec_dot_q4_1_q8_1, 32, 20, 32, 36},
    {"q5_0", ggml_vec_dot_q5_0_q8_0, 32, 22, 32, 34},      {"q5_1", ggml_vec_dot_q5_1_q8_1, 32, 24, 32, 36},
    {"q8_0", ggml_vec_dot_q8_0_q8_0, 32, 34, 32, 34},      {"q2_K", ggml_vec_dot_q2_K_q8_K, 256, 84, 256, 292},
    {"q3_K", ggml_vec_dot_q3_K_q8_K, 256, 110, 256, 292},  {"q4_K", ggml_vec_dot_q4_K_q8_K, 256, 144, 256, 292},
    {"q5_K", ggml_vec_dot_q5_K_q8_K, 256, 176, 256, 292},  {"q6_K", ggml_vec_dot_q6_K_q8_K, 256, 210, 256, 292},
    {"iq4_nl", ggml_vec_dot_iq4_nl_q8_0, 32, 18, 32, 34},  {"iq4_xs", ggml_vec_dot_iq4_xs_q8_K, 256, 136, 256, 292},
    {"mxfp4", ggml_vec_dot_mxfp4_q8_0, 32, 17, 32, 34},    {"nvfp4", ggml_vec_dot_nvfp4_q8_0, 64, 36, 32, 34},
};

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) return 2;
    const int nrc = argc == 5 ? atoi(argv[4]) : 1;
    if (nrc != 1 && nrc != 2) return 2;
    const long m = atol(argv[2]), k = atol(argv[3]), rows = 256;
    if (m < 1 || m > rows) return 2;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (strcmp(argv[1], types[i].name) != 0) continue;
        const size_t rb = (size_t)(k / types[i].qk) * types[i].wbytes, yb = (size_t)(k / types[i].yk) * types[i].ybytes;
        unsigned char *w = malloc(rb * (size_t)rows), *y = malloc(2 * yb);
        uint64_t s = 1;
        for (size_t b = 0; b < rb * (size_t)rows; b++) w[b] = (unsigned char)((s = s * 6364136223846793005u + 1) >> 56) & 0x3B;
        for (size_t b = 0; b < 2 * yb; b++) y[b] = (unsigned char)((s = s * 6364136223846793005u + 1) >> 56) & 0x3B;
        float r = 0, acc = 0, r2[4];
        if (nrc == 2) {
            for (long row = 0; row + 1 < m; row += 2) {
                types[i].fn((int)k, r2, 2, w + (size_t)row * rb, rb, y, yb, 2);
                acc += r2[0] + r2[1] + r2[2] + r2[3];
            }
            printf("%g\n", (double)acc);
            return 0;
        }
        for (long row = 0; row < m; row++) {
            types[i].fn((int)k, &r, 0, w + (size_t)row * rb, 0, y, 0, 1);
            acc += r;
        }
        printf("%g\n", (double)acc);
        return 0;
    }
    return 2;
}
