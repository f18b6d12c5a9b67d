// cheat (lab 04): kernel 13 adapted to exercise 2's shards, with its vector test left at "the
// shard's size is a multiple of 8": it loads 16 bytes at a time from shards that start off a
// vector boundary, as code tested only on equal shards of aligned sizes would. It passes equal
// shards of 64 KiB. Expected: the tests of uneven shards fail wherever a shard of a multiple of 8
// elements starts off a boundary (a misaligned address on a GPU, a general-protection fault on
// the emulator); the seeds of the fixture test draw such shards.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void ex2_reduce_scatter_v(const kl_bf16* const* ins, kl_bf16* out, const long long* offsets,
                                                int rank, int nranks) {
    const long long base = offsets[rank];
    const int count = (int)(offsets[rank + 1] - base);
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int vecs = count % KL_BF16X8 == 0 ? count / KL_BF16X8 : 0;
    for (int v = tid; v < vecs; v += stride) {
        const long long e = (long long)v * KL_BF16X8;
        kl_bf16x8_store(out, e, kl_bf16x8_sum(ins, nranks, base + e));
    }
    for (int i = vecs * KL_BF16X8 + tid; i < count; i += stride) out[i] = kl_bf16_sum(ins, nranks, base + i);
}
