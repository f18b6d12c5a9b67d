// printf.cu — printf from kernels.
#include "kl.cuh"

extern "C" __global__ void hello(const float* v) {
    if (threadIdx.x % 16 == 0)
        printf("block %d thread %d value %.2f\n", (int)blockIdx.x, (int)threadIdx.x, v[threadIdx.x]);
}
