#include "kl.cuh"
#include "gemm_common.cuh"
#include "gemm_sm90.cuh"

// 17_wgmma_cluster_multicast.cu — two blocks a cluster share B through TMA multicast; the whole
// C tile is staged in shared memory, so beta ≠ 0 reads the old C with TMA loads too.
//
// Over kernel 15: every k step each block of kernel 15 loads a 128×64 slice of A (16 KiB) and a
// 64×256 slice of B (32 KiB) from L2. 132 blocks that finish a k step in about 0.7 µs pull
// 132 × 48 KiB / 0.7 µs ≈ 9 TB/s out of L2, near what lab 01 measured as its read bandwidth, so
// L2 looked like the limit. (It was not: the bf16_cluster_tiles suite and the profiles in the
// notes show the multicast removing a third of that traffic and none of the time.) Two blocks that
// compute vertically adjacent tiles (tile rows 2p and 2p + 1, the same tile column) need the same
// B slice, so:
//   * the blocks form a cluster of 2 (__cluster_dims__(2, 1, 1); launch param cluster: 2). Each
//     loads its own A slice and HALF of B (two of the four 64-column panels), multicast into the
//     shared memory of both blocks (cp.async.bulk.tensor ... .multicast::cluster, mask 0b11): per
//     block 32 KiB a k step from L2 instead of 48, a third less;
//   * each block's full barrier still expects 48 KiB (its A, its own half of B and the other
//     block's half), and a stage may be refilled only when the consumers of BOTH blocks are done
//     with it, since the refill writes into both: each empty barrier counts 4 arrivals, and a
//     consumer warpgroup arrives on its own block's and on the other block's (mbarrier.arrive on a
//     shared::cluster address from mapa). The two blocks run in step, one stage apart at most;
//   * the tile order is kernel 15's grouped order over pairs of tile rows (GM tile rows a group:
//     16 as kept, chosen by the bf16_cluster_tiles suite), and both blocks of a cluster walk it
//     together; a block whose tile row is past M (an odd number of tile rows) still loads and
//     multicasts its half of B, and stores nothing;
//   * the barriers are initialised, and the kernel ends, behind a cluster barrier (barrier.cluster):
//     no block may multicast into, or arrive on, a block that has not started or has already
//     exited.
// The epilogue stages the warpgroup's whole 64×256 half tile (four 64×64 chunks of 8 KiB, 128-byte
// swizzled as in kernel 15) instead of one chunk at a time: with beta ≠ 0, the warpgroup's leader
// asks the copy engine for the tile's old C four k steps before its main loop ends
// (cp.async.bulk.tensor into the staging buffer, on an mbarrier), so the epilogue finds it in shared
// memory instead of waiting for 16 loads a thread from L2; each thread reads the old value at the
// place it then writes, converts, and the leader stores each chunk with TMA as in kernel 15. With
// beta = 0 nothing is loaded, and the stores of a tile have a whole main loop to drain.
//
// Shared memory: STAGES × 48 KiB of operands + 2 × 32 KiB of staging + barriers + 1 KiB of
// alignment slack: 214 080 bytes with 3 stages, the most that fits under the 227 KiB (232 448
// bytes) a block may have. Registers: as kernel 15 (128 accumulators a consumer thread, 232 after
// setmaxnreg; the producer keeps 40).
//
// Tensor maps: A and B as kernel 12; C bf16, box {64, 64}, swizzle 128B (loads and stores).
// Sizes: K % 8 == 0 and N % 8 == 0 (TMA strides); any M otherwise.
// Launch: block 384, grid = whole clusters, at most one block per SM (persistent: 1, cluster: CL).
// A cluster runs only where its GPC has two free SMs at once, so a device may hold fewer clusters
// than SMs / 2; the bf16_cluster_tiles suite compares 66 clusters (g8_132) with 64 (g8,
// max_blocks: 128), and the kept variants ask for 128 blocks.
// The release of a stage on the other block uses mbarrier.arrive's default semantics (release at
// CTA scope, as CUTLASS's cluster barrier): in a trial run, .release.cluster on every k step made
// this kernel far slower than kernel 15.

#define BM 128
#define BN 256
#define BK 64
#define A_BYTES (BM * BK * 2)
#define B_PANEL (64 * BK * 2)
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define CHUNK_COLS 64
#define CHUNK_BYTES (64 * CHUNK_COLS * 2)      // 64 rows × 64 bf16: one TMA box, 8 KiB
#define HALF_BYTES (BN / CHUNK_COLS * CHUNK_BYTES) // a warpgroup's 64×256 bf16: 32 KiB

