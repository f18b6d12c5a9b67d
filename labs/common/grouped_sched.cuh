// grouped_sched.cuh — what every grouped GEMM kernel of lab 03 shares: the description of the
// groups, the tile scheduler's prefix sums, the search that maps a tile to its group, the order of
// the tiles inside a group, and the timeline records of the debug build. Plain CUDA (it runs on the
// CPU emulator too); include it after "kl.cuh".
//
// A grouped GEMM computes G independent products C_g = A_g·B_g, row-major, A_g M_g×K_g, B_g
// K_g×N_g, C_g M_g×N_g, with leading dimensions lda, ldb, ldc. Two ways to describe the groups:
//
//   * the grouped form: an array of kl_group in device memory (pointers, sizes, strides), one per
//     group, written by the host;
//   * the MoE form: one token matrix X (T×K) whose rows are sorted by expert, the experts' weights
//     W (E×K×N, expert e's K×N matrix at W + e·K·N), the output Y (T×N), and the row offsets
//     offs[0..E] in device memory: expert e owns rows offs[e] .. offs[e+1]-1 of X and Y. The
//     sizes never travel to the host: a router kernel may have written offs just before.
//
// Each group is cut into tiles of BM×BN outputs; group g has tiles(g) = ceil(M/BM)·ceil(N/BN)
// (0 for an empty group). Number all tiles of all groups one after the other: the tiles of group g
// are prefix[g] .. prefix[g+1]-1, prefix[g] = tiles(0) + ... + tiles(g-1). A persistent kernel
// launches one block per SM (or a few) and each block walks the tile numbers; the prefix array in
// shared memory turns a tile number into its group with a binary search.
#pragma once

// The most groups a kernel schedules: the prefix array lives in shared memory (4 KiB).
#define KL_GROUPED_MAX_GROUPS 1024

// One group of the grouped form, as the host writes it (48 bytes; the Go driver encodes the same
// layout: three 8-byte pointers, then six 4-byte ints).
struct kl_group {
    const void* A;
    const void* B;
    void* C;
    int M, N, K;
    int lda, ldb, ldc;
};

// A group seen by a kernel, with its element types.
template <typename TI, typename TO>
struct kl_gview {
    const TI* A;
    const TI* B;
    TO* C;
    int M, N, K;
    int lda, ldb, ldc;
};

template <typename TI, typename TO>
__device__ __forceinline__ kl_gview<TI, TO> kl_group_view(const kl_group* __restrict__ groups, int g) {
    const kl_group d = groups[g];
    kl_gview<TI, TO> v;
    v.A = static_cast<const TI*>(d.A);
    v.B = static_cast<const TI*>(d.B);
    v.C = static_cast<TO*>(d.C);
    v.M = d.M;
    v.N = d.N;
    v.K = d.K;
    v.lda = d.lda;
    v.ldb = d.ldb;
    v.ldc = d.ldc;
    return v;
}

// Expert e of the MoE form as a group: rows offs[e] .. offs[e+1]-1 of X and Y, weights W_e.
template <typename TI, typename TO>
__device__ __forceinline__ kl_gview<TI, TO> kl_moe_view(const TI* __restrict__ X, const TI* __restrict__ W,
                                                        TO* __restrict__ Y, const int* __restrict__ offs, int N,
                                                        int K, int e) {
    const int r0 = offs[e], r1 = offs[e + 1];
    kl_gview<TI, TO> v;
    v.A = X + (long long)r0 * K;
    v.B = W + (long long)e * K * N;
    v.C = Y + (long long)r0 * N;
    v.M = r1 - r0;
    v.N = N;
    v.K = K;
    v.lda = K;
    v.ldb = N;
    v.ldc = N;
    return v;
}

__device__ __forceinline__ int kl_tiles_of(int M, int N, int BM, int BN) {
    return (M > 0 && N > 0) ? ((M + BM - 1) / BM) * ((N + BN - 1) / BN) : 0;
}

