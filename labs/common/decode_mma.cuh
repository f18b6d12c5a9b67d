// decode_mma.cuh — the unit of lab 03's tensor-core decode kernels (08_decode_mma.cu, 10_decode_streamk.cu):
// rows r0.. of one expert (up to 64) × 256 columns of its weights × a range of K, computed as
// Y^T = W^T·X^T with mma.sync through a four-stage cp.async pipeline (kernel 08's comment says how),
// written to Y or, where several units share the item, to a workspace slot that the last of them
// adds up. Include after "kl.cuh", "grouped_sched.cuh" and "grouped_mma.cuh".
#pragma once

#define DM_THREADS 256
#define DM_COLS 256                                  // columns of W a unit covers (the driver's decodeCols)
#define DM_WCOLS 32                                  // columns of a warp: two m16 tiles
#define DM_BK 32                                     // k of one stage
#define DM_STAGES 4
#define DM_ROWS 64                                   // token rows of a chunk: 8 groups of 8
#define DM_KMIN 256                                  // the fewest k a split unit streams
#define DM_W_BYTES (DM_BK * DM_COLS * 2)             // 16384: W tile of a stage, 512-byte rows
#define DM_X_BYTES (DM_ROWS * DM_BK * 2)             // 4096: the chunk's rows, 64-byte rows
#define DM_STAGE_BYTES (DM_W_BYTES + DM_X_BYTES)
#define DM_SMEM (DM_STAGES * DM_STAGE_BYTES)         // 81920 bytes of dynamic shared memory

static_assert(DM_COLS == (DM_THREADS / 32) * DM_WCOLS, "the warps cover the unit's columns");
static_assert(DM_BK == kl_mma::BK, "the X tile's swizzle is grouped_mma.cuh's A swizzle (64-byte rows)");

// w_off is the byte offset of 16-byte chunk c (8 columns) of row r (a k) in a stage's W tile: rows
// of 512 bytes, the chunk index XORed with r % 8, so that the 8 rows an ldmatrix .trans reads at
// one chunk fall in 8 different bank groups.
__device__ __forceinline__ int dm_w_off(int r, int c) { return r * (DM_COLS * 2) + ((c ^ (r & 7)) << 4); }

// dm_load_stage starts the copies of stage k .. k+31 of a unit: W_e's rows k.. at columns n0..n0+255
// (four chunks per thread; a warp copies one row's 512 contiguous bytes) and the chunk's NG·8 rows
// of X at those k (one chunk per thread at most). Chunks past k1, past N or past the chunk's rows
// are zero-filled (src-size 0), so that the padding rows multiply as zeros.
template <int NG>
__device__ __forceinline__ void dm_load_stage(unsigned char* stage, const kl_bf16* __restrict__ X,
                                              const kl_bf16* __restrict__ We, int N, int K, int r0, int rows,
                                              int n0, int k, int k1) {
    const int tid = threadIdx.x;
    const unsigned sW = kl_mma::smem_u32(stage), sX = kl_mma::smem_u32(stage + DM_W_BYTES);
#pragma unroll
    for (int l = 0; l < (DM_BK * DM_COLS / 8) / DM_THREADS; ++l) {
        const int id = tid + l * DM_THREADS, r = id / (DM_COLS / 8), c = id % (DM_COLS / 8);
        const int gk = k + r, gn = n0 + c * 8;
        const bool in = gk < k1 && gn < N; // N % 8 == 0: a chunk is all in or all out
        kl_mma::cp_async16(sW + dm_w_off(r, c), in ? (const void*)(We + (long long)gk * N + gn) : (const void*)We,
                           in ? 16 : 0);
    }
    for (int id = tid; id < NG * 8 * (DM_BK / 8); id += DM_THREADS) {
        const int r = id / (DM_BK / 8), c = id % (DM_BK / 8);
        const int gk = k + c * 8;
        const bool in = r < rows && gk < k1; // K % 8 == 0 and k1 a multiple of 8
        kl_mma::cp_async16(sX + kl_mma::a_off(r, c),
                           in ? (const void*)(X + (long long)(r0 + r) * K + gk) : (const void*)X, in ? 16 : 0);
    }
}

// dm_out is what an element of Y becomes from its sum v: alpha·v + beta·(its old value), rounded
// once to bf16; with beta = 0 the old value is not read (it may be NaN poison).
__device__ __forceinline__ kl_bf16 dm_out(float v, const kl_bf16* y, float alpha, float beta) {
    return kl_float2bf16(beta == 0.0f ? alpha * v : alpha * v + beta * kl_bf162float(*y));
}

