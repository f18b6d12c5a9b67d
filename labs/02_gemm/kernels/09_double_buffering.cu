#include "kl.cuh"
#include "gemm_common.cuh"

// 09_double_buffering.cu — double buffering: load the next tile while computing on this one.
//
// Over kernel 08: in kernel 08 each k step is load → barrier → compute → barrier, so while the
// loads of a tile are in flight (hundreds of cycles from L2 or HBM) the warps of the block have
// nothing to compute, and only the other resident blocks hide the wait. Here the block keeps two
// copies of As and Bs. Each step first issues the global loads of the NEXT tile into registers,
// then computes on the current tile from shared memory — the loads travel while the FMAs run —,
// then stores the registers into the other buffer and meets the others at ONE barrier. The buffer
// being written was last read in the previous step, before that step's barrier, so one barrier
// per step is enough. Cost: twice the shared memory and LA + LB float4 registers per thread.
//
// The same idea one level down (RF): the fragments a thread reads from shared memory for k step
// kk + 1 are loaded into a second set of registers while the FMAs of step kk run, and the barrier
// moves into the tile's last k step, before its FMAs, so that no warp waits at it with nothing
// in flight. Cost: TM + TN more registers.
//
// Blocks whose tiles lie wholly inside the matrices (all of them at 4096³) take a fast path with
// no bounds checks and constant address offsets; edge blocks take a checked path (see
// sgemm_dbuf_body). On the H200 it is what made BK 16 pay (see the notes).
//
// The body is a template over the tile shapes and RF. The entry sgemm_dbuf is the configuration
// kept for the H200; the entries sgemm_dbuf[_rf]_BMxBNxBK_wWMxWN are the other points of the sweep
// that chose it (suite fp32_tiles in lab.yaml; the notes show its table).
//
// Launch: block NT, grid (ceil(N/BN), ceil(M/BM)); static shared memory 2·BK·(BM + APAD + BN)·4
// bytes (32.5 KiB for sgemm_dbuf: 128×128 tile, BK 16, 256 threads of 8×8 results each).

// dbuf_load issues the global loads of the tile at k0 into registers: LA float4 of A and LB of B
// per thread (rows of A along k, rows of B along n; zeros outside the matrices).
template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void dbuf_load(float4 (&ra)[BM * BK / 4 / NT], float4 (&rb)[BK * BN / 4 / NT],
                                          const float* __restrict__ A, const float* __restrict__ B, int M, int N,
                                          int K, int m0, int n0, int k0, bool vecA, bool vecBC) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < BM * BK / 4 / NT; ++l) {
        const int idx = tid + l * NT;
        ra[l] = kl_load4(A, m0 + idx / (BK / 4), k0 + (idx % (BK / 4)) * 4, M, K, K, vecA);
    }
#pragma unroll
    for (int l = 0; l < BK * BN / 4 / NT; ++l) {
        const int idx = tid + l * NT;
        rb[l] = kl_load4(B, k0 + idx / (BN / 4), n0 + (idx % (BN / 4)) * 4, K, N, N, vecBC);
    }
}

// dbuf_store writes the registers of dbuf_load into one buffer: A transposed into as[k][m] (rows
// padded by APAD floats, see kernel 07), B as it is into bs[k][n].
template <int BM, int BN, int BK, int NT, int APAD>
__device__ __forceinline__ void dbuf_store(const float4 (&ra)[BM * BK / 4 / NT], const float4 (&rb)[BK * BN / 4 / NT],
                                           float* as, float* bs) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < BM * BK / 4 / NT; ++l) {
        const int idx = tid + l * NT;
        const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
        as[(c + 0) * (BM + APAD) + r] = ra[l].x;
        as[(c + 1) * (BM + APAD) + r] = ra[l].y;
        as[(c + 2) * (BM + APAD) + r] = ra[l].z;
        as[(c + 3) * (BM + APAD) + r] = ra[l].w;
    }
#pragma unroll
    for (int l = 0; l < BK * BN / 4 / NT; ++l) {
        const int idx = tid + l * NT;
        *reinterpret_cast<float4*>(&bs[(idx / (BN / 4)) * BN + (idx % (BN / 4)) * 4]) = rb[l];
    }
}

