// atomics.cu — atomics on global and shared memory, across blocks.
#include "kl.cuh"

// Histogram of in (values 0..nbins-1) into global bins, through a per-block shared histogram.
extern "C" __global__ void histogram(const int* in, int n, int* bins, int nbins) {
    extern __shared__ int local[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[in[i]], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

// Every thread adds its value to one float and one double; also max, min, exch, inc, CAS, 64-bit.
extern "C" __global__ void mixed(const float* in, int n, float* fsum, double* dsum, int* imax, int* imin,
                                 unsigned* wrap, unsigned long long* u64, int* cas_sum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(fsum, in[i]);
    atomicAdd(dsum, (double)in[i]);
    const int q = (int)(in[i] * 1000.0f);
    atomicMax(imax, q);
    atomicMin(imin, q);
    atomicInc(wrap, 9u); // counts 0..9 and wraps
    atomicAdd(u64, 1ull << 33);
    // an add built from compare-and-swap
    int old = *cas_sum, assumed;
    do {
        assumed = old;
        old = atomicCAS(cas_sum, assumed, assumed + 1);
    } while (old != assumed);
}

// A spin lock made of atomicCAS/atomicExch protecting a non-atomic counter.
extern "C" __global__ void locked_count(int* lock, int* counter) {
    if (threadIdx.x % 32 != 0) return; // one lane per warp takes the lock
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    *counter = *counter + 1;
    __threadfence();
    atomicExch(lock, 0);
}
