// Exercise 1 — the consumer's wait on the ready flags of fused AG+GEMM (kernel 04 of the chapter,
// fused_signal).
//
// The kernel is complete but for one piece: before a GEMM block computes a tile whose rows come
// from peer s, it must wait until every producer has copied its share of s's rows into afull.
//
// The protocol: flags[s] is an unsigned counter that only grows; each of the nproducers producer
// blocks adds 1 to it after its share of block s is written (write → __syncthreads →
// __threadfence → atomicAdd). Run number `epoch` (from 1) is complete for block s when
// flags[s] ≥ epoch·nproducers (`ready` below). Fill in the region marked TODO so that:
//   1. one thread of the block (threadIdx.x == 0) spins until flags[s] reaches `ready`, reading it
//      through a volatile pointer (a plain load may be hoisted out of the loop into a register);
//   2. after it has seen the value, it calls __threadfence(), so that none of the block's later
//      reads of the rows is ordered before the flag was seen;
//   3. it remembers s in `seen`, so that the next tile from the same block does not wait again;
//   4. the whole block then passes a __syncthreads() before any thread reads the rows;
//   5. A points at s's rows in afull: afull + (row where s's block starts) · K (ov_row0_of).
// A missing wait reads rows that are still NaN (the driver poisons afull), so the grader sees it.
// A wait that never ends (wrong counter, wrong comparison) hangs the kernel until the time limit.
#include "kl.cuh"
#include "overlap_gemm.cuh"

extern "C" __global__ void __launch_bounds__(OV_THREADS)
ex1_ready_flags(const float* const* ins, float* afull, unsigned* flags, const float* __restrict__ B,
                     float* C, int rank, int nranks, int M, int N, int K, int nproducers, unsigned epoch) {
    __shared__ float As[OV_BM * OV_BK];
    __shared__ float Bs[OV_BK * OV_BN];
    if ((int)blockIdx.x < nproducers) {
        // ---- producer ----
        const long long stride = (long long)nproducers * blockDim.x;
        for (int j = 1; j < nranks; ++j) {
            int s = rank + j;
            if (s >= nranks) s -= nranks;
            const long long total = (long long)ov_rows_of(s, M, nranks) * K;
            const float* src = ins[s];
            float* dst = afull + (long long)ov_row0_of(s, M, nranks) * K;
            ov_copy(dst, src, total, (long long)blockIdx.x * blockDim.x + threadIdx.x, stride);
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence();
                atomicAdd(&flags[s], 1u);
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
        const float* A = ins[rank]; // own block: local, already there
        if (s != rank) {
            // BEGIN SOLUTION
            if (threadIdx.x == 0 && seen != s) {
                while (*(volatile unsigned*)&flags[s] < ready) {
                }
                __threadfence();
                seen = s;
            }
            __syncthreads();
            A = afull + (long long)ov_row0_of(s, M, nranks) * K;
            // END SOLUTION
        }
        float* Cs = C + (long long)ov_row0_of(s, M, nranks) * N;
        ov_gemm_tile(A, B, Cs, ov_rows_of(s, M, nranks), N, K, rest / colTiles, rest % colTiles, As, Bs);
    }
}