// dbuf_frag reads one k step's fragments from shared memory: TM values of A (this thread's rows)
// and TN of B (its columns), as float4s.
template <int BM, int BN, int TM, int TN, int LR, int LC, int APAD>
__device__ __forceinline__ void dbuf_frag(float (&regM)[TM], float (&regN)[TN], const float* as, const float* bs, int kk,
                                          int rowBase, int colBase) {
#pragma unroll
    for (int s = 0; s < TM / 4; ++s) {
        const float4 v = *reinterpret_cast<const float4*>(&as[kk * (BM + APAD) + rowBase + s * LR * 4]);
        regM[s * 4 + 0] = v.x; regM[s * 4 + 1] = v.y; regM[s * 4 + 2] = v.z; regM[s * 4 + 3] = v.w;
    }
#pragma unroll
    for (int s = 0; s < TN / 4; ++s) {
        const float4 v = *reinterpret_cast<const float4*>(&bs[kk * BN + colBase + s * LC * 4]);
        regN[s * 4 + 0] = v.x; regN[s * 4 + 1] = v.y; regN[s * 4 + 2] = v.z; regN[s * 4 + 3] = v.w;
    }
}

// dbuf_load_fast is dbuf_load for a block whose tiles lie wholly inside the matrices with 16-byte
// aligned rows (see sgemm_dbuf_body): no bounds checks, and the addresses are this thread's two
// base pointers plus offsets that do not change from tile to tile.
template <int BM, int BN, int BK, int NT>
__device__ __forceinline__ void dbuf_load_fast(float4 (&ra)[BM * BK / 4 / NT], float4 (&rb)[BK * BN / 4 / NT],
                                               const float* __restrict__ pa, const float* __restrict__ pb, int K, int N) {
#pragma unroll
    for (int l = 0; l < BM * BK / 4 / NT; ++l) ra[l] = *reinterpret_cast<const float4*>(pa + (long long)(l * NT / (BK / 4)) * K);
#pragma unroll
    for (int l = 0; l < BK * BN / 4 / NT; ++l) rb[l] = *reinterpret_cast<const float4*>(pb + (long long)(l * NT / (BN / 4)) * N);
}

// kl_int<V> carries a compile-time int through a generic lambda (the buffer index below).
template <int V> struct kl_int { static constexpr int value = V; };

