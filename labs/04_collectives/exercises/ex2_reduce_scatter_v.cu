// Exercise 2 — an uneven reduce-scatter in bf16, with 16-byte loads wherever a shard starts.
//
// A model sharded over n ranks (ZeRO, FSDP) rarely splits into n equal pieces: each rank owns
// whole tensors, so the shards have different sizes, and the gradients' reduce-scatter leaves each
// rank the sum of its own shard. Every rank runs this kernel on its own device, with:
//
//   ins[j]   rank j's input: the n shards packed in rank order, shard r being elements
//            [offsets[r], offsets[r+1]) (the n ranks' shared buffers, as this process maps them);
//   out      this rank's output: offsets[rank+1] − offsets[rank] bf16 elements (none for an empty shard);
//   offsets  the n+1 shard offsets, the same on every rank, in this rank's device memory.
//
// Rank r must end with the sum of shard r over all ranks, taken in fp32 in rank order (rank 0's
// element first) and rounded to bf16 once (kl_float2bf16: to nearest, ties to even):
//   out[i] = bf16( ins[0][offsets[r] + i] + ins[1][offsets[r] + i] + … + ins[n−1][offsets[r] + i] ).
// The engine brackets the launch with device barriers across the ranks.
//
// Kernel 13 handles only equal shards, and takes 16-byte vectors (bf16x8.cuh) only when they
// start on a vector boundary. A load from a peer is a request over the link: move the inputs 16
// bytes at a time wherever the shard starts. Element e of a buffer starts a vector when e is a
// multiple of 8 (see the notes' "16-byte loads"); `out` starts on one while its shard in the
// inputs may not, so where they disagree the two sides of one vector are not aligned alike. Take
// the elements before the first boundary and after the last whole vector one by one; every
// element of the shard exactly once, in grid-stride loops.
//
// The grader checks shards of 0 to 2 and 0 to 14 elements (less than a vector, some empty), of
// 0 to 2002 elements on 2, 3 and 4 ranks (a quarter of them empty on 3), equal shards of 64 KiB,
// a hidden test on sizes of its own, and, on a GPU, your time against kernel 13's: on equal
// shards of 64 KiB and 1 MiB, and on equal shards one element past 1 MiB and 64 MiB against
// kernel 13 at the aligned size. The grid is min(ceil(shard / 8 / 512), SMs × 2) blocks of 512
// threads (the shard being this rank's); nranks is at most 64.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void ex2_reduce_scatter_v(const kl_bf16* const* ins, kl_bf16* out, const long long* offsets,
                                                int rank, int nranks) {
    // BEGIN SOLUTION
    const long long base = offsets[rank];
    const int count = (int)(offsets[rank + 1] - base); // shards hold at most 2^31 − 1 elements
    // 32-bit loop counters, as kernel 13's: 64-bit ones cost this memory-bound loop time.
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    // Output elements [head, head + 8·vecs) are input elements on 16-byte boundaries.
    const int head = (int)min((long long)count, (KL_BF16X8 - base % KL_BF16X8) % KL_BF16X8);
    const int vecs = (count - head) / KL_BF16X8;
    const bool out_aligned = head % KL_BF16X8 == 0; // then head is 0: both sides start a vector
    for (int v = tid; v < vecs; v += stride) {
        const long long e = head + (long long)v * KL_BF16X8;
        const uint4 s = kl_bf16x8_sum(ins, nranks, base + e);
        if (out_aligned) {
            kl_bf16x8_store(out, e, s);
        } else {
            // The sum is one vector; its destination is not: store its eight halves one by one.
            uint16_t* o = reinterpret_cast<uint16_t*>(out + e);
            const unsigned w[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
            for (int j = 0; j < 4; j++) {
                o[2 * j] = (uint16_t)(w[j] & 0xFFFFu);
                o[2 * j + 1] = (uint16_t)(w[j] >> 16);
            }
        }
    }
    const int tail = head + vecs * KL_BF16X8;
    const int rest = head + (count - tail); // the elements outside the vectors
    for (int k = tid; k < rest; k += stride) {
        const int i = k < head ? k : tail + (k - head);
        out[i] = kl_bf16_sum(ins, nranks, base + i);
    }
    // END SOLUTION
}
