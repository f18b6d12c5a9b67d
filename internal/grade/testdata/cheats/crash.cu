// cheat: crashes — writes through a wild pointer. Expected: illegal_address.
#include "kl.cuh"

extern "C" __global__ void __launch_bounds__(1024)
ex1_smem_tiling(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    volatile float* wild = reinterpret_cast<volatile float*>(static_cast<unsigned long long>(0x40) + (threadIdx.x & 0));
    *wild = 1.0f;
}
