#include "kl.cuh"
#include "gemm_common.cuh"

// 06_vectorized.cu — 128-bit loads everywhere, and the A tile stored transposed.
//
// Over kernel 05: kernel 05 issues one 32-bit instruction per float it moves. Here every global
// load and store of the main loop moves a float4 (16 bytes, LDG.128 / STG.128 in SASS), and so
// does every shared-memory load of the inner loop (LDS.128). For the inner loop that needs each
// thread's 8 values of A to be contiguous in shared memory, so the A tile is stored transposed,
// As[k][m]: a thread loads a float4 of A along k from global memory and scatters its four values
// into four rows of As. Per k step a thread now issues 4 LDS.128 (2 for A, 2 for B) for 64 FMAs,
// where kernel 05 issued 16 LDS.32: the load/store unit is no longer the bottleneck of the
// inner loop.
//
// Sizes: the 16-byte loads need 16-byte aligned rows, i.e. K % 4 == 0 for A and N % 4 == 0 for B
// and C; otherwise (and at the matrix edges) kl_load4/kl_store4 fall back to single floats.
//
// Launch: block 256, grid (ceil(N/128), ceil(M/128)); 8 KiB of static shared memory.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS ((BM / TM) * (BN / TN)) // 256

extern "C" __global__ void __launch_bounds__(NTHREADS)
sgemm_vec(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
          float beta, float* __restrict__ C) {
    __shared__ __align__(16) float As[BK * BM]; // transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK * BN]; // Bs[k][n]
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int threadCol = tid % (BN / TN), threadRow = tid / (BN / TN);
    const int aRow = tid / (BK / 4), aCol = (tid % (BK / 4)) * 4; // one float4 of A per thread
    const int bRow = tid / (BN / 4), bCol = (tid % (BN / 4)) * 4; // one float4 of B per thread
    const bool vecA = (K % 4) == 0, vecBC = (N % 4) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        const float4 a = kl_load4(A, m0 + aRow, k0 + aCol, M, K, K, vecA);
        As[(aCol + 0) * BM + aRow] = a.x; // the transpose: four rows of As
        As[(aCol + 1) * BM + aRow] = a.y;
        As[(aCol + 2) * BM + aRow] = a.z;
        As[(aCol + 3) * BM + aRow] = a.w;
        *reinterpret_cast<float4*>(&Bs[bRow * BN + bCol]) = kl_load4(B, k0 + bRow, n0 + bCol, K, N, N, vecBC);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[kk * BM + threadRow * TM + i]);
                regM[i + 0] = v.x; regM[i + 1] = v.y; regM[i + 2] = v.z; regM[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[kk * BN + threadCol * TN + j]);
                regN[j + 0] = v.x; regN[j + 1] = v.y; regN[j + 2] = v.z; regN[j + 3] = v.w;
            }
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
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            kl_store4(C, row, n0 + threadCol * TN + j, M, N, N, vecBC,
                      make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), alpha, beta);
        }
    }
}
