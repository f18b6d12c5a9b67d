#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_sm90.cuh"

// 06_wgmma_moe.cu — the MoE form on Hopper: wgmma fed by TMA, warp-specialized and persistent.
// GPU only (sm_90a).
//
// Over kernels 04 and 05: lab 02's fastest kernel (14_wgmma_persistent.cu) with kernel 04's MoE
// scheduler. Three warpgroups: a producer (one thread issues the TMA copies) and two consumers
// (64 rows of the 128×256 tile each, wgmma.m64n256k16 out of shared memory), four 48 KiB stages
// between them guarded by mbarriers. The producer runs ahead across tile boundaries, so the next
// tile's first stages load while the consumers still multiply or store the current one — the
// bubble between tiles of kernel 05 is gone.
//
// What grouping changes:
//   * the tile → expert map reads the row offsets in device memory (prefix sums in shared memory,
//     binary search), as kernel 04 does: no sizes on the host, no synchronization after routing;
//   * A comes from ONE 2-D tensor map of the whole token matrix X (K innermost, T rows): a tile of
//     expert e starts at row offs[e] + tm·128. Its last rows may belong to the next expert or lie
//     past the end of X (TMA fills those with zeros); either way they are computed and not stored;
//   * B comes from ONE 3-D tensor map of the stack of weights W (N innermost, then K, then E):
//     box (64 columns, 64 rows of k, 1 expert). K steps past the end read zeros inside the same
//     expert, never the next expert's rows;
//   * the epilogue writes bf16 straight from the accumulators and stops at the expert's last row.
// Consumers start each tile with scale-d = 0 (no zeroing), as in kernel 14.
//
// Needs K % 8 == 0 and N % 8 == 0 (TMA strides are multiples of 16 bytes), K > 0, and at most
// KL_GROUPED_MAX_GROUPS experts. Launch: block 384, grid = SMs (a block without tiles returns at
// once), dynamic shared memory 197760 bytes (4 stages + barriers + 1 KiB for alignment).

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define BAND_M 8
#define A_BYTES (BM * BK * 2)
#define B_PANEL (64 * BK * 2)
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)

extern "C" __global__ void __launch_bounds__(384, 1)
moe_wgmma_persistent(const int* __restrict__ offs, int E, int N, int K, __nv_bfloat16* __restrict__ Y,
                     const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                     unsigned long long* tl) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    unsigned char* smem = kl_align1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x, wg = tid / 128;
    const int numK = (K + BK - 1) / BK;
    const int tilesN = (N + BN - 1) / BN;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);  // the producer's arrival (with the stage's bytes)
            kl_mbar_init(&empty[s], 2); // one arrival per consumer warpgroup
        }
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmX);
        kl_tma_prefetch(&tmW);
    }
    // The prefix sums of the experts' tiles; its barriers also publish the mbarriers' set-up.
    const int total = kl_tile_prefix_moe(offs, E, N, BM, BN, s_prefix);

    if (wg == 0) {
        // ---- producer ----
        kl_setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0; // pipeline step, counted across tiles
            for (int t = blockIdx.x; t < total; t += gridDim.x) {
                const int e = kl_find_group(s_prefix, E, t);
                const int r0 = offs[e], M = offs[e + 1] - r0;
                int tm, tn;
                kl_tile_coords(t - s_prefix[e], (M + BM - 1) / BM, tilesN, BAND_M, tm, tn);
                for (int kt = 0; kt < numK; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) kl_mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    unsigned char* st = smem + s * STAGE_BYTES;
                    kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                    kl_tma_load_2d(st, &tmX, &full[s], kt * BK, r0 + tm * BM);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        klg_tma_load_3d(st + A_BYTES + p * B_PANEL, &tmW, &full[s], tn * BN + 64 * p, kt * BK, e);
                }
            }
        }
    } else {
        // ---- consumers ----
        kl_setmaxnreg_inc<232>();
        const int cw = wg - 1;
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.0f;
        int it = 0;
        for (int t = blockIdx.x; t < total; t += gridDim.x) {
            const unsigned long long t0 = kl_tl_start();
            const int e = kl_find_group(s_prefix, E, t);
            const int r0 = offs[e], M = offs[e + 1] - r0;
            int tm, tn;
            kl_tile_coords(t - s_prefix[e], (M + BM - 1) / BM, tilesN, BAND_M, tm, tn);
            for (int kt = 0; kt < numK; ++kt, ++it) {
                const int s = it % STAGES;
                kl_mbar_wait(&full[s], (it / STAGES) & 1);
                const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES) + cw * 64 * 128;
                const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
                kl_wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    // The first k16 step of a tile overwrites the accumulators (scale-d = 0).
                    kl_wgmma_m64n256k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL),
                                              (kt > 0 || kk > 0) ? 1 : 0);
                }
                kl_wgmma_commit();
                kl_wgmma_wait<1>();
                if (kt > 0 && tid % 128 == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
            }
            kl_wgmma_wait<0>();
            if (tid % 128 == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]); // the tile's last stage
            kl_wgmma_fence_acc128(d);
            klg_store_acc_bf16(d, Y + (long long)r0 * N, M, N, tm * BM + cw * 64, tn * BN);
#ifdef KL_TIMELINE
            klg_bar_sync(1, 256); // both consumer warpgroups have stored the tile
            if (tid == 128 && tl != nullptr) {
                unsigned long long* r = tl + 4ll * t;
                r[0] = kl_smid();
                r[1] = (unsigned long long)e;
                r[2] = t0;
                r[3] = kl_globaltimer_ns();
            }
#endif
            (void)t0;
        }
    }
    (void)tl;
}
