#include "kl.cuh"
#include "gemm_common.cuh"

// 04_blocktile_1d.cu — 1-D register blocking: each thread computes a column of TM = 8 results.
//
// Over kernel 03: in kernel 03 every FMA needed two shared-memory loads. Here a thread keeps
// TM = 8 accumulators for 8 rows of one column of C. In each step of the inner loop it loads one
// value of B into a register and reuses it for 8 FMAs against 8 values of A: 9 shared loads for
// 8 FMAs instead of 16. The block tile is 64×64 with BK = 8, so global intensity also rises to
// 64·64·8·2 flop / ((64+64)·8·4 bytes) = 16 flop per byte.
//
// Layout: 512 threads; thread t owns column t % 64 and rows 8·(t/64) .. +7 of the tile. The A
// tile (64×8) and the B tile (8×64) are each loaded as exactly one element per thread.
//
// Launch: block 512, grid (ceil(N/64), ceil(M/64)); 4 KiB of static shared memory.

#define BM 64
#define BN 64
#define BK 8
#define TM 8
#define NTHREADS (BM * BN / TM) // 512

extern "C" __global__ void __launch_bounds__(NTHREADS)
sgemm_1d(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
         float beta, float* __restrict__ C) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int threadCol = tid % BN, threadRow = tid / BN; // threadRow in 0..7: rows 8·threadRow..
    const int aCol = tid % BK, aRow = tid / BK;           // which element of the A tile to load
    const int bCol = tid % BN, bRow = tid / BN;           // which element of the B tile to load

    float acc[TM];
#pragma unroll
    for (int r = 0; r < TM; ++r) acc[r] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        As[aRow * BK + aCol] = (m0 + aRow < M && k0 + aCol < K) ? A[(long long)(m0 + aRow) * K + k0 + aCol] : 0.0f;
        Bs[bRow * BN + bCol] = (k0 + bRow < K && n0 + bCol < N) ? B[(long long)(k0 + bRow) * N + n0 + bCol] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const float b = Bs[kk * BN + threadCol]; // one load, reused TM times
#pragma unroll
            for (int r = 0; r < TM; ++r) {
                acc[r] += As[(threadRow * TM + r) * BK + kk] * b;
            }
        }
        __syncthreads();
    }
    const int col = n0 + threadCol;
    if (col >= N) return;
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        const int row = m0 + threadRow * TM + r;
        if (row < M) {
            float* c = C + (long long)row * N + col;
            *c = kl_gemm_epilogue(acc[r], alpha, beta, c);
        }
    }
}
