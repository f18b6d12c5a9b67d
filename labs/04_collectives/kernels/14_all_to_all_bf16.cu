// 14 — all-to-all in bf16: kernel 06 with 16-byte vectors.
//
// Out_r[j] = in_j[r], blocks of count elements, pulled starting with the neighbour as in kernel 06.
// An all-to-all moves bytes: bf16 halves them for the same tokens. Every block starts at a multiple
// of count, so the copy goes in vectors of 8 when count is a multiple of 8 (kernel 11's rule) and
// element by element otherwise.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void all_to_all_pull(const kl_bf16* const* ins, kl_bf16* out, int rank, int nranks, int count) {
    const int w = count % KL_BF16X8 == 0 ? KL_BF16X8 : 1; // elements a thread copies at once
    const long long per = count / w, total = nranks * per;
    const long long mine = (long long)rank * count;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const int b = (int)(t / per);
        const long long i = (t - b * per) * w;
        int src = rank + 1 + b;
        while (src >= nranks) src -= nranks;
        kl_bf16_copy(out + (long long)src * count, ins[src] + mine, i, w);
    }
}
