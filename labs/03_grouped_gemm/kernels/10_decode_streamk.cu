#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_mma.cuh"
#include "decode_mma.cuh"

// 10_decode_streamk.cu — kernel 08's unit with a stream-K schedule: every block streams the same
// number of W's k-steps, in one contiguous range of all the layer's work.
//
// Over kernel 08: there a unit is an item (an expert's chunk of rows × 256 columns) cut into S
// equal K ranges, S picked so that the units fill the grid's waves; the blocks take units round
// robin. Where the items are many and short in K — Mixtral's up projection, 448 items of K = 4096
// at 16 tokens — the fill rule picks S = 7, so each block streams about twelve units of 300 KiB,
// and each unit starts with an empty pipeline and ends with its split's reduction. Here the work
// is a line of k-steps (32 of k of one item each, P·ceil(K/32) in all, item after item) cut into
// gridDim.x equal ranges, Stream-K's partition (Osama et al., 2023):
//   * a block's range covers the end of one item, some whole items and the start of another: at
//     most two of its segments share an item with another block, whatever P, K and the grid;
//   * a segment that is a whole item writes Y directly; the blocks that share an item write their
//     partial sums to the workspace, slot = the block's place among them, and the last to finish
//     (a counter per item) adds the slots in order and writes Y — the bits do not depend on
//     which block finishes first, as in kernel 08;
//   * each range holds at least DM_KMIN of k, and an item is shared by at most smax blocks: where
//     the work is small, fewer blocks take part.
// The segments run kernel 08's unit (decode_mma.cuh) one after the other; dm_streamk there cuts
// the ranges, so lab 02's dense decode kernel (19) shares the schedule.
//
// Sizes, launch and buffers: kernel 08's (N % 8 == 0, K % 8 == 0; block 256, persistent grid,
// 80 KiB of dynamic shared memory; ws holds smax·T·N floats, counters T·ceil(N/256) ints, zero
// before the first launch and zero again after it).

extern "C" __global__ void KL_LAUNCH_BOUNDS(DM_THREADS, 2)
moe_decode_streamk(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ W, kl_bf16* __restrict__ Y,
                   const int* __restrict__ offs, int E, int N, int K, float* ws, int* counters, int smax) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    __shared__ int s_last;
    const int P = kl_tile_prefix_moe(offs, E, N, DM_ROWS, DM_COLS, s_prefix); // items: chunks × column tiles
    const int T = offs[E], tilesN = (N + DM_COLS - 1) / DM_COLS;
    dm_streamk(P, (K + DM_BK - 1) / DM_BK, smax, [&](int item, int a, int b, int slot, int owners) {
        const int e = kl_find_group(s_prefix, E, item);
        // The chunks of one column tile side by side, as in kernel 08.
        const int chunks = (offs[e + 1] - offs[e] + DM_ROWS - 1) / DM_ROWS, local = item - s_prefix[e];
        const int chunk = local % chunks, tile = local / chunks;
        const int r0 = offs[e] + chunk * DM_ROWS, rows = min(DM_ROWS, offs[e + 1] - r0);
        dm_unit_rows(X, W + (long long)e * K * N, Y, ws, counters + (long long)r0 * tilesN + tile, smem, &s_last, T, N, K,
                     r0, rows, tile * DM_COLS, a * DM_BK, min(K, b * DM_BK), slot, owners, 1.0f, 0.0f);
    });
}
