#include "kl.cuh"

#define TILE 32

// 02_tiled.cu — shared-memory tiling (synthetic test kernel).
extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_tiled(int M, int N, int K, const float* A, const float* B, float* C) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[threadIdx.y][threadIdx.x] = A[(blockIdx.y * TILE + threadIdx.y) * K + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * N + blockIdx.x * TILE + threadIdx.x];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[(blockIdx.y * TILE + threadIdx.y) * N + blockIdx.x * TILE + threadIdx.x] = acc;
}
