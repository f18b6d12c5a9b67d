#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_sm90.cuh"

// 09_wgmma_moe_tma_store.cu — kernel 06 with lab 02's bf16 epilogue (kernel 15): the tile goes out
// through shared memory and TMA stores. GPU only (sm_90a).
//
// Kernel 06 stores its bf16 tile straight from the accumulators: each thread writes 4-byte pairs,
// so a warp's store touches 8 rows of 16 bytes each, and 64 such stores leave a warpgroup per
// tile. Here each consumer warpgroup converts its 64×256 half tile in four 64×64 chunks into an
// 8 KiB staging buffer in the 128-byte swizzled layout (conflict-free), and one thread hands each
// chunk to the copy engine (cp.async.bulk.tensor over a 2-D map of Y), as kernel 15 does.
//
// What grouping adds: a TMA store clips only at Y's edges, not at an expert's last row, and the
// rows after it belong to the next expert (another block's tile). So a warpgroup whose 64 rows lie
// wholly inside its expert stores through TMA; one whose rows run past the expert's end (the last
// tile row of an expert whose row count is not a multiple of 64) stores from registers with
// bounds checks, as kernel 06. The choice is the same for a warpgroup's 128 threads, so the
// staging barriers are never split.
//
// Shared memory: 4 stages × 48 KiB + 2 × 8 KiB of staging + barriers + 1 KiB of alignment slack:
// 214 080 bytes. Named barriers 2 and 3 guard the two staging buffers (barrier 1 is the
// timeline's, for both consumer warpgroups).
// Launch: as kernel 06, plus the tensor map of Y (bf16, T × N, boxes of 64 × 64, 128-byte swizzle).

#define BM 128
#define BN 256
#define BK 64
#define STAGES 4
#define BAND_M 8
#define A_BYTES (BM * BK * 2)
#define B_PANEL (64 * BK * 2)
#define B_BYTES (BN / 64 * B_PANEL)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define CHUNK_COLS 64                     // columns of Y per TMA store (128 bytes of bf16)
#define CHUNK_BYTES (64 * CHUNK_COLS * 2) // one warpgroup's 64 rows: 8 KiB

extern "C" __global__ void __launch_bounds__(384, 1)
moe_wgmma_tma_store(const int* __restrict__ offs, int E, int N, int K, __nv_bfloat16* __restrict__ Y,
                     const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW,
                    const __grid_constant__ CUtensorMap tmY, unsigned long long* tl) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    unsigned char* smem = kl_align1024(smem_raw);
    unsigned char* stage_c = smem + STAGES * STAGE_BYTES; // one chunk buffer per consumer warpgroup
    uint64_t* full = reinterpret_cast<uint64_t*>(stage_c + 2 * CHUNK_BYTES);
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
        kl_tma_prefetch(&tmY);
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
        const int cw = wg - 1, lt = tid % 128;
        const bool leader = lt == 0; // issues this warpgroup's TMA stores
        unsigned char* buf = stage_c + cw * CHUNK_BYTES;
        // This thread's place in the m64 accumulator tile: row rr (+8), columns cc, cc+1 of each
        // 8-column block.
        const int rr = 16 * (lt / 32) + (lt % 32) / 4, cc = 2 * (lt % 4);
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
            const int row0 = tm * BM + cw * 64; // in the expert's rows
            if (row0 + 64 > M) {
                klg_store_acc_bf16(d, Y + (long long)r0 * N, M, N, row0, tn * BN);
            } else {
#pragma unroll
                for (int q = 0; q < BN / CHUNK_COLS; ++q) {
                    if (leader) kl_bulk_wait_read<0>(); // the previous store has read the buffer
                    kl_named_barrier(2 + cw, 128);
#pragma unroll
                    for (int j = 0; j < 8; ++j)
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int i = 4 * (8 * q + j) + 2 * h;
                            *reinterpret_cast<uint32_t*>(buf + kl_sw128_offset(rr + 8 * h, 8 * j + cc)) =
                                kl_pack_bf16x2(d[i], d[i + 1]);
                        }
                    kl_fence_proxy_async();
                    kl_named_barrier(2 + cw, 128);
                    const int col0 = tn * BN + q * CHUNK_COLS;
                    if (leader && col0 < N) {
                        kl_tma_store_2d(&tmY, buf, col0, r0 + row0);
                        kl_bulk_commit();
                    }
                }
            }
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
        if (leader) kl_bulk_wait_all(); // shared memory must outlive the stores that read it
    }
    (void)tl;
}
