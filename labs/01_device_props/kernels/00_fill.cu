#include "kl.cuh"
#include "hash.cuh"

// 00_fill.cu — generate the inputs on the device.
//
// The copy benchmark needs gigabytes of input. Generating them on the host and uploading them
// would take far longer than the measurement itself, so the device writes them: element i is a
// hash of (seed, i), which any thread can compute on its own and the CPU can recompute to check.
// It is also the simplest useful kernel there is: a grid-stride loop that writes each element
// once. A grid-stride loop lets a fixed grid (a few blocks per SM) cover any n.

extern "C" __global__ void fill_f32(float* __restrict__ out, long long n, unsigned long long seed) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = kl_hash_float(seed, (unsigned long long)i);
    }
}