// sgemm_dbuf_tiles is the main loop and the epilogue. EDGE = false is the fast path for blocks
// whose tiles are all inside the matrices (every block of a 4096³ problem): plain float4 loads
// from two pointers that advance by one tile, and no bounds checks in the epilogue. EDGE = true
// checks every element (the edge blocks, and sizes such as 1000 or 4097).
//
// With RF (register fragments double-buffered; some points of the sweep) the fragments of step
// kk + 1 are read from shared memory while the FMAs of step kk run, and the last step of a tile
// stores the next tile, meets the barrier and reads the next tile's first fragments before its
// own FMAs: the barrier's wait and the first shared loads of a tile hide behind 8 or 16 × TM·TN
// FMAs instead of stalling every warp of the block.
//
// The loop body is written once as `tile` and called twice per iteration, with buffer 0 and then
// buffer 1, so that the buffer index is a constant and every shared-memory address is a register
// plus an immediate offset (a runtime index costs a few integer instructions per tile).
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int NT, int APAD, bool RF, bool EDGE>
__device__ __forceinline__ void sgemm_dbuf_tiles(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                 const float* __restrict__ B, float beta, float* __restrict__ C,
                                                 float* As, float* Bs, int tileM, int tileN) {
    constexpr int WARPS_N = BN / WN;
    constexpr int LR = WM / TM, LC = WN / TN;
    constexpr int AS = BK * (BM + APAD), BS = BK * BN; // floats per buffer
    constexpr int LA = BM * BK / 4 / NT, LB = BK * BN / 4 / NT;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wr = warp / WARPS_N, wc = warp % WARPS_N;
    const int lr = lane / LC, lc = lane % LC;
    const int m0 = tileM * BM, n0 = tileN * BN;
    const int rowBase = wr * WM + lr * 4;
    const int colBase = wc * WN + lc * 4;
    const bool vecA = (K % 4) == 0, vecBC = (N % 4) == 0;
    // The fast path's base pointers: this thread's first float4 of A and of B in the first tile.
    const float* pa = A + (long long)(m0 + tid / (BK / 4)) * K + (tid % (BK / 4)) * 4;
    const float* pb = B + (long long)(tid / (BN / 4)) * N + n0 + (tid % (BN / 4)) * 4;

    float4 ra[LA], rb[LB]; // the next tile, on its way from global memory
    auto load = [&](int k0) {
        if (EDGE) {
            dbuf_load<BM, BN, BK, NT>(ra, rb, A, B, M, N, K, m0, n0, k0, vecA, vecBC);
        } else {
            dbuf_load_fast<BM, BN, BK, NT>(ra, rb, pa, pb, K, N);
            pa += BK;
            pb += (long long)BK * N;
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float regM[2][TM], regN[2][TN]; // RF: two sets of fragments; otherwise only set 0 is used

    load(0);
    dbuf_store<BM, BN, BK, NT, APAD>(ra, rb, As, Bs);
    __syncthreads();
    if (RF) dbuf_frag<BM, BN, TM, TN, LR, LC, APAD>(regM[0], regN[0], As, Bs, 0, rowBase, colBase);

    // One tile: compute on buffer BUF while the next tile travels, then store it into the other.
    auto tile = [&](auto bufc, int k0) {
        constexpr int buf = decltype(bufc)::value;
        const float* as = As + buf * AS;
        const float* bs = Bs + buf * BS;
        float* nas = As + (buf ^ 1) * AS;
        float* nbs = Bs + (buf ^ 1) * BS;
        const bool more = k0 + BK < K;
        if (more) load(k0 + BK); // in flight during the FMAs
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            const int cur = RF ? kk % 2 : 0;
            if (!RF) {
                dbuf_frag<BM, BN, TM, TN, LR, LC, APAD>(regM[0], regN[0], as, bs, kk, rowBase, colBase);
            } else if (kk + 1 < BK) {
                dbuf_frag<BM, BN, TM, TN, LR, LC, APAD>(regM[cur ^ 1], regN[cur ^ 1], as, bs, kk + 1, rowBase, colBase);
            } else if (more) {
                // The tile's last step: store the next tile into the other buffer (last read before
                // the previous tile's barrier), meet the barrier, read the next tile's first
                // fragments, and only then do this step's FMAs.
                dbuf_store<BM, BN, BK, NT, APAD>(ra, rb, nas, nbs);
                __syncthreads();
                dbuf_frag<BM, BN, TM, TN, LR, LC, APAD>(regM[cur ^ 1], regN[cur ^ 1], nas, nbs, 0, rowBase, colBase);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += regM[cur][i] * regN[cur][j];
        }
        if (!RF) {
            if (more) dbuf_store<BM, BN, BK, NT, APAD>(ra, rb, nas, nbs); // read last step
            __syncthreads();
        }
    };
    for (int k0 = 0; k0 < K; k0 += 2 * BK) {
        tile(kl_int<0>(), k0);
        if (k0 + BK < K) tile(kl_int<1>(), k0 + BK);
    }

    constexpr int SN = TN / 4;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + rowBase + (i / 4) * LR * 4 + (i % 4);
#pragma unroll
        for (int s = 0; s < SN; ++s) {
            const float4 v = make_float4(acc[i][s * 4], acc[i][s * 4 + 1], acc[i][s * 4 + 2], acc[i][s * 4 + 3]);
            // On the fast path the tile is inside and N % 4 == 0: the 16-byte store is always legal.
            kl_store4(C, row, n0 + colBase + s * LC * 4, M, N, N, EDGE ? vecBC : true, v, alpha, beta);
        }
    }
}

// sgemm_dbuf_edge is the checked path as a function of its own: not inlined, so that ptxas
// allocates its registers apart from the fast path's (inlined together, the two paths exceed 128
// registers and the fast path spills). The checked path alone still spills a little at 128
// registers; only edge blocks run it.
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int NT, int APAD, bool RF>
__device__ __noinline__ void sgemm_dbuf_edge(int M, int N, int K, float alpha, const float* __restrict__ A,
                                             const float* __restrict__ B, float beta, float* __restrict__ C,
                                             float* As, float* Bs, int tileM, int tileN) {
    sgemm_dbuf_tiles<BM, BN, BK, WM, WN, TM, TN, NT, APAD, RF, true>(M, N, K, alpha, A, B, beta, C, As, Bs, tileM, tileN);
}

// sgemm_dbuf_body is the kernel: it decides, per block, between the fast path and the checked one.
// A block is on the fast path when its whole tile of C is inside the matrix, K is a multiple of BK
// (no partial k tile, and rows of A 16-byte aligned) and N is a multiple of 4 (rows of B and C).
template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int NT, int APAD = 4, bool RF = false>
__device__ __forceinline__ void sgemm_dbuf_body(int M, int N, int K, float alpha, const float* __restrict__ A,
                                                const float* __restrict__ B, float beta, float* __restrict__ C) {
    constexpr int LR = WM / TM, LC = WN / TN;
    constexpr int LA = BM * BK / 4 / NT, LB = BK * BN / 4 / NT;
    static_assert(LR * LC == 32, "a warp is 32 lanes");
    static_assert((BM / WM) * (BN / WN) * 32 == NT, "one warp per warp tile");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 granularity");
    static_assert(LA * 4 * NT == BM * BK && LB * 4 * NT == BK * BN, "tiles split evenly over threads");
    static_assert(NT % (BK / 4) == 0 && NT % (BN / 4) == 0, "a thread's float4s share one column of the tile");

    __shared__ __align__(16) float As[2 * BK * (BM + APAD)];
    __shared__ __align__(16) float Bs[2 * BK * BN];

    const int tileM = blockIdx.y, tileN = blockIdx.x;
    const bool inside = (tileM + 1) * BM <= M && (tileN + 1) * BN <= N && K % BK == 0 && N % 4 == 0;
    if (inside) {
        sgemm_dbuf_tiles<BM, BN, BK, WM, WN, TM, TN, NT, APAD, RF, false>(M, N, K, alpha, A, B, beta, C, As, Bs, tileM, tileN);
    } else {
        sgemm_dbuf_edge<BM, BN, BK, WM, WN, TM, TN, NT, APAD, RF>(M, N, K, alpha, A, B, beta, C, As, Bs, tileM, tileN);
    }
}

// The configuration kept: block 128×128, BK 16, 8 warps of 32×64, 8×8 results per thread (256
// threads), no RF; at most 128 registers (ptxas uses 128, no spills) so that two blocks share an
// SM.
extern "C" __global__ void KL_LAUNCH_BOUNDS(256, 2) sgemm_dbuf(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 16, 32, 64, 8, 8, 256>(M, N, K, alpha, A, B, beta, C);
}

// The other points of the sweep (same algorithm, other tile shapes).
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_128x128x8_w64x32(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 8, 64, 32, 8, 8, 256>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_128x128x8_w32x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 8, 32, 64, 8, 8, 256>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) sgemm_dbuf_64x128x8_w32x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<64, 128, 8, 32, 64, 8, 8, 128>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_128x256x8_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 256, 8, 64, 64, 16, 8, 256>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_256x128x8_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<256, 128, 8, 64, 64, 16, 8, 256>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void KL_LAUNCH_BOUNDS(256, 2) sgemm_dbuf_128x128x16_w64x32(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 16, 64, 32, 8, 8, 256>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) sgemm_dbuf_128x128x8_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 8, 64, 64, 16, 8, 128>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) sgemm_dbuf_64x128x16_w32x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<64, 128, 16, 32, 64, 8, 8, 128>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) sgemm_dbuf_128x64x16_w64x32(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 64, 16, 64, 32, 8, 8, 128>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) sgemm_dbuf_128x128x16_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 16, 64, 64, 16, 8, 128>(M, N, K, alpha, A, B, beta, C);
}
// BK 16 with unpadded A rows (APAD 0) to fit the 48 KiB of static shared memory.
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_128x256x16_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 256, 16, 64, 64, 8, 16, 256, 0>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_256x128x16_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<256, 128, 16, 64, 64, 16, 8, 256, 0>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_128x256x16_w32x128(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 256, 16, 32, 128, 8, 16, 256, 0>(M, N, K, alpha, A, B, beta, C);
}

