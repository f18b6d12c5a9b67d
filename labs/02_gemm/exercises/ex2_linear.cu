#include "kl.cuh"
#include "gemm_common.cuh"

// Exercise 2 — a linear layer as frameworks store it, in one kernel: 2-D register blocking with the
// weight stored N×K, and a fused bias + ReLU.
//
// Compute C = max(0, alpha·A·Wᵀ + beta·C + bias[j]) for every element (i, j): A (M×K, the
// activations, row-major), W (N×K, the weight, row-major: element (j, k) at W[j·K + k], the layout
// of PyTorch's nn.Linear), C (M×N, row-major) and a bias of N floats, one per output column. With
// β = 0, C is not read (it holds NaN). Fusing the bias and the ReLU into the epilogue saves the two
// extra passes over C that a separate elementwise kernel would make.
//
// The blocking is kernel 05's, and so is everything about A (given below): the block (256
// threads) owns a 128×128 tile of C, K goes in steps of BK = 8, and thread t owns the 8×8 block
// at tile rows 8·(t / 16) .. +7 and tile columns 8·(t % 16) .. +7, held in acc[8][8]; its A values
// come from the tile As[m][k] that load_a_tile fills.
//
// What is new is W. Kernel 05 reads a K×N tile of B whose rows run along N; here the tile of Wᵀ
// that a step needs is 128 rows of W (one per column of C) × 8 floats along K. Your part:
//   1. load the block's 128×8 tile of W every step so that a warp reads consecutive addresses
//      (0 outside the matrix), and store it in a shared tile of your own layout such that neither
//      the stores nor the inner loop's reads (each thread's 8 weights of one k) conflict on banks
//      (count the banks the 32 lanes hit, for the store and for the read; a broadcast, all lanes
//      on one address, is free);
//   2. the main loop: for each step, the two tiles, a barrier, for each kk the outer product of
//      the thread's 8 values of A and 8 weights into acc, a barrier;
//   3. the epilogue: each thread reads the bias of its columns once, and writes each of its
//      elements of C (from row0, col0) that lies inside the matrix: max(0, alpha·acc + beta·C + bias[j])
//      (kl_gemm_epilogue gives alpha·acc + beta·C, reading C only when beta ≠ 0).
//
// The grader checks sizes that are not multiples of the tile (1×1×1, 17×33×65, 127, 129, M or N
// = 1...), β = 0 with C poisoned with NaN, hidden shapes, and, on a GPU, your time against kernel
// 05's (same tile, B stored K×N, no epilogue) on 2048³.

#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NTHREADS ((BM / TM) * (BN / TN)) // 256

// The A tile (given: kernel 05's load). As[m][k] = A(m0 + m, k0 + k), 0 outside the matrix.
// Thread t loads rows t / 8 + 32·l, column t % 8: a warp reads 4 rows of 8 consecutive floats,
// four full 32-byte sectors. In the inner loop the 16 lanes of a half-warp read one address of As
// (they share their rows): a broadcast.
__device__ __forceinline__ void load_a_tile(float* As, const float* __restrict__ A, int M, int K, int m0, int k0,
                                            int tid) {
    constexpr int rowsPerPass = NTHREADS / BK; // 32
    const int col = tid % BK;
#pragma unroll
    for (int l = 0; l < BM / rowsPerPass; ++l) {
        const int r = tid / BK + l * rowsPerPass;
        As[r * BK + col] = (m0 + r < M && k0 + col < K) ? A[(long long)(m0 + r) * K + k0 + col] : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(NTHREADS)
ex2_linear_bias_relu(int M, int N, int K, float alpha, const float* __restrict__ A, const float* __restrict__ W,
                     float beta, float* __restrict__ C, const float* __restrict__ bias) {
    __shared__ float As[BM * BK];
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int threadCol = tid % (BN / TN), threadRow = tid / (BN / TN);
    const int row0 = m0 + threadRow * TM, col0 = n0 + threadCol * TN; // the thread's first element of C

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    // BEGIN SOLUTION
    // The W tile is stored transposed, Wt[k][n] = W(n0 + n, k0 + k), so that a thread's 8 weights
    // of one k are 8 consecutive floats, as kernel 05's B tile gives them. Rows are padded from 128
    // to 132 floats: W is read along K (lane t takes row t / 8, k = t % 8, like A), so the 32 lanes
    // of a warp store k = 0..7 × 4 consecutive n. With a pitch of 128 every k row starts on bank 0
    // and those 32 stores hit 4 banks (8-way conflict); with 132, row k starts on bank 4·k and the
    // 32 stores hit 32 banks. 132 is also a multiple of 4, so each row stays 16-byte aligned and
    // the inner loop reads the 8 weights with two 128-bit loads.
    // (Storing the tile as it lies in W, [n][k] with a pitch of 8, would make the read conflict
    // instead: the 16 threads of a half-warp read n = 8·threadCol + j, 64 floats apart, all on one
    // bank. No pitch fixes that while a thread owns 8 consecutive columns.)
    constexpr int WT_PITCH = BN + 4;
    __shared__ __align__(16) float Wt[BK * WT_PITCH];
    constexpr int wRowsPerPass = NTHREADS / BK; // 32 rows of W per pass, 4 passes
    const int wk = tid % BK, wn = tid / BK;

    float regM[TM];
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_a_tile(As, A, M, K, m0, k0, tid);
        const bool kIn = k0 + wk < K;
#pragma unroll
        for (int l = 0; l < BN / wRowsPerPass; ++l) {
            const int n = wn + l * wRowsPerPass;
            Wt[wk * WT_PITCH + n] = (kIn && n0 + n < N) ? W[(long long)(n0 + n) * K + k0 + wk] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const float* wRow = &Wt[kk * WT_PITCH + threadCol * TN];
            const float4 w0 = *reinterpret_cast<const float4*>(wRow);
            const float4 w1 = *reinterpret_cast<const float4*>(wRow + 4);
            const float regN[TN] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
            for (int i = 0; i < TM; ++i) regM[i] = As[(threadRow * TM + i) * BK + kk];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads(); // the next step overwrites both tiles
    }

    // The epilogue, column by column: one bias value per column, read once for the thread's 8
    // rows, and the ReLU while the result is still in a register (C is written once, never re-read).
#pragma unroll
    for (int j = 0; j < TN; ++j) {
        if (col0 + j >= N) break;
        const float b = bias[col0 + j];
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            if (row0 + i >= M) break;
            float* c = C + (long long)(row0 + i) * N + col0 + j;
            *c = fmaxf(kl_gemm_epilogue(acc[i][j], alpha, beta, c) + b, 0.0f);
        }
    }
    // END SOLUTION
    (void)acc;
}
