// grouped_f32.cuh — one 128×128 tile of an fp32 GEMM on the CUDA cores, for lab 03's kernels.
// Plain CUDA (it runs on the CPU emulator too); include after "kl.cuh" and "grouped_sched.cuh".
//
// It is lab 02's best fp32 kernel (09_double_buffering.cu: warp tiling, 128-bit loads, the A tile
// stored transposed, two shared-memory buffers so the next tile's loads fly during the FMAs) cut
// loose from blockIdx: kl_f32_tile computes the tile whose top-left output is (m0, n0) of any group,
// so the same code serves a grid of one GEMM (one block per tile) and a persistent block that
// walks the tiles of many GEMMs. Shape: 128 threads, 4 warps of 64×64, 16×8 results per thread,
// K steps of 16, 32.5 KiB of static shared memory.
//
// Every size works: loads outside the matrices read zeros, stores outside C are skipped, and K = 0
// gives a tile of zeros. The 16-byte loads and stores are used where they are legal: leading
// dimensions that are multiples of 4 and 16-byte aligned matrices (the kernels check both).
#pragma once

#define KL_F32_BM 128
#define KL_F32_BN 128
#define KL_F32_BK 16
#define KL_F32_THREADS 128

namespace kl_f32 {

constexpr int BM = KL_F32_BM, BN = KL_F32_BN, BK = KL_F32_BK, NT = KL_F32_THREADS;
constexpr int WM = 64, WN = 64, TM = 16, TN = 8, APAD = 4;
constexpr int WARPS_N = BN / WN;
constexpr int LR = WM / TM, LC = WN / TN; // lanes along a warp tile's rows and columns: 4 × 8
constexpr int SM = TM / 4, SN = TN / 4;
constexpr int AS = BK * (BM + APAD), BS = BK * BN; // floats per buffer
constexpr int LA = BM * BK / 4 / NT, LB = BK * BN / 4 / NT;
static_assert(LR * LC == 32, "a warp is 32 lanes");
static_assert((BM / WM) * (BN / WN) * 32 == NT, "one warp per warp tile");
static_assert(LA * 4 * NT == BM * BK && LB * 4 * NT == BK * BN, "tiles split evenly over threads");

// kl_load4 from lab 02 with a general leading dimension: four floats p[r·ld + c .. c+3] of a
// rows×cols matrix, zeros outside it; vec says the 16-byte load is legal when all four are inside.
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int r, int c, int rows, int cols, int ld,
                                        bool vec) {
    if (vec && r < rows && c + 3 < cols) return *reinterpret_cast<const float4*>(p + (long long)r * ld + c);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < rows) {
        const float* q = p + (long long)r * ld;
        if (c + 0 < cols) v.x = q[c + 0];
        if (c + 1 < cols) v.y = q[c + 1];
        if (c + 2 < cols) v.z = q[c + 2];
        if (c + 3 < cols) v.w = q[c + 3];
    }
    return v;
}

__device__ __forceinline__ void store4(float* __restrict__ C, int r, int c, int rows, int cols, int ld, bool vec,
                                       float4 v) {
    if (r >= rows) return;
    float* q = C + (long long)r * ld + c;
    if (vec && c + 3 < cols) {
        *reinterpret_cast<float4*>(q) = v;
        return;
    }
    if (c + 0 < cols) q[0] = v.x;
    if (c + 1 < cols) q[1] = v.y;
    if (c + 2 < cols) q[2] = v.z;
    if (c + 3 < cols) q[3] = v.w;
}

__device__ __forceinline__ void load_tiles(float4 (&ra)[LA], float4 (&rb)[LB], const kl_gview<float, float>& g,
                                           int m0, int n0, int k0, bool vecA, bool vecB) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int idx = tid + l * NT;
        ra[l] = load4(g.A, m0 + idx / (BK / 4), k0 + (idx % (BK / 4)) * 4, g.M, g.K, g.lda, vecA);
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int idx = tid + l * NT;
        rb[l] = load4(g.B, k0 + idx / (BN / 4), n0 + (idx % (BN / 4)) * 4, g.K, g.N, g.ldb, vecB);
    }
}

__device__ __forceinline__ void store_tiles(const float4 (&ra)[LA], const float4 (&rb)[LB], float* as, float* bs) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < LA; ++l) {
        const int idx = tid + l * NT;
        const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
        as[(c + 0) * (BM + APAD) + r] = ra[l].x;
        as[(c + 1) * (BM + APAD) + r] = ra[l].y;
        as[(c + 2) * (BM + APAD) + r] = ra[l].z;
        as[(c + 3) * (BM + APAD) + r] = ra[l].w;
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
        const int idx = tid + l * NT;
        *reinterpret_cast<float4*>(&bs[(idx / (BN / 4)) * BN + (idx % (BN / 4)) * 4]) = rb[l];
    }
}

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0; }

} // namespace kl_f32

// kl_f32_tile computes C[m0.., n0..] = A[m0.., :]·B[:, n0..] for the 128×128 tile of group g.
// Every thread of the block (128, 1-D) calls it. It reads shared memory only between its own
// barriers and ends with one, so a block may call it again at once for another tile.
__device__ __forceinline__ void kl_f32_tile(const kl_gview<float, float>& g, int m0, int n0) {
    using namespace kl_f32;
    __shared__ __align__(16) float As[2 * AS];
    __shared__ __align__(16) float Bs[2 * BS];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / WARPS_N, wc = warp % WARPS_N;
    const int lr = lane / LC, lc = lane % LC;
    const int rowBase = wr * WM + lr * 4;
    const int colBase = wc * WN + lc * 4;
    const bool vecA = (g.lda % 4) == 0 && aligned16(g.A);
    const bool vecB = (g.ldb % 4) == 0 && aligned16(g.B);
    const bool vecC = (g.ldc % 4) == 0 && aligned16(g.C);

    float4 ra[LA], rb[LB]; // the next tile, on its way from global memory
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[TM], regN[TN];

    load_tiles(ra, rb, g, m0, n0, 0, vecA, vecB);
    store_tiles(ra, rb, As, Bs);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < g.K; k0 += BK) {
        const bool more = k0 + BK < g.K;
        if (more) load_tiles(ra, rb, g, m0, n0, k0 + BK, vecA, vecB); // in flight during the FMAs
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
        if (more) store_tiles(ra, rb, As + (buf ^ 1) * AS, Bs + (buf ^ 1) * BS); // read in the previous step
        __syncthreads();
        buf ^= 1;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + rowBase + (i / 4) * LR * 4 + (i % 4);
#pragma unroll
        for (int s = 0; s < SN; ++s) {
            store4(g.C, row, n0 + colBase + s * LC * 4, g.M, g.N, g.ldc, vecC,
                   make_float4(acc[i][s * 4], acc[i][s * 4 + 1], acc[i][s * 4 + 2], acc[i][s * 4 + 3]));
        }
    }
}
