#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_mma.cuh"
#include "decode_mma.cuh"

// 19_decode_streamk.cu — skinny M on the tensor cores, every byte of B read once, in equal shares.
//
// Over kernel 18: its split-K gives a cluster's blocks equal slices of K, but the work still comes
// in whole tiles × splits (16×8192×8192 has 64 tiles of 64 × 128: 128 blocks at a split of 2 for
// 132 SMs, 256 at 4, two waves less 8 blocks). This kernel is lab 03's decode kernel 10 with one expert:
//   * C^T = B^T·A^T with mma.sync, the operands swapped (B's many columns on the MMA's 16-wide
//     side, A's few rows on its 8-wide side), each stage 32 of k of 256 columns of B, staged once
//     through a four-stage cp.async pipeline for up to 64 rows of A (decode_mma.cuh: lab 03's
//     kernel 08 explains the unit);
//   * the work is one line of k-steps over the items (64 rows × 256 columns of C) cut into equal
//     contiguous ranges, one a block (Stream-K): every block streams the same bytes of B, and an
//     item that two or more blocks share is added up, in order, by the last of them from the fp32
//     workspace (deterministic);
//   * C = alpha·A·B + beta·C, rounded once to bf16 (with beta = 0, C is not read).
// Rows beyond 64 are further chunks that read their columns of B again, from L2 when neighbours.
//
// Sizes: N % 8 == 0 and K % 8 == 0 (16-byte copies of rows of A and B; the driver skips other
// problems). Launch: block 256, a persistent grid of SMs × 2 blocks, 80 KiB of dynamic shared
// memory; ws holds smax·M·N floats, counters ceil(M/64)·ceil(N/256) ints, zero before the first
// launch (the last block of an item puts its counter back to zero).

extern "C" __global__ void KL_LAUNCH_BOUNDS(DM_THREADS, 2)
hgemm_decode_streamk(int M, int N, int K, float alpha, const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                     float beta, uint16_t* __restrict__ C, float* ws, int* counters, int smax) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ int s_last;
    const kl_bf16* X = reinterpret_cast<const kl_bf16*>(A);
    const kl_bf16* W = reinterpret_cast<const kl_bf16*>(B);
    kl_bf16* Y = reinterpret_cast<kl_bf16*>(C);
    const int chunks = (M + DM_ROWS - 1) / DM_ROWS, tilesN = (N + DM_COLS - 1) / DM_COLS;
    dm_streamk(chunks * tilesN, (K + DM_BK - 1) / DM_BK, smax, [&](int item, int a, int b, int slot, int owners) {
        const int chunk = item % chunks, tile = item / chunks; // the chunks of a column tile side by side
        const int r0 = chunk * DM_ROWS, rows = min(DM_ROWS, M - r0);
        dm_unit_rows(X, W, Y, ws, counters + chunk * tilesN + tile, smem, &s_last, M, N, K, r0, rows, tile * DM_COLS,
                     a * DM_BK, min(K, b * DM_BK), slot, owners, alpha, beta);
    });
}
