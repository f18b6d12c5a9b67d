// 00 — the all-gather half of AG+GEMM, as a copy kernel: pull the row blocks of A from the ranks
// that hold them into this rank's gathered A_full (M×K), through peer pointers.
//
// ins[s] is rank s's block of A (ov_rows_of(s) rows of K floats), on rank s's device; the kernel
// copies the blocks of `count` source ranks, starting with rank `first` and going round the ring
// (first, first+1, … mod n), to their rows of A_full. The sequential variant copies all n blocks in
// one launch; the chunked variant launches it once per source rank, so that the GEMM of one block
// can start while the next is in flight. A grid-stride loop (ov_copy, 16-byte loads when aligned):
// the rate is that of the peer link, not of this loop.
//
// gather_rows_bf16 is the same copy of bf16 rows, which can also signal: with flags, every block
// adds 1 to flags[s] (a release: its share of block s is written before the count) when its share
// of source block s is in A_full, so that a GEMM running beside it on another stream can wait for
// each block as it lands (the wgmma variant of the bf16 suite, 06_ag_gemm_wgmma.cu): block s of run
// `epoch` is complete when flags[s] ≥ epoch · gridDim.x. Without flags (null) it is the plain copy.
//
// gather_rows_tl is gather_rows leaving a copy record per block and source block in tl
// (timeline.cuh), for the timeline suite. Helpers build without a variant's flags, so it comes
// from 00_gather_rows_tl.cu, which includes this file with KL_TIMELINE defined.
#include "kl.cuh"
#include "overlap_gemm.cuh"
#include "timeline.cuh"

template <typename T>
__device__ __forceinline__ void gather_blocks(const T* const* ins, T* afull, int M, int K, int nranks, int first, int count,
                                              unsigned* flags, unsigned long long* tl = nullptr) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (int c = 0; c < count; ++c) {
        int s = first + c;
        while (s >= nranks) s -= nranks;
        const long long total = (long long)ov_rows_of(s, M, nranks) * K;
        const T* src = ins[s];
        T* dst = afull + (long long)ov_row0_of(s, M, nranks) * K;
        const unsigned long long t0 = kl_tl_start();
        ov_copy(dst, src, total, (long long)blockIdx.x * blockDim.x + threadIdx.x, stride);
        kl_tl_add_block(tl, KL_TL_COPY, t0);
        if (flags) {
            __syncthreads(); // the whole block has written its share
            if (threadIdx.x == 0) kl_atomic_add_release(&flags[s], 1u);
        }
    }
}

extern "C" __global__ void gather_rows(const float* const* ins, float* afull, int M, int K, int nranks,
                                       int first, int count) {
    gather_blocks(ins, afull, M, K, nranks, first, count, nullptr);
}

extern "C" __global__ void gather_rows_bf16(const kl_bf16* const* ins, kl_bf16* afull, int M, int K, int nranks,
                                            int first, int count, unsigned* flags) {
    gather_blocks(ins, afull, M, K, nranks, first, count, flags);
}

// raise_flag is the signal of the copy-engine all-gather (wgmma_ce): the driver copies each block
// with cuMemcpyDtoDAsync, which takes no SM, and launches this one thread after it on the same
// stream. Stream order makes the copy complete before the kernel starts, and the release makes the
// rows visible to the GEMM's acquire load of flags[s] on any SM.
extern "C" __global__ void raise_flag(unsigned* flags, int s, unsigned count) {
    if (threadIdx.x == 0 && blockIdx.x == 0) kl_atomic_add_release(&flags[s], count);
}

#ifdef KL_TIMELINE
extern "C" __global__ void gather_rows_tl(const float* const* ins, float* afull, int M, int K, int nranks, int first,
                                          int count, unsigned long long* tl) {
    gather_blocks(ins, afull, M, K, nranks, first, count, nullptr, tl);
}
#endif
