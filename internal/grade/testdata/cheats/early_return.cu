// bug: threads outside C return before the loop whose barriers the others wait at.
// Expected: barrier (the emulator reports the divergence; on a GPU it is undefined behaviour).
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
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = k0 + tx < K ? A[(long long)(k0 + tx) * M + row] : 0.0f;
        Bs[ty][tx] = k0 + ty < K ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int kk = 0; kk < TILE; ++kk) acc += As[ty][kk] * Bs[kk][tx];
        __syncthreads();
    }
    float* c = C + (long long)row * N + col;
    *c = kl_gemm_epilogue(acc, alpha, beta, c);
}
