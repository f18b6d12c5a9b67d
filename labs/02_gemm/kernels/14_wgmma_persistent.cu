#include "kl.cuh"
#include "gemm_common.cuh"
#include "gemm_sm90.cuh"

// 14_wgmma_persistent.cu — a persistent kernel with an L2-friendly tile order.
//
// Over kernel 13: kernel 13 launches one block per 128×256 tile of C (1024 blocks at 8192³, about
// 7.8 waves of 132 SMs). Each block pays its prologue (barrier set-up, filling the pipeline) and
// its epilogue (the stores of C) with the tensor cores idle, and the order in which the hardware
// happens to run blocks decides how much of A and B is still in L2 when a neighbour needs it.
// Here the grid is one block per SM, and each block loops over tiles t = blockIdx.x,
// blockIdx.x + gridDim.x, ...:
//   * the producer runs ahead across tile boundaries: while the consumers write one tile's
//     results, the first stages of the next tile are already loading;
//   * the pipeline's stage and phase counters simply continue from tile to tile (the consumers
//     start each tile's accumulation with scale-d = 0 instead of zeroing registers);
//   * tiles are numbered in groups of GROUP_M = 8 tile-rows: consecutive tile numbers walk down a
//     group of 8 rows before moving one column right, so the 132 tiles in flight at any time share
//     about 8 tile rows of A and 17 tile columns of B. Blocks that share a row or column read the
//     same K slice at about the same time, so most of their TMA loads hit in L2 instead of HBM;
//   * with beta ≠ 0 the epilogue must read the old C tile (128 KiB) before writing it, and a load
//     from HBM takes a microsecond or more while the tensor cores wait. The producer, which has
//     nothing else to do by then, asks for the tile to be prefetched into L2
//     (cp.async.bulk.prefetch.L2, one instruction per row) max(8, numK/8) K steps before the tile
//     ends: early enough for the bytes to arrive (about a microsecond per K step), late enough for
//     them to still be in L2 when the epilogue reads them.
//
// Tensor maps, sizes and shared memory: as kernel 13.
// Launch: block 384, grid min(number of tiles, number of SMs), dynamic shared memory 197760 bytes.

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define GROUP_M 8
#define A_BYTES (BM * BK * 2)
#define B_PANEL (64 * BK * 2)
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)

// tile_coords maps a tile number to its (tile-row, tile-column) in the grouped order.
__device__ __forceinline__ void tile_coords(int t, int tilesM, int tilesN, int& tm, int& tn) {
    const int perGroup = GROUP_M * tilesN;
    const int group = t / perGroup;
    const int firstM = group * GROUP_M;
    const int rows = min(tilesM - firstM, GROUP_M);
    const int r = t % perGroup;
    tm = firstM + r % rows;
    tn = r / rows;
}

