#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_f32.cuh"

// 02_persistent.cu — one launch for all groups: a persistent kernel with a static tile scheduler.
//
// Over kernel 01: the host no longer launches one GEMM per group. It writes the groups' pointers,
// sizes and strides into device memory once (an array of kl_group) and launches ONE grid of
// about as many blocks as the GPU holds at once (SMs × blocks per SM). Number every tile of every
// group one after the other; block b takes tiles b, b + gridDim.x, b + 2·gridDim.x, ... until
// they run out ("round robin"). To turn tile t into work, the block needs its group: at start it
// builds prefix[g] = tiles of the groups before g in shared memory (each thread reads a few
// groups' sizes, one warp scans), and then finds g with a binary search, prefix[g] <= t <
// prefix[g+1]. Empty groups own no tile numbers, so they are never visited.
//
// No SM waits for a launch boundary any more: when a block finishes a tile of group 2 it takes a
// tile of group 3 at once, and small groups fill the SMs that a big one leaves idle. Inside a
// group, tiles are numbered in bands of 8 tile-rows (kl_tile_coords), so the tiles in flight at a
// time share rows of A and columns of B in L2.
//
// Launch: block 128, grid SMs × 2 (the blocks that fit at once), 36.5 KiB of static shared memory.

#define BAND_M 8

extern "C" __global__ void KL_LAUNCH_BOUNDS(KL_F32_THREADS, 2)
grouped_f32_persistent(const kl_group* __restrict__ groups, int G, unsigned long long* tl) {
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    const int total = kl_tile_prefix_groups(groups, G, KL_F32_BM, KL_F32_BN, s_prefix);
    for (int t = blockIdx.x; t < total; t += gridDim.x) {
        const unsigned long long t0 = kl_tl_start();
        const int g = kl_find_group(s_prefix, G, t);
        const kl_gview<float, float> v = kl_group_view<float, float>(groups, g);
        int tm, tn;
        kl_tile_coords(t - s_prefix[g], (v.M + KL_F32_BM - 1) / KL_F32_BM, (v.N + KL_F32_BN - 1) / KL_F32_BN, BAND_M,
                       tm, tn);
        kl_f32_tile(v, tm * KL_F32_BM, tn * KL_F32_BN);
        kl_tl_end(tl, t, g, t0);
    }
}
