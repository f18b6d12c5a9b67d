// grouped_sm90.cuh — what lab 03's wgmma kernel needs beyond lab 02's Hopper building blocks
// (gemm_sm90.cuh: mbarriers, 2-D TMA loads, wgmma descriptors and instructions): a 3-D TMA load
// for the stack of expert weights, an epilogue that writes bf16 and stops at the group's last row,
// and a named barrier for the consumer warpgroups. GPU only (inline PTX); include after "kl.cuh".
//
// The shared-memory layouts are lab 02's (see gemm_sm90.cuh): 128-byte swizzled tiles on
// 1024-byte boundaries, A K-major (SBO 1024), B N-major in 64-column panels (LBO 8192, SBO 1024).
#pragma once

#include "gemm_sm90.cuh"

// klg_tma_load_3d loads one box of a 3-D tensor (c0 innermost, then c1, then c2), as
// kl_tma_load_2d does for two dimensions: the expert weights W[e][k][n] are
// the tensor (n, k, e), and a box (64, BK, 1) is one 64-column panel of a K step of one expert.
// Rows k >= K are outside the tensor, so they read as zeros: a box never spills into the next
// expert's weights, as it would in a 2-D view of the stack.
__device__ __forceinline__ void klg_tma_load_3d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                                int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(
            kl_smem_u32(dst)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(kl_smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}

// klg_store_acc_bf16 writes a warpgroup's m64n256 accumulator tile to the rows row0.. and columns
// col0.. of C (row-major, ld = N) as bf16, skipping rows >= M and columns >= N: thread (warp w,
// lane l) holds, for each 8-column block j, rows 16w + l/4 and 16w + l/4 + 8, columns
// 8j + 2(l%4) and +1 — d[4j], d[4j+1] (the first row) and d[4j+2], d[4j+3] (the second). The
// pair of columns is one 4-byte store; N must be even (the kernel needs N % 8 == 0 anyway).
__device__ __forceinline__ void klg_store_acc_bf16(const float (&d)[128], __nv_bfloat16* __restrict__ C, int M, int N,
                                                   int row0, int col0) {
    const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int col = col0 + 8 * j + 2 * (l % 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + 16 * w + l / 4 + 8 * h;
            if (row < M && col < N) {
                *reinterpret_cast<__nv_bfloat162*>(C + (long long)row * N + col) =
                    __floats2bfloat162_rn(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            }
        }
    }
}

// klg_bar_sync is a named barrier for `count` threads (a multiple of 32): the two consumer
// warpgroups meet on barrier 1 without the producer.
__device__ __forceinline__ void klg_bar_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
