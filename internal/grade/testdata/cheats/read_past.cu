// cheat: reads past its inputs — the tiled kernel, but the bound of A's loads on k is off by one
// (k <= K), so the last step of K reads column K of A, the M floats just past its end (A is
// column-major; graded at M = 17, 68 bytes). Those values are multiplied by the zeros that the
// (bounded) B tile holds there, so the answer is right whenever they are finite.
// Expected: read_outside (in grading the bytes after every buffer are NaN, and NaN·0 = NaN).
#include "kl.cuh"
#include "gemm_common.cuh"

#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx <= K) ? A[(long long)(k0 + tx) * M + row] : 0.0f; // <= K: one too far
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    if (row < M && col < N) {
        float* c = C + (long long)row * N + col;
        *c = kl_gemm_epilogue(acc, alpha, beta, c);
    }
}
