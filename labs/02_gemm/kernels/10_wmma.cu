#include "kl.cuh"
#include "gemm_common.cuh"

// 10_wmma.cu — tensor cores through the WMMA API: bf16 inputs, fp32 accumulation.
//
// Over kernel 09 (and a change of precision): the inputs are now bf16 (8 bits of exponent like
// fp32, 8 bits of significand), the accumulators stay fp32. A tensor core multiplies small matrix
// tiles in one instruction: nvcuda::wmma exposes it per warp as "multiply a 16×16 tile of A by a
// 16×16 tile of B into a 16×16 fp32 accumulator" (mma_sync), with fragments loaded from shared
// memory (load_matrix_sync). The rest of the kernel is kernel 03's structure at a larger scale:
//   * a block computes a 128×128 tile of C with 8 warps (2 × 4), each warp a 64×32 piece held as
//     4 × 2 accumulator fragments (64 fp32 registers per thread);
//   * per K step of 32 the block copies a 128×32 tile of A and a 32×128 tile of B into shared
//     memory with 16-byte loads (8 bf16), zeros outside the matrices, and each warp runs
//     2 (k) × 4 × 2 = 16 mma_sync;
//   * the epilogue goes through shared memory: store_matrix_sync has no bounds, so each fragment is
//     stored to a 16×16 scratch tile of the warp and copied to C element by element, inside C only,
//     as alpha·acc + beta·C.
// In SASS (cuobjdump -sass) the mma_sync calls are HMMA.16816.F32.BF16 instructions. The rows of
// the shared tiles are padded by 8 elements (16 bytes) so that the 8 rows a fragment load touches
// fall in different banks. Nothing here overlaps the loads with the math: kernel 11 does.
//
// Sizes: any M, N, K. The 16-byte loads need K % 8 == 0 (A) and N % 8 == 0 (B); otherwise, and at
// the edges, elements are copied one by one. Runs on the emulator too (WMMA m16n16k16).
//
// Launch: block 256, grid (ceil(N/128), ceil(M/128)); 26.5 KiB of static shared memory.

using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define WM 64
#define WN 32
#define FM (WM / 16) // 4 fragments down a warp tile
#define FN (WN / 16) // 2 fragments across
#define NT 256
#define PAD 8

extern "C" __global__ void __launch_bounds__(NT)
hgemm_wmma(int M, int N, int K, float alpha, const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
           float beta, float* __restrict__ C) {
    __shared__ __align__(32) __nv_bfloat16 As[BM][BK + PAD];
    __shared__ __align__(32) __nv_bfloat16 Bs[BK][BN + PAD];
    __shared__ __align__(32) float Cs[NT / 32][16 * 16];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN); // 2 × 4 warps
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vecA = (K % 8) == 0, vecB = (N % 8) == 0;
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        // A tile: 128 rows × 4 chunks of 8; B tile: 32 rows × 16 chunks of 8; 2 chunks of each per thread.
#pragma unroll
        for (int l = 0; l < (BM * BK / 8) / NT; ++l) {
            const int id = tid + l * NT, r = id / (BK / 8), c = (id % (BK / 8)) * 8;
            const int gr = m0 + r, gc = k0 + c;
            if (vecA && gr < M && gc + 7 < K) {
                *reinterpret_cast<uint4*>(&As[r][c]) = *reinterpret_cast<const uint4*>(A + (long long)gr * K + gc);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e) As[r][c + e] = (gr < M && gc + e < K) ? A[(long long)gr * K + gc + e] : zero;
            }
        }
#pragma unroll
        for (int l = 0; l < (BK * BN / 8) / NT; ++l) {
            const int id = tid + l * NT, r = id / (BN / 8), c = (id % (BN / 8)) * 8;
            const int gr = k0 + r, gc = n0 + c;
            if (vecB && gr < K && gc + 7 < N) {
                *reinterpret_cast<uint4*>(&Bs[r][c]) = *reinterpret_cast<const uint4*>(B + (long long)gr * N + gc);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e) Bs[r][c + e] = (gr < K && gc + e < N) ? B[(long long)gr * N + gc + e] : zero;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], &As[wm * WM + i * 16][kk], BK + PAD);
#pragma unroll
            for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][wn * WN + j * 16], BN + PAD);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

    float* scratch = Cs[warp];
#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 16 * 16; e += 32) {
                const int row = m0 + wm * WM + i * 16 + e / 16;
                const int col = n0 + wn * WN + j * 16 + e % 16;
                if (row < M && col < N) {
                    float* c = C + (long long)row * N + col;
                    *c = kl_gemm_epilogue(scratch[e], alpha, beta, c);
                }
            }
            __syncwarp(); // the scratch tile is free again
        }
    }
}
