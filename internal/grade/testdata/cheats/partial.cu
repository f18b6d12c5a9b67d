// cheat: writes only part of the output — correct values, but only the first M/2 rows of C.
// Expected: unwritten.
#include "kl.cuh"
#include "gemm_common.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M / 2 || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(long long)k * M + row] * B[(long long)k * N + col];
    float* c = C + (long long)row * N + col;
    *c = kl_gemm_epilogue(acc, alpha, beta, c);
}
