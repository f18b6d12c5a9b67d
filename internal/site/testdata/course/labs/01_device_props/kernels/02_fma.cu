#include "kl.cuh"

extern "C" {

// fma_chains: independent FMA chains per thread.
__global__ void fma_chains(float* out, int iters) {
    float a = threadIdx.x * 1e-3f, b = 0.5f;
    for (int i = 0; i < iters; ++i) a = fmaf(a, b, 1.0f);
    out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

}  // extern "C"
