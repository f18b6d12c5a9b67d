// 05 — reduce-scatter over peer memory: every rank pulls its block from every rank and sums it.
//
// Every rank's input holds n blocks of count elements; rank r's output is block r of the
// elementwise sum of the n inputs. Rank r reads block r of each peer's input — (n−1)·count
// elements over the links, all a reduce-scatter must receive: the (n−1)/n of nccl-tests' busbw.
// This is shot 1 of two-shot (kernel 02) on its own. The sum is taken in rank order, as in the
// allreduce kernels; no flags are needed, since the inputs are only read.
#include "kl.cuh"

extern "C" __global__ void reduce_scatter_direct(const float* const* ins, float* out, int rank, int nranks,
                                                 int count) {
    long long base = (long long)rank * count;
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        float s = 0.0f;
        for (int r = 0; r < nranks; r++) s += ins[r][base + i];
        out[i] = s;
    }
}
