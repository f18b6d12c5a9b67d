// 01 — one-shot allreduce over peer memory.
//
// Every rank runs this kernel on its own device, with the same table of the n ranks' input
// buffers (device pointers that peer access makes valid on every device). Each rank reads all n
// inputs and writes the whole sum into its own output: one step, no exchange of partial sums, so
// the latency is one kernel — but every rank reads (n−1)·S bytes over the links, n times the
// traffic a bandwidth-optimal algorithm moves. Small messages only.
//
// Synchronization: none inside the kernel. The inputs are ready before the launch and are only
// read; each rank writes only its own output. (A production one-shot kernel, whose inputs were
// written by other kernels just before, starts with a flag barrier across the ranks instead.)
#include "kl.cuh"

extern "C" __global__ void allreduce_one_shot(const float* const* ins, float* out, int nranks, int count) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        // Sum in rank order on every rank, so that all ranks get bit-identical results.
        float s = 0.0f;
        for (int r = 0; r < nranks; r++) s += ins[r][i];
        out[i] = s;
    }
}
