#include "kl.cuh"
#include "gemm_common.cuh"
#include "gemm_sm90.cuh"

// 15_wgmma_bf16_tma_store.cu — bf16 C, staged in shared memory and written with TMA stores.
//
// Over kernel 14: kernel 14 writes an fp32 C, which is what the lab's first cuBLAS baseline
// (cublasGemmEx with fp32 C) writes, but not what a model or PyTorch's `a @ b` asks for: their C is
// bf16, half the bytes. Here the consumers convert alpha·acc + beta·C to bf16 and hand the tile to
// the copy engine instead of storing it from registers:
//   * each consumer warpgroup writes its 64×256 half of the tile in four chunks of 64×64 bf16
//     (8 KiB, one TMA box) into a staging buffer in shared memory, in the 128-byte swizzled layout
//     (16-byte column group g of row r lands at group g ^ (r % 8)): a warp's 32 four-byte stores
//     then hit 32 different banks, where a plain row-major buffer (rows 128 bytes apart) would put
//     8 rows on the same banks;
//   * fence.proxy.async (the copy engine reads shared memory through the async proxy), a barrier
//     of the warpgroup's 128 threads, and one thread issues cp.async.bulk.tensor ... bulk_group for
//     the chunk: the stores leave as whole 128-byte lines, and parts of the box outside C are
//     clipped by the copy engine (no bounds checks in the kernel);
//   * NBUF staging buffers per warpgroup, used in turn: before refilling one, its issuing thread
//     waits (cp.async.bulk.wait_group.read NBUF-1) until the store that last read it has finished
//     reading, so the next chunk's conversion overlaps the previous chunk's store;
//   * with beta ≠ 0 the old bf16 C is read with ordinary loads (16 per thread and chunk, all issued
//     before the first use), after the producer has asked for the tile to be prefetched into L2 as
//     in kernel 14;
//   * the tile order is kernel 14's grouped order, GROUP_M tile rows per group (a template
//     parameter, so the bf16_out_tiles suite can measure it).
//
// Shared memory: STAGES × 48 KiB of operands + 2 × NBUF × 8 KiB of staging + barriers + 1 KiB of
// alignment slack: 214 080 bytes with 4 stages and 1 buffer a warpgroup (as kept), 230 464 with 2
// buffers, under the 227 KiB (232 448 bytes) a block may have; 4 buffers need 3 stages.
//
// Tensor maps: A and B as kernel 12; C bf16, box {64, 64}, swizzle 128B (lab.BF16Tiles and
// driver.go). Sizes: K % 8 == 0 and N % 8 == 0 (TMA strides); any M otherwise.
// Launch: block 384, grid min(number of tiles, number of SMs), dynamic shared memory as above.

#define BM 128
#define BN 256
#define BK 64
#define A_BYTES (BM * BK * 2)
#define B_PANEL (64 * BK * 2)
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define CHUNK_COLS 64                   // columns of C per TMA store (128 bytes of bf16)
#define CHUNK_BYTES (64 * CHUNK_COLS * 2) // one warpgroup's 64 rows: 8 KiB

// tile_coords maps a tile number to its (tile-row, tile-column): groups of GM tile rows, walked
// down a group's rows before moving one column right.
template <int GM>
__device__ __forceinline__ void tile_coords(int t, int tilesM, int tilesN, int& tm, int& tn) {
    const int perGroup = GM * tilesN;
    const int group = t / perGroup;
    const int firstM = group * GM;
    const int rows = min(tilesM - firstM, GM);
    const int r = t % perGroup;
    tm = firstM + r % rows;
    tn = r / rows;
}