// unit_coords maps a unit number (a pair of vertically adjacent tiles when CL = 2, a tile when
// CL = 1) to its (unit row, tile column): groups of GU unit rows, walked down a group's rows
// before moving one column right.
template <int GU>
__device__ __forceinline__ void unit_coords(int u, int unitsM, int tilesN, int& um, int& tn) {
    const int perGroup = GU * tilesN;
    const int group = u / perGroup;
    const int first = group * GU;
    const int rows = min(unitsM - first, GU);
    const int r = u % perGroup;
    um = first + r % rows;
    tn = r / rows;
}

// STAGES pipeline stages; GM tile rows a group of the tile order; CL blocks a cluster; with beta ≠ 0
// the old C is loaded CE k steps before the end of a tile's main loop, and, when PF > 0, the
// producer asks for it to be brought into L2 PF k steps before the end (as kernel 15 does).
template <int STAGES, int GM, int CL, int CE, int PF>
__device__ __forceinline__ void cluster_body(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                                             const CUtensorMap& tmA, const CUtensorMap& tmB, const CUtensorMap& tmC) {
    static_assert(CL == 1 || CL == 2, "clusters of 1 or 2 blocks");
    static_assert(GM % CL == 0, "whole pairs of tile rows a group");
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    unsigned char* stage_c = smem + STAGES * STAGE_BYTES; // 2 warpgroups × 32 KiB
    uint64_t* full = reinterpret_cast<uint64_t*>(stage_c + 2 * HALF_BYTES);
    uint64_t* empty = full + STAGES;
    uint64_t* cfull = empty + STAGES; // one a consumer warpgroup: its old C has landed

    const int tid = threadIdx.x, wg = tid / 128;
    const int numK = (K + BK - 1) / BK;
    const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
    const int unitsM = (tilesM + CL - 1) / CL, numUnits = unitsM * tilesN;
    const uint32_t rank = CL > 1 ? kl_cluster_rank() : 0;
    const int cid = CL > 1 ? (int)kl_cluster_id_x() : blockIdx.x;
    const int nclusters = CL > 1 ? (int)kl_cluster_count_x() : gridDim.x;
    const bool loadC = beta != 0.0f;
    const int cAt = max(numK - CE, 0), pfAt = max(numK - PF, 0);

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);
            kl_mbar_init(&empty[s], 2 * CL);
        }
        kl_mbar_init(&cfull[0], 1);
        kl_mbar_init(&cfull[1], 1);
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmA);
        kl_tma_prefetch(&tmB);
        kl_tma_prefetch(&tmC);
    }
    if constexpr (CL > 1)
        kl_cluster_sync(); // the other block's barriers exist before anything is multicast to them
    else
        __syncthreads();

    if (wg == 0) {
        // ---- producer ----
        kl_setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0;
            for (int u = cid; u < numUnits; u += nclusters) {
                int um, tn;
                unit_coords<GM / CL>(u, unitsM, tilesN, um, tn);
                const int tm = um * CL + (int)rank;
                for (int kt = 0; kt < numK; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) kl_mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                    kl_tma_load_2d(st, &tmA, &full[s], kt * BK, tm * BM);
                    if constexpr (CL > 1) {
                        // This block's half of B's panels, into both blocks.
#pragma unroll
                        for (int q = 0; q < BN / 64 / CL; ++q) {
                            const int p = (int)rank * (BN / 64 / CL) + q;
                            kl_tma_load_2d_multicast(st + A_BYTES + p * B_PANEL, &tmB, &full[s], tn * BN + 64 * p, kt * BK,
                                                     (uint16_t)((1u << CL) - 1));
                        }
                    } else {
#pragma unroll
                        for (int p = 0; p < BN / 64; ++p)
                            kl_tma_load_2d(st + A_BYTES + p * B_PANEL, &tmB, &full[s], tn * BN + 64 * p, kt * BK);
                    }
                    if (PF > 0 && loadC && kt == pfAt) {
                        const int col0 = tn * BN, cols = min(BN, N - col0);
                        for (int r = 0; r < BM && tm * BM + r < M; ++r)
                            if (cols > 0) kl_prefetch_l2(C + (long long)(tm * BM + r) * N + col0, (uint32_t)cols * 2u);
                    }
                }
            }
        }
    } else {
        // ---- consumers ----
        kl_setmaxnreg_inc<232>();
        const int cw = wg - 1, lt = tid % 128;
        const bool leader = lt == 0; // issues this warpgroup's C loads and TMA stores
        unsigned char* myHalf = stage_c + cw * HALF_BYTES;
        const int rr = 16 * (lt / 32) + (lt % 32) / 4, cc = 2 * (lt % 4);
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        int it = 0, nt = 0; // nt: tiles done by this block (the parity of cfull)
        for (int u = cid; u < numUnits; u += nclusters, ++nt) {
            int um, tn;
            unit_coords<GM / CL>(u, unitsM, tilesN, um, tn);
            const int tm = um * CL + (int)rank;
            const int row0 = tm * BM + cw * 64;
            for (int kt = 0; kt < numK; ++kt, ++it) {
                const int s = it % STAGES;
                if (loadC && leader && kt == cAt) {
                    // The old C of this tile into the staging buffer, once the last tile's stores
                    // have read it (long ago: a whole main loop).
                    kl_bulk_wait_read<0>();
                    kl_mbar_arrive_expect_tx(&cfull[cw], HALF_BYTES);
#pragma unroll
                    for (int q = 0; q < BN / CHUNK_COLS; ++q)
                        kl_tma_load_2d(myHalf + q * CHUNK_BYTES, &tmC, &cfull[cw], tn * BN + q * CHUNK_COLS, row0);
                }
                kl_mbar_wait(&full[s], (it / STAGES) & 1);
                const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
                const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
                kl_wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    kl_wgmma_m64n256k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL),
                                             (kt > 0 || kk > 0) ? 1 : 0);
                kl_wgmma_commit();
                kl_wgmma_wait<1>();
                if (kt > 0 && leader) {
#pragma unroll
                    for (int r = 0; r < CL; ++r) {
                        if constexpr (CL > 1)
                            kl_mbar_arrive_cluster(&empty[(it - 1) % STAGES], r);
                        else
                            kl_mbar_arrive(&empty[(it - 1) % STAGES]);
                    }
                }
            }
            kl_wgmma_wait<0>();
            if (leader) {
#pragma unroll
                for (int r = 0; r < CL; ++r) {
                    if constexpr (CL > 1)
                        kl_mbar_arrive_cluster(&empty[(it - 1) % STAGES], r);
                    else
                        kl_mbar_arrive(&empty[(it - 1) % STAGES]);
                }
            }
            kl_wgmma_fence_acc128(d);

            // ---- epilogue: the half tile through the staging buffer, four TMA stores ----
            if (loadC) {
                kl_mbar_wait(&cfull[cw], nt & 1); // the old C is in myHalf
            } else {
                if (leader) kl_bulk_wait_read<0>(); // the last tile's stores are done reading myHalf
                kl_named_barrier(1 + cw, 128);
            }
