#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_mma.cuh"

// 05_mma.cu — lab 02's mma.sync tile (ldmatrix, 4-stage cp.async pipeline) three ways: a host
// loop of launches, a persistent kernel with the static scheduler, and one with the dynamic
// scheduler. NVIDIA GPUs (inline PTX, sm_80 and newer) and the CPU emulator (grouped_mma.cuh).
//
// Over kernel 04: the same tile as lab 02's kernel 11, which keeps the tensor cores fed far better
// than WMMA, so that the comparison with cuBLAS is between equals. The three entries share the
// tile code (grouped_mma.cuh) and differ only in who decides which tile runs where:
//   gemm_mma_tiled          one launch per group (the host loop), one block per tile;
//   grouped_mma_persistent  one launch, round robin over the tiles of all groups (kernel 02);
//   grouped_mma_dynamic     one launch, tiles from an atomic counter (kernel 03).
// Between two tiles a persistent block drains its pipeline (the last stage's loads must land and
// be read before the next tile's first loads may overwrite the stages); kernel 06 removes that
// bubble with a producer warp that runs ahead across tiles.
//
// Launch: block 256, 64 KiB of dynamic shared memory (opt-in above 48 KiB); grid
// (ceil(N/128), ceil(M/128)) for the loop, SMs × blocks per SM for the persistent kernels.

#define BAND_M 8

extern "C" __global__ void __launch_bounds__(KL_MMA_THREADS)
gemm_mma_tiled(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C,
               int M, int N, int K, int lda, int ldb, int ldc, unsigned long long* tl, int tile_base, int group) {
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned long long t0 = kl_tl_start();
    kl_gview<__nv_bfloat16, __nv_bfloat16> g;
    g.A = A;
    g.B = B;
    g.C = C;
    g.M = M;
    g.N = N;
    g.K = K;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    kl_mma_tile(g, blockIdx.y * KL_MMA_BM, blockIdx.x * KL_MMA_BN, smem);
    kl_tl_end(tl, tile_base + blockIdx.y * gridDim.x + blockIdx.x, group, t0);
}

extern "C" __global__ void __launch_bounds__(KL_MMA_THREADS)
grouped_mma_persistent(const kl_group* __restrict__ groups, int G, unsigned long long* tl) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    const int total = kl_tile_prefix_groups(groups, G, KL_MMA_BM, KL_MMA_BN, s_prefix);
    for (int t = blockIdx.x; t < total; t += gridDim.x) {
        const unsigned long long t0 = kl_tl_start();
        const int g = kl_find_group(s_prefix, G, t);
        const kl_gview<__nv_bfloat16, __nv_bfloat16> v = kl_group_view<__nv_bfloat16, __nv_bfloat16>(groups, g);
        int tm, tn;
        kl_tile_coords(t - s_prefix[g], (v.M + KL_MMA_BM - 1) / KL_MMA_BM, (v.N + KL_MMA_BN - 1) / KL_MMA_BN, BAND_M,
                       tm, tn);
        kl_mma_tile(v, tm * KL_MMA_BM, tn * KL_MMA_BN, smem);
        kl_tl_end(tl, t, g, t0);
    }
}

extern "C" __global__ void __launch_bounds__(KL_MMA_THREADS)
grouped_mma_dynamic(const kl_group* __restrict__ groups, int G, int* counters, unsigned long long* tl) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    __shared__ int s_next;
    const int total = kl_tile_prefix_groups(groups, G, KL_MMA_BM, KL_MMA_BN, s_prefix);
    for (;;) {
        const int t = kl_next_tile(counters, &s_next);
        if (t >= total) break;
        const unsigned long long t0 = kl_tl_start();
        const int g = kl_find_group(s_prefix, G, t);
        const kl_gview<__nv_bfloat16, __nv_bfloat16> v = kl_group_view<__nv_bfloat16, __nv_bfloat16>(groups, g);
        int tm, tn;
        kl_tile_coords(t - s_prefix[g], (v.M + KL_MMA_BM - 1) / KL_MMA_BM, (v.N + KL_MMA_BN - 1) / KL_MMA_BN, BAND_M,
                       tm, tn);
        kl_mma_tile(v, tm * KL_MMA_BM, tn * KL_MMA_BN, smem);
        kl_tl_end(tl, t, g, t0);
    }
    kl_scheduler_done(counters);
}
