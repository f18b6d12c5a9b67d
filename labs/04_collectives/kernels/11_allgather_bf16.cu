// 11 — all-gather in bf16: kernel 03 with 16-byte vectors.
//
// An all-gather only copies, so bf16 changes nothing but the bytes per element — the same kernel
// moves half the elements' bytes of fp32. Block j of the output starts at element j·count, which
// is on a 16-byte boundary for every j only when count is a multiple of 8: then each thread copies
// vectors of 8; otherwise it copies elements one by one (slower, and rare: a layer's activations
// are multiples of 8 in practice).
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void allgather_pull(const kl_bf16* const* ins, kl_bf16* out, int rank, int nranks, int count) {
    const int w = count % KL_BF16X8 == 0 ? KL_BF16X8 : 1; // elements a thread copies at once
    const long long per = count / w, total = nranks * per;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const int b = (int)(t / per);
        const long long i = (t - b * per) * w;
        int src = rank + 1 + b; // starting with the neighbour, as kernel 03
        while (src >= nranks) src -= nranks;
        kl_bf16_copy(out + (long long)src * count, ins[src], i, w);
    }
}
