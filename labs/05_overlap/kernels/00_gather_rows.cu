// 00 — the all-gather half of AG+GEMM, as a copy kernel: pull the row blocks of A from the ranks
// that hold them into this rank's gathered A_full (M×K), through peer pointers.
//
// ins[s] is rank s's block of A (ov_rows_of(s) rows of K floats), on rank s's device; the kernel
// copies the blocks of `count` source ranks, starting with rank `first` and going round the ring
// (first, first+1, … mod n), to their rows of A_full. The sequential variant copies all n blocks in
// one launch; the chunked variant launches it once per source rank, so that the GEMM of one block
// can start while the next is in flight. A grid-stride loop (ov_copy, 16-byte loads when aligned):
// the rate is that of the peer link, not of this loop.
#include "kl.cuh"
#include "overlap_gemm.cuh"

extern "C" __global__ void gather_rows(const float* const* ins, float* afull, int M, int K, int nranks,
                                       int first, int count) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (int c = 0; c < count; ++c) {
        int s = first + c;
        while (s >= nranks) s -= nranks;
        const long long total = (long long)ov_rows_of(s, M, nranks) * K;
        const float* src = ins[s];
        float* dst = afull + (long long)ov_row0_of(s, M, nranks) * K;
        ov_copy(dst, src, total, (long long)blockIdx.x * blockDim.x + threadIdx.x, stride);
    }
}