// Register fragments double-buffered (RF), the same tile shapes as the best points above.
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_rf_256x128x8_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<256, 128, 8, 64, 64, 16, 8, 256, 4, true>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_rf_128x256x16_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 256, 16, 64, 64, 16, 8, 256, 0, true>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(256) sgemm_dbuf_rf_128x256x16_w32x128(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 256, 16, 32, 128, 8, 16, 256, 0, true>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void KL_LAUNCH_BOUNDS(256, 2) sgemm_dbuf_rf_128x128x8_w32x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 8, 32, 64, 8, 8, 256, 4, true>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void __launch_bounds__(128) sgemm_dbuf_rf_128x128x8_w64x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 8, 64, 64, 16, 8, 128, 4, true>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void KL_LAUNCH_BOUNDS(256, 2) sgemm_dbuf_rf_128x128x8_w64x32(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 8, 64, 32, 8, 8, 256, 4, true>(M, N, K, alpha, A, B, beta, C);
}
extern "C" __global__ void KL_LAUNCH_BOUNDS(256, 2) sgemm_dbuf_rf_128x128x16_w32x64(int M, int N, int K, float alpha, const float* __restrict__ A,
    const float* __restrict__ B, float beta, float* __restrict__ C) {
    sgemm_dbuf_body<128, 128, 16, 32, 64, 8, 8, 256, 4, true>(M, N, K, alpha, A, B, beta, C);
}
