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
// The segments run kernel 08's unit (decode_mma.cuh) one after the other.
//
// Sizes, launch and buffers: kernel 08's (N % 8 == 0, K % 8 == 0; block 256, persistent grid,
// 80 KiB of dynamic shared memory; ws holds smax·T·N floats, counters T·ceil(N/256) ints, zero
// before the first launch and zero again after it).

// owner is the block whose range holds step x of w steps cut into g ranges ([b·w/g, (b+1)·w/g)).
__device__ __forceinline__ long long dsk_owner(long long x, long long w, long long g) { return ((x + 1) * g - 1) / w; }

// dsk_segment runs rows r0.. of item `item` over k-steps [a, b) of its KT, slot s of S.
__device__ __forceinline__ void dsk_segment(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ W,
                                            kl_bf16* __restrict__ Y, const int* __restrict__ offs, const int* s_prefix,
                                            int E, int N, int K, int T, float* ws, int* counters, unsigned char* smem,
                                            int* s_last, int item, int a, int b, int s, int S) {
    const int tilesN = (N + DM_COLS - 1) / DM_COLS;
    const int e = kl_find_group(s_prefix, E, item);
    // The chunks of one column tile side by side, as in kernel 08.
    const int chunks = (offs[e + 1] - offs[e] + DM_ROWS - 1) / DM_ROWS, local = item - s_prefix[e];
    const int chunk = local % chunks, tile = local / chunks;
    const int r0 = offs[e] + chunk * DM_ROWS, rows = min(DM_ROWS, offs[e + 1] - r0);
    const int k0 = a * DM_BK, k1 = min(K, b * DM_BK);
    const kl_bf16* We = W + (long long)e * K * N;
    int* counter = counters + (long long)r0 * tilesN + tile;
    const int n0 = tile * DM_COLS;
    if (rows <= 8) {
        dm_unit<1>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S);
    } else if (rows <= 16) {
        dm_unit<2>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S);
    } else if (rows <= 32) {
        dm_unit<4>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S);
    } else {
        dm_unit<8>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S);
    }
}

extern "C" __global__ void KL_LAUNCH_BOUNDS(DM_THREADS, 2)
moe_decode_streamk(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ W, kl_bf16* __restrict__ Y,
                   const int* __restrict__ offs, int E, int N, int K, float* ws, int* counters, int smax) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    __shared__ int s_last;
    const int P = kl_tile_prefix_moe(offs, E, N, DM_ROWS, DM_COLS, s_prefix); // items: chunks × column tiles
    const int KT = (K + DM_BK - 1) / DM_BK, T = offs[E];
    if (P == 0 || KT == 0) return;
    if (smax < 2) { // no room for partial sums: whole items, round robin
        for (int item = blockIdx.x; item < P; item += gridDim.x)
            dsk_segment(X, W, Y, offs, s_prefix, E, N, K, T, ws, counters, smem, &s_last, item, 0, KT, 0, 1);
        return;
    }
    // Ranges of at least DM_KMIN of k, and long enough that at most smax ranges meet in one item.
    const long long w = (long long)P * KT;
    const long long least = max(DM_KMIN / DM_BK, (KT + smax - 2) / (smax - 1));
    const long long g = min((long long)gridDim.x, max(1LL, w / least));
    if (blockIdx.x >= g) return;
    long long x = blockIdx.x * w / g;
    const long long end = (blockIdx.x + 1) * w / g;
    while (x < end) {
        const int item = (int)(x / KT);
        const long long first = (long long)item * KT, last = first + KT; // the item's steps
        const long long stop = min(end, last);
        const long long b0 = dsk_owner(first, w, g), b1 = dsk_owner(last - 1, w, g);
        dsk_segment(X, W, Y, offs, s_prefix, E, N, K, T, ws, counters, smem, &s_last, item, (int)(x - first),
                    (int)(stop - first), (int)(blockIdx.x - b0), (int)(b1 - b0 + 1));
        x = stop;
    }
}
