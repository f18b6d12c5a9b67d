// 06 — AllGather + GEMM on Hopper's tensor cores: lab 02's warp-specialised, persistent wgmma
// kernel fed by TMA (kernel 15, 15_wgmma_bf16_tma_store.cu: its producer/consumer loop, its tile
// order and its epilogue through TMA stores), whose producer waits, before it issues the TMA loads
// of a tile's rows of A_full, until those rows have arrived — the flag wait of Flux and
// Triton-distributed, moved from the consumers of kernel 04 into the one thread that feeds the
// pipeline.
//
// Beside it (another stream, other SMs) the copy gather_rows_bf16 writes the ranks' blocks of A
// into A_full in ring order, this rank's own first, and every copy block adds 1 to flags[s] with
// a release when its share of block s is written: block s is there when flags[s] ≥ ready
// (= epoch × copy blocks; the counters only grow). The producer thread, once per tile row, spins
// on an acquire load of the counters of every block the tile's 128 rows touch (a tile may span two
// ranks' blocks when M/n is not a multiple of 128), then fences the async proxy (TMA reads global
// memory through it, and the rows were written by ordinary stores of the copy's SMs) and issues
// the loads. Nothing else changes: the consumers wait on the mbarriers as in kernel 15, so the
// flags cost one load per tile row once the rows are there. The tile rows are visited from this
// rank's own block on (kernel 15's grouped order, rotated), the order in which the copy delivers.
//
// C = A_full·B + bias (bias: N bf16 values, or null), bf16, written through shared memory and TMA
// stores as in kernel 15 (no beta: C is an output only). The grid must leave the copy SMs of its
// own: a block spinning on a flag must never keep the copy off the GPU (the driver launches at most
// SMs − copy blocks when both run at once).
//
// splits > 1: split-K (splitk_sm90.cuh), for problems whose tiles leave SMs idle (fewer tiles
// than SMs, as the challenge's decode-sized M, or a last wave of a few): the tiles from `whole` on
// are shared by `splits` units each, each unit taking a run of the K blocks, adding its fp32
// partial into the tile's sum (ws) and counting in (counts); the last to finish stores the tile.
//
// tileM × tileN: the tiles' shape, which the driver picks: 128 × 256 (kernel 15's); 128 × 128 for
// problems whose wide tiles would fill fewer than half the SMs (twice the tiles, each split fewer
// ways); 64 × 64 for M ≤ 64 (a decode-sized batch: the 128-row tile would spend half its shared
// memory on rows that are not there). The GEMM then only streams B, so what counts is the bytes in
// flight an SM: one consumer warpgroup, and 12 stages of 16 KiB instead of 4 of 48 (cuBLASLt's
// kernel for the same shape also runs 64 × 64 tiles, 13 deep).
//
// Tensor maps: A_full (K innermost, boxes 64 × tileM) and B (N innermost, boxes 64 × 64) as kernel
// 12; C bf16, boxes 64 × 64, swizzle 128B. Sizes: K % 8 == 0 and N % 8 == 0 (TMA strides).
// Launch: block 384, grid ≤ number of SMs (minus the copy's), dynamic shared memory 214 080 bytes.
#include "kl.cuh"
#include "gemm_sm90.cuh"
#include "overlap_gemm.cuh"
#include "splitk_sm90.cuh"

#define BK 64
#define GM 8 // tile rows per group of the tile order
#define B_PANEL (64 * BK * 2)
#define CHUNK_COLS 64
#define CHUNK_BYTES (64 * CHUNK_COLS * 2)

// Kernel 15's grouped tile order (groups of GM tile rows, walked down before moving right), with
// the tile rows rotated to start at tile row tm0 (this rank's own block).
__device__ __forceinline__ void tile_coords(int t, int tilesM, int tilesN, int tm0, int& tm, int& tn) {
    const int perGroup = GM * tilesN;
    const int firstM = (t / perGroup) * GM;
    const int rows = min(tilesM - firstM, GM);
    const int r = t % perGroup;
    tm = (firstM + r % rows + tm0) % tilesM;
    tn = r / rows;
}

