// schedule.cu — kernels that show what a GPU does not promise: the contents of shared memory at
// the start of a block, and the order in which blocks and threads run.
#include "kl.cuh"

// Reads shared memory it never wrote: garbage on a GPU, NaN on the emulator.
extern "C" __global__ void stale_shared(unsigned *out) {
    __shared__ unsigned s[256];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
    __syncthreads();
    s[threadIdx.x] = 0; // what the next block on this SM would find, but for the poison
}

// Records the order in which blocks start.
extern "C" __global__ void block_order(int *order, int *counter) {
    if (threadIdx.x == 0) order[atomicAdd(counter, 1)] = blockIdx.x;
}

// Records the order in which the threads of one block first run.
extern "C" __global__ void thread_order(int *order, int *counter) {
    order[atomicAdd(counter, 1)] = threadIdx.x;
}

// Spins on a plain load: nvcc hoists the load out of the loop, so on a GPU the kernel never
// ends unless the flag was already set; the emulator must not finish it either.
extern "C" __global__ void plain_spin(unsigned *flag, unsigned *out) {
    while (flag[0] == 0) {
    }
    out[0] = 1;
}
