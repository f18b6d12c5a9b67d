#include "kl.cuh"
#include "grouped_sched.cuh"
#include "grouped_f32.cuh"

// Exercise 1 — a MoE layer's experts with the dispatch fused: the grouped GEMM reads each routed
// row straight from the token matrix, through the routing's row list.
//
// The chapter's MoE form takes X already permuted: the dispatch has copied every token's row once
// per chosen expert into a matrix sorted by expert. That copy costs a pass over T·K elements
// through memory before the GEMM can start. Here there is no permuted copy:
//
//   Xtok      the token matrix, in token order (row-major, K wide);
//   rows      the routing's row list, T entries sorted by expert: routed row j is row rows[j] of
//             Xtok, and expert e owns routed rows offs[e] .. offs[e+1]−1;
//   W         the experts' weights, E×K×N: expert e's K×N matrix at W + e·K·N;
//   Y         the output, T×N, in routed order: Y[j] = Xtok[rows[j]] · W_e for j of expert e;
//   offs      offs[0..E] in device memory (a router kernel may have written them just before).
// Experts may be empty, sizes need not be multiples of the tile, and nothing outside Y's rows may
// be written.
//
// Written for you: ex1_tile, kernel 02's 128×128 tile (grouped_f32.cuh's double-buffered one) with
// its loads of A taken out. Your part:
//   1. ex1_gather_rows: the thread's LA rows of the tile. In kl_f32::load_tiles, thread tid's l-th
//      load of A is tile row (tid + l·NT) / (BK/4) — the same row at every step of K — and here
//      tile row r of expert e is token row rows[r0 + m0 + r] of Xtok (r0 = offs[e]). Look each one
//      up once per tile, not at every step of K: arow[l] = the address of that row in Xtok, or
//      nullptr past the expert's Me rows;
//   2. ex1_load_tiles: the A part. Load float4 number l of the 128×16 slice at k0 from arow[l]
//      exactly as kl_f32::load_tiles does (columns k0 + ((tid + l·NT) % (BK/4))·4 .. +3), zeros
//      for a nullptr row. kl_f32::load4 with rows = 1 checks the columns against K and uses the
//      16-byte load where vecA says it is legal (K % 4 == 0 and Xtok 16-byte aligned);
//   3. the persistent loop of ex1_moe_gather: the grid is SMs × 2 blocks of 128 threads; block b
//      walks tiles b, b + gridDim.x, ... of all experts, numbered as the chapter numbers them
//      (kl_tile_prefix_moe, kl_find_group, kl_tile_coords with BAND_M tile rows per band), and
//      calls ex1_tile for each, between kl_tl_start and kl_tl_end (leave those in place).
//
// The grader checks one expert with one row and N = K = 1, empty experts, N and K that are not
// multiples of the tile, and more tiles than the grid has blocks, every element of Y against a
// float64 product and the rest of the arena for stray writes; on a GPU, your time against kernel
// 02 on the permuted X (the bar: the fused gather should cost close to nothing).

#define BAND_M 8

namespace ex1 {
using namespace kl_f32;

// ex1_gather_rows finds the thread's LA rows of A for the tile at row m0 of expert e (r0 its first
// routed row, Me its number of rows): their addresses in Xtok, nullptr past the expert's rows.
__device__ __forceinline__ void ex1_gather_rows(const float* (&arow)[LA], const float* __restrict__ Xtok,
                                                const int* __restrict__ rows, int r0, int Me, int K, int m0) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        // BEGIN SOLUTION
        const int r = m0 + (tid + l * NT) / (BK / 4);
        arow[l] = r < Me ? Xtok + (long long)rows[r0 + r] * K : nullptr;
        // STUB: arow[l] = nullptr;
        // END SOLUTION
    }
}

// ex1_load_tiles loads the next 128×16 slice of A (from the rows arow) and 16×128 slice of B into
// registers.
__device__ __forceinline__ void ex1_load_tiles(float4 (&ra)[LA], float4 (&rb)[LB], const float* const (&arow)[LA],
                                               const float* __restrict__ We, int N, int K, int n0, int k0, bool vecA,
                                               bool vecB) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        // BEGIN SOLUTION
        const int c = k0 + ((tid + l * NT) % (BK / 4)) * 4;
        ra[l] = arow[l] != nullptr ? load4(arow[l], 0, c, 1, K, K, vecA) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        // STUB: ra[l] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        // END SOLUTION
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int idx = tid + l * NT;
        rb[l] = load4(We, k0 + idx / (BN / 4), n0 + (idx % (BN / 4)) * 4, K, N, N, vecB);
    }
}