// kl_scan_tiles turns s_prefix[1..G], holding tiles(g) in s_prefix[g+1], into the prefix sums
// (s_prefix[0] = 0, s_prefix[g+1] = tiles of groups 0..g) with the first 32 threads, 32 groups at a
// time, and returns the total. Every thread of the block calls it (it holds two barriers). The 32
// threads are the first warp on NVIDIA and half of it on AMD (64 lanes): the mask names them, and
// the shuffles stay within 32 lanes (width 32).
__device__ __forceinline__ int kl_scan_tiles(int* s_prefix, int G) {
    __syncthreads(); // every tiles(g) is in shared memory
    if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        int carry = 0;
        for (int base = 0; base < G; base += 32) { // the same trip count in every lane
            const int g = base + lane;
            int v = g < G ? s_prefix[g + 1] : 0;
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) { // inclusive scan across the warp
                const int y = kl_shfl_up_sync(kl_lanes_below(32), v, d, 32);
                if (lane >= d) v += y;
            }
            if (g < G) s_prefix[g + 1] = carry + v;
            carry += kl_shfl_sync(kl_lanes_below(32), v, 31, 32);
        }
        if (lane == 0) s_prefix[0] = 0;
    }
    __syncthreads(); // the prefix sums are visible to all
    return s_prefix[G];
}

// kl_tile_prefix_groups builds the prefix sums of the grouped form in shared memory: each thread
// reads the sizes of a few groups (all loads in flight at once), then the first warp scans.
__device__ __forceinline__ int kl_tile_prefix_groups(const kl_group* __restrict__ groups, int G, int BM, int BN,
                                                     int* s_prefix) {
    for (int g = threadIdx.x; g < G; g += blockDim.x) s_prefix[g + 1] = kl_tiles_of(groups[g].M, groups[g].N, BM, BN);
    return kl_scan_tiles(s_prefix, G);
}

// kl_tile_prefix_moe does the same for the MoE form, from the row offsets in device memory.
__device__ __forceinline__ int kl_tile_prefix_moe(const int* __restrict__ offs, int E, int N, int BM, int BN,
                                                  int* s_prefix) {
    for (int e = threadIdx.x; e < E; e += blockDim.x) s_prefix[e + 1] = kl_tiles_of(offs[e + 1] - offs[e], N, BM, BN);
    return kl_scan_tiles(s_prefix, E);
}

// kl_find_group returns the group that owns tile t (0 <= t < prefix[G]): the last g with
// prefix[g] <= t. Empty groups have prefix[g] == prefix[g+1] and are stepped over: of several
// groups with the same prefix, the last one is the one whose tiles start there.
__device__ __forceinline__ int kl_find_group(const int* s_prefix, int G, int t) {
    int lo = 0, hi = G - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (s_prefix[mid] <= t) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// kl_tile_coords places the local-th tile of a group (0 <= local < tilesM·tilesN) in its tile grid,
// in bands of band_m tile-rows: consecutive tiles walk down a band's column before moving right.
// Tiles that run at the same time then share a few rows of A and a few columns of B, which stay
// in L2 (band_m = 1 is plain row-major order).
__device__ __forceinline__ void kl_tile_coords(int local, int tilesM, int tilesN, int band_m, int& tm, int& tn) {
    const int per_band = band_m * tilesN;
    const int band = local / per_band;
    const int first = band * band_m;
    const int rows = min(tilesM - first, band_m);
    const int r = local - band * per_band;
    tm = first + r % rows;
    tn = r / rows;
}

// ---- the SM timeline (debug build: compile with -DKL_TIMELINE): kl_tl_start and kl_tl_end,
// in timeline.cuh ----
#include "timeline.cuh"

// ---- the dynamic scheduler: a tile counter in global memory ----
//
// counters[0] is the next tile to hand out, counters[1] counts the blocks that found no more work.
// Both are 0 before the launch (the host clears them once); the last block to leave puts them back
// to 0, so the next launch in the stream starts from a clean counter without a memset.

// kl_next_tile returns the next tile for this block; every thread calls it (two barriers).
__device__ __forceinline__ int kl_next_tile(int* counters, int* s_next) {
    __syncthreads(); // everyone has read the previous s_next
    if (threadIdx.x == 0) *s_next = atomicAdd(&counters[0], 1);
    __syncthreads();
    return *s_next;
}

// kl_scheduler_done is called by every thread once kl_next_tile returned a tile past the end.
__device__ __forceinline__ void kl_scheduler_done(int* counters) {
    if (threadIdx.x == 0) {
        __threadfence();
        // Every block takes its last tile number before it counts itself out here, so when the last
        // block arrives, nobody will touch counters[0] again in this launch.
        if (atomicAdd(&counters[1], 1) == (int)(gridDim.x * gridDim.y * gridDim.z) - 1) {
            atomicExch(&counters[0], 0);
            atomicExch(&counters[1], 0);
            __threadfence();
        }
    }
}
