#include "kl.cuh"
#include "gemm_common.cuh"

// 01_naive.cu — one thread per element of C, straight from the definition.
//
// C[i][j] = alpha · Σ_k A[i][k]·B[k][j] + beta · C[i][j]. Each thread walks a row of A and a column
// of B through global memory: 2K loads for 2K flops, an arithmetic intensity of 1/4 flop per byte
// if nothing were cached. The mistake that makes it slower still is the thread mapping: threadIdx.x,
// the index that runs fastest within a warp, selects the ROW i. The 32 threads of a warp therefore
// read 32 different rows of A (addresses K·4 bytes apart: 32 memory transactions for one load
// instruction) and write 32 different rows of C. Kernel 02 swaps the two indices, nothing else.
//
// Launch: block (32, 32), grid (ceil(N/32), ceil(M/32)); every size is handled (the threads outside
// C do nothing).

extern "C" __global__ void __launch_bounds__(1024)
sgemm_naive(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
            float beta, float* __restrict__ C) {
    const int i = blockIdx.y * blockDim.x + threadIdx.x; // row: the fast thread index (uncoalesced)
    const int j = blockIdx.x * blockDim.y + threadIdx.y; // column
    if (i >= M || j >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += A[(long long)i * K + k] * B[(long long)k * N + j];
    }
    float* c = C + (long long)i * N + j;
    *c = kl_gemm_epilogue(acc, alpha, beta, c);
}
