// cheat (or a bug): never returns. (A loop with no side effect may be removed by the compiler, as
// nvcc does with a spin on a volatile local: this one sleeps, which it must keep.)
// Expected: timeout.
#include "kl.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    for (;;) {
        __nanosleep(1000);
    }
}
