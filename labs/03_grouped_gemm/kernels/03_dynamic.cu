#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_f32.cuh"

// 03_dynamic.cu — a dynamic tile scheduler: blocks take the next tile from a counter.
//
// Over kernel 02: round robin fixes in advance which tiles each block runs. When tiles cost the
// same that is as good as anything, but tiles of groups with a larger K take longer, and a block
// that drew several long tiles finishes last while the others idle (the tail). Here a block asks
// for its next tile only when it is free: thread 0 does atomicAdd(&counters[0], 1) and shares the
// answer through shared memory. Blocks that drew short tiles simply draw more.
//
// Two refinements:
//   * the counter resets itself: each block, once it drew a number past the end, counts itself out
//     on counters[1], and the last one out sets both back to 0 for the next launch — no memset
//     between launches (kl_next_tile, kl_scheduler_done in grouped_sched.cuh);
//   * longest first: the host may order the groups by decreasing cost per tile (K) before writing
//     them (variant dynamic_lpt). The long tiles then go out first and the short ones fill the tail
//     — the classic "longest processing time first" rule of list scheduling.
// The price is one atomic per tile and two barriers; against a tile of microseconds it is noise.
//
// Launch: block 128, grid SMs × 2, 36.5 KiB of static shared memory; counters: 2 ints, 0 before
// the first launch.

#define BAND_M 8

extern "C" __global__ void KL_LAUNCH_BOUNDS(KL_F32_THREADS, 2)
grouped_f32_dynamic(const kl_group* __restrict__ groups, int G, int* counters, unsigned long long* tl) {
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    __shared__ int s_next;
    const int total = kl_tile_prefix_groups(groups, G, KL_F32_BM, KL_F32_BN, s_prefix);
    for (;;) {
        const int t = kl_next_tile(counters, &s_next);
        if (t >= total) break;
        const unsigned long long t0 = kl_tl_start();
        const int g = kl_find_group(s_prefix, G, t);
        const kl_gview<float, float> v = kl_group_view<float, float>(groups, g);
        int tm, tn;
        kl_tile_coords(t - s_prefix[g], (v.M + KL_F32_BM - 1) / KL_F32_BM, (v.N + KL_F32_BN - 1) / KL_F32_BN, BAND_M,
                       tm, tn);
        kl_f32_tile(v, tm * KL_F32_BM, tn * KL_F32_BN);
        kl_tl_end(tl, t, g, t0);
    }
    kl_scheduler_done(counters);
}
