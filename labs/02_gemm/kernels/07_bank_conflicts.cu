#include "kl.cuh"
#include "gemm_common.cuh"

// 07_bank_conflicts.cu — a shared-memory layout without bank conflicts.
//
// Over kernel 06: shared memory is 32 banks of 4 bytes; a warp's access takes one pass per
// distinct 4-byte word it needs from the same bank (for 16-byte accesses: per group of 8 threads).
// Kernel 06 has two conflicts:
//   * the transposed store of A: threads 2t and 2t+1 write the same row aRow of As in rows k and
//     k+4, 4·128 floats apart, which is a multiple of 32 words: the same bank, a 2-way conflict.
//     Fix: pad each row of As to BM + 4 floats. Rows k and k+4 are now 4·132 = 528 words apart,
//     528 mod 32 = 16, so the pair lands in different banks (and the +4 keeps rows 16-byte aligned
//     for LDS.128).
//   * the LDS.128 of B: threads 0..7 of a warp read float4s 32 bytes apart (each thread's 8 columns
//     are contiguous), so 8 threads cover 256 bytes, two passes. Fix: give each thread two groups
//     of 4 columns, one in each half of the tile (columns 4·tc and 64 + 4·tc). Now 8 neighbouring
//     threads read 8 neighbouring float4s, 128 contiguous bytes, one pass. Rows are split the same
//     way, and the global stores of C become 256-byte contiguous runs per warp.
// The arithmetic is unchanged: the same 8×8 results per thread, the same loads.
//
// Launch: block 256, grid (ceil(N/128), ceil(M/128)); 8.1 KiB of static shared memory.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define APAD 4
#define NTHREADS ((BM / TM) * (BN / TN)) // 256

extern "C" __global__ void __launch_bounds__(NTHREADS)
sgemm_nobank(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
             float beta, float* __restrict__ C) {
    __shared__ __align__(16) float As[BK * (BM + APAD)]; // transposed and padded: As[k][m]
    __shared__ __align__(16) float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int tc = tid % (BN / TN), tr = tid / (BN / TN); // 16 × 16 threads
    const int aRow = tid / (BK / 4), aCol = (tid % (BK / 4)) * 4;
    const int bRow = tid / (BN / 4), bCol = (tid % (BN / 4)) * 4;
    const bool vecA = (K % 4) == 0, vecBC = (N % 4) == 0;

    // This thread's rows: 4·tr + {0..3} and BM/2 + 4·tr + {0..3}; columns likewise with tc.
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        const float4 a = kl_load4(A, m0 + aRow, k0 + aCol, M, K, K, vecA);
        As[(aCol + 0) * (BM + APAD) + aRow] = a.x;
        As[(aCol + 1) * (BM + APAD) + aRow] = a.y;
        As[(aCol + 2) * (BM + APAD) + aRow] = a.z;
        As[(aCol + 3) * (BM + APAD) + aRow] = a.w;
        *reinterpret_cast<float4*>(&Bs[bRow * BN + bCol]) = kl_load4(B, k0 + bRow, n0 + bCol, K, N, N, vecBC);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float4 va = *reinterpret_cast<const float4*>(&As[kk * (BM + APAD) + h * (BM / 2) + tr * 4]);
                regM[h * 4 + 0] = va.x; regM[h * 4 + 1] = va.y; regM[h * 4 + 2] = va.z; regM[h * 4 + 3] = va.w;
                const float4 vb = *reinterpret_cast<const float4*>(&Bs[kk * BN + h * (BN / 2) + tc * 4]);
                regN[h * 4 + 0] = vb.x; regN[h * 4 + 1] = vb.y; regN[h * 4 + 2] = vb.z; regN[h * 4 + 3] = vb.w;
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
        const int row = m0 + (i / 4) * (BM / 2) + tr * 4 + (i % 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            kl_store4(C, row, n0 + h * (BN / 2) + tc * 4, M, N, N, vecBC,
                      make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]), alpha, beta);
        }
    }
}
