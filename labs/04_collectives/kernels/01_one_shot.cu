// 01 — one-shot allreduce over peer memory.
//
// Every rank (one process per GPU) runs this kernel on its own device, with the table of the n
// ranks' input buffers as this process maps them (shared buffers: the engine exchanges their
// handles and maps every peer's). Each rank reads all n
// inputs and writes the whole sum into its own output: one step, no exchange of partial sums, so
// the latency is one kernel — but every rank reads (n−1)·S bytes over the links, n times the
// traffic a bandwidth-optimal algorithm moves. Small messages only.
//
// Synchronization: a device barrier across the ranks first (kl_rank_barrier_start: every peer's
// kernel has started, so its input — written by whatever ran before it on its stream — is ready),
// and one last (kl_rank_barrier_end: no rank's next launch overwrites an input a peer still reads).
// So launches follow each other with no host in between, as in production.
#include "kl.cuh"

extern "C" __global__ void allreduce_one_shot(const float* const* ins, float* out, unsigned* const* sig, int rank,
                                              int nranks, int count) {
    kl_rank_barrier_start(sig, rank, nranks);
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        // Sum in rank order on every rank, so that all ranks get bit-identical results.
        float s = 0.0f;
        for (int r = 0; r < nranks; r++) s += ins[r][i];
        out[i] = s;
    }
    kl_rank_barrier_end(sig, rank, nranks);
}
