#include "kl.cuh"
#include "bf16x8.cuh"
#include "grouped_sched.cuh"

// 07_decode_moe.cu — the MoE layer at decode: every expert's weights read once, and nothing else.
//
// Over kernel 06: at decode a MoE layer routes a few tokens (1 to 64, times top-k) to its experts,
// so most experts get 0 to a few rows and many get none. A tile of 128 token rows is then almost all
// padding, and the layer's cost is the read of the weights of the experts that got a token:
// 2·K·N bytes each, against 2·M·K·N flops, with M = 1..8 rows a few flops per byte, far below the
// ridge point. This kernel is built around that read (the idea of lab 02's kernels 16 and 18,
// applied to the MoE form):
//   * a unit of work is one expert's chunk of up to 8 token rows × 256 columns of W_e × a range of
//     K. Its 256 threads are 32 column threads (8 columns each: one 16-byte load per row of W) × 8
//     K lanes, so each group of 32 threads reads 512 contiguous bytes of a row of W, and a K lane
//     issues U rows' loads before it uses any (U = 8 for up to 4 token rows, 4 for more);
//   * the chunk's token rows live in shared memory as fp32 (8192 values at a time: 1024 of k for 8
//     rows, 8192 for one, staged from X), and each thread keeps MR × 8 fp32 sums in registers: MR = 1, 2, 4 or 8, chosen per chunk
//     from its rows, so one row does the arithmetic of one row. The arithmetic is on the CUDA
//     cores: up to 8 rows they keep up with the read (64 FMAs per 16 bytes of W);
//   * the work units come from the row offsets on the device, as in kernels 04–06 (the host never
//     sees the sizes): an expert with M rows has ceil(M/8)·ceil(N/256) items; the persistent grid
//     walks them. Where there are fewer items than blocks (one token: 8 experts × N/256 items) each
//     item's K is split over S units (a split-K), S chosen on the device so that the units fill the
//     grid's blocks evenly (and every unit still streams at least 256 rows of W);
//   * a split item's S partial sums go to a workspace (fp32, S·T·N at most); the unit that
//     finishes last (a counter per item) adds them in order 0..S-1 — the same bits in every run —
//     rounds once to bf16 and writes Y, then puts the counter back to 0 for the next launch.
// Rows beyond 8 in one expert are further chunks, each of which streams its 256 columns of W
// again (from L2 when they run together): correct for any M, fast for the few rows of decode; a
// layer with many tokens per expert belongs to the tensor-core kernels (04–06).
// Plain CUDA with 16-byte vector loads: it runs on the CPU emulator and on AMD GPUs too.
//
// Sizes: any M_e, N, K ≥ 1; vector loads of W where N % 8 == 0, element loads otherwise.
// Launch: block 256, persistent grid (SMs × 2), 44 KiB of static shared memory; ws holds
// smax·T·N floats, counters T·ceil(N/256) ints, zero before the first launch.

#define DEC_THREADS 256
#define DEC_COLS 256                           // columns of W a unit covers
#define DEC_CT (DEC_COLS / KL_BF16X8)          // column threads: 8 columns, one 16-byte load each
#define DEC_KL (DEC_THREADS / DEC_CT)          // K lanes
#define DEC_ROWS 8                             // token rows of a chunk
#define DEC_KC 1024                            // values of k of 8 rows in shared memory (8192 of one)
#define DEC_KMIN 256                           // the fewest rows of W a split unit streams
#define DEC_STEP (DEC_KL * 8)                  // a split's K range is a multiple of this

