/*
 * matmul.c — the smallest complete qmm program: quantize a weight matrix to q4_0 (as a GGUF
 * file stores it), multiply it by a few activation rows, and check the result against the
 * float64 reference with the limits of the path that ran.
 *
 * Build against an installed qmm:  cc matmul.c $(pkg-config --cflags --libs qmm) -o matmul
 * (static archive: pkg-config qmm-static). tests/test_install.py builds and runs this file.
 */
#include <qmm.h>
#include <stdio.h>

int main(void) {
    enum { M = 8, K = 64, N = 3 }; /* W: M x K (GGUF row-major), X: N x K, Y: N x M */
    float w[M * K], x[N * K], y[N * M], ref[N * M];
    for (int i = 0; i < M * K; i++) w[i] = (float)((i * 37) % 17) - 8.0f;
    for (int i = 0; i < N * K; i++) x[i] = (float)((i * 11) % 7) - 3.0f;

    /* The packed bytes of one q4_0 row (2 blocks of 32 elements, 18 bytes each). Real code
     * points qmm_weights_create at a GGUF tensor's data instead (qmm_gguf.h). */
    size_t row_bytes;
    unsigned char q[M * 2 * 18];
    qmm_context *ctx = NULL;
    qmm_weights *wt = NULL;
    qmm_path path;
    qmm_diff d;
    if (qmm_row_bytes(QMM_TYPE_Q4_0, K, &row_bytes) || row_bytes * M > sizeof q ||
        qmm_quantize_rows(QMM_TYPE_Q4_0, w, q, M, K) ||
        qmm_context_create(NULL, &ctx) ||                          /* CPU, all cores, auto */
        qmm_weights_create(ctx, QMM_TYPE_Q4_0, M, K, q, row_bytes, &wt) ||
        qmm_matmul(ctx, wt, N, x, K, y, M) ||                      /* Y = X W^T */
        qmm_matmul_path(ctx, wt, N, &path) ||                      /* which kernel, its limits */
        qmm_matmul_ref(QMM_TYPE_Q4_0, M, K, q, row_bytes, N, x, K, ref, M) ||
        qmm_compare(N, M, y, M, ref, M, &d)) {
        fprintf(stderr, "qmm: %s\n", qmm_last_error());
        return 1;
    }
    printf("%s: y[0] = %g, nmse %g (limit %g)\n", path.kernel, y[0], d.nmse, path.max_nmse);
    qmm_weights_free(wt);
    qmm_context_free(ctx);
    return qmm_diff_ok(&d, path.max_nmse, path.max_rel_err) ? 0 : 1;
}
