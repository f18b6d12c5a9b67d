#include "kl.cuh"
#include "gemm_common.cuh"

// Exercise 2 — 2-D register blocking (kernel 05 of the chapter).
//
// The block (256 threads) owns a 128×128 tile of C; thread t owns the 8×8 block at tile rows
// 8·(t / 16) .. +7 and tile columns 8·(t % 16) .. +7, held in acc[8][8].
//
// For each step k0 = 0, 8, 16, ... of K:
//   1. load the 128×8 tile of A into As (As[r·BK + c] = A[m0 + r][k0 + c]) and the 8×128 tile of
//      B into Bs (Bs[r·BN + c] = B[k0 + r][n0 + c]): 1024 floats each, 4 per thread. Let
//      consecutive threads read consecutive addresses, and store 0 outside the matrices;
//   2. barrier;
//   3. for each kk in 0..7: load the thread's 8 values of column kk of As into regM, its 8 values of
//      row kk of Bs into regN, and add their outer product to acc (64 FMAs);
//   4. barrier.
//
// The grader checks sizes that are not multiples of the tile (1×1×1, 17×33×65, 127, 129...).
// The epilogue is written for you.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS ((BM / TM) * (BN / TN)) // 256

extern "C" __global__ void __launch_bounds__(NTHREADS)
ex2_regblock_2d(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int threadCol = tid % (BN / TN), threadRow = tid / (BN / TN);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        // BEGIN SOLUTION
        const int aCol = tid % BK, aRow = tid / BK; // rows aRow + 32·l of the A tile
        const int bCol = tid % BN, bRow = tid / BN; // rows bRow + 2·l of the B tile
#pragma unroll
        for (int l = 0; l < BM / (NTHREADS / BK); ++l) {
            const int r = aRow + l * (NTHREADS / BK);
            As[r * BK + aCol] = (m0 + r < M && k0 + aCol < K) ? A[(long long)(m0 + r) * K + k0 + aCol] : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < BK / (NTHREADS / BN); ++l) {
            const int r = bRow + l * (NTHREADS / BN);
            Bs[r * BN + bCol] = (k0 + r < K && n0 + bCol < N) ? B[(long long)(k0 + r) * N + n0 + bCol] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < TM; ++i) regM[i] = As[(threadRow * TM + i) * BK + kk];
#pragma unroll
            for (int j = 0; j < TN; ++j) regN[j] = Bs[kk * BN + threadCol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads();
        // END SOLUTION
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + threadRow * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + threadCol * TN + j;
            if (row < M && col < N) {
                float* c = C + (long long)row * N + col;
                *c = kl_gemm_epilogue(acc[i][j], alpha, beta, c);
            }
        }
    }
}
