#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_mma.cuh"
#include "decode_mma.cuh"

// 08_decode_mma.cu — the MoE layer at decode on the tensor cores: every weight byte of an expert
// with rows read once, whatever its row count. NVIDIA GPUs (inline PTX, sm_80 and newer) and the
// CPU emulator (grouped_mma.cuh's wrappers).
//
// Over kernel 07: its unit holds at most 8 token rows, so an expert with 16 rows streams its
// weights twice, and its FMAs on the CUDA cores (64 per 16 bytes of W at 8 rows) become the limit
// well before the read does. Here the arithmetic moves to mma.sync, with the operands swapped:
//   * Y_e^T = W_e^T · X_e^T. The many columns of W (N) are the MMA's M side, 16 per m16n8k16; the
//     few token rows its N side, 8 per MMA, padded to 8 with zeros that are never stored. One
//     m16n8k16 then multiplies 16 columns × 16 of k of W by up to 8 rows, where a GEMM of X·W would
//     waste 15 of the 16 rows of its A side on a single token;
//   * a unit is one expert's chunk of up to 64 rows × 256 columns of W × a range of K. W's tile of
//     32 k × 256 columns (16 KiB) and the chunk's rows at those 32 k (up to 64 × 32, 4 KiB) go to
//     shared memory with 16-byte cp.async through four stages (three in flight: 48 KiB of W per
//     block, two blocks per SM); every row group of the chunk is multiplied against the staged W
//     tile before the stage is released, so each byte of W is read from memory once;
//   * W[e] is K×N row-major (N contiguous): A = W^T comes out of the stage with ldmatrix .trans
//     (an 8×8 block of k-rows × 8 columns, transposed, is the row-major A fragment). X's rows are
//     row-major with K contiguous: that is B = X^T in the "col" layout, read with plain ldmatrix;
//   * 8 warps, each 32 columns (two m16 tiles) × all row groups of the chunk (NG = 1, 2, 4 or 8
//     groups of 8 rows, chosen per chunk, so one token costs the MMAs of one group): NG·8 fp32
//     accumulators per thread, 64 at most; the A fragments of one 32-wide k step (16 registers)
//     are loaded once and reused by every row group;
//   * the work units, the split-K and its deterministic reduction are kernel 07's: items
//     (expert's chunk × 256 columns) from the row offsets on the device, each item's K split over
//     S units where the items are fewer than the grid, S from the same fill rule; partial sums in
//     the fp32 workspace (slot s of S·T·N), the unit that finishes last (a counter per item) adds
//     them in order 0..S-1, rounds once to bf16, writes Y and puts the counter back to 0.
// An expert with more than 64 rows is cut into chunks of 64, each streaming the expert's columns
// again (from L2 when they run together): the decode layers of the suite stay far below that.
//
// Sizes: N % 8 == 0 and K % 8 == 0 (cp.async moves 16-byte chunks of rows of W and X; the driver
// skips other problems: align: 8 in lab.yaml), at most KL_GROUPED_MAX_GROUPS experts. Launch:
// block 256, persistent grid (SMs × 2), 80 KiB of dynamic shared memory (opt-in), about 4 KiB
// static; ws holds smax·T·N floats, counters T·ceil(N/256) ints, zero before the first launch.
// The unit itself (its stages, MMAs and reduction) is in decode_mma.cuh, which kernel 10 shares.

// dm_splits is kernel 07's dec_splits: the S ≤ most (smax, and at least DM_KMIN of k per unit)
// whose P·S units fill the grid's waves best; a larger S only where it fills them noticeably
// better (each split costs a reduction). Every thread computes the same.
__device__ __forceinline__ int dm_splits(int P, int K, int smax) {
    const long long G = gridDim.x;
    const int most = max(1, min(smax, K / DM_KMIN));
    int best = 1;
    float bestFill = 0.0f;
    for (int s = 1; s <= most; s++) {
        const long long units = (long long)P * s, waves = (units + G - 1) / G;
        const float fill = (float)units / (float)(waves * G);
        if (fill > bestFill + 0.02f) {
            bestFill = fill;
            best = s;
        }
    }
    return best;
}

extern "C" __global__ void KL_LAUNCH_BOUNDS(DM_THREADS, 2)
moe_decode_mma(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ W, kl_bf16* __restrict__ Y,
               const int* __restrict__ offs, int E, int N, int K, float* ws, int* counters, int smax) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    __shared__ int s_last; // this unit finished its item's split last
    const int P = kl_tile_prefix_moe(offs, E, N, DM_ROWS, DM_COLS, s_prefix); // items: chunks × column tiles
    const int S = dm_splits(P, K, smax);
    const int span = (K + S - 1) / S, KB = (span + DM_BK - 1) / DM_BK * DM_BK;
    const int tilesN = (N + DM_COLS - 1) / DM_COLS, T = offs[E];
    // Units in order item-major: the S units of an item run side by side and finish together.
    for (long long u = blockIdx.x; u < (long long)P * S; u += gridDim.x) {
        const int item = (int)(u / S), s = (int)(u % S);
        const int e = kl_find_group(s_prefix, E, item);
        // The chunks of one column tile side by side: they read the same W, the later ones from L2.
        const int chunks = (offs[e + 1] - offs[e] + DM_ROWS - 1) / DM_ROWS, local = item - s_prefix[e];
        const int chunk = local % chunks, tile = local / chunks;
        const int r0 = offs[e] + chunk * DM_ROWS, rows = min(DM_ROWS, offs[e + 1] - r0);
        const int k0 = min(K, s * KB), k1 = min(K, k0 + KB);
        const kl_bf16* We = W + (long long)e * K * N;
        int* counter = counters + (long long)r0 * tilesN + tile;
        const int n0 = tile * DM_COLS;
        dm_unit_rows(X, We, Y, ws, counter, smem, &s_last, T, N, K, r0, rows, n0, k0, k1, s, S, 1.0f, 0.0f);
    }
}
