// grouped_wmma.cuh — one 128×128 tile of a bf16 GEMM on the tensor cores through WMMA, for lab
// 03's portable tensor-core kernels (the CPU emulator runs WMMA too). Include after "kl.cuh" and
// "grouped_sched.cuh".
//
// It is lab 02's kernel 10 (10_wmma.cu) cut loose from blockIdx, with a bf16 output: bf16 A and
// B, fp32 accumulation in the fragments, C = bf16(A·B). 256 threads, 8 warps of 64×32 (4 × 2
// accumulator fragments each), K steps of 32 through shared memory with 16-byte loads where they
// are legal, element by element elsewhere (zeros outside the matrices). The epilogue goes through
// a 16×16 scratch tile per warp, because store_matrix_sync has no bounds. 26.5 KiB of static
// shared memory.
#pragma once

#define KL_WMMA_BM 128
#define KL_WMMA_BN 128
#define KL_WMMA_THREADS 256

namespace kl_wmma {

constexpr int BM = KL_WMMA_BM, BN = KL_WMMA_BN, BK = 32, WM = 64, WN = 32, NT = KL_WMMA_THREADS, PAD = 8;
constexpr int FM = WM / 16, FN = WN / 16;

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0; }

} // namespace kl_wmma

// kl_wmma_tile computes C[m0.., n0..] = A[m0.., :]·B[:, n0..] for the 128×128 tile of group g.
// Every thread of the block (256, 1-D) calls it; it ends with a barrier, so the block may start
// another tile at once.
__device__ __forceinline__ void kl_wmma_tile(const kl_gview<__nv_bfloat16, __nv_bfloat16>& g, int m0, int n0) {
    using namespace nvcuda;
    using namespace kl_wmma;
    __shared__ __align__(32) __nv_bfloat16 As[BM][BK + PAD];
    __shared__ __align__(32) __nv_bfloat16 Bs[BK][BN + PAD];
    __shared__ __align__(32) float Cs[NT / 32][16 * 16];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN); // 2 × 4 warps
    const bool vecA = (g.lda % 8) == 0 && aligned16(g.A);
    const bool vecB = (g.ldb % 8) == 0 && aligned16(g.B);
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < g.K; k0 += BK) {
        // A tile: 128 rows × 4 chunks of 8; B tile: 32 rows × 16 chunks of 8; 2 chunks of each per thread.
#pragma unroll
        for (int l = 0; l < (BM * BK / 8) / NT; ++l) {
            const int id = tid + l * NT, r = id / (BK / 8), c = (id % (BK / 8)) * 8;
            const int gr = m0 + r, gc = k0 + c;
            if (vecA && gr < g.M && gc + 7 < g.K) {
                *reinterpret_cast<uint4*>(&As[r][c]) = *reinterpret_cast<const uint4*>(g.A + (long long)gr * g.lda + gc);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e)
                    As[r][c + e] = (gr < g.M && gc + e < g.K) ? g.A[(long long)gr * g.lda + gc + e] : zero;
            }
        }
#pragma unroll
        for (int l = 0; l < (BK * BN / 8) / NT; ++l) {
            const int id = tid + l * NT, r = id / (BN / 8), c = (id % (BN / 8)) * 8;
            const int gr = k0 + r, gc = n0 + c;
            if (vecB && gr < g.K && gc + 7 < g.N) {
                *reinterpret_cast<uint4*>(&Bs[r][c]) = *reinterpret_cast<const uint4*>(g.B + (long long)gr * g.ldb + gc);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e)
                    Bs[r][c + e] = (gr < g.K && gc + e < g.N) ? g.B[(long long)gr * g.ldb + gc + e] : zero;
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
        __syncthreads(); // everyone is done with the tiles before they are overwritten
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
                if (row < g.M && col < g.N) g.C[(long long)row * g.ldc + col] = __float2bfloat16(scratch[e]);
            }
            __syncwarp(); // the scratch tile is free again
        }
    }
    __syncthreads(); // scratch and tiles are free for the block's next tile
}
