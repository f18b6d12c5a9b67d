// 04 — ring allreduce: a reduce-scatter ring, then an all-gather ring, n−1 steps each.
//
// The count elements are cut into n chunks of ceil(count/n) (the last ones may be shorter or
// empty). One launch of this kernel is one step of one rank: it reads one chunk from its left
// neighbour (rank r−1) over peer memory and writes it into its own output, adding its own input
// in the reduce-scatter steps (mine != nullptr) and copying in the all-gather steps.
//
//   reduce-scatter step s (0..n−2), rank r:  out_r[c] = src[c] + in_r[c],  c = (r−1−s) mod n,
//       src = in_{r−1} at step 0 (rank r−1's own chunk), out_{r−1} after (its partial sum);
//       after n−1 steps rank r holds the complete sum of chunk (r+1) mod n.
//   all-gather step s (0..n−2), rank r:      out_r[c] = out_{r−1}[c],    c = (r−s) mod n.
//
// Every rank reads (n−1)/n·S in each ring, 2(n−1)/n·S in all: bandwidth-optimal, like two-shot,
// but every transfer is between neighbours only. Each chunk's sum is computed once, on one rank,
// and then copied, so every rank ends with the same bits.
//
// Synchronization: none inside the kernel. The order of the steps across ranks comes from the
// device barrier (kernel 00) that the driver queues after every step: step t+1 starts on no rank
// before every rank has finished step t, so rank r reads the chunk of rank r−1 after it was
// written, and overwrites a chunk of its own output only after rank r+1 has read it. See the
// chapter.
#include "kl.cuh"

extern "C" __global__ void allreduce_ring_step(const float* src, const float* mine, float* out, int begin,
                                               int end) {
    int stride = gridDim.x * blockDim.x;
    for (int i = begin + blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) {
        float v = src[i];
        if (mine != nullptr) v += mine[i];
        out[i] = v;
    }
}
