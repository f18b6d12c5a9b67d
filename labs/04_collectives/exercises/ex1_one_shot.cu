#include "kl.cuh"

// Exercise 1 — one-shot allreduce (kernel 01 of the chapter).
//
// Every rank runs this kernel on its own device. `ins` is a table of the n ranks' input buffers
// (device pointers that peer access makes valid on this device); `out` is this rank's output.
// Every rank must end with out[i] = ins[0][i] + ins[1][i] + ... + ins[n−1][i] for every i < count.
//
//   1. cover every element with a grid-stride loop: the grid is smaller than count for large
//      messages (and larger than it for tiny ones);
//   2. sum in rank order, 0 to n−1, on every rank: then all ranks get bit-identical results;
//   3. write the sum to out[i].
//
// The grader checks 1 and 3 elements (fewer than the threads of one block), 1001 elements (not a
// multiple of anything) and 64 KiB, on fresh inputs, with the output poisoned with NaN before
// every checked run: every element must be written.

extern "C" __global__ void ex1_one_shot(const float* const* ins, float* out, int nranks, int count) {
    // BEGIN SOLUTION
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        float s = 0.0f;
        for (int r = 0; r < nranks; r++) s += ins[r][i];
        out[i] = s;
    }
    // END SOLUTION
}
