// cheat (lab 05): thread 0 waits for the flags, but the block does not wait for thread 0 — no
// __syncthreads() after the wait, so the other threads read the rows before the flag was seen.
// Expected: read_outside (NaN rows; the adversarial schedule resumes threads in a shuffled order).
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
        const long long stride = (long long)nproducers * blockDim.x;
        const long long total = (long long)ov_rows_of(rank, M, nranks) * K;
        const long long row0 = ov_row0_of(rank, M, nranks);
        for (int j = 1; j < nranks; ++j) {
            int d = rank + j;
            if (d >= nranks) d -= nranks;
            ov_copy(afulls[d] + row0 * K, mine, total, (long long)blockIdx.x * blockDim.x + threadIdx.x, stride);
            __syncthreads(); // the whole block has written its share
            if (threadIdx.x == 0) {
                __threadfence_system(); // the rows reach rank d's memory before the flag does
                atomicAdd_system(&flags[d][rank], 1u);
            }
        }
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
                if (threadIdx.x == 0 && seen != s) {
                while (*(volatile unsigned*)&myflags[s] < ready) {
                }
                __threadfence_system();
                seen = s;
            }
            A = afull + (long long)ov_row0_of(s, M, nranks) * K;
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
