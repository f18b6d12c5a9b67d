#include "kl.cuh"
#include "gemm_common.cuh"
#include "gemm_sm90.cuh"

// 18_splitk_cluster_decode.cu — skinny M on the tensor cores: split-K over a cluster, the partial
// sums added up through distributed shared memory.
//
// Over kernel 16: kernel 16 sums on the CUDA cores, and at M = 16 each byte of B costs 8 fp32 FMAs
// plus the conversions, as long as reading the byte; and kernel 15 at M = 16 has only N/256 = 32
// blocks for 132 SMs, each streaming all of K. What skinny M needs is many blocks, each streaming a
// different part of B through a deep pipeline, and arithmetic that costs nothing next to the
// reads. So:
//   * the tensor cores do the arithmetic: A (M ≤ 64 rows, the rows past M zero-filled by TMA) and
//     a 64×128 slice of B per k step, both through TMA into 128-byte swizzled shared memory, one
//     warpgroup issuing wgmma m64n128k16 (kernel 12's layouts). At M = 16 three quarters of the
//     products are of zero rows: the tensor cores have that to spare (2·64·N·K flops in the time
//     of reading B is under half of the rate lab 01 measured for them);
//   * a tile of C (64 rows × BN = 128 columns) is split over S blocks along K (launch params
//     split_k: S, cluster: S; grid.x = N/128 × S), each streaming K/S rows of B. As kept, S = 2
//     and 8 stages of 24 KiB: at N = K = 8192, 128 blocks of 160 threads, one to an SM, each with
//     up to 8 × 16 KiB of B in flight. The bf16_decode suite measures the alternatives: 4 stages
//     with two blocks an SM (S = 2, 4, 8), and 256-column blocks;
//   * the S blocks of a tile form a cluster (__cluster_dims__(S, 1, 1)). After the main loop each
//     writes its fp32 partial tile (only the rows < M) into its own shared memory, the cluster
//     meets at a barrier, and block r adds up columns [r·128/S, (r+1)·128/S) of all S partials,
//     reading the other blocks' shared memory directly (mapa + ld.shared::cluster), and writes
//     alpha·sum + beta·C as bf16. No workspace in global memory, no second kernel, no atomics; a
//     second cluster barrier keeps every block's shared memory alive until the others have read it;
//   * one producer warp (warp 4) issues the TMA loads; the consumer warpgroup (warps 0–3, the first
//     warpgroup, as wgmma requires) releases a stage as soon as the wgmma that read it is done.
// Shared memory: STAGES × (8 + BN/4) KiB + barriers + 1 KiB of alignment slack (197 760 bytes at 8
// stages of 128 columns, 99 392 at 4); the partial tile (64 × (BN + 8) fp32, rows padded by 32
// bytes against bank conflicts) reuses the stage buffers once the main loop is over.
//
// Tensor maps: A box {64 (k), 64 rows}, B box {64 columns, 64 (k)}, both 128-byte swizzled
// (kernel 12's, with bm = 64). Sizes: K % 8 == 0 and N % 8 == 0 (TMA strides); any M (rows of C
// past 64 are further tile rows, grid.y = ceil(M/64), each streaming B again: for M > 64 kernel 15
// or 17 is the better choice). Launch: block 160, grid (ceil(N/128) × S, ceil(M/64)).

#define BM 64
#define BK 64
#define A_BYTES (BM * BK * 2)
#define B_PANEL (64 * BK * 2)

