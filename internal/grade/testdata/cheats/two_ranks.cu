// cheat (lab 04): hard-wired for two ranks — the uneven all-to-all, but its copy loop walks the
// blocks of ranks 0 and 1 only, as code written on a machine with two GPUs would. It passes every
// test at 2 ranks. Expected: the tests at 3 and 4 ranks fail (unwritten: the blocks of the other
// ranks stay poisoned).
#include "kl.cuh"

#define EX1_MAX_RANKS 64

extern "C" __global__ void ex1_all_to_allv(const float* const* ins, float* out, const int* const* sizes, int rank,
                                           int nranks) {
    __shared__ long long s_send[EX1_MAX_RANKS], s_recv[EX1_MAX_RANKS];
    __shared__ int s_count[EX1_MAX_RANKS];
    for (int j = threadIdx.x; j < nranks; j += blockDim.x) {
        const int* row = sizes[j]; // rank j's sizes, through peer memory
        long long off = 0;
        for (int d = 0; d < rank; ++d) off += row[d];
        s_send[j] = off;
        s_count[j] = row[rank];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        long long off = 0;
        for (int j = 0; j < nranks; ++j) {
            s_recv[j] = off;
            off += s_count[j];
        }
    }
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (int b = 0; b < 2; ++b) { // "there are two GPUs"
        int src = rank + 1 + b;
        while (src >= 2) src -= 2;
        const float* in = ins[src] + s_send[src];
        float* dst = out + s_recv[src];
        const int count = s_count[src];
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) dst[i] = in[i];
    }
}
