#include "kl.cuh"
#include "gemm_common.cuh"
#include "gemm_sm90.cuh"

// 13_wgmma_ws.cu — warp specialization: a producer warpgroup loads, two consumer warpgroups compute.
//
// Over kernel 12: kernel 12 makes every thread take part in every step (wait for the stage, compute,
// wait for the MMA to finish, block-wide barrier), so the tensor cores sit idle at each barrier and
// while the last wgmma of a step drains. Here the roles are split:
//   * warpgroup 0, the PRODUCER, only issues TMA copies (one thread does it). It waits on an "empty"
//     mbarrier per stage before refilling it; it gives most of its registers away
//     (setmaxnreg.dec to 40) because it needs none.
//   * warpgroups 1 and 2, the CONSUMERS, wait on the stage's "full" mbarrier, issue their 4 wgmma,
//     commit, and wait only for the PREVIOUS step's wgmma group (wgmma.wait_group 1) before
//     releasing that step's stage with one arrival on its "empty" barrier. The tensor core always
//     has the next group queued. They take the registers the producer gave up
//     (setmaxnreg.inc to 232): each computes 64×256 with m64n256k16, 128 fp32 accumulators a thread.
// No __syncthreads after the start: the three warpgroups meet only through the mbarriers.
// The block tile grows to 128×256 (one A tile feeds twice the columns), a stage to 48 KiB
// (A 128×64 + B 64×256 as four 64×64 boxes), 4 stages = 192 KiB of shared memory.
//
// Tensor maps: as kernel 12 (tmA box {64, 128}, tmB box {64, 64}, swizzle 128B).
// Sizes: K % 8 == 0 and N % 8 == 0 (TMA strides); any M, N, K otherwise.
//
// Launch: block 384 (3 warpgroups), grid (ceil(N/256), ceil(M/128)), dynamic shared memory 197760
// bytes (1 KiB slack + 4 × 48 KiB + barriers).

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define A_BYTES (BM * BK * 2)   // 16 KiB
#define B_PANEL (64 * BK * 2)   // 8 KiB
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)

extern "C" __global__ void __launch_bounds__(384, 1)
hgemm_wgmma_ws(int M, int N, int K, float alpha, float beta, float* __restrict__ C,
               const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x, wg = tid / 128;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int numK = (K + BK - 1) / BK;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);  // the producer's arrive (+ the TMA bytes)
            kl_mbar_init(&empty[s], 2); // one arrive per consumer warpgroup
        }
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmA);
        kl_tma_prefetch(&tmB);
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer ----
        kl_setmaxnreg_dec<40>();
        if (tid == 0) {
            for (int kt = 0; kt < numK; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) kl_mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1); // consumers released it
                unsigned char* st = smem + s * STAGE_BYTES;
                kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                kl_tma_load_2d(st, &tmA, &full[s], kt * BK, m0);
#pragma unroll
                for (int p = 0; p < BN / 64; ++p)
                    kl_tma_load_2d(st + A_BYTES + p * B_PANEL, &tmB, &full[s], n0 + 64 * p, kt * BK);
            }
        }
    } else {
        // ---- consumers ----
        kl_setmaxnreg_inc<232>();
        const int cw = wg - 1; // rows 64·cw .. of the block tile
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        for (int kt = 0; kt < numK; ++kt) {
            const int s = kt % STAGES;
            kl_mbar_wait(&full[s], (kt / STAGES) & 1);
            const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
            const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
            kl_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                kl_wgmma_m64n256k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL), 1);
            }
            kl_wgmma_commit();
            kl_wgmma_wait<1>(); // the group of step kt-1 is done: its stage can be refilled
            if (kt > 0 && tid % 128 == 0) kl_mbar_arrive(&empty[(kt - 1) % STAGES]);
        }
        kl_wgmma_wait<0>();
        kl_wgmma_fence_acc128(d);
        kl_store_acc_m64(d, C, M, N, m0 + cw * 64, n0, alpha, beta);
    }
}
