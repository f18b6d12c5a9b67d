// splitk_sm90.cuh — split-K for the persistent wgmma kernels of lab 05 (06, 07), whose consumer
// warpgroups (two, or one for kernel 06's 64-row tiles) hold a BM×BN fp32 tile in NREG = BN/2
// registers a thread (BN 64, 128 or 256).
//
// When a problem's 128×256 tiles leave SMs idle — fewer tiles than SMs (a decode-sized M, a
// narrow rank's shard of N), or a last wave that only part of the SMs run — split-K fills them:
// the first `whole` tiles (the full waves) run as one unit each, and each of the others (the last
// wave's, all of them when they do not fill one) as S units, the s-th taking the s-th of S equal
// runs of the tile's K blocks (kl_splitk_unit, kl_splitk_range). Each unit of a split tile adds its
// fp32 accumulators into the tile's fp32 sum in the workspace with vector reductions, which L2
// performs (the S units' adds run at once, on all their SMs), then counts itself in on the tile's
// counter; the last of the S to arrive reads the sum back, zeroes it for the next launch and runs
// the tile's epilogue, the others skip it. Nobody waits for anybody (the last arrival finds every
// add done), so no unit can wait for a block that is not resident. The order of the adds is the
// order the units finish in: the sum is not bit-for-bit the same from run to run (the check's
// tolerance covers fp32 sums).
//
// Why not a slot a unit, summed in split order by the last (deterministic): the last unit would
// read all S slots by itself through one SM's port to L2, at S = 14 (the challenge's 64 × 2304 ×
// 7168) 1.8 MB, almost five times what each unit loads in its K loop (8 blocks of 48 KiB).
//
// The sum is register-ordered: thread t's register r sits at float4 (r/4)·THREADS + t, so the adds and
// loads are coalesced and know nothing of the tile's layout or its edges. The workspace holds one
// sum (128 KiB, room for the widest tile) and one counter word per split tile (slot = tile − whole < the grid's blocks),
// zero at the start; the last arrival leaves both zero again. A warpgroup whose 64 rows all lie past the output's (live =
// false) moves nothing.
#pragma once

#define KL_SPLITK_TILE_FLOAT4 (256 * 32) // at most 256 consumer threads × 128 accumulators

// Unit u's tile, its split s of S (S = 1: a whole tile) and its split tile's slot in the workspace.
struct KlSplitUnit {
    int tile, s, S, slot;
};

__device__ __forceinline__ KlSplitUnit kl_splitk_unit(int u, int whole, int splits) {
    if (u < whole) return {u, 0, 1, 0};
    const int v = u - whole;
    return {whole + v / splits, v % splits, splits, v / splits};
}

// The units of a launch of `tiles` tiles.
__device__ __forceinline__ int kl_splitk_units(int tiles, int whole, int splits) { return whole + (tiles - whole) * splits; }

// The K blocks [k0, k1) of a unit over numK blocks (S ≤ numK: every split has one).
__device__ __forceinline__ void kl_splitk_range(const KlSplitUnit& w, int numK, int& k0, int& k1) {
    const int per = (numK + w.S - 1) / w.S;
    k0 = w.s * per;
    k1 = min(numK, k0 + per);
}

__device__ __forceinline__ void kl_red_add_v4(float4* p, float a, float b, float c, float d) {
    asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// Called by the THREADS consumer threads (ct = 0 … THREADS − 1) after the main loop of unit w, with
// named barrier `bar` free for them. Returns true in the unit that must run the epilogue, with d
// holding the whole tile's sums (where live); a whole tile returns true at once and touches nothing.
template <int THREADS = 256, int NREG>
__device__ __forceinline__ bool kl_splitk_reduce(float (&d)[NREG], const KlSplitUnit& w, bool live, float4* __restrict__ ws,
                                                 unsigned* __restrict__ counts, int ct, int bar) {
    if (w.S == 1) return true;
    __shared__ unsigned last; // the counter's verdict, for the THREADS threads
    float4* sum = ws + (long long)w.slot * KL_SPLITK_TILE_FLOAT4 + ct;
    if (live)
#pragma unroll
        for (int r = 0; r < NREG / 4; ++r) kl_red_add_v4(sum + r * THREADS, d[4 * r], d[4 * r + 1], d[4 * r + 2], d[4 * r + 3]);
    __threadfence(); // this thread's adds are done on the GPU before the count that announces them
    kl_named_barrier(bar, THREADS);
    if (ct == 0) {
        last = atomicAdd(&counts[w.slot], 1u) == unsigned(w.S - 1);
        if (last) atomicExch(&counts[w.slot], 0u);
    }
    kl_named_barrier(bar, THREADS);
    if (!last) return false;
    __threadfence(); // the sum is read after the counts that announced every add
    if (live) {
#pragma unroll
        for (int r = 0; r < NREG / 4; ++r) { // from L2, where the adds were done
            const float4 v = __ldcg(sum + r * THREADS);
            d[4 * r] = v.x, d[4 * r + 1] = v.y, d[4 * r + 2] = v.z, d[4 * r + 3] = v.w;
        }
#pragma unroll
        for (int r = 0; r < NREG / 4; ++r) __stcg(sum + r * THREADS, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
    }
    return true;
}
