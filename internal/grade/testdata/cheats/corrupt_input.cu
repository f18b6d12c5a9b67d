// cheat: corrupts its input — computes C, then overwrites A[0] (through a cast that drops the
// const). Expected: input_corrupted.
#include "kl.cuh"
#include "gemm_common.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(long long)k * M + row] * B[(long long)k * N + col];
    float* c = C + (long long)row * N + col;
    *c = kl_gemm_epilogue(acc, alpha, beta, c);
    if (row == M - 1 && col == N - 1) const_cast<float*>(A)[0] = 42.0f;
}
