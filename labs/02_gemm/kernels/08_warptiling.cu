#include "kl.cuh"
#include "gemm_common.cuh"

// 08_warptiling.cu — warp tiling: a level of tiling between the block and the thread.
//
// Over kernel 07: the block tile is split into warp tiles (here 32×64), and a warp's 32 lanes
// split their warp tile into thread tiles the way a tensor-core MMA would: lane (lr, lc) of a
// 4×8 lane grid owns the 4×4 sub-blocks at rows 4·lr + 16·s and columns 4·lc + 32·s of the warp
// tile. Three things follow:
//   * every LDS.128 of a warp reads one contiguous run of shared memory (8 lanes × 16 bytes of B,
//     or a broadcast of A), so the inner loop has no bank conflicts for any block shape;
//   * a warp touches only its own 32 rows of As and 64 columns of Bs, so the shared data a warp
//     reads per k step is (32 + 64)·4 bytes for 32·64 FMAs — better reuse than the block-wide
//     thread layout of kernel 07, where a warp read 2 rows of 8 and 16 columns of 8;
//   * the kernel is a template over the block, warp and thread tile shapes, which kernel 09 uses
//     to sweep them on the H200.
// Per thread: 8×8 accumulators, 2 LDS.128 of A and 2 of B per k step, as in kernel 07.
//
// Launch: block 256, grid (ceil(N/128), ceil(M/128)); 8.1 KiB of static shared memory.

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int NT>
__device__ __forceinline__ void sgemm_warptile_body(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                    const float* __restrict__ B, float beta, float* __restrict__ C) {
    constexpr int WARPS_N = BN / WN;
    constexpr int LR = WM / TM, LC = WN / TN; // the lane grid of a warp
    constexpr int SM = TM / 4, SN = TN / 4;   // 4×4 sub-blocks per thread
    constexpr int APAD = 4;                   // see kernel 07
    constexpr int LA = BM * BK / 4 / NT;      // float4 loads of A per thread per tile
    constexpr int LB = BK * BN / 4 / NT;      // float4 loads of B per thread per tile
    static_assert(LR * LC == 32, "a warp is 32 lanes");
    static_assert((BM / WM) * (BN / WN) * 32 == NT, "one warp per warp tile");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 granularity");
    static_assert(LA * 4 * NT == BM * BK && LB * 4 * NT == BK * BN, "tiles split evenly over threads");

    __shared__ __align__(16) float As[BK * (BM + APAD)]; // As[k][m]
    __shared__ __align__(16) float Bs[BK * BN];          // Bs[k][n]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / WARPS_N, wc = warp % WARPS_N;
    const int lr = lane / LC, lc = lane % LC;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int rowBase = wr * WM + lr * 4; // + s·LR·4 + i
    const int colBase = wc * WN + lc * 4; // + s·LC·4 + j
    const bool vecA = (K % 4) == 0, vecBC = (N % 4) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < LA; ++l) {
            const int idx = tid + l * NT;
            const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
            const float4 a = kl_load4(A, m0 + r, k0 + c, M, K, K, vecA);
            As[(c + 0) * (BM + APAD) + r] = a.x;
            As[(c + 1) * (BM + APAD) + r] = a.y;
            As[(c + 2) * (BM + APAD) + r] = a.z;
            As[(c + 3) * (BM + APAD) + r] = a.w;
        }
#pragma unroll
        for (int l = 0; l < LB; ++l) {
            const int idx = tid + l * NT;
            const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[r * BN + c]) = kl_load4(B, k0 + r, n0 + c, K, N, N, vecBC);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int s = 0; s < SM; ++s) {
                const float4 v = *reinterpret_cast<const float4*>(&As[kk * (BM + APAD) + rowBase + s * LR * 4]);
                regM[s * 4 + 0] = v.x; regM[s * 4 + 1] = v.y; regM[s * 4 + 2] = v.z; regM[s * 4 + 3] = v.w;
            }
#pragma unroll
            for (int s = 0; s < SN; ++s) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[kk * BN + colBase + s * LC * 4]);
                regN[s * 4 + 0] = v.x; regN[s * 4 + 1] = v.y; regN[s * 4 + 2] = v.z; regN[s * 4 + 3] = v.w;
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
        const int row = m0 + rowBase + (i / 4) * LR * 4 + (i % 4);
#pragma unroll
        for (int s = 0; s < SN; ++s) {
            kl_store4(C, row, n0 + colBase + s * LC * 4, M, N, N, vecBC,
                      make_float4(acc[i][s * 4], acc[i][s * 4 + 1], acc[i][s * 4 + 2], acc[i][s * 4 + 3]), alpha, beta);
        }
    }
}

// Block 128×128, BK 8, 8 warps of 32×64, 8×8 per thread.
extern "C" __global__ void __launch_bounds__(256)
sgemm_warptile(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
               float beta, float* __restrict__ C) {
    sgemm_warptile_body<128, 128, 8, 32, 64, 8, 8, 256>(M, N, K, alpha, A, B, beta, C);
}
