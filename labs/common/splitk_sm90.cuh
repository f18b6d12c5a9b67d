// splitk_sm90.cuh — split-K for the persistent wgmma kernels of lab 05 (06, 07), whose two
// consumer warpgroups hold a 128×256 fp32 tile in 128 registers a thread.
//
// When a problem has fewer 128×256 tiles than the GPU has SMs (a decode-sized M, a narrow rank's
// shard of N), most SMs would idle. With S > 1, S units share a tile, unit u = tile·S + s taking
// the s-th of S equal runs of its K blocks (ks_range). Each unit stores its fp32 accumulators in a
// workspace slot of its own and counts itself in on the tile's counter; the last of the S to arrive
// sums the S slots in the order 0 … S−1 and runs the tile's epilogue, the others skip it. Nobody
// waits for anybody (the last arrival finds every slot written), so no unit can wait for a block
// that is not resident, and the sum is the same whichever unit is last: deterministic.
//
// A slot is register-ordered: thread t's register r sits at float4 (r/4)·256 + t, so the stores
// and loads are coalesced and know nothing of the tile's layout or its edges. The workspace holds
// one slot (128 KiB) per unit; the counters one word per tile, zero at the start, and the last
// arrival resets its tile's to zero for the next launch.
#pragma once

#define KL_SPLITK_SLOT_FLOAT4 (256 * 32) // 256 consumer threads × 128 accumulators

// The K blocks [k0, k1) of split s of S over numK blocks (S ≤ numK: every split has one).
__device__ __forceinline__ void kl_splitk_range(int s, int S, int numK, int& k0, int& k1) {
    const int per = (numK + S - 1) / S;
    k0 = s * per;
    k1 = min(numK, k0 + per);
}

// Called by the 256 consumer threads (ct = 0 … 255) after the main loop of unit `unit`, with named
// barrier `bar` free for them. Returns true in the unit that must run the epilogue, with d holding
// the whole tile's sums; S == 1 returns true at once and touches nothing.
__device__ __forceinline__ bool kl_splitk_reduce(float (&d)[128], int unit, int S, float4* __restrict__ ws,
                                                 unsigned* __restrict__ counts, int ct, int bar) {
    if (S == 1) return true;
    __shared__ unsigned last; // the counter's verdict, for the 256 threads
    float4* mine = ws + (long long)unit * KL_SPLITK_SLOT_FLOAT4 + ct;
#pragma unroll
    for (int r = 0; r < 32; ++r) mine[r * 256] = make_float4(d[4 * r], d[4 * r + 1], d[4 * r + 2], d[4 * r + 3]);
    __threadfence(); // this thread's slot is visible on the GPU before the count that announces it
    kl_named_barrier(bar, 256);
    const int tile = unit / S;
    if (ct == 0) {
        last = atomicAdd(&counts[tile], 1u) == unsigned(S - 1);
        if (last) atomicExch(&counts[tile], 0u);
    }
    kl_named_barrier(bar, 256);
    if (!last) return false;
    __threadfence(); // the other units' slots, announced by their counts, are read after ours
    const float4* slots = ws + (long long)tile * S * KL_SPLITK_SLOT_FLOAT4 + ct;
#pragma unroll
    for (int r = 0; r < 32; ++r) {
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int s = 0; s < S; ++s) { // L2 loads (.cg): another SM wrote them
            const float4 v = __ldcg(slots + (long long)s * KL_SPLITK_SLOT_FLOAT4 + r * 256);
            a.x += v.x, a.y += v.y, a.z += v.z, a.w += v.w;
        }
        d[4 * r] = a.x, d[4 * r + 1] = a.y, d[4 * r + 2] = a.z, d[4 * r + 3] = a.w;
    }
    return true;
}
