#include "kl.cuh"

// 16_gemv_decode.cu — skinny M (decode): a kernel that only has to stream B once.
//
// Over kernel 15: at decode a model multiplies a few rows of activations (M = 1 to 16 tokens) by a
// whole weight matrix B (K×N, up to 8192 × 28672). The product is 2·M·N·K flops on 2·K·N bytes of
// B: at M = 1 one flop per byte, two hundred times below the H200's balance point, so the time is
// the time to read B from HBM. Kernel 15 gives each block a 128×256 tile of C: with M = 1 there is
// one tile row, N/256 blocks (32 at N = 8192) for 132 SMs, and 127 of every 128 rows of A it
// loads are padding. This kernel is built around the read of B instead:
//   * a block owns BN = 32 columns of C and all of K; its 256 threads are 8 column threads (4
//     columns each, one 8-byte load per row of B) × 32 K lanes. A K lane reads 8 consecutive
//     rows of B at a time (8 independent loads in flight per thread), so the 8 column threads of
//     a row read 64 contiguous bytes and the block's loads cover whole 32-byte sectors;
//   * each thread keeps MT × 4 fp32 sums (MT = the M rows of the block, 1 to 16, chosen at run time
//     from M so that M = 1 does the arithmetic of one row, not sixteen). A's 8 values for those rows
//     are one 16-byte load per row from L1/L2 (A is at most 16 × K bf16, shared by every block);
//   * the 32 K lanes are summed by warp shuffles (the 4 lanes of a warp that share columns) and
//     then through shared memory (the 8 warps), and 32·MT threads write alpha·sum + beta·C as bf16;
//   * with N = 8192 that is 256 blocks, two per SM: enough loads in flight to keep HBM busy.
// At M = 16 each byte of B feeds 16 fp32 FMAs on the CUDA cores: about as long as reading it, so
// this kernel is bandwidth-bound only up to a few rows; beyond, the tensor cores must do the work
// (a split-K kernel 15, not written yet).
//
// Sizes: any M, N, K (rows of M beyond 16 are further block rows, grid.y = ceil(M/16)); vector
// loads where N % 4 == 0 (B) and K % 8 == 0 (A), element loads otherwise.
// Launch: block 256, grid (ceil(N/32), ceil(M/16)), no dynamic shared memory. C is bf16.

#define GEMV_BN 32
#define GEMV_BM 16
#define GEMV_THREADS 256
#define GEMV_CW 4                        // columns per thread: one 8-byte load per row of B
#define GEMV_CT (GEMV_BN / GEMV_CW)      // column threads per row of B
#define GEMV_KL (GEMV_THREADS / GEMV_CT) // K lanes
#define GEMV_WARPS (GEMV_THREADS / 32)

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
__device__ __forceinline__ float bf16_at(const uint16_t* p) { return __uint_as_float((uint32_t)*p << 16); }

// load4 reads 4 consecutive bf16 values p[0..3] as floats: one 8-byte load when vec, else element
// loads of the first `valid` (the rest are 0).
__device__ __forceinline__ void load4(float (&v)[4], const uint16_t* p, bool vec, int valid) {
    if (vec) {
        const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
        v[0] = bf16_lo(u.x), v[1] = bf16_hi(u.x), v[2] = bf16_lo(u.y), v[3] = bf16_hi(u.y);
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = j < valid ? bf16_at(p + j) : 0.0f;
    }
}

// load8 reads 8 consecutive bf16 values p[0..7] as floats: one 16-byte load when vec, else element
// loads of the first `valid` (the rest are 0).
__device__ __forceinline__ void load8(float (&v)[8], const uint16_t* p, bool vec, int valid) {
    if (vec) {
        const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
        v[0] = bf16_lo(u.x), v[1] = bf16_hi(u.x), v[2] = bf16_lo(u.y), v[3] = bf16_hi(u.y);
        v[4] = bf16_lo(u.z), v[5] = bf16_hi(u.z), v[6] = bf16_lo(u.w), v[7] = bf16_hi(u.w);
    } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = j < valid ? bf16_at(p + j) : 0.0f;
    }
}

