#include "kl.cuh"

// vector_add.cu — c[i] = a[i] + b[i], one element per thread; the last block is partly idle
// when n is not a multiple of the block size.

extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
