#include "kl.cuh"

// 03_empty.cu — the cost of a launch.
//
// A kernel that does (almost) nothing measures everything around the work: the host call into
// the driver, the command reaching the GPU, the grid being set up and retired. The driver launches
// it many times in a row (launch throughput), and in a second variant waits for each launch to
// finish before the next (round-trip latency).
//
// "Almost" nothing: the first thread of the grid writes `token` into flags[index], one slot per
// launch, so the check can prove that every launch really ran, once, with its own arguments.

extern "C" __global__ void empty_flag(unsigned int* __restrict__ flags, int index, unsigned int token) {
    if (blockIdx.x == 0 && threadIdx.x == 0) flags[index] = token;
}
