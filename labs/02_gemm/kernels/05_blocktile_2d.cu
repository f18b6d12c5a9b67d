#include "kl.cuh"
#include "gemm_common.cuh"

// 05_blocktile_2d.cu — 2-D register blocking: each thread computes an 8×8 block of C.
//
// Over kernel 04: a thread now holds TM×TN = 8×8 = 64 accumulators. In each step of the inner loop
// it loads 8 values of A (a column of its rows) and 8 values of B (a row of its columns) into
// registers and does their outer product: 16 shared loads for 64 FMAs, a 4:1 ratio where kernel 04
// had 9:8. The block tile grows to 128×128 (BK = 8, 256 threads), and global intensity to
// 128·128·8·2 / ((128+128)·8·4) = 32 flop per byte. The price is registers: 64 accumulators and
// 16 operands per thread.
//
// Loads: the A tile (128×8) and the B tile (8×128) are 1024 floats each, 4 per thread, read
// row by row so that a warp reads contiguous memory.
//
// Launch: block 256, grid (ceil(N/128), ceil(M/128)); 8 KiB of static shared memory.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS ((BM / TM) * (BN / TN)) // 256

extern "C" __global__ void __launch_bounds__(NTHREADS)
sgemm_2d(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
         float beta, float* __restrict__ C) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int threadCol = tid % (BN / TN), threadRow = tid / (BN / TN);
    const int aCol = tid % BK, aRow = tid / BK; // rows aRow + 32·l of the A tile
    const int bCol = tid % BN, bRow = tid / BN; // rows bRow + 2·l of the B tile
    constexpr int aStride = NTHREADS / BK, bStride = NTHREADS / BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < BM / aStride; ++l) {
            const int r = aRow + l * aStride;
            As[r * BK + aCol] = (m0 + r < M && k0 + aCol < K) ? A[(long long)(m0 + r) * K + k0 + aCol] : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < BK / bStride; ++l) {
            const int r = bRow + l * bStride;
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
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + threadRow * TM + i;
        if (row >= M) break;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + threadCol * TN + j;
            if (col < N) {
                float* c = C + (long long)row * N + col;
                *c = kl_gemm_epilogue(acc[i][j], alpha, beta, c);
            }
        }
    }
}
