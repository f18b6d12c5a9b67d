#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_wmma.cuh"

// 04_wmma.cu — the persistent grouped kernel on the tensor cores (WMMA, bf16 in, bf16 out).
//
// Over kernel 02: the scheduler is the same (round robin over the tile numbers of all groups, the
// group found in the prefix sums); the tile is now lab 02's WMMA tile (kernel 10): bf16 A and B,
// fp32 accumulation in the fragments, the result rounded to bf16 as a model's activations are.
// One file, two entries:
//   grouped_wmma_persistent  the grouped form: an array of kl_group written by the host;
//   moe_wmma_persistent      the MoE form. In a MoE layer the router sorts the token rows by
//                            expert into one matrix X (T×K); offs[e] .. offs[e+1]-1 are expert e's
//                            rows, multiplied by its weights W_e (K×N, at W + e·K·N) into the same
//                            rows of Y. The sizes M_e = offs[e+1] - offs[e] exist only on the
//                            device, after routing: this kernel reads offs itself (kl_tile_prefix_moe,
//                            kl_moe_view), so the host launches a fixed grid and never waits for
//                            them. Experts without tokens own no tile.
// WMMA is portable: both kernels also run on the CPU emulator, so the grader can check a
// tensor-core grouped kernel without a GPU.
//
// Launch: block 256, grid SMs × 2, 30.5 KiB of static shared memory.

#define BAND_M 8

extern "C" __global__ void __launch_bounds__(KL_WMMA_THREADS)
grouped_wmma_persistent(const kl_group* __restrict__ groups, int G, unsigned long long* tl) {
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    const int total = kl_tile_prefix_groups(groups, G, KL_WMMA_BM, KL_WMMA_BN, s_prefix);
    for (int t = blockIdx.x; t < total; t += gridDim.x) {
        const unsigned long long t0 = kl_tl_start();
        const int g = kl_find_group(s_prefix, G, t);
        const kl_gview<__nv_bfloat16, __nv_bfloat16> v = kl_group_view<__nv_bfloat16, __nv_bfloat16>(groups, g);
        int tm, tn;
        kl_tile_coords(t - s_prefix[g], (v.M + KL_WMMA_BM - 1) / KL_WMMA_BM, (v.N + KL_WMMA_BN - 1) / KL_WMMA_BN,
                       BAND_M, tm, tn);
        kl_wmma_tile(v, tm * KL_WMMA_BM, tn * KL_WMMA_BN);
        kl_tl_end(tl, t, g, t0);
    }
}

extern "C" __global__ void __launch_bounds__(KL_WMMA_THREADS)
moe_wmma_persistent(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
                    __nv_bfloat16* __restrict__ Y, const int* __restrict__ offs, int E, int N, int K,
                    unsigned long long* tl) {
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    const int total = kl_tile_prefix_moe(offs, E, N, KL_WMMA_BM, KL_WMMA_BN, s_prefix);
    for (int t = blockIdx.x; t < total; t += gridDim.x) {
        const unsigned long long t0 = kl_tl_start();
        const int e = kl_find_group(s_prefix, E, t);
        const kl_gview<__nv_bfloat16, __nv_bfloat16> v = kl_moe_view<__nv_bfloat16, __nv_bfloat16>(X, W, Y, offs, N, K, e);
        int tm, tn;
        kl_tile_coords(t - s_prefix[e], (v.M + KL_WMMA_BM - 1) / KL_WMMA_BM, (v.N + KL_WMMA_BN - 1) / KL_WMMA_BN,
                       BAND_M, tm, tn);
        kl_wmma_tile(v, tm * KL_WMMA_BM, tn * KL_WMMA_BN);
        kl_tl_end(tl, t, e, t0);
    }
}