// dm_unit computes rows r0 .. r0+rows-1 of Y (rows ≤ NG·8) in columns n0 .. n0+255 over k0 .. k1-1:
// into Y directly when the item is not split (S = 1), else into the workspace, slot s; Y becomes
// alpha·(X·W) + beta·Y (lab 03 passes 1 and 0).
template <int NG>
__device__ void dm_unit(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ We, kl_bf16* __restrict__ Y,
                        float* ws, int* counter, unsigned char* smem, int* s_last, int T, int N, int K, int r0,
                        int rows, int n0, int k0, int k1, int s, int S, float alpha = 1.0f, float beta = 0.0f) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wc = warp * DM_WCOLS; // the warp's first column in the unit
    const int numK = (k1 - k0 + DM_BK - 1) / DM_BK;

    float acc[2][NG][4]; // [m16 tile][row group][C fragment]
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int j = 0; j < NG; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[mi][j][q] = 0.0f;

    // The pipeline of kernel 05's tile (grouped_mma.cuh): STAGES-1 stages in flight.
#pragma unroll
    for (int st = 0; st < DM_STAGES - 1; ++st) {
        if (st < numK) dm_load_stage<NG>(smem + st * DM_STAGE_BYTES, X, We, N, K, r0, rows, n0, k0 + st * DM_BK, k1);
        kl_mma::cp_async_commit();
    }
    for (int kt = 0; kt < numK; ++kt) {
        kl_mma::cp_async_wait<DM_STAGES - 2>(); // stage kt has landed (this thread's copies)...
        __syncthreads();                         // ...and everyone's; everyone is done with kt-1
        const int pf = kt + DM_STAGES - 1;
        if (pf < numK)
            dm_load_stage<NG>(smem + (pf % DM_STAGES) * DM_STAGE_BYTES, X, We, N, K, r0, rows, n0, k0 + pf * DM_BK, k1);
        kl_mma::cp_async_commit();

        const unsigned char* stage = smem + (kt % DM_STAGES) * DM_STAGE_BYTES;
        const unsigned sW = kl_mma::smem_u32(stage), sX = kl_mma::smem_u32(stage + DM_W_BYTES);
        // A = W^T, 16 columns × 16 k per fragment, for both k16 steps and both m16 tiles. Lanes
        // 0-7 address the 8×8 block (k 0-7, columns 0-7), 8-15 (k 0-7, columns 8-15), 16-23
        // (k 8-15, columns 0-7), 24-31 (k 8-15, columns 8-15): transposed, these are the
        // fragment's registers a0a1, a2a3, a4a5, a6a7 (rows = columns of W, g and g+8; k 2t, 2t+8).
        unsigned af[2][2][4]; // [k16 step][m16 tile][register]
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
#pragma unroll
            for (int mi = 0; mi < 2; ++mi) {
                const int r = ks * 16 + (lane & 7) + ((lane >> 4) << 3);
                const int c = (wc + mi * 16) / 8 + ((lane >> 3) & 1);
                kl_mma::ldmatrix_x4_trans(sW + dm_w_off(r, c), af[ks][mi][0], af[ks][mi][1], af[ks][mi][2],
                                          af[ks][mi][3]);
            }
        // B = X^T ("col": each token row's k contiguous), one row group at a time: lanes 8i..8i+7
        // address rows 0-7 of the group at k 8i..8i+7, so the four registers are b0b1 and b2b3 of
        // the first k16 step, then of the second.
#pragma unroll
        for (int j = 0; j < NG; ++j) {
            unsigned bf[2][2];
            kl_mma::ldmatrix_x4(sX + kl_mma::a_off(j * 8 + (lane & 7), lane >> 3), bf[0][0], bf[0][1], bf[1][0],
                                bf[1][1]);
#pragma unroll
            for (int ks = 0; ks < 2; ++ks)
#pragma unroll
                for (int mi = 0; mi < 2; ++mi) kl_mma::mma_16816(acc[mi][j], af[ks][mi], bf[ks]);
        }
    }
    kl_mma::cp_async_wait<0>();
    __syncthreads(); // every warp is done with the stages: the block's next unit may refill them

    // C fragment of m16n8: thread (g = lane/4, t = lane%4) holds rows g and g+8 (columns of W),
    // columns 2t and 2t+1 (token rows of the group): acc[mi][j][2h + i] is Y[row j·8 + 2t + i][col].
    const int g = lane >> 2, t4 = lane & 3;
    float* part = S == 1 ? nullptr : ws + (long long)s * T * N;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int j = 0; j < NG; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    const int row = j * 8 + 2 * t4 + i, col = n0 + wc + mi * 16 + g + h * 8;
                    if (row >= rows || col >= N) continue;
                    const long long at = (long long)(r0 + row) * N + col;
                    if (S == 1) {
                        Y[at] = dm_out(acc[mi][j][2 * h + i], Y + at, alpha, beta);
                    } else {
                        part[at] = acc[mi][j][2 * h + i];
                    }
                }
    if (S == 1) return;

    // The split's reduction, as kernel 07's: the last unit of the item adds the S slots in order.
    __threadfence(); // the partials are visible before the count that says they are there
    __syncthreads();
    if (tid == 0) *s_last = atomicAdd(counter, 1) == S - 1;
    __syncthreads();
    if (!*s_last) return;
    __threadfence(); // the other units' partials, seen through the counter, before they are read
    for (int idx = tid; idx < rows * DM_COLS; idx += DM_THREADS) {
        const int row = idx / DM_COLS, col = n0 + idx % DM_COLS; // a warp reads 32 consecutive columns
        if (col >= N) continue;
        const volatile float* p = ws + (long long)(r0 + row) * N + col; // volatile: past L1, from L2
        float v = 0.0f;
        for (int q = 0; q < S; q++) v += p[(long long)q * T * N];
        Y[(long long)(r0 + row) * N + col] = dm_out(v, Y + (long long)(r0 + row) * N + col, alpha, beta);
    }
    if (tid == 0) atomicExch(counter, 0); // clean for the next launch
}

