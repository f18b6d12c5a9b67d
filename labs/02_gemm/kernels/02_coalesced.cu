#include "kl.cuh"
#include "gemm_common.cuh"

// 02_coalesced.cu — the same arithmetic, with the thread indices the right way round.
//
// Over kernel 01: threadIdx.x now selects the COLUMN j. In one step of the k loop the 32 threads of
// a warp read the same A[i][k] (one broadcast) and 32 consecutive floats B[k][j..j+31] (one 128-byte
// line), and at the end they write 32 consecutive floats of C. The loads per flop are the same as
// before; what changes is how many memory transactions each warp-wide load costs (1 instead of 32),
// and that is most of the difference on a GPU.
//
// Launch: block (32, 32), grid (ceil(N/32), ceil(M/32)).

extern "C" __global__ void __launch_bounds__(1024)
sgemm_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                float beta, float* __restrict__ C) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x; // column: the fast thread index
    const int i = blockIdx.y * blockDim.y + threadIdx.y; // row
    if (i >= M || j >= N) return;
    const float* a = A + (long long)i * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
        acc += a[k] * B[(long long)k * N + j];
    }
    float* c = C + (long long)i * N + j;
    *c = kl_gemm_epilogue(acc, alpha, beta, c);
}
