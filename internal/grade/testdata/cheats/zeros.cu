// cheat: returns zeros — writes 0 to every element of C. Expected: wrong ("every output is 0").
#include "kl.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row < M && col < N) C[(long long)row * N + col] = 0.0f;
}