template <int STAGES, int NBUF, int GM>
__device__ __forceinline__ void bf16_body(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                                          const CUtensorMap& tmA, const CUtensorMap& tmB, const CUtensorMap& tmC) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    unsigned char* stage_c = smem + STAGES * STAGE_BYTES; // 2 warpgroups × NBUF chunks
    uint64_t* full = reinterpret_cast<uint64_t*>(stage_c + 2 * NBUF * CHUNK_BYTES);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x, wg = tid / 128;
    const int numK = (K + BK - 1) / BK;
    const int tilesM = (M + BM - 1) / BM, tilesN = (N + BN - 1) / BN;
    const int numTiles = tilesM * tilesN;
    const int prefetchAt = max(numK - max(8, numK / 8), 0);

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);
            kl_mbar_init(&empty[s], 2);
        }
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmA);
        kl_tma_prefetch(&tmB);
        kl_tma_prefetch(&tmC);
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer: as kernel 14 ----
        kl_setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < numTiles; t += gridDim.x) {
                int tm, tn;
                tile_coords<GM>(t, tilesM, tilesN, tm, tn);
                for (int kt = 0; kt < numK; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) kl_mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                    kl_tma_load_2d(st, &tmA, &full[s], kt * BK, tm * BM);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        kl_tma_load_2d(st + A_BYTES + p * B_PANEL, &tmB, &full[s], tn * BN + 64 * p, kt * BK);
                    if (beta != 0.0f && kt == prefetchAt) {
                        const int col0 = tn * BN, cols = min(BN, N - col0);
                        for (int r = 0; r < BM && tm * BM + r < M; ++r)
                            kl_prefetch_l2(C + (long long)(tm * BM + r) * N + col0, (uint32_t)cols * 2u);
                    }
                }
            }
        }
    } else {
        // ---- consumers ----
        kl_setmaxnreg_inc<232>();
        const int cw = wg - 1, lt = tid % 128;
        const bool leader = lt == 0; // issues this warpgroup's TMA stores
        unsigned char* myStage = stage_c + cw * NBUF * CHUNK_BYTES;
        // This thread's place in the m64 accumulator tile: row rr (+8), columns cc, cc+1 of each
        // 8-column block.
        const int rr = 16 * (lt / 32) + (lt % 32) / 4, cc = 2 * (lt % 4);
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        int it = 0, chunk = 0; // chunk: this warpgroup's staging-buffer turn, counted across tiles
        for (int t = blockIdx.x; t < numTiles; t += gridDim.x) {
            int tm, tn;
            tile_coords<GM>(t, tilesM, tilesN, tm, tn);
            for (int kt = 0; kt < numK; ++kt, ++it) {
                const int s = it % STAGES;
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
                if (kt > 0 && lt == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            kl_wgmma_wait<0>();
            if (lt == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            kl_wgmma_fence_acc128(d);

            // ---- epilogue: four 64×64 chunks through the staging buffers ----
            const int row0 = tm * BM + cw * 64;
#pragma unroll
            for (int q = 0; q < BN / CHUNK_COLS; ++q, ++chunk) {
                const int col0 = tn * BN + q * CHUNK_COLS;
                uint32_t old[8][2];
                if (beta != 0.0f) {
#pragma unroll
                    for (int j = 0; j < 8; ++j)
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int row = row0 + rr + 8 * h, col = col0 + 8 * j + cc;
                            old[j][h] = 0;
                            if (row < M && col < N)
                                old[j][h] = __ldg(reinterpret_cast<const unsigned int*>(C + (long long)row * N + col));
                        }
                }
                unsigned char* buf = myStage + (chunk % NBUF) * CHUNK_BYTES;
                if (leader) kl_bulk_wait_read<NBUF - 1>(); // the store that last read buf is done reading
                kl_named_barrier(1 + cw, 128);
#pragma unroll
                for (int j = 0; j < 8; ++j)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int i = 4 * (8 * q + j) + 2 * h;
                        float v0 = alpha * d[i], v1 = alpha * d[i + 1];
                        if (beta != 0.0f) {
                            v0 += beta * __uint_as_float(old[j][h] << 16);
                            v1 += beta * __uint_as_float(old[j][h] & 0xFFFF0000u);
                        }
                        *reinterpret_cast<uint32_t*>(buf + kl_sw128_offset(rr + 8 * h, 8 * j + cc)) = kl_pack_bf16x2(v0, v1);
                    }
                kl_fence_proxy_async();
                kl_named_barrier(1 + cw, 128);
                if (leader) {
                    if (col0 < N && row0 < M) kl_tma_store_2d(&tmC, buf, col0, row0);
                    kl_bulk_commit(); // an empty group keeps the buffer count in step
                }
            }
        }
        if (leader) kl_bulk_wait_all(); // shared memory must outlive the stores that read it
    }
}

// The kernel as kept (bf16 suites): 4 stages, 1 staging buffer per warpgroup, groups of 8 tile
// rows; the bf16_out_tiles suite measured it at par with or ahead of the alternatives below.
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_bf16(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                 const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC) {
    bf16_body<4, 1, 8>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}

// The alternatives of the bf16_out_tiles suite: pipeline depth, staging buffers, group height.
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_bf16_s4b2g8(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                 const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC) {
    bf16_body<4, 2, 8>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_bf16_s3b4g8(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                 const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC) {
    bf16_body<3, 4, 8>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_bf16_s3b2g8(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                 const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC) {
    bf16_body<3, 2, 8>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_bf16_s4b2g4(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                 const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC) {
    bf16_body<4, 2, 4>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_bf16_s4b2g16(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                 const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmC) {
    bf16_body<4, 2, 16>(M, N, K, alpha, beta, C, tmA, tmB, tmC);
}
