// 13 — reduce-scatter in bf16: kernel 05 with 16-byte vectors.
//
// Rank r pulls block r of every rank's input and sums it in fp32, in rank order, rounding once
// (kernel 09's sum). Block r starts at element r·count: on a 16-byte boundary for every r when
// count is a multiple of 8, and then each thread sums vectors of 8; otherwise single elements.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void reduce_scatter_direct(const kl_bf16* const* ins, kl_bf16* out, int rank, int nranks,
                                                 int count) {
    const long long base = (long long)rank * count;
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int vecs = count % KL_BF16X8 == 0 ? count / KL_BF16X8 : 0;
    for (int v = tid; v < vecs; v += stride) {
        const long long e = (long long)v * KL_BF16X8;
        kl_bf16x8_store(out, e, kl_bf16x8_sum(ins, nranks, base + e));
    }
    for (int i = vecs * KL_BF16X8 + tid; i < count; i += stride) out[i] = kl_bf16_sum(ins, nranks, base + i);
}