#pragma unroll
            for (int q = 0; q < BN / CHUNK_COLS; ++q) {
                unsigned char* buf = myHalf + q * CHUNK_BYTES;
#pragma unroll
                for (int j = 0; j < 8; ++j)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int i = 4 * (8 * q + j) + 2 * h;
                        uint32_t* p = reinterpret_cast<uint32_t*>(buf + kl_sw128_offset(rr + 8 * h, 8 * j + cc));
                        float v0 = alpha * d[i], v1 = alpha * d[i + 1];
                        if (loadC) {
                            const uint32_t o = *p;
                            v0 += beta * __uint_as_float(o << 16);
                            v1 += beta * __uint_as_float(o & 0xFFFF0000u);
                        }
                        *p = kl_pack_bf16x2(v0, v1);
                    }
                kl_fence_proxy_async();
                kl_named_barrier(1 + cw, 128);
                if (leader) {
                    const int col0 = tn * BN + q * CHUNK_COLS;
                    if (col0 < N && row0 < M) kl_tma_store_2d(&tmC, buf, col0, row0);
                    kl_bulk_commit();
                }
            }
        }
        if (leader) kl_bulk_wait_all(); // shared memory must outlive the stores that read it
    }
    if constexpr (CL > 1) kl_cluster_sync(); // no block exits while the other may still arrive on it
}

// As kept (bf16 suites): clusters of 2, groups of 16 tile rows, 3 stages, the old C asked for 4 k
// steps before the end.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
hgemm_wgmma_cluster(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
    const __grid_constant__ CUtensorMap tmC) {
    cluster_body<3, 16, 2, 4, 0>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}

// The bf16_cluster_tiles suite: group heights, and the same kernel without the cluster.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
hgemm_wgmma_cluster_g4(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
    const __grid_constant__ CUtensorMap tmC) {
    cluster_body<3, 4, 2, 4, 0>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
hgemm_wgmma_cluster_g8(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
    const __grid_constant__ CUtensorMap tmC) {
    cluster_body<3, 8, 2, 4, 0>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_nocluster(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
    const __grid_constant__ CUtensorMap tmC) {
    cluster_body<3, 8, 1, 4, 0>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
// The old C earlier: loaded 16 k steps before the end, or prefetched into L2 16 steps before the
// end and loaded 4 before (groups of 16 tile rows).
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
hgemm_wgmma_cluster_g16_ce16(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
    const __grid_constant__ CUtensorMap tmC) {
    cluster_body<3, 16, 2, 16, 0>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
hgemm_wgmma_cluster_g16_pf16(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
    const __grid_constant__ CUtensorMap tmC) {
    cluster_body<3, 16, 2, 4, 16>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
