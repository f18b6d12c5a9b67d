// cheat: host-only C++ in a kernel (std::vector: a heap allocation and a host constructor),
// which the emulator's host compiler accepts and nvcc rejects. The kernel is otherwise correct
// (one thread per element, like the chapter's naive kernel). Expected on the emulator: compile
// (the device-code check: clang++ in CUDA mode names line 15).
#include <vector>
#include "kl.cuh"
#include "gemm_common.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    const int row = blockIdx.y * 32 + threadIdx.y;
    const int col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M || col >= N) return;
    std::vector<float> a(A + (long long)row * K, A + (long long)row * K + K);
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += a[k] * B[(long long)k * N + col];
    float* c = C + (long long)row * N + col;
    *c = kl_gemm_epilogue(acc, alpha, beta, c);
}