// dec_w8 reads W[k][col .. col+7] as one 16-byte vector, or element by element (zeros past N) where
// the row does not hold a whole aligned vector there.
__device__ __forceinline__ uint4 dec_w8(const kl_bf16* p, bool vec, int valid) {
    if (vec) return kl_bf16x8_load(p, 0);
    unsigned w[4] = {0u, 0u, 0u, 0u};
    for (int j = 0; j < valid; j++) w[j / 2] |= (unsigned)kl_bf16_bits(p[j]) << (16 * (j % 2));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// dec_fma: acc[m][j] += x[m] · w[j] for the MR token rows (x: their values at this k, in shared
// memory, 16-byte aligned: one 16-byte load per 4 rows) and the 8 columns of the vector (a bf16
// widens to fp32 with a shift).
template <int MR>
__device__ __forceinline__ void dec_fma(float (&acc)[MR][KL_BF16X8], uint4 v, const float* x) {
    float xv[MR];
    if (MR % 4 == 0) {
#pragma unroll
        for (int q = 0; q < MR / 4; q++) {
            const float4 f = reinterpret_cast<const float4*>(x)[q];
            xv[4 * q] = f.x, xv[4 * q + 1] = f.y, xv[4 * q + 2] = f.z, xv[4 * q + 3] = f.w;
        }
    } else {
#pragma unroll
        for (int m = 0; m < MR; m++) xv[m] = x[m];
    }
    const unsigned u[4] = {v.x, v.y, v.z, v.w};
    float b[KL_BF16X8];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        b[2 * j] = __uint_as_float(u[j] << 16);
        b[2 * j + 1] = __uint_as_float(u[j] & 0xFFFF0000u);
    }
#pragma unroll
    for (int m = 0; m < MR; m++)
#pragma unroll
        for (int j = 0; j < KL_BF16X8; j++) acc[m][j] = fmaf(xv[m], b[j], acc[m][j]);
}

struct dec_smem {
    alignas(16) float x[DEC_KC * DEC_ROWS]; // x[k·MR + m]: the chunk's rows, k outermost
    float red[DEC_KL * DEC_COLS];           // one row's sums of the K lanes, to be added up
    int prefix[KL_GROUPED_MAX_GROUPS + 1];
    int last; // this unit finished its item's split last
};

// dec_unit computes rows r0 .. r0+rows-1 of Y (rows ≤ MR) in columns n0 .. n0+255 over k0 .. k1-1:
// into Y directly when the item is not split (S = 1), else into the workspace, slot s.
template <int MR>
__device__ void dec_unit(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ We, kl_bf16* __restrict__ Y,
                         float* ws, int* counter, dec_smem& sm, int T, int N, int K, int r0, int rows, int n0,
                         int k0, int k1, int s, int S) {
    constexpr int U = MR <= 4 ? 8 : 4;            // rows of W in flight per K lane
    constexpr int KC = DEC_KC * DEC_ROWS / MR;     // values of k staged at a time: fewer rows, more k
    const int t = threadIdx.x, ct = t % DEC_CT, kl = t / DEC_CT;
    const int col = n0 + ct * KL_BF16X8;
    const int valid = min(KL_BF16X8, N - col);
    const bool vec = N % KL_BF16X8 == 0 && valid == KL_BF16X8;
    float acc[MR][KL_BF16X8];
#pragma unroll
    for (int m = 0; m < MR; m++)
#pragma unroll
        for (int j = 0; j < KL_BF16X8; j++) acc[m][j] = 0.0f;

    for (int kc = k0; kc < k1; kc += KC) {
        const int kn = min(KC, k1 - kc);
        __syncthreads(); // everyone is done with the previous rows in shared memory
        for (int i = t; i < MR * kn; i += DEC_THREADS) {
            const int m = i / kn, kk = i % kn; // k fastest: the reads of a row of X are contiguous
            sm.x[kk * MR + m] = m < rows ? kl_bf162float(X[(long long)(r0 + m) * K + kc + kk]) : 0.0f;
        }
        __syncthreads();
        if (valid <= 0) continue; // columns past N: nothing to read (the barriers above still count)
        const kl_bf16* w = We + (long long)kc * N + col;
        int kk = kl;
        for (; kk + (U - 1) * DEC_KL < kn; kk += U * DEC_KL) {
            uint4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++) v[u] = dec_w8(w + (long long)(kk + u * DEC_KL) * N, vec, valid);
#pragma unroll
            for (int u = 0; u < U; u++) dec_fma<MR>(acc, v[u], &sm.x[(kk + u * DEC_KL) * MR]);
        }
        for (; kk < kn; kk += DEC_KL) dec_fma<MR>(acc, dec_w8(w + (long long)kk * N, vec, valid), &sm.x[kk * MR]);
    }

    // The 8 K lanes' sums, row by row through shared memory: thread t ends with column n0 + t.
    float sum[MR];