// The rank whose block holds row `row` of A_full (the inverse of ov_row0_of; M ≥ nranks).
__device__ __forceinline__ int owner_of(int row, int M, int nranks) {
    const int q = M / nranks, big = M % nranks; // the first `big` ranks hold q + 1 rows
    return row < big * (q + 1) ? row / (q + 1) : big + (row - big * (q + 1)) / q;
}

// Orders this thread's later async-proxy accesses of global memory (its TMA loads) after what its
// acquire load made visible.
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

// The kernel for BM × BN tiles, STAGES deep: 128 × 256 (kernel 15's), 128 × 128, whose twice as many
// tiles fill the SMs of a narrow or short problem with less split-K, with a stage of 32 KiB instead
// of 48 and so one stage more in the same shared memory, or 64 × 64 with one consumer warpgroup.
template <int BM, int BN, int STAGES>
__device__ __forceinline__ void ag_gemm_tiles(const unsigned* flags, unsigned ready, int rank, int nranks, int M, int N, int K,
                                              uint16_t* __restrict__ C, const uint16_t* __restrict__ bias, int whole, int splits,
                                              float4* __restrict__ ws, unsigned* __restrict__ counts, const CUtensorMap* tmA,
                                              const CUtensorMap* tmB, const CUtensorMap* tmC) {
    constexpr int CONSUMERS = BM / 64, A_BYTES = BM * BK * 2, B_BYTES = BN / 64 * B_PANEL, STAGE_BYTES = A_BYTES + B_BYTES;
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    unsigned char* stage_c = smem + STAGES * STAGE_BYTES; // a chunk a consumer warpgroup
    uint64_t* full = reinterpret_cast<uint64_t*>(stage_c + CONSUMERS * CHUNK_BYTES);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x, wg = tid / 128;
    const int numK = (K + BK - 1) / BK;
    const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
    const int numUnits = kl_splitk_units(tilesM * tilesN, whole, splits);
    const int tm0 = ov_row0_of(rank, M, nranks) / BM;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);
            kl_mbar_init(&empty[s], CONSUMERS);
        }
        kl_mbar_init_fence();
        kl_tma_prefetch(tmA);
        kl_tma_prefetch(tmB);
        kl_tma_prefetch(tmC);
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer: kernel 15's, plus the wait for a tile row's blocks ----
        kl_setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0, waited = -1; // waited: the last tile row whose blocks are known to be there
            for (int u = blockIdx.x; u < numUnits; u += gridDim.x) {
                const KlSplitUnit w = kl_splitk_unit(u, whole, splits);
                int tm, tn, k0, k1;
                tile_coords(w.tile, tilesM, tilesN, tm0, tm, tn);
                kl_splitk_range(w, numK, k0, k1);
                if (tm != waited) {
                    const int last = min(tm * BM + BM, M) - 1;
                    for (int s = owner_of(tm * BM, M, nranks); s <= owner_of(last, M, nranks); ++s)
                        while (kl_load_acquire(&flags[s]) < ready) {
                        }
                    fence_proxy_async_global();
                    waited = tm;
                }
                for (int kt = k0; kt < k1; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) kl_mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                    kl_tma_load_2d(st, tmA, &full[s], kt * BK, tm * BM);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        kl_tma_load_2d(st + A_BYTES + p * B_PANEL, tmB, &full[s], tn * BN + 64 * p, kt * BK);
                }
            }
        }
    } else {
        // ---- consumers: kernel 15's, the epilogue adding the bias instead of beta·C ----
        kl_setmaxnreg_inc<232>();
        const int cw = wg - 1, lt = tid % 128;
        if (cw >= CONSUMERS) return; // 64-row tiles: one warpgroup holds the whole tile
        const bool leader = lt == 0; // issues this warpgroup's TMA stores
        unsigned char* buf = stage_c + cw * CHUNK_BYTES;
        const int rr = 16 * (lt / 32) + (lt % 32) / 4, cc = 2 * (lt % 4);
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
        int it = 0;
        for (int u = blockIdx.x; u < numUnits; u += gridDim.x) {
            const KlSplitUnit w = kl_splitk_unit(u, whole, splits);
            int tm, tn, k0, k1;
            tile_coords(w.tile, tilesM, tilesN, tm0, tm, tn);
            kl_splitk_range(w, numK, k0, k1);
            for (int kt = k0; kt < k1; ++kt, ++it) {
                const int s = it % STAGES;
                kl_mbar_wait(&full[s], (it / STAGES) & 1);
                const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
                const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
                kl_wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    kl_wgmma_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL),
                                             (kt > k0 || kk > 0) ? 1 : 0);
                kl_wgmma_commit();
                kl_wgmma_wait<1>();
                if (kt > k0 && lt == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            kl_wgmma_wait<0>();
            if (lt == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            kl_wgmma_fence_acc(d);
            if (!kl_splitk_reduce<128 * CONSUMERS>(d, w, tm * BM + cw * 64 < M, ws, counts, tid - 128, 3)) continue;

            const int row0 = tm * BM + cw * 64;
#pragma unroll
            for (int q = 0; q < BN / CHUNK_COLS; ++q) {
                const int col0 = tn * BN + q * CHUNK_COLS;
                if (leader) kl_bulk_wait_read<0>(); // the store that last read buf is done reading
                kl_named_barrier(1 + cw, 128);
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    const int col = col0 + 8 * j + cc;
                    float b0 = 0.0f, b1 = 0.0f;
                    if (bias && col < N) { // N is even: col + 1 < N too
                        b0 = __uint_as_float((unsigned)bias[col] << 16);
                        b1 = __uint_as_float((unsigned)bias[col + 1] << 16);
                    }
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int i = 4 * (8 * q + j) + 2 * h;
                        *reinterpret_cast<uint32_t*>(buf + kl_sw128_offset(rr + 8 * h, 8 * j + cc)) =
                            kl_pack_bf16x2(d[i] + b0, d[i + 1] + b1);
                    }
                }
                kl_fence_proxy_async();
                kl_named_barrier(1 + cw, 128);
                if (leader) {
                    if (col0 < N && row0 < M) kl_tma_store_2d(tmC, buf, col0, row0);
                    kl_bulk_commit();
                }
            }
        }
        if (leader) kl_bulk_wait_all(); // shared memory must outlive the stores that read it
    }
}

extern "C" __global__ void __launch_bounds__(384, 1)
ag_gemm_wgmma(const unsigned* flags, unsigned ready, int rank, int nranks, int M, int N, int K,
              uint16_t* __restrict__ C, int tileM, int tileN, const uint16_t* __restrict__ bias, int whole, int splits,
              float4* __restrict__ ws, unsigned* __restrict__ counts, const __grid_constant__ CUtensorMap tmA,
              const __grid_constant__ CUtensorMap tmB, const __grid_constant__ CUtensorMap tmC) {
    if (tileM == 64)
        ag_gemm_tiles<64, 64, 12>(flags, ready, rank, nranks, M, N, K, C, bias, whole, splits, ws, counts, &tmA, &tmB, &tmC);
    else if (tileN == 128)
        ag_gemm_tiles<128, 128, 5>(flags, ready, rank, nranks, M, N, K, C, bias, whole, splits, ws, counts, &tmA, &tmB, &tmC);
    else
        ag_gemm_tiles<128, 256, 4>(flags, ready, rank, nranks, M, N, K, C, bias, whole, splits, ws, counts, &tmA, &tmB, &tmC);
}
