// 01 — the GEMM half of AG+GEMM: C = A·B for a block of rows, one 64×64 tile per thread block.
//
// A is rows×K, B is K×N, C is rows×N (row-major). The sequential variant calls it once over the
// whole gathered A_full (rows = M) after the all-gather; the chunked variant calls it once per
// source rank's block (A and C then point at that block's first row), each call launched as soon
// as its block has arrived. The tile itself is in overlap_gemm.cuh, shared by every variant.
//
// Launch: block 256, grid (ceil(N/64), ceil(rows/64)). gemm_rows_bf16 is the same for bf16 A, B
// and C, with an optional bias (N values, null for none) added to every row before the rounding.
// tl: the timeline's records (timeline.cuh; null, and compiled out, unless built with
// -DKL_TIMELINE): one compute record per tile.
#include "kl.cuh"
#include "overlap_gemm.cuh"
#include "timeline.cuh"

extern "C" __global__ void __launch_bounds__(OV_THREADS)
gemm_rows(const float* A, const float* __restrict__ B, float* C, int rows, int N, int K, unsigned long long* tl) {
    __shared__ float As[OV_BM * OV_BK];
    __shared__ float Bs[OV_BK * OV_BN];
    const unsigned long long t0 = kl_tl_start();
    ov_gemm_tile(A, B, C, rows, N, K, blockIdx.y, blockIdx.x, As, Bs);
    kl_tl_add_block(tl, KL_TL_COMPUTE, t0);
}

extern "C" __global__ void __launch_bounds__(OV_THREADS)
gemm_rows_bf16(const kl_bf16* A, const kl_bf16* __restrict__ B, kl_bf16* C, int rows, int N, int K,
               const kl_bf16* bias, unsigned long long* tl) {
    __shared__ float As[OV_BM * OV_BK];
    __shared__ float Bs[OV_BK * OV_BN];
    const unsigned long long t0 = kl_tl_start();
    ov_gemm_tile(A, B, C, rows, N, K, blockIdx.y, blockIdx.x, As, Bs, bias);
    kl_tl_add_block(tl, KL_TL_COMPUTE, t0);
}
