// 03 — fused AG+GEMM with signals: one persistent kernel, producer blocks copy the row blocks of
// A into the local A_full and raise a ready flag per block; the GEMM blocks wait on the flag of
// the block they need, then compute from local memory. This is the pattern of Flux and
// Triton-distributed: communication and computation in one kernel, ordered by flags in memory
// instead of by kernel boundaries or stream events.
//
// Roles: blocks 0 … P−1 (P = nproducers) are producers; they copy the blocks of the other ranks
// in ring order (rank+1, rank+2, …), each block split over the P producers, and every producer
// adds 1 to flags[s] when its share of block s is written. The other blocks are consumers: they
// take GEMM tiles in the order own block first (no wait: the rows are this rank's A), then the
// blocks in the order the producers deliver them.
//
// The protocol (flags are unsigned counters that only grow, so no reset between runs is needed:
// run number `epoch`, counted from 1, is complete for block s when flags[s] ≥ epoch·P):
//   producer:  write the rows → __syncthreads (the whole block has written) → one thread adds 1
//              to the flag with a release (kl_atomic_add_release: the rows the block wrote are
//              visible to the device before the new count)
//   consumer:  one thread spins on an acquire load of the flag (kl_load_acquire: no read of the
//              rows is ordered before the flag was seen) → __syncthreads → every thread reads.
// A consumer spins on work that a producer of the same grid does: every block must be resident
// at once, or a consumer may occupy the SM a producer is waiting for, forever. The driver
// launches at most one wave (SMs × blocks per SM) and at least P + 1 blocks.
//
// Launch: block 256, persistent grid as above. ag_gemm_fused_signal_bf16 is the same kernel for
// bf16 A, B and C, with an optional bias (N values, null for none) added to every row. tl: the
// timeline's records (timeline.cuh; null, and compiled out, unless built with -DKL_TIMELINE): a
// producer's copy of each source block, up to the flag it raises; a consumer's wait for a flag;
// each tile's GEMM.
#include "kl.cuh"
#include "overlap_gemm.cuh"
#include "timeline.cuh"

template <typename T>
__device__ __forceinline__ void fused_signal(const T* const* ins, T* afull, unsigned* flags, const T* __restrict__ B,
                                             T* C, int rank, int nranks, int M, int N, int K, int nproducers,
                                             unsigned epoch, const T* bias, unsigned long long* tl) {
    __shared__ float As[OV_BM * OV_BK];
    __shared__ float Bs[OV_BK * OV_BN];
    if ((int)blockIdx.x < nproducers) {
        // ---- producer ----
        const long long stride = (long long)nproducers * blockDim.x;
        for (int j = 1; j < nranks; ++j) {
            int s = rank + j;
            if (s >= nranks) s -= nranks;
            const long long total = (long long)ov_rows_of(s, M, nranks) * K;
            const T* src = ins[s];
            T* dst = afull + (long long)ov_row0_of(s, M, nranks) * K;
            const unsigned long long t0 = kl_tl_start();
            ov_copy(dst, src, total, (long long)blockIdx.x * blockDim.x + threadIdx.x, stride);
            __syncthreads();
            if (threadIdx.x == 0) {
                kl_tl_add(tl, KL_TL_COPY, t0); // before the flag: a wait for it ends after the copy's record
                kl_atomic_add_release(&flags[s], 1u);
            }
        }
        return;
    }
    // ---- consumer ----
    const int colTiles = (N + OV_BN - 1) / OV_BN;
    const unsigned ready = epoch * (unsigned)nproducers;
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
        const T* A = ins[rank]; // own block: local, already there
        if (s != rank) {
            if (threadIdx.x == 0 && seen != s) {
                const unsigned long long t0 = kl_tl_start();
                while (kl_load_acquire(&flags[s]) < ready) {
                }
                kl_tl_add(tl, KL_TL_WAIT, t0);
                seen = s;
            }
            __syncthreads();
            A = afull + (long long)ov_row0_of(s, M, nranks) * K;
        }
        T* Cs = C + (long long)ov_row0_of(s, M, nranks) * N;
        const unsigned long long t0 = kl_tl_start();
        ov_gemm_tile(A, B, Cs, ov_rows_of(s, M, nranks), N, K, rest / colTiles, rest % colTiles, As, Bs, bias);
        kl_tl_add_block(tl, KL_TL_COMPUTE, t0);
    }
}

extern "C" __global__ void __launch_bounds__(OV_THREADS)
ag_gemm_fused_signal(const float* const* ins, float* afull, unsigned* flags, const float* __restrict__ B,
                     float* C, int rank, int nranks, int M, int N, int K, int nproducers, unsigned epoch,
                     unsigned long long* tl) {
    fused_signal<float>(ins, afull, flags, B, C, rank, nranks, M, N, K, nproducers, epoch, nullptr, tl);
}

extern "C" __global__ void __launch_bounds__(OV_THREADS)
ag_gemm_fused_signal_bf16(const kl_bf16* const* ins, kl_bf16* afull, unsigned* flags, const kl_bf16* __restrict__ B,
                          kl_bf16* C, int rank, int nranks, int M, int N, int K, int nproducers, unsigned epoch,
                          const kl_bf16* bias, unsigned long long* tl) {
    fused_signal<kl_bf16>(ins, afull, flags, B, C, rank, nranks, M, N, K, nproducers, epoch, bias, tl);
}
