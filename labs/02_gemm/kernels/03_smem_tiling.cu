#include "kl.cuh"
#include "gemm_common.cuh"

// 03_smem_tiling.cu — shared-memory tiling: load each input element once per block, not once per
// thread.
//
// Over kernel 02: a block computes a 32×32 tile of C. It walks K in steps of 32; at each step its
// 1024 threads copy a 32×32 tile of A and a 32×32 tile of B into shared memory (one element each,
// coalesced), wait at a barrier, and then every thread runs 32 multiply-adds out of shared memory.
// Global traffic drops by the tile size, 32×: each element of A is read by ceil(N/32) blocks
// instead of by N threads. Arithmetic intensity against global memory becomes 32·2/(2·4) = 8 flop
// per byte. What limits it now is shared memory: each FMA still needs two shared-memory loads
// (As[ty][kk] is a broadcast, Bs[kk][tx] a full row), so the FMA units wait on the LSU pipe.
//
// Edge tiles: elements outside A or B are stored as zeros, so the last partial step of K adds
// nothing, and only threads inside C write.
//
// Launch: block (32, 32), grid (ceil(N/32), ceil(M/32)); 8 KiB of static shared memory.

#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_smem(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
           float beta, float* __restrict__ C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(long long)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads(); // the tiles are complete
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[ty][kk] * Bs[kk][tx];
        }
        __syncthreads(); // everyone is done with the tiles before they are overwritten
    }
    if (row < M && col < N) {
        float* c = C + (long long)row * N + col;
        *c = kl_gemm_epilogue(acc, alpha, beta, c);
    }
}
