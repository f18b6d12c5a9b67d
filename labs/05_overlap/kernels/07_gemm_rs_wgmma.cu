// 07 — GEMM + ReduceScatter on Hopper's tensor cores: kernel 06's warp-specialised persistent
// wgmma kernel (lab 02's kernel 15: the same producer/consumer loop over a four-stage ring of TMA
// loads, the same bf16 epilogue staged in 128-byte-swizzled shared memory) on this rank's K slice,
// P_r = A_r·B_r (+ bias) with A_r the M × K_r block of A's columns and B_r the K_r × N block of
// B's rows, whose epilogue sends each finished tile to the rank that owns its rows.
//
// push = 1 (wgmma_rs), the fused form. The tiles are taken destination by destination, rank+1,
// rank+2, …, this rank's own rows last (kernel 05's order), each destination's block of rows
// tiled on its own so that a tile never spans two owners (the TMA load of an edge tile may read
// rows past the block; they are computed and dropped). A tile for rank d ≠ rank is rounded to bf16
// in the staging buffer, copied by the consumers with 16-byte stores through the peer pointer into
// slot `rank` of d's receive buffer (slots[d]: n slots of rows_d × N, one per source rank), and
// once both warpgroups have stored it (a named barrier) one thread adds 1 to d's flag for (this
// rank, tile) with a system-scope release: the tile reaches d before the flag (exercise 1's
// protocol). The tiles of this rank's own rows come last: by then every peer has had its own tiles
// for this rank in its order before, so the waits are short. For each of them the warpgroup's
// leader spins on an acquire load of the n − 1 peers' flags for that tile (≥ epoch: the counters
// only grow, one per run), then the warpgroup sums, in rank order 0, 1, …, n − 1, the peers'
// slots (L2 loads) and its own partial, each a bf16 value, in fp32, and writes the sum rounded to
// bf16 into C (this rank's rows) through kernel 06's TMA store. The own partial is rounded to bf16
// first like the others, so the result is that of wgmma_rs_sequential bit for bit: deterministic,
// whatever order the tiles arrive in.
//
// Why the reduction lives in the owner's persistent blocks and not in a second kernel after a
// device barrier: a second kernel would wait for the slowest rank's whole GEMM before it reduced
// anything; here a block reduces a tile as soon as its n partials are there, and the only wait is
// on other ranks' pushes, never on another block of this grid (so no block can wait for one that
// is not resident). The GEMM tiles never wait: every rank's pushes complete whatever the others do.
//
// push = 0 (wgmma_rs_sequential): one block of all M rows, every tile stored locally into
// P (the tensor map tmOut, M × N) as kernel 06 stores C; the driver then passes a device barrier
// and launches reduce_rows_bf16, as the sequential schedule does. slots and flags are unused.
//
// splits > 1: kernel 06's split-K (splitk_sm90.cuh) of the tiles from `whole` on, each split
// tile's epilogue (store, send or reduce) run once, by the last of its units, on their sum.
//
// The bias (N bf16 values, or null) is added to every rank's partial before the reduction, as the
// distributed challenge's reference does (the sum carries it n times). Tensor maps: A_r (K_r
// innermost, boxes 64 × 128), B_r (N innermost, boxes 64 × 64) as kernel 06; tmOut bf16, boxes
// 64 × 64, swizzle 128B, over P (push 0) or this rank's rows of C (push 1). Sizes: K_r % 8 == 0
// and N % 8 == 0 (TMA strides, 16-byte stores). Launch: block 384, grid ≤ number of SMs, dynamic
// shared memory 214 080 bytes.
#include "kl.cuh"
#include "gemm_sm90.cuh"
#include "overlap_gemm.cuh"
#include "splitk_sm90.cuh"

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define GM 8 // tile rows per group of the tile order
#define A_BYTES (BM * BK * 2)
#define B_PANEL (64 * BK * 2)
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define CHUNK_COLS 64
#define CHUNK_BYTES (64 * CHUNK_COLS * 2)

