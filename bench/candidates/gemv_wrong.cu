/*
 * gemv_wrong.cu — a deliberately WRONG `qmm bench --candidate` kernel: it leaves out the last
 * element (e = k - 1) of every row's dot product. The tool must report FAIL for it, with and
 * without --tolerance (the missing term w[k-1]*x[k-1] is far above float rounding), and exit
 * non-zero (tests/test_candidate_cli.py). Otherwise an ordinary one-warp-per-row gemv: lane l
 * takes elements l, l + 32, ..., decoded by the production decoder qmm_cuda_dequant<T>.
 */
#include "cuda/dequant.cuh"

extern "C" __device__ const int qmm_candidate_geometry[][2] = {{8, 256}, {4, 128}};

extern "C" __global__ void qmm_candidate(const uint8_t *w, size_t row_bytes, int64_t m, int64_t k,
                                         int64_t n, const float *x, int64_t ldx, float *y,
                                         int64_t ldy) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (r >= m) return;
    const uint8_t *row = w + r * row_bytes;
    for (int64_t t = blockIdx.y; t < n; t += gridDim.y) {
        float acc = 0.0f;
        for (int64_t e = lane; e < k - 1; e += 32) /* the bug: e < k would be right */
            acc = fmaf(qmm_cuda_dequant<QMM_CANDIDATE_TYPE>(row, e), x[t * ldx + e], acc);
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xFFFFFFFFu, acc, off);
        if (lane == 0) y[t * ldy + r] = acc;
    }
}