// S blocks a cluster (the split of K), STAGES pipeline stages, BN columns of C a block (128, or
// 256: wgmma m64n256k16 and twice the bytes of B a stage).
template <int S, int STAGES, int BN>
__device__ __forceinline__ void splitk_body(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
                                            const CUtensorMap& tmA, const CUtensorMap& tmB) {
    static_assert(BN == 128 || BN == 256, "wgmma n128 or n256");
    constexpr int B_BYTES = BN / 64 * B_PANEL, STAGE_BYTES = A_BYTES + B_BYTES;
    constexpr int RED_LD = BN + 8; // floats a row of the partial tile
    constexpr int NACC = BN / 2;   // accumulators a thread: m64nBN over 128 threads
    static_assert(BN % (4 * S) == 0, "whole float4 groups of columns a block");
    static_assert(BM * RED_LD * 4 <= STAGES * STAGE_BYTES, "the partial tile fits in the stage buffers");
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char* smem = kl_align1024(smem_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
    uint64_t* empty = full + STAGES;
    float* red = reinterpret_cast<float*>(smem);

    const int tid = threadIdx.x;
    const uint32_t rank = S > 1 ? kl_cluster_rank() : 0;
    const int n0 = (blockIdx.x / S) * BN, m0 = blockIdx.y * BM;
    const int numK = (K + BK - 1) / BK;
    const int kBegin = (int)(((long long)numK * rank) / S), kEnd = (int)(((long long)numK * (rank + 1)) / S);
    const int steps = kEnd - kBegin;
    const int rowsValid = min(BM, M - m0);

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            kl_mbar_init(&full[s], 1);
            kl_mbar_init(&empty[s], 1);
        }
        kl_mbar_init_fence();
        kl_tma_prefetch(&tmA);
        kl_tma_prefetch(&tmB);
    }
    __syncthreads();

    if (tid >= 128) {
        // ---- producer: warp 4, one thread ----
        if (tid == 128) {
            for (int it = 0; it < steps; ++it) {
                const int s = it % STAGES, kt = kBegin + it;
                if (it >= STAGES) kl_mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                unsigned char* st = smem + s * STAGE_BYTES;
                kl_mbar_arrive_expect_tx(&full[s], STAGE_BYTES);
                kl_tma_load_2d(st, &tmA, &full[s], kt * BK, m0);
#pragma unroll
                for (int p = 0; p < BN / 64; ++p)
                    kl_tma_load_2d(st + A_BYTES + p * B_PANEL, &tmB, &full[s], n0 + 64 * p, kt * BK);
            }
        }
    } else {
        // ---- consumer warpgroup ----
        float d[NACC];
#pragma unroll
        for (int i = 0; i < NACC; ++i) d[i] = 0.0f;
        for (int it = 0; it < steps; ++it) {
            const int s = it % STAGES;
            kl_mbar_wait(&full[s], (it / STAGES) & 1);
            const uint32_t sA = kl_smem_u32(smem + s * STAGE_BYTES);
            const uint32_t sB = kl_smem_u32(smem + s * STAGE_BYTES + A_BYTES);
            kl_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                if constexpr (BN == 256)
                    kl_wgmma_m64n256k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL), 1);
                else
                    kl_wgmma_m64n128k16_bf16(d, kl_desc_k_sw128(sA + 32 * kk), kl_desc_mn_sw128(sB + 2048 * kk, B_PANEL), 1);
            }
            kl_wgmma_commit();
            kl_wgmma_wait<1>();
            if (it > 0 && tid == 0) kl_mbar_arrive(&empty[(it - 1) % STAGES]);
        }
        kl_wgmma_wait<0>();
        if constexpr (BN == 256)
            kl_wgmma_fence_acc128(d);
        else
            kl_wgmma_fence_acc64(d);
        // Every stage has been waited for and read: the buffers take the partial tile. Thread t
        // holds rows 16w + l/4 (+8), columns 8j + 2(l%4), +1 of each 8-column block j.
        const int rr = 16 * (tid / 32) + (tid % 32) / 4, cc = 2 * (tid % 4);
        kl_named_barrier(1, 128); // all four warps are past their last wgmma before anyone writes
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = rr + 8 * h;
                if (row < rowsValid)
                    *reinterpret_cast<float2*>(red + row * RED_LD + 8 * j + cc) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            }
    }

    // ---- the reduction: block `rank` adds up its columns of the S partial tiles ----
    if constexpr (S > 1)
        kl_cluster_sync(); // every block's partial tile is written
    else
        __syncthreads();
    constexpr int CW = BN / S; // columns a block reduces and writes
    const int groups = rowsValid * (CW / 4);
    const uint32_t redAddr = kl_smem_u32(red);
    for (int e = tid; e < groups; e += blockDim.x) {
        const int row = e / (CW / 4), col = (int)rank * CW + 4 * (e % (CW / 4));
        const uint32_t off = (uint32_t)(row * RED_LD + col) * 4u;
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int q = 0; q < S; ++q) {
            const float4 p = S > 1 ? kl_ld_dsmem_f4(kl_mapa(redAddr + off, (uint32_t)q))
                                   : *reinterpret_cast<const float4*>(red + row * RED_LD + col);
            sum.x += p.x, sum.y += p.y, sum.z += p.z, sum.w += p.w;
        }
        const float v[4] = {sum.x, sum.y, sum.z, sum.w};
        const int gcol = n0 + col;
        uint16_t* c = C + (long long)(m0 + row) * N + gcol;
        if (N % 4 == 0 && gcol + 3 < N) {
            uint2 o = make_uint2(0u, 0u);
            if (beta != 0.0f) o = *reinterpret_cast<const uint2*>(c);
            const float b0 = __uint_as_float(o.x << 16), b1 = __uint_as_float(o.x & 0xFFFF0000u);
            const float b2 = __uint_as_float(o.y << 16), b3 = __uint_as_float(o.y & 0xFFFF0000u);
            *reinterpret_cast<uint2*>(c) = make_uint2(kl_pack_bf16x2(alpha * v[0] + beta * b0, alpha * v[1] + beta * b1),
                                                      kl_pack_bf16x2(alpha * v[2] + beta * b2, alpha * v[3] + beta * b3));
        } else {
#pragma unroll
            for (int x = 0; x < 4; ++x) {
                if (gcol + x >= N) break;
                float r = alpha * v[x];
                if (beta != 0.0f) r += beta * __uint_as_float((uint32_t)c[x] << 16);
                c[x] = kl_bf16_bits(kl_float2bf16(r));
            }
        }
    }
    if constexpr (S > 1) kl_cluster_sync(); // no block exits while another still reads its partial tile
}

// As kept (bf16_decode): K split in 2, 8 stages of 128 columns (one block an SM).
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(160, 1)
hgemm_splitk_cluster(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    splitk_body<2, 8, 128>(M, N, K, alpha, beta, C, tmA, tmB);
}
// The alternatives of the bf16_decode suite: the split, the depth, the width of a block's columns.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(160, 2)
hgemm_splitk_cluster_s2p4(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    splitk_body<2, 4, 128>(M, N, K, alpha, beta, C, tmA, tmB);
}
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(160, 2)
hgemm_splitk_cluster_s4p4(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    splitk_body<4, 4, 128>(M, N, K, alpha, beta, C, tmA, tmB);
}
extern "C" __global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(160, 2)
hgemm_splitk_cluster_s8p4(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    splitk_body<8, 4, 128>(M, N, K, alpha, beta, C, tmA, tmB);
}
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(160, 1)
hgemm_splitk_cluster_s4p5w(int M, int N, int K, float alpha, float beta, uint16_t* __restrict__ C,
    const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {
    splitk_body<4, 5, 256>(M, N, K, alpha, beta, C, tmA, tmB);
}
