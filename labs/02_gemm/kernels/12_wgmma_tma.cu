#include "kl.cuh"
#include "gemm_common.cuh"
#include "gemm_sm90.cuh"

// 12_wgmma_tma.cu — Hopper's own path: tiles loaded by TMA, multiplied by wgmma (sm_90a only).
//
// Over kernel 11: on Hopper, mma.sync is not the fastest tensor-core instruction any more. Two new
// units change who does the work:
//   * TMA (cp.async.bulk.tensor): ONE thread hands the copy engine a tensor map (built on the host,
//     passed as a __grid_constant__ CUtensorMap) and the coordinates of a box; the engine copies the
//     whole tile to shared memory, swizzled, zero-filling what lies outside the matrix, and signals
//     an mbarrier when the bytes have landed. No address arithmetic, no per-thread copies, no edge
//     checks in the kernel.
//   * wgmma.mma_async: a warpgroup (4 warps, 128 threads) multiplies a 64×N tile, reading both
//     operands straight from shared memory through 64-bit descriptors (no ldmatrix), asynchronously:
//     wgmma.commit_group / wgmma.wait_group fence it. In SASS it is HGMMA.64x128x16.F32.BF16, where
//     kernel 11 had HMMA.16816.
// The block computes 128×128 of C: two warpgroups, each m64n128 with 64 fp32 accumulators per thread.
// K advances in steps of 64 through STAGES = 4 shared-memory stages of 32 KiB (A: 128×64, B: 64×128
// as two 64×64 TMA boxes). Thread 0 keeps the stages full; everyone waits on the stage's "full"
// mbarrier, runs 4 wgmma (k = 16 each), waits for them, and a __syncthreads frees the stage for
// thread 0 to refill. Simple, and the whole block still stops at that barrier every step —
// kernel 13 removes it.
//
// Tensor maps (the driver builds them with gpu.EncodeTensorMap):
//   tmA: bf16, dims {K, M}, row stride K·2 bytes, box {64, 128}, swizzle 128B;
//   tmB: bf16, dims {N, K}, row stride N·2 bytes, box {64, 64}, swizzle 128B.
// Sizes: TMA needs 16-byte row strides, so K % 8 == 0 and N % 8 == 0 (the driver refuses others).
//
// Launch: block 256, grid (ceil(N/128), ceil(M/128)), dynamic shared memory 132224 bytes
// (1 KiB alignment slack + 4 × 32 KiB + barriers).

#define BM 128
#define BN 128
#define BK 64
#define STAGES 4
#define A_BYTES (BM * BK * 2)   // 16 KiB
#define B_PANEL (64 * BK * 2)   // one 64-column panel of B: 8 KiB
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)

extern "C" __global__ void __launch_bounds__(256, 1)
hgemm_wgmma_tma(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
                const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);

    const int tid = threadIdx.x, wg = tid / 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int numK = (K + BK - 1) / BK;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) kl_mbar_init(&full[s], 1);
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmA);
        kl_tma_prefetch(&tmB);
    }
    __syncthreads();

    // Thread 0: fill stage s with K step kt.
    auto issue = [&](int s, int kt) {
        unsigned char* st = smem + s * STAGE_BYTES;
        kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
        kl_tma_load_2d(st, &tmA, &full[s], kt * BK, m0);
#pragma unroll
        for (int p = 0; p < BN / 64; ++p) kl_tma_load_2d(st + A_BYTES + p * B_PANEL, &tmB, &full[s], n0 + 64 * p, kt * BK);
    };
    if (tid == 0) {
        for (int s = 0; s < STAGES && s < numK; ++s) issue(s, s);
    }

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.0f;

    for (int kt = 0; kt < numK; ++kt) {
        const int s = kt % STAGES;
        kl_mbar_wait(&full[s], (kt / STAGES) & 1);
        const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES) + wg * 64 * 128; // this warpgroup's 64 rows
        const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
        kl_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            kl_wgmma_m64n128k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL), 1);
        }
        kl_wgmma_commit();
        kl_wgmma_wait<0>();
        kl_wgmma_fence_acc64(d);
        __syncthreads(); // every warpgroup is done reading stage s
        if (tid == 0 && kt + STAGES < numK) issue(s, kt + STAGES);
    }

    kl_store_acc_m64(d, C, M, N, m0 + wg * 64, n0, alpha, beta);
}