// Kernel 06's grouped tile order (groups of GM tile rows, walked down before moving right),
// without its rotation: here the destinations set the order.
__device__ __forceinline__ void tile_coords(int t, int tilesM, int tilesN, int& tm, int& tn) {
    const int perGroup = GM * tilesN;
    const int firstM = (t / perGroup) * GM;
    const int rows = min(tilesM - firstM, GM);
    const int r = t % perGroup;
    tm = firstM + r % rows;
    tn = r / rows;
}

// Tile t of this rank's order: its destination d, the destination's block of rows (row0, rows:
// all M rows when push = 0), its index among the destination's tiles (idx: the flag it raises)
// and its tile row and column in the block.
struct RsTile {
    int d, row0, rows, idx, tm, tn;
};

__device__ __forceinline__ RsTile rs_tile(int t, int push, int rank, int nranks, int M, int tilesN) {
    RsTile x;
    const int segs = push ? nranks : 1;
    for (int j = 0; j < segs; ++j) {
        x.d = push ? (rank + 1 + j) % nranks : rank;
        x.row0 = push ? ov_row0_of(x.d, M, nranks) : 0;
        x.rows = push ? ov_rows_of(x.d, M, nranks) : M;
        const int tiles = (x.rows + BM - 1) / BM * tilesN;
        if (t < tiles || j == segs - 1) break;
        t -= tiles;
    }
    x.idx = t;
    tile_coords(t, (x.rows + BM - 1) / BM, tilesN, x.tm, x.tn);
    return x;
}

// The number of tiles of a destination's block of rows (its flags per source).
__device__ __forceinline__ int block_tiles(int rows, int tilesN) { return (rows + BM - 1) / BM * tilesN; }

// The bias of columns col, col + 1 (zeros without a bias or past N; N is even).
__device__ __forceinline__ void bias_pair(const uint16_t* bias, int col, int N, float& b0, float& b1) {
    b0 = b1 = 0.0f;
    if (bias && col < N) {
        b0 = __uint_as_float((unsigned)bias[col] << 16);
        b1 = __uint_as_float((unsigned)bias[col + 1] << 16);
    }
}