// PF: who asks for the next C tile to be prefetched into L2 when beta ≠ 0: 0 nobody, 1 the producer
// thread (one instruction per row), 2 the 256 consumer threads (half a row each). PRE > 0: the
// consumers also load the first PRE column blocks of their old C into registers during the
// tile's third-to-last K step (with PF 1).
template <int PF, int PRE = 0>
__device__ __forceinline__ void persistent_body(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                                                const CUtensorMap& tmA, const CUtensorMap& tmB) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x, wg = tid / 128;
    const int numK = (K + BK - 1) / BK;
    const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
    const int numTiles = tilesM * tilesN;
    const int prefetchAt = max(numK - max(8, numK / 8), 0); // the K step at which C is prefetched

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);
            kl_mbar_init(&empty[s], 2);
        }
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmA);
        kl_tma_prefetch(&tmB);
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer ----
        kl_setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0; // pipeline step, counted across tiles
            for (int t = blockIdx.x; t < numTiles; t += gridDim.x) {
                int tm, tn;
                tile_coords(t, tilesM, tilesN, tm, tn);
                for (int kt = 0; kt < numK; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) kl_mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                    kl_tma_load_2d(st, &tmA, &full[s], kt * BK, tm * BM);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        kl_tma_load_2d(st + A_BYTES + p * B_PANEL, &tmB, &full[s], tn * BN + 64 * p, kt * BK);
                    if ((PF == 1 || PRE > 0) && beta != 0.0f && kt == prefetchAt) {
                        // The epilogue reads this tile of C: start bringing it into L2 now, a few
                        // K steps ahead, so that the consumers' loads hit L2 instead of HBM.
                        const int col0 = tn * BN, cols = min(BN, N - col0);
                        for (int r = 0; r < BM && tm * BM + r < M; ++r)
                            kl_prefetch_l2(C + (long long)(tm * BM + r) * N + col0, (uint32_t)cols * 4u);
                    }
                }
            }
        }
    } else {
        // ---- consumers ----
        kl_setmaxnreg_inc<232>();
        const int cw = wg - 1;
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        int it = 0;
        float2 pre[PRE > 0 ? PRE : 1][2]; // PRE: old C values loaded during the last K steps
        for (int t = blockIdx.x; t < numTiles; t += gridDim.x) {
            int tm, tn;
            tile_coords(t, tilesM, tilesN, tm, tn);
            for (int kt = 0; kt < numK; ++kt, ++it) {
                const int s = it % STAGES;
                kl_mbar_wait(&full[s], (it / STAGES) & 1);
                const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
                const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
                kl_wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    // The first k16 step of a tile overwrites the accumulators (scale-d = 0).
                    kl_wgmma_m64n256k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL),
                                             (kt > 0 || kk > 0) ? 1 : 0);
                }
                kl_wgmma_commit();
                if (PF == 2 && beta != 0.0f && kt == prefetchAt) {
                    const int ct = tid - 128, row = tm * BM + ct / 2, col0 = tn * BN + (ct % 2) * (BN / 2);
                    const int cols = min(BN / 2, N - col0);
                    if (row < M && cols > 0) kl_prefetch_l2(C + (long long)row * N + col0, (uint32_t)cols * 4u);
                }
                if constexpr (PRE > 0) {
                    if (beta != 0.0f && kt == max(numK - 3, 0)) kl_load_c_m64<PRE>(pre, C, M, N, tm * BM + cw * 64, tn * BN, 0);
                }
                kl_wgmma_wait<1>();
                if (kt > 0 && tid % 128 == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            kl_wgmma_wait<0>();
            if (tid % 128 == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]); // the tile's last stage
            kl_wgmma_fence_acc128(d);
            if constexpr (PRE > 0) {
                if (beta != 0.0f)
                    kl_store_acc_m64<128, PRE>(d, C, M, N, tm * BM + cw * 64, tn * BN, alpha, beta, pre);
                else
                    kl_store_acc_m64(d, C, M, N, tm * BM + cw * 64, tn * BN, alpha, beta);
            } else {
                kl_store_acc_m64(d, C, M, N, tm * BM + cw * 64, tn * BN, alpha, beta);
            }
        }
    }
}

// The kernel as kept: the producer prefetches C into L2, the consumers load half of their old C
// into registers before the last K steps (the bf16_epilogue suite measures the alternatives).
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_persistent(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                       const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    persistent_body<1, 16>(M, N, K, alpha, beta, C, tmA, tmB);
}

// The alternatives of the bf16_epilogue suite.
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_persistent_pf0(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                           const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    persistent_body<0>(M, N, K, alpha, beta, C, tmA, tmB);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_persistent_pf1(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                           const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    persistent_body<1>(M, N, K, alpha, beta, C, tmA, tmB);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_persistent_pf2(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                           const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    persistent_body<2>(M, N, K, alpha, beta, C, tmA, tmB);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_persistent_pre8(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                            const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    persistent_body<1, 8>(M, N, K, alpha, beta, C, tmA, tmB);
}