template <int MT>
__device__ __forceinline__ void gemv_body(int M, int N, int K, float alpha, const uint16_t* __restrict__ A,
                                          const uint16_t* __restrict__ B, float beta, uint16_t* __restrict__ C,
                                          int row0) {
    __shared__ float red[GEMV_WARPS][MT][GEMV_BN];
    const int tid = threadIdx.x, ct = tid % GEMV_CT, kl = tid / GEMV_CT;
    const int col = blockIdx.x * GEMV_BN + ct * GEMV_CW;
    const int colsValid = min(GEMV_CW, N - col);
    const bool vecB = N % GEMV_CW == 0 && colsValid == GEMV_CW;
    const int rows = min(MT, M - row0);
    float acc[MT][GEMV_CW];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int j = 0; j < GEMV_CW; ++j) acc[m][j] = 0.0f;

    if (colsValid > 0) {
        for (int k0 = kl * 8; k0 < K; k0 += GEMV_KL * 8) {
            const int kValid = min(8, K - k0);
            float b[8][GEMV_CW]; // b[r][j] = B[k0 + r][col + j]
#pragma unroll
            for (int r = 0; r < 8; ++r) {
                if (r < kValid)
                    load4(b[r], B + (long long)(k0 + r) * N + col, vecB, colsValid);
                else
#pragma unroll
                    for (int j = 0; j < GEMV_CW; ++j) b[r][j] = 0.0f;
            }
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                if (m < rows) {
                    float a[8];
                    load8(a, A + (long long)(row0 + m) * K + k0, K % 8 == 0 && kValid == 8, kValid);
#pragma unroll
                    for (int r = 0; r < 8; ++r)
#pragma unroll
                        for (int j = 0; j < GEMV_CW; ++j) acc[m][j] = fmaf(a[r], b[r][j], acc[m][j]);
                }
            }
        }
    }

    // Sum the K lanes: first the 4 lanes of a warp that share columns (lane = 8·lane_k + ct) ...
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int j = 0; j < GEMV_CW; ++j)
#pragma unroll
            for (int off = GEMV_CT; off < 32; off *= 2) acc[m][j] += kl_shfl_xor_sync(KL_FULL_MASK, acc[m][j], off);
    // "warp" is a group of 32 threads (on AMD half a wave64; the XOR offsets above stay within it).
    const int warp = tid / 32, lane = tid % 32;
    if (lane < GEMV_CT) {
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int j = 0; j < GEMV_CW; ++j) red[warp][m][lane * GEMV_CW + j] = acc[m][j];
    }
    __syncthreads();
    // ... then the warps, one thread per element of the block's MT × 32 piece of C.
    for (int e = tid; e < MT * GEMV_BN; e += GEMV_THREADS) {
        const int m = e / GEMV_BN, c = e % GEMV_BN;
        const int row = row0 + m, cc = blockIdx.x * GEMV_BN + c;
        if (m >= rows || cc >= N) continue;
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < GEMV_WARPS; ++w) s += red[w][m][c];
        float v = alpha * s;
        if (beta != 0.0f) v += beta * bf16_at(C + (long long)row * N + cc);
        C[(long long)row * N + cc] = kl_bf16_bits(kl_float2bf16(v));
    }
}

// At most 128 registers, so that two blocks (16 warps) share an SM: the kernel is allocated for its
// largest case (16 rows of sums), and at M = 1 the loads in flight, not the arithmetic, set its speed.
extern "C" __global__ void KL_LAUNCH_BOUNDS(GEMV_THREADS, 2)
hgemv_bf16(int M, int N, int K, float alpha, const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
           float beta, uint16_t* __restrict__ C) {
    const int row0 = blockIdx.y * GEMV_BM, rows = min(GEMV_BM, M - row0);
    // The fewest rows of sums that cover the block's rows: M = 1 pays for one, not sixteen.
    if (rows <= 1)
        gemv_body<1>(M, N, K, alpha, A, B, beta, C, row0);
    else if (rows <= 2)
        gemv_body<2>(M, N, K, alpha, A, B, beta, C, row0);
    else if (rows <= 4)
        gemv_body<4>(M, N, K, alpha, A, B, beta, C, row0);
    else if (rows <= 8)
        gemv_body<8>(M, N, K, alpha, A, B, beta, C, row0);
    else
        gemv_body<16>(M, N, K, alpha, A, B, beta, C, row0);
}
