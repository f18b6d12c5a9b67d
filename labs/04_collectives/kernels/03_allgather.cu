// 03 — all-gather over peer memory: every rank pulls every rank's block.
//
// Rank r's output is the concatenation of the n ranks' inputs of count elements each: block j
// comes from rank j. Each rank reads (n−1)·S bytes from its peers (its own block is a local copy),
// which is all an all-gather must move: the bandwidth-optimal (n−1)/n of nccl-tests' busbw.
// Blocks are visited starting with the caller's own neighbour, so that the ranks spread their
// reads over the peers instead of all reading rank 0 first.
#include "kl.cuh"

extern "C" __global__ void allgather_pull(const float* const* ins, float* out, int rank, int nranks, int count) {
    long long total = (long long)nranks * count;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        int b = (int)(t / count);
        int i = (int)(t - (long long)b * count);
        int src = rank + 1 + b;
        while (src >= nranks) src -= nranks;
        out[(long long)src * count + i] = ins[src][i];
    }
}