// dm_unit_rows runs dm_unit with the fewest row groups that hold `rows` rows.
__device__ __forceinline__ void dm_unit_rows(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ We,
                                             kl_bf16* __restrict__ Y, float* ws, int* counter, unsigned char* smem,
                                             int* s_last, int T, int N, int K, int r0, int rows, int n0, int k0,
                                             int k1, int s, int S, float alpha, float beta) {
    if (rows <= 8) {
        dm_unit<1>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S, alpha, beta);
    } else if (rows <= 16) {
        dm_unit<2>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S, alpha, beta);
    } else if (rows <= 32) {
        dm_unit<4>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S, alpha, beta);
    } else {
        dm_unit<8>(X, We, Y, ws, counter, smem, s_last, T, N, K, r0, rows, n0, k0, k1, s, S, alpha, beta);
    }
}

// dm_streamk walks this block's share of the work of P items × KT k-steps (DM_BK of k each), the
// line of all k-steps, item after item, cut into equal ranges, one a block (Stream-K's partition):
// segment(item, a, b, slot, owners) runs k-steps [a, b) of an item that `owners` blocks share, this
// one in place `slot` among them. A range holds at least DM_KMIN of k and at most smax blocks share
// an item (the workspace's slots); where the work is small, blocks past the ranges do nothing.
// With smax < 2 there is no room for partial sums: whole items, round robin.
template <typename Segment>
__device__ __forceinline__ void dm_streamk(int P, int KT, int smax, Segment segment) {
    if (P <= 0 || KT <= 0) return;
    if (smax < 2) {
        for (int item = blockIdx.x; item < P; item += gridDim.x) segment(item, 0, KT, 0, 1);
        return;
    }
    const long long w = (long long)P * KT;
    const long long least = max(DM_KMIN / DM_BK, (KT + smax - 2) / (smax - 1));
    const long long g = min((long long)gridDim.x, max(1LL, w / least));
    // The block whose range [b·w/g, (b+1)·w/g) holds step x.
    auto owner = [&](long long x) { return ((x + 1) * g - 1) / w; };
    if (blockIdx.x >= g) return;
    long long x = blockIdx.x * w / g;
    const long long end = (blockIdx.x + 1) * w / g;
    while (x < end) {
        const int item = (int)(x / KT);
        const long long first = (long long)item * KT, last = first + KT; // the item's steps
        const long long stop = min(end, last), b0 = owner(first);
        segment(item, (int)(x - first), (int)(stop - first), (int)(blockIdx.x - b0), (int)(owner(last - 1) - b0 + 1));
        x = stop;
    }
}
