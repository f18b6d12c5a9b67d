// 09 — one-shot allreduce in bf16: kernel 01 on the data LLMs move, 16 bytes at a time.
//
// The same algorithm as kernel 01 (every rank reads all n inputs and writes the whole sum into
// its own output, between the fused device barriers), with what changes in bf16:
//   * each thread moves a vector of 8 bf16 (16 bytes, one uint4 load per rank) instead of one
//     4-byte float: an eighth of the load instructions for the same bytes, so fewer and wider
//     transactions over NVLink (bf16x8.cuh); the count mod 8 elements at the end go one by one;
//   * each rank's 8 values are widened to fp32 and summed there, in rank order, and the sum is
//     rounded to bf16 once: the error is that one rounding, at most 2^-8 of the result. Adding in
//     bf16 would round after every addition, n−1 times.
// The driver launches one thread per vector (vec: 8 in lab.yaml).
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void allreduce_one_shot(const kl_bf16* const* ins, kl_bf16* out, unsigned* const* sig, int rank,
                                              int nranks, int count) {
    kl_rank_barrier_start(sig, rank, nranks);
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int vecs = count / KL_BF16X8;
    for (int v = tid; v < vecs; v += stride) {
        const long long e = (long long)v * KL_BF16X8;
        kl_bf16x8_store(out, e, kl_bf16x8_sum(ins, nranks, e));
    }
    for (int i = vecs * KL_BF16X8 + tid; i < count; i += stride) out[i] = kl_bf16_sum(ins, nranks, i);
    kl_rank_barrier_end(sig, rank, nranks);
}