// ex1_tile computes Y_e[m0.., n0..] for the 128×128 tile of expert e (Ye = Y + r0·N). Every thread
// of the block calls it; like kl_f32_tile it ends with a barrier, so a block may call it again.
__device__ __forceinline__ void ex1_tile(const float* __restrict__ Xtok, const int* __restrict__ rows, int r0, int Me,
                                         const float* __restrict__ We, float* __restrict__ Ye, int N, int K, int m0,
                                         int n0) {
    __shared__ __align__(16) float As[2 * AS];
    __shared__ __align__(16) float Bs[2 * BS];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / WARPS_N, wc = warp % WARPS_N;
    const int lr = lane / LC, lc = lane % LC;
    const int rowBase = wr * WM + lr * 4;
    const int colBase = wc * WN + lc * 4;
    const bool vecA = (K % 4) == 0 && aligned16(Xtok);
    const bool vecB = (N % 4) == 0 && aligned16(We);
    const bool vecC = (N % 4) == 0 && aligned16(Ye);

    const float* arow[LA]; // the thread's rows of A in Xtok, looked up once per tile
    ex1_gather_rows(arow, Xtok, rows, r0, Me, K, m0);
    float4 ra[LA], rb[LB];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    ex1_load_tiles(ra, rb, arow, We, N, K, n0, 0, vecA, vecB);
    store_tiles(ra, rb, As, Bs);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) ex1_load_tiles(ra, rb, arow, We, N, K, n0, k0 + BK, vecA, vecB);
        const float* as = As + buf * AS;
        const float* bs = Bs + buf * BS;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
            for (int s = 0; s < SM; ++s) {
                const float4 v = *reinterpret_cast<const float4*>(&as[kk * (BM + APAD) + rowBase + s * LR * 4]);
                regM[s * 4 + 0] = v.x;
                regM[s * 4 + 1] = v.y;
                regM[s * 4 + 2] = v.z;
                regM[s * 4 + 3] = v.w;
            }
#pragma unroll
            for (int s = 0; s < SN; ++s) {
                const float4 v = *reinterpret_cast<const float4*>(&bs[kk * BN + colBase + s * LC * 4]);
                regN[s * 4 + 0] = v.x;
                regN[s * 4 + 1] = v.y;
                regN[s * 4 + 2] = v.z;
                regN[s * 4 + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        if (more) store_tiles(ra, rb, As + (buf ^ 1) * AS, Bs + (buf ^ 1) * BS);
        __syncthreads();
        buf ^= 1;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + rowBase + (i / 4) * LR * 4 + (i % 4);
#pragma unroll
        for (int s = 0; s < SN; ++s) {
            store4(Ye, row, n0 + colBase + s * LC * 4, Me, N, N, vecC,
                   make_float4(acc[i][s * 4], acc[i][s * 4 + 1], acc[i][s * 4 + 2], acc[i][s * 4 + 3]));
        }
    }
}

} // namespace ex1

extern "C" __global__ void KL_LAUNCH_BOUNDS(KL_F32_THREADS, 2)
ex1_moe_gather(const float* __restrict__ Xtok, const int* __restrict__ rows, const float* __restrict__ W,
               float* __restrict__ Y, const int* __restrict__ offs, int E, int N, int K, unsigned long long* tl) {
    __shared__ int s_prefix[KL_GROUPED_MAX_GROUPS + 1];
    // BEGIN SOLUTION
    const int total = kl_tile_prefix_moe(offs, E, N, KL_F32_BM, KL_F32_BN, s_prefix);
    for (int t = blockIdx.x; t < total; t += gridDim.x) {
        const unsigned long long t0 = kl_tl_start();
        const int e = kl_find_group(s_prefix, E, t);
        const int r0 = offs[e], Me = offs[e + 1] - r0;
        int tm, tn;
        kl_tile_coords(t - s_prefix[e], (Me + KL_F32_BM - 1) / KL_F32_BM, (N + KL_F32_BN - 1) / KL_F32_BN, BAND_M, tm,
                       tn);
        ex1::ex1_tile(Xtok, rows, r0, Me, W + (long long)e * K * N, Y + (long long)r0 * N, N, K, tm * KL_F32_BM,
                      tn * KL_F32_BN);
        kl_tl_end(tl, t, e, t0);
    }
    // END SOLUTION
    (void)s_prefix;
    (void)tl;
}
