/*
 * count_qmm.c — runs one aarch64 int8 kernel of qmm (1 thread) on m random rows of k
 * elements and n X rows, so that qemu's instruction counter (qemu_insn_plugin.c) gives its
 * dynamic instruction count; two runs with different m give the instructions per 32-weight
 * block (count_insns.sh). The data are made for 256 rows whatever m is, so that only the
 * kernel's work differs between two runs. Not a timing: qemu counts instructions, it does not
 * model a core.
 *   count_qmm neon|dotprod|i8mm <type> <n> <m <= 256> <k>
 *   count_qmm i8mm_packed <type> <n> <m <= 256> <k> <reps>
 * i8mm_packed: the repacked copy made once (qmm_arm_i8mm_pack), then the SMMLA kernel on it
 * reps times (reps = 0: the packing alone).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/arm/arm_kernels.h"
#include "qmm.h"

int main(int argc, char **argv) {
    if (argc != 6 && !(argc == 7 && strcmp(argv[1], "i8mm_packed") == 0)) return 2;
    qmm_type t;
    if (qmm_type_from_name(argv[2], &t) != QMM_OK) return 2;
    const int64_t n = atoll(argv[3]), m = atoll(argv[4]), k = atoll(argv[5]), rows = 256;
    if (m < 1 || m > rows) return 2;
    size_t rb;
    if (qmm_row_bytes(t, k, &rb) != QMM_OK) return 2;
    unsigned char *w = malloc(rb * (size_t)rows);
    float *x = malloc(sizeof(float) * (size_t)(n * k)), *y = malloc(sizeof(float) * (size_t)(n * rows));
    if (qmm_random_rows(t, 1, 1.0, w, rows, k) != QMM_OK) return 1;
    for (int64_t e = 0; e < n * k; e++) x[e] = (float)((e * 7919) % 200 - 100) / 100.0f;
    const size_t xb = (qmm_arm_int8_x_scratch(n, k) + 63) / 64 * 64;
    unsigned char *scratch = aligned_alloc(64, xb + (qmm_arm_gemm_int8_i8mm_scratch(n, k) + 63) / 64 * 64);
    qmm_arm_int8_x *xs;
    qmm_arm_int8_x_prepare(x, k, n, k, scratch, 1, &xs);
    if (strcmp(argv[1], "i8mm_packed") == 0) {
        const int reps = atoi(argv[6]);
        unsigned char *pk = malloc(qmm_arm_i8mm_pack_bytes(m, k));
        if (pk == NULL) return 1;
        qmm_arm_i8mm_pack(t, m, k, w, rb, pk, 1);
        y[m - 1] = 0.0f;
        for (int r = 0; r < reps; r++)
            qmm_arm_gemm_int8_i8mm_packed(t, m, k, pk, n, xs, scratch + xb, y, m, 1);
        printf("%g\n", (double)y[m - 1] + (double)pk[0]);
        return 0;
    }
    if (strcmp(argv[1], "i8mm") == 0) qmm_arm_gemm_int8_i8mm(t, m, k, w, rb, n, xs, scratch + xb, y, m, 1);
    else if (strcmp(argv[1], "dotprod") == 0) qmm_arm_gemv_int8_dotprod(t, m, k, w, rb, n, xs, y, m, 1);
    else qmm_arm_gemv_int8_neon(t, m, k, w, rb, n, xs, y, m, 1);
    printf("%g\n", (double)y[m - 1]);
    return 0;
}
