// 06 — all-to-all over peer memory (MoE dispatch): every rank pulls its block from every rank.
//
// Every rank's send buffer holds n blocks of count elements, block j addressed to rank j. Rank r's
// receive buffer holds, at block j, what rank j addressed to it: out_r[j] = in_j[r]. Rank r reads
// block r of every peer's input — (n−1)·count elements over the links, the (n−1)/n of busbw.
// As in the all-gather, blocks are visited starting with the neighbour, so that the ranks spread
// their reads over the peers. A real MoE dispatch has blocks of different sizes (the tokens
// routed to each expert): the sizes are exchanged first, then the same pull runs with offsets.
#include "kl.cuh"

extern "C" __global__ void all_to_all_pull(const float* const* ins, float* out, int rank, int nranks, int count) {
    long long total = (long long)nranks * count;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long mine = (long long)rank * count;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        int b = (int)(t / count);
        int i = (int)(t - (long long)b * count);
        int src = rank + 1 + b;
        while (src >= nranks) src -= nranks;
        out[(long long)src * count + i] = ins[src][mine + i];
    }
}
