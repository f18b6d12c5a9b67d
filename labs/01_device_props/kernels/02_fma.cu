#include "kl.cuh"
#include "hash.cuh"

// 02_fma.cu — the FP32 arithmetic ceiling, and why one dependent chain cannot reach it.
//
// Each thread runs CHAINS independent chains x = fma(x, a, b), `iters` steps each. One FMA takes
// about 4 cycles before its result can feed the next, so a single chain issues at most one FMA
// every 4 cycles. To keep an SM's 128 FP32 lanes busy every cycle the SM needs about
// 4 cycles x 128 lanes = 512 independent FMAs in flight: from many warps (occupancy), from
// several chains in each thread (instruction-level parallelism), or both — in this simple model.
// The three entries differ only in CHAINS; every thread does the same total number of FMAs
// (CHAINS x iters), so the table compares them on equal work. Check the model against it.
//
// The inputs come from a hash of (seed, thread), so no memory is read; a in [0.5, 1) and
// b in (-1, 1) keep x bounded and away from subnormals. Each thread writes the sum of its chains:
// without a store that depends on every FMA, the compiler would delete the loop.

template <int CHAINS>
__device__ inline void fma_chains(float* __restrict__ out, int iters, unsigned long long seed) {
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long key = tid * 16ull; // 16 hash indices per thread, 10 used
    const float a = (float)(0x8000u + (unsigned)(kl_splitmix64(seed, key) >> 49)) * (1.0f / 65536.0f);
    const float b = kl_hash_float(seed, key + 1);
    float x[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) x[j] = kl_hash_float(seed, key + 2 + j);

#pragma unroll 16
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) x[j] = fmaf(x[j], a, b);
    }

    float s = x[0];
#pragma unroll
    for (int j = 1; j < CHAINS; ++j) s += x[j];
    out[tid] = s;
}

extern "C" __global__ void fma_chains1(float* __restrict__ out, int iters, unsigned long long seed) {
    fma_chains<1>(out, iters, seed);
}

extern "C" __global__ void fma_chains4(float* __restrict__ out, int iters, unsigned long long seed) {
    fma_chains<4>(out, iters, seed);
}

extern "C" __global__ void fma_chains8(float* __restrict__ out, int iters, unsigned long long seed) {
    fma_chains<8>(out, iters, seed);
}
