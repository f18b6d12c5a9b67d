// cheat (or a bug): writes outside its output — a correct C, plus one store just past its end.
// Expected: oob_write (the red zone after C changed).
#include "kl.cuh"
#include "gemm_common.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row == 0 && col == 0) C[(long long)M * N + 3] = 1.0f;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(long long)k * M + row] * B[(long long)k * N + col];
    float* c = C + (long long)row * N + col;
    *c = kl_gemm_epilogue(acc, alpha, beta, c);
}
