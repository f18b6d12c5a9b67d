// Exercise 1 — fused AG+GEMM in the push form: each rank writes its rows into its peers' A_full
// and raises their ready flags.
//
// Kernel 04 (fused_signal) pulls: its producer blocks read the peers' rows and raise flags in
// their own device's memory. Here a rank gets no pointer to its peers' rows at all. It gets its
// own rows (`mine`), the table of every rank's A_full (`afulls`) and of every rank's ready
// counters (`flags`); the rows of rank s reach rank d only if rank s writes them there.
//
//   mine        this rank's block of rows of A: ov_rows_of(rank, M, nranks) rows of K floats;
//   afulls[d]   rank d's gathered A (M×K): the block of rank s belongs at row ov_row0_of(s, ...);
//   flags[d]    rank d's n ready counters: flags[d][s] counts the producer blocks of rank s that
//               have delivered their share of s's rows into afulls[d]. Counters only grow: run
//               number `epoch` (from 1) is complete for block s on rank d when
//               flags[d][s] ≥ epoch·nproducers (every rank has the same nproducers);
//   B, C        this rank's B (K×N) and C (M×N), local;
//   bias        N values added to every row of C, or null for none (ov_gemm_tile adds it).
// afulls and flags hold device pointers that peer access makes valid on this device.
//
// Write it once, for any element type T: the two entries below run it on fp32 (ex1_ag_gemm_push,
// suite ag_gemm, no bias) and on bf16 (ex1_ag_gemm_push_bf16, suite bf16_ag_gemm, with a bias in
// some problems), as kernel 04's fused_signal template does. ov_copy and ov_gemm_tile take
// either type (bf16 in, fp32 accumulation, bf16 out).
//
// Blocks 0 … nproducers−1 are producers, the others GEMM blocks (consumers), as in kernel 04.
// Write:
//   1. the producers: for every peer d (in ring order from rank+1, so that the ranks do not all
//      write to rank 0 first), copy this rank's rows into afulls[d] at its row0 (ov_copy, the
//      producers sharing the work); then make the rows visible to the peer before the flag —
//      the block's barrier, then one thread adds 1 to flags[d][rank] with a system-scope release
//      (kl_atomic_add_release_sys: every write the block made before it reaches rank d first);
//   2. the consumers' wait for a tile of block s ≠ rank: one thread spins on a system-scope
//      acquire load (kl_load_acquire_sys: no read after it is ordered before it) of this rank's
//      flags[rank][s] until it reaches epoch·nproducers, remembers s in `seen` so that the next tile
//      from the same block does not wait again, and the whole block passes a __syncthreads()
//      before any thread reads the rows; then A points at s's rows in this rank's A_full.
// The driver poisons every A_full with NaN: a missing or early wait shows as NaN in C. A wait
// that never ends (a flag raised on the wrong rank, a wrong count) runs into the time limit.
// Every block of every rank is resident at once (the driver launches one wave at most).
#include "kl.cuh"
#include "overlap_gemm.cuh"

template <typename T>
__device__ __forceinline__ void ag_gemm_push(const T* __restrict__ mine, T* const* afulls, unsigned* const* flags,
                                             const T* __restrict__ B, T* C, int rank, int nranks, int M, int N, int K,
                                             int nproducers, unsigned epoch, const T* bias) {
    __shared__ float As[OV_BM * OV_BK];
    __shared__ float Bs[OV_BK * OV_BN];
    if ((int)blockIdx.x < nproducers) {
        // ---- producer ----
        // BEGIN SOLUTION
        const long long stride = (long long)nproducers * blockDim.x;
        const long long total = (long long)ov_rows_of(rank, M, nranks) * K;
        const long long row0 = ov_row0_of(rank, M, nranks);
        for (int j = 1; j < nranks; ++j) {
            int d = rank + j;
            if (d >= nranks) d -= nranks;
            ov_copy(afulls[d] + row0 * K, mine, total, (long long)blockIdx.x * blockDim.x + threadIdx.x, stride);
            __syncthreads(); // the whole block has written its share
            if (threadIdx.x == 0) {
                kl_atomic_add_release_sys(&flags[d][rank], 1u); // the rows reach rank d before the flag
            }
        }
        // END SOLUTION
        return;
    }
    // ---- consumer ----
    const int colTiles = (N + OV_BN - 1) / OV_BN;
    const unsigned ready = epoch * (unsigned)nproducers;
    unsigned* myflags = flags[rank];
    T* afull = afulls[rank];
    int total = 0;
    for (int s = 0; s < nranks; ++s) total += ov_tiles_of(ov_rows_of(s, M, nranks), N);
    int seen = -1; // (thread 0) the last source block this block has waited for
    for (int t = blockIdx.x - nproducers; t < total; t += gridDim.x - nproducers) {
        int rest = t, s = rank;
        for (int j = 0; j < nranks; ++j) {
            s = rank + j;
            if (s >= nranks) s -= nranks;
            const int tiles = ov_tiles_of(ov_rows_of(s, M, nranks), N);
            if (rest < tiles) break;
            rest -= tiles;
        }
        const T* A = mine; // own block: local, already there
        if (s != rank) {
            // BEGIN SOLUTION
            if (threadIdx.x == 0 && seen != s) {
                while (kl_load_acquire_sys(&myflags[s]) < ready) {
                }
                seen = s;
            }
            __syncthreads();
            A = afull + (long long)ov_row0_of(s, M, nranks) * K;
            // END SOLUTION
        }
        T* Cs = C + (long long)ov_row0_of(s, M, nranks) * N;
        ov_gemm_tile(A, B, Cs, ov_rows_of(s, M, nranks), N, K, rest / colTiles, rest % colTiles, As, Bs, bias);
    }
    (void)ready;
    (void)myflags;
    (void)afull;
    (void)seen;
}

extern "C" __global__ void __launch_bounds__(OV_THREADS)
ex1_ag_gemm_push(const float* __restrict__ mine, float* const* afulls, unsigned* const* flags,
                 const float* __restrict__ B, float* C, int rank, int nranks, int M, int N, int K, int nproducers,
                 unsigned epoch) {
    ag_gemm_push<float>(mine, afulls, flags, B, C, rank, nranks, M, N, K, nproducers, epoch, nullptr);
}

extern "C" __global__ void __launch_bounds__(OV_THREADS)
ex1_ag_gemm_push_bf16(const kl_bf16* __restrict__ mine, kl_bf16* const* afulls, unsigned* const* flags,
                      const kl_bf16* __restrict__ B, kl_bf16* C, int rank, int nranks, int M, int N, int K,
                      int nproducers, unsigned epoch, const kl_bf16* bias) {
    ag_gemm_push<kl_bf16>(mine, afulls, flags, B, C, rank, nranks, M, N, K, nproducers, epoch, bias);
}