__device__ __forceinline__ float bf16_lo(uint32_t p) { return __uint_as_float(p << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t p) { return __uint_as_float(p & 0xFFFF0000u); }

// The kernel's body. REDUCE: push = 1 with peers, the tiles sent to them and this rank's reduced;
// otherwise every tile is stored through tmOut (push = 0, or one rank: its partial is the sum). The
// two are separate instantiations because the reduction's registers made ptxas spill (232 bytes a
// thread) in code every tile runs; the store-only body needs no more than kernel 06's.
template <bool REDUCE>
__device__ __forceinline__ void rs_body(uint16_t* const* slots, unsigned* const* flags, unsigned epoch, int push,
                                        int rank, int nranks, int M, int N, int K, const uint16_t* __restrict__ bias,
                                        int whole, int splits, float4* __restrict__ ws, unsigned* __restrict__ counts,
                                        const CUtensorMap& tmA, const CUtensorMap& tmB, const CUtensorMap& tmOut) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    unsigned char* stage_c = smem + STAGES * STAGE_BYTES; // 2 warpgroups × 1 chunk
    uint64_t* full = reinterpret_cast<uint64_t*>(stage_c + 2 * CHUNK_BYTES);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x, wg = tid / 128;
    const int numK = (K + BK - 1) / BK;
    const int tilesN = (N + BN - 1) / BN;
    int numTiles = 0;
    for (int j = 0; j < (push ? nranks : 1); ++j)
        numTiles += block_tiles(push ? ov_rows_of(j, M, nranks) : M, tilesN);
    const int numUnits = kl_splitk_units(numTiles, whole, splits);

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);
            kl_mbar_init(&empty[s], 2);
        }
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmA);
        kl_tma_prefetch(&tmB);
        kl_tma_prefetch(&tmOut);
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer: kernel 06's, without the flag wait (A_r and B_r are local) ----
        kl_setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0;
            for (int u = blockIdx.x; u < numUnits; u += gridDim.x) {
                const KlSplitUnit w = kl_splitk_unit(u, whole, splits);
                const RsTile x = rs_tile(w.tile, push, rank, nranks, M, tilesN);
                int k0, k1;
                kl_splitk_range(w, numK, k0, k1);
                for (int kt = k0; kt < k1; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) kl_mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                    kl_tma_load_2d(st, &tmA, &full[s], kt * BK, x.row0 + x.tm * BM);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        kl_tma_load_2d(st + A_BYTES + p * B_PANEL, &tmB, &full[s], x.tn * BN + 64 * p, kt * BK);
                }
            }
        }
    } else {
        // ---- consumers: kernel 06's main loop; the epilogue stores, sends or reduces ----
        kl_setmaxnreg_inc<232>();
        const int cw = wg - 1, lt = tid % 128;
        const bool leader = lt == 0; // issues this warpgroup's TMA stores and waits for the flags
        unsigned char* buf = stage_c + cw * CHUNK_BYTES;
        const int rr = 16 * (lt / 32) + (lt % 32) / 4, cc = 2 * (lt % 4);
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        int it = 0;
        for (int u = blockIdx.x; u < numUnits; u += gridDim.x) {
            const KlSplitUnit w = kl_splitk_unit(u, whole, splits);
            const RsTile x = rs_tile(w.tile, push, rank, nranks, M, tilesN);
            int k0, k1;
            kl_splitk_range(w, numK, k0, k1);
            for (int kt = k0; kt < k1; ++kt, ++it) {
                const int s = it % STAGES;
                kl_mbar_wait(&full[s], (it / STAGES) & 1);
                const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
                const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
                kl_wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    kl_wgmma_m64n256k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL),
                                             (kt > k0 || kk > 0) ? 1 : 0);
                kl_wgmma_commit();
                kl_wgmma_wait<1>();
                if (kt > k0 && lt == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            kl_wgmma_wait<0>();
            if (lt == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            kl_wgmma_fence_acc128(d);
            if (!kl_splitk_reduce(d, w, x.tm * BM + cw * 64 < x.rows, ws, counts, tid - 128, 3)) continue;

            const bool send = REDUCE && x.d != rank, reduce = REDUCE && x.d == rank;
            // this warpgroup's first row in the block of rows, which is also its row in tmOut (P, all
            // M rows, when push = 0; this rank's rows of C when push = 1)
            const int lrow0 = x.tm * BM + cw * 64;
            const int tilesD = block_tiles(x.rows, tilesN);
            // The tile's own partial (+ bias) rounded to bf16 pairs, once, before any chunk: the 128
            // fp32 accumulators die here, and the reduction's loads and sums fit beside these 64
            // registers.
            uint32_t own[BN / CHUNK_COLS][8][2];
#pragma unroll
            for (int q = 0; q < BN / CHUNK_COLS; ++q)
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    float b0, b1;
                    bias_pair(bias, x.tn * BN + q * CHUNK_COLS + 8 * j + cc, N, b0, b1);
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int i = 4 * (8 * q + j) + 2 * h;
                        own[q][j][h] = kl_pack_bf16x2(d[i] + b0, d[i + 1] + b1);
                    }
                }
            if (reduce && leader) // the peers' partials of this tile are in their slots
                for (int s = 0; s < nranks; ++s)
                    if (s != rank)
                        while (kl_load_acquire_sys(&flags[rank][s * tilesD + x.idx]) < epoch) {
                        }
            // send: slot `rank` of the destination's receive buffer (rows_d × N)
            uint16_t* dst = send ? slots[x.d] + (long long)rank * x.rows * N : nullptr;
#pragma unroll
            for (int q = 0; q < BN / CHUNK_COLS; ++q) {
                const int col0 = x.tn * BN + q * CHUNK_COLS;
                if (leader) kl_bulk_wait_read<0>(); // the store that last read buf is done reading
                kl_named_barrier(1 + cw, 128);      // (and every thread is done copying buf out)
                if (reduce) {
                    // Σ over the ranks in order 0 … n−1 of their bf16 partials, in fp32, half the
                    // chunk's columns at a time (8 loads in flight, 16 sums)
#pragma unroll
                    for (int j0 = 0; j0 < 8; j0 += 4) {
                        float a[4][2][2];
#pragma unroll
                        for (int j = 0; j < 4; ++j)
#pragma unroll
                            for (int h = 0; h < 2; ++h) a[j][h][0] = a[j][h][1] = 0.0f;
                        for (int s = 0; s < nranks; ++s) {
                            uint32_t p[4][2];
                            const uint16_t* part = slots[rank] + (long long)s * x.rows * N;
#pragma unroll
                            for (int j = 0; j < 4; ++j)
#pragma unroll
                                for (int h = 0; h < 2; ++h) {
                                    const int row = lrow0 + rr + 8 * h, col = col0 + 8 * (j0 + j) + cc;
                                    p[j][h] = 0u;
                                    if (s == rank)
                                        p[j][h] = own[q][j0 + j][h];
                                    else if (row < x.rows && col < N)
                                        p[j][h] = kl_load_cg(reinterpret_cast<const uint32_t*>(part + (long long)row * N + col));
                                }
#pragma unroll
                            for (int j = 0; j < 4; ++j)
#pragma unroll
                                for (int h = 0; h < 2; ++h) {
                                    a[j][h][0] += bf16_lo(p[j][h]);
                                    a[j][h][1] += bf16_hi(p[j][h]);
                                }
                        }
#pragma unroll
                        for (int j = 0; j < 4; ++j)
#pragma unroll
                            for (int h = 0; h < 2; ++h)
                                *reinterpret_cast<uint32_t*>(buf + kl_sw128_offset(rr + 8 * h, 8 * (j0 + j) + cc)) =
                                    kl_pack_bf16x2(a[j][h][0], a[j][h][1]);
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < 8; ++j)
#pragma unroll
                        for (int h = 0; h < 2; ++h)
                            *reinterpret_cast<uint32_t*>(buf + kl_sw128_offset(rr + 8 * h, 8 * j + cc)) = own[q][j][h];
                }
                if (send) {
                    kl_named_barrier(1 + cw, 128); // the chunk is staged
                    // 64 rows × 8 pieces of 16 bytes, a warp 4 whole rows per step
#pragma unroll
                    for (int k = 0; k < 4; ++k) {
                        const int e = 128 * k + lt, r = e / 8, g = e % 8;
                        const int row = lrow0 + r, col = col0 + 8 * g;
                        if (row < x.rows && col < N)
                            *reinterpret_cast<uint4*>(dst + (long long)row * N + col) =
                                *reinterpret_cast<const uint4*>(buf + r * 128 + (((g ^ r) & 7) << 4));
                    }
                } else {
                    kl_fence_proxy_async();
                    kl_named_barrier(1 + cw, 128);
                    if (leader) {
                        if (col0 < N && lrow0 < x.rows) kl_tma_store_2d(&tmOut, buf, col0, lrow0);
                        kl_bulk_commit();
                    }
                }
            }
            if (send) {
                kl_named_barrier(3, 256); // both warpgroups have stored the tile
                if (tid == 128) kl_atomic_add_release_sys(&flags[x.d][rank * tilesD + x.idx], 1u);
            }
        }
        if (leader) kl_bulk_wait_all(); // shared memory must outlive the stores that read it
    }
}

extern "C" __global__ void __launch_bounds__(384, 1)
gemm_rs_wgmma(uint16_t* const* slots, unsigned* const* flags, unsigned epoch, int push, int rank, int nranks, int M,
              int N, int K, const uint16_t* __restrict__ bias, int whole, int splits, float4* __restrict__ ws,
              unsigned* __restrict__ counts, const __grid_constant__ CUtensorMap tmA,
              const __grid_constant__ CUtensorMap tmB, const __grid_constant__ CUtensorMap tmOut) {
    if (push && nranks > 1)
        rs_body<true>(slots, flags, epoch, push, rank, nranks, M, N, K, bias, whole, splits, ws, counts, tmA, tmB, tmOut);
    else
        rs_body<false>(slots, flags, epoch, push, rank, nranks, M, N, K, bias, whole, splits, ws, counts, tmA, tmB, tmOut);
}
