// cheat: returns the previous call's answer — each element's result is kept in a __device__ array
// with the sizes it was computed for, and a later call with the same sizes returns it without
// computing. Expected: stale (the grader's second run has new inputs).
#include "kl.cuh"
#include "gemm_common.cuh"

#define CACHE (1 << 16)
__device__ float cached[CACHE];
__device__ long long cachedFor[CACHE];

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    if (row >= M || col >= N) return;
    const long long idx = (long long)row * N + col;
    const long long key = ((long long)M << 40) ^ ((long long)N << 20) ^ (long long)K ^ (beta == 0.0f ? 1LL << 62 : 0);
    if (idx < CACHE && cachedFor[idx] == key) {
        C[idx] = cached[idx];
        return;
    }
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(long long)k * M + row] * B[(long long)k * N + col];
    const float c = kl_gemm_epilogue(acc, alpha, beta, C + idx);
    C[idx] = c;
    if (idx < CACHE) {
        cached[idx] = c;
        cachedFor[idx] = key;
    }
}
