// cheat: trusts stale shared memory — the tiled kernel, but outside the matrices it skips the
// stores of 0 into the tiles, as if shared memory started at zero. The products there use what
// an earlier block left (finite values times the bounded zeros of the other tile, so it passes
// where shared memory keeps old values). Expected: read_outside (shared memory starts as NaN at
// every block, as a GPU's holds garbage: NaN·0 = NaN).
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
        if (row < M && k0 + tx < K) As[ty][tx] = A[(long long)(k0 + tx) * M + row]; // no 0 outside
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
