#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_f32.cuh"

// 01_loop.cu — the starting point: one ordinary GEMM kernel, launched once per group.
//
// This is how a framework without a grouped kernel runs a mixture-of-experts layer: a host loop
// `for g in groups: launch(gemm, grid = tiles of group g)`. The kernel is lab 02's best fp32 GEMM
// (the double-buffered, warp-tiled 128×128 tile of grouped_f32.cuh): one block per tile of C,
// grid (ceil(N/128), ceil(M/128)). Each launch is a complete GEMM, so the launches run one after
// the other: while the last blocks of group g finish, the SMs that are done wait for launch g+1,
// and a group with fewer tiles than the GPU has SMs leaves the rest idle for its whole duration.
// The timeline figure of the chapter shows exactly that.
//
// tl, tile_base and group serve the timeline (build with -DKL_TIMELINE): the tiles of group g
// are numbered from tile_base, the number of tiles of the groups before it.
//
// Launch: block 128, grid (ceil(N/128), ceil(M/128)), 32.5 KiB of static shared memory.

extern "C" __global__ void __launch_bounds__(KL_F32_THREADS)
gemm_f32_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K,
               int lda, int ldb, int ldc, unsigned long long* tl, int tile_base, int group) {
    const unsigned long long t0 = kl_tl_start();
    kl_gview<float, float> g;
    g.A = A;
    g.B = B;
    g.C = C;
    g.M = M;
    g.N = N;
    g.K = K;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    kl_f32_tile(g, blockIdx.y * KL_F32_BM, blockIdx.x * KL_F32_BN);
    kl_tl_end(tl, tile_base + blockIdx.y * gridDim.x + blockIdx.x, group, t0);
}
