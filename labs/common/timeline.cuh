// timeline.cuh — the timeline records of the debug builds (compile with -DKL_TIMELINE): where
// and when each piece of a kernel's work ran, on the global timer, so that records of different
// kernels and streams share one clock. Lab 03 records one per tile of a grouped GEMM; lab 05
// appends, from several kernels of one run, a record per GEMM tile, per copied block and per wait
// for a ready flag. Without KL_TIMELINE every helper compiles to nothing, so the timed kernels
// carry no trace of them. Include it after "kl.cuh".
#pragma once

// ---- one record per tile, at the tile's slot (lab 03) ----
//
// The kernels take `unsigned long long* tl` (null when no timeline is wanted). With KL_TIMELINE
// defined, each tile leaves four numbers at tl[4·tile]: the SM that ran it, its group, and the
// global timer (ns) when the block started and finished it.

__device__ __forceinline__ unsigned long long kl_tl_start() {
#ifdef KL_TIMELINE
    return kl_globaltimer_ns();
#else
    return 0ull;
#endif
}

// kl_tl_end records tile `tile` of group `group`, begun at t0. Every thread of the block calls it:
// the barrier makes the end time that of the block's last thread.
__device__ __forceinline__ void kl_tl_end(unsigned long long* tl, int tile, int group, unsigned long long t0) {
#ifdef KL_TIMELINE
    __syncthreads();
    if (threadIdx.x == 0 && tl != nullptr) {
        unsigned long long* r = tl + 4ll * tile;
        r[0] = kl_smid();
        r[1] = (unsigned long long)group;
        r[2] = t0;
        r[3] = kl_globaltimer_ns();
    }
#else
    (void)tl;
    (void)tile;
    (void)group;
    (void)t0;
#endif
}

// ---- appended records of several kernels and kinds (lab 05) ----
//
// tl[0] counts the records taken in this run (the host clears it before each), tl[1] is how many
// the buffer holds (the host writes it once); record i is the four numbers at tl[4 + 4·i], in
// lab 03's layout with the record's kind in place of the group: SM, kind, start, end. A record
// past the end is counted, not written, so the host sees how many were lost.
enum { KL_TL_COMPUTE = 0, KL_TL_COPY = 1, KL_TL_WAIT = 2 };

// kl_tl_add appends a record of `kind` from t0 to now, for the calling thread alone (a thread that
// spun on a flag while the others waited at a barrier records its own wait).
__device__ __forceinline__ void kl_tl_add(unsigned long long* tl, int kind, unsigned long long t0) {
#ifdef KL_TIMELINE
    if (tl == nullptr) return;
    const unsigned long long t1 = kl_globaltimer_ns();
    const unsigned long long i = atomicAdd(&tl[0], 1ull);
    if (i < tl[1]) {
        unsigned long long* r = tl + 4 + 4 * i;
        r[0] = kl_smid();
        r[1] = (unsigned long long)kind;
        r[2] = t0;
        r[3] = t1;
    }
#else
    (void)tl;
    (void)kind;
    (void)t0;
#endif
}

// kl_tl_add_block appends the block's record of `kind`, begun at t0. Every thread of the block
// calls it: as kl_tl_end, the barrier makes the end time that of the block's last thread.
__device__ __forceinline__ void kl_tl_add_block(unsigned long long* tl, int kind, unsigned long long t0) {
#ifdef KL_TIMELINE
    __syncthreads();
    if (threadIdx.x == 0) kl_tl_add(tl, kind, t0);
#else
    (void)tl;
    (void)kind;
    (void)t0;
#endif
}
