#include "kl.cuh"
#include "gemm_common.cuh"

// Exercise 1 — shared-memory tiling when A is stored column-major.
//
// Compute C = alpha·A·B + beta·C where A (M×K) is stored COLUMN-major: element (i, k) is at
// A[k·M + i] (a BLAS "lda = M"); B (K×N) and C (M×N) are row-major as in the rest of the chapter.
// The tiling is kernel 03's: the block (32×32 threads) owns the 32×32 tile of C at rows
// m0 = blockIdx.y·32.., columns n0 = blockIdx.x·32..; thread (tx, ty) owns the element at row
// m0 + ty, column n0 + tx. For each step k0 = 0, 32, 64, ... of K the block copies a 32×32 tile of
// A and one of B into shared memory, waits, accumulates 32 products, and waits again.
//
// What is new is A's layout. Kernel 03's load of A — thread (tx, ty) reads A(m0 + ty, k0 + tx) —
// would now have the 32 threads of a warp (consecutive tx) read 32 addresses M floats apart:
// 32 memory transactions where one would do. Choose which element of the A tile each thread
// loads so that a warp reads 32 consecutive floats, and where it stores it in As so that the
// inner loop reads shared memory without bank conflicts (a broadcast, where all lanes read one
// address, is free). Outside the matrices, store 0.
//
// The grader checks sizes that are not multiples of 32 (1×1×1, 17×33×65, 127, 129, M or N = 1...),
// β = 0 with C poisoned with NaN, and, on a GPU, your time against kernel 03's (A row-major) on
// 2048³. The epilogue (alpha, beta, bounds) is written for you.

#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
    const int row = m0 + ty, col = n0 + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // BEGIN SOLUTION
        // As[k][m] = A(m0 + m, k0 + k): lane tx reads A(m0 + tx, k0 + ty), consecutive in memory.
        As[ty][tx] = (m0 + tx < M && k0 + ty < K) ? A[(long long)(k0 + ty) * M + m0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE; ++kk) {
            acc += As[kk][ty] * Bs[kk][tx]; // As[kk][ty]: one address per warp, a broadcast
        }
        __syncthreads();
        // END SOLUTION
    }
    if (row < M && col < N) {
        float* c = C + (long long)row * N + col;
        *c = kl_gemm_epilogue(acc, alpha, beta, c);
    }
}
