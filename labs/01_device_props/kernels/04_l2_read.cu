#include "kl.cuh"

// 04_l2_read.cu — how fast can the SMs read from L2?
//
// A copy of a working set that fits in L2 does not measure L2: each pass over a few MiB takes a
// few microseconds, about what a launch costs, so a copy repeated launch after launch measures
// the launch rate. This kernel reads an L2-resident buffer `passes` times inside ONE launch: the
// launch is paid once, and every pass after the first finds the buffer in L2.
//
// Three details make it measure L2 and nothing else:
//   - kl_load_cg (CUDA's __ldcg, "cache global"): the loads are cached in L2 only, never in the SM's L1, so a re-read
//     cannot be served by L1 (which is larger than a thread's share of the buffer);
//   - each pass starts at another offset, so a thread never re-reads in one pass what it read in
//     the previous one, and the compiler cannot fold passes together;
//   - the words are summed as integers (exact and order-free), one sum per thread written out, so
//     no load is dead code and the host can check the total: passes × the sum of the buffer.
// U = 4 independent 16-byte loads per thread are in flight before the first add waits.

#define L2_UNROLL 4

// Passes first_pass .. first_pass + passes - 1 (the pass number sets its rotation).
extern "C" __global__ void l2_read_u4(const uint4* __restrict__ src, long long n4, int first_pass, int passes,
                                      unsigned* __restrict__ out) {
    const long long nthreads = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (int p = first_pass; p < first_pass + passes; ++p) {
        // The pass's rotation: a multiple of the block size, so that accesses stay coalesced.
        const long long off = ((long long)p * 37 * blockDim.x) % n4;
        for (long long base = tid; base < n4; base += nthreads * L2_UNROLL) {
            uint4 v[L2_UNROLL];
#pragma unroll
            for (int u = 0; u < L2_UNROLL; ++u) {
                const long long i = base + u * nthreads;
                long long j = i + off;
                if (j >= n4) j -= n4;
                v[u] = i < n4 ? kl_load_cg(src + j) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < L2_UNROLL; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
        }
    }
    out[tid] = acc;
}
