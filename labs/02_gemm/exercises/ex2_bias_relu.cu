#include "kl.cuh"
#include "gemm_common.cuh"

// Exercise 2 — a linear layer in one kernel: 2-D register blocking with a fused bias + ReLU.
//
// Compute C = max(0, alpha·A·B + beta·C + bias[j]) for every element (i, j): row-major A (M×K),
// B (K×N) and C (M×N), and a bias of N floats (one per column, as in a linear layer y = x·W + b
// followed by its activation). With β = 0, C is not read (it holds NaN). Written as a GEMM kernel
// followed by a second kernel for the bias and the ReLU, C would cross the memory bus twice more;
// fused, the epilogue costs nothing but a few registers.
//
// The block (256 threads) owns a 128×128 tile of C, BK = 8; thread t owns the 8×8 block at tile
// rows 8·(t / 16) .. +7 and tile columns 8·(t % 16) .. +7, held in acc[8][8] (kernel 05's scheme):
//   1. for each step k0 = 0, 8, 16, ... of K: load the 128×8 tile of A and the 8×128 tile of B
//      into As and Bs (4 floats per thread each, consecutive threads at consecutive addresses,
//      0 outside the matrices), barrier, add the outer products of the thread's 8 values of A and
//      8 values of B for each kk (64 FMAs per kk), barrier;
//   2. the epilogue: load the thread's 8 values of bias once, then write each of its elements of
//      C that lies inside the matrix (kl_gemm_epilogue gives alpha·acc + beta·C), plus the bias,
//      clamped at 0.
//
// The grader checks sizes that are not multiples of the tile (1×1×1, 17×33×65, 127, 129, M or N
// = 1...), β = 0 with C poisoned with NaN, and, on a GPU, your time against kernel 05's (which
// writes alpha·A·B + beta·C and no more) on 2048³.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS ((BM / TM) * (BN / TN)) // 256

extern "C" __global__ void __launch_bounds__(NTHREADS)
ex2_regblock_bias_relu(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ B,
                       float beta, float* __restrict__ C, const float* __restrict__ bias) {
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int threadCol = tid % (BN / TN), threadRow = tid / (BN / TN);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    // Which elements of the tiles this thread loads (given: the same as kernel 05's).
    const int aCol = tid % BK, aRow = tid / BK; // rows aRow + 32·l of the A tile
    const int bCol = tid % BN, bRow = tid / BN; // rows bRow + 2·l of the B tile
    constexpr int aStride = NTHREADS / BK, bStride = NTHREADS / BN;

    // BEGIN SOLUTION
    float regM[TM], regN[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int l = 0; l < BM / aStride; ++l) {
            const int r = aRow + l * aStride;
            As[r * BK + aCol] = (m0 + r < M && k0 + aCol < K) ? A[(long long)(m0 + r) * K + k0 + aCol] : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < BK / bStride; ++l) {
            const int r = bRow + l * bStride;
            Bs[r * BN + bCol] = (k0 + r < K && n0 + bCol < N) ? B[(long long)(k0 + r) * N + n0 + bCol] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int i = 0; i < TM; ++i) regM[i] = As[(threadRow * TM + i) * BK + kk];
#pragma unroll
            for (int j = 0; j < TN; ++j) regN[j] = Bs[kk * BN + threadCol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads();
    }

    // The epilogue: the thread's 8 columns of bias, read once.
    float b[TN];
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        const int col = n0 + threadCol * TN + j;
        b[j] = col < N ? bias[col] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + threadRow * TM + i;
        if (row >= M) break;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = n0 + threadCol * TN + j;
            if (col < N) {
                float* c = C + (long long)row * N + col;
                *c = fmaxf(kl_gemm_epilogue(acc[i][j], alpha, beta, c) + b[j], 0.0f);
            }
        }
    }
    // END SOLUTION
    (void)acc;
}