#pragma unroll
    for (int m = 0; m < MR; m++) {
        __syncthreads();
#pragma unroll
        for (int j = 0; j < KL_BF16X8; j++) sm.red[kl * DEC_COLS + ct * KL_BF16X8 + j] = acc[m][j];
        __syncthreads();
        float v = 0.0f;
#pragma unroll
        for (int l = 0; l < DEC_KL; l++) v += sm.red[l * DEC_COLS + t];
        sum[m] = v;
    }
    const int n = n0 + t;
    if (S == 1) {
        if (n < N)
            for (int m = 0; m < rows; m++) Y[(long long)(r0 + m) * N + n] = kl_float2bf16(sum[m]);
        return;
    }
    if (n < N)
        for (int m = 0; m < rows; m++) ws[((long long)s * T + r0 + m) * N + n] = sum[m];
    __threadfence(); // the partials are visible before the count that says they are there
    __syncthreads();
    if (t == 0) sm.last = atomicAdd(counter, 1) == S - 1;
    __syncthreads();
    if (!sm.last) return;
    __threadfence(); // the other units' partials, seen through the counter, before they are read
    if (n < N) {
        for (int m = 0; m < rows; m++) {
            const volatile float* p = ws + (long long)(r0 + m) * N + n; // volatile: past L1, from L2
            float v = 0.0f;
            for (int q = 0; q < S; q++) v += p[(long long)q * T * N];
            Y[(long long)(r0 + m) * N + n] = kl_float2bf16(v);
        }
    }
    if (t == 0) atomicExch(counter, 0); // clean for the next launch
}

// dec_splits is how many units an item's K is split into: the S ≤ most (smax, and at least
// DEC_KMIN rows of W per unit) whose P·S units fill the grid's waves best; a larger S only where it
// fills them noticeably better (each split costs a reduction). Every thread computes the same.
__device__ __forceinline__ int dec_splits(int P, int K, int smax) {
    const long long G = gridDim.x;
    const int most = max(1, min(smax, K / DEC_KMIN));
    int best = 1;
    float bestFill = 0.0f;
    for (int s = 1; s <= most; s++) {
        const long long units = (long long)P * s, waves = (units + G - 1) / G;
        const float fill = (float)units / (float)(waves * G);
        if (fill > bestFill + 0.02f) {
            bestFill = fill;
            best = s;
        }
    }
    return best;
}

extern "C" __global__ void KL_LAUNCH_BOUNDS(DEC_THREADS, 2)
moe_decode_stream(const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ W, kl_bf16* __restrict__ Y,
                  const int* __restrict__ offs, int E, int N, int K, float* ws, int* counters, int smax) {
    __shared__ dec_smem sm;
    const int P = kl_tile_prefix_moe(offs, E, N, DEC_ROWS, DEC_COLS, sm.prefix); // items: chunks × column tiles
    const int S = dec_splits(P, K, smax);
    const int span = (K + S - 1) / S, KB = (span + DEC_STEP - 1) / DEC_STEP * DEC_STEP;
    const int tilesN = (N + DEC_COLS - 1) / DEC_COLS, T = offs[E];
    // Units in order item-major: the S units of an item run side by side and finish together.
    for (long long u = blockIdx.x; u < (long long)P * S; u += gridDim.x) {
        const int item = (int)(u / S), s = (int)(u % S);
        const int e = kl_find_group(sm.prefix, E, item);
        // The chunks of one column tile side by side: they read the same W, the later ones from L2.
        const int chunks = (offs[e + 1] - offs[e] + DEC_ROWS - 1) / DEC_ROWS, local = item - sm.prefix[e];
        const int chunk = local % chunks, tile = local / chunks;
        const int r0 = offs[e] + chunk * DEC_ROWS, rows = min(DEC_ROWS, offs[e + 1] - r0);
        const int k0 = min(K, s * KB), k1 = min(K, k0 + KB);
        const kl_bf16* We = W + (long long)e * K * N;
        int* counter = counters + (long long)r0 * tilesN + tile;
        const int n0 = tile * DEC_COLS;
        if (rows == 1) {
            dec_unit<1>(X, We, Y, ws, counter, sm, T, N, K, r0, rows, n0, k0, k1, s, S);
        } else if (rows == 2) {
            dec_unit<2>(X, We, Y, ws, counter, sm, T, N, K, r0, rows, n0, k0, k1, s, S);
        } else if (rows <= 4) {
            dec_unit<4>(X, We, Y, ws, counter, sm, T, N, K, r0, rows, n0, k0, k1, s, S);
        } else {
            dec_unit<8>(X, We, Y, ws, counter, sm, T, N, K, r0, rows, n0, k0, k1, s, S);
        }
    }
}
