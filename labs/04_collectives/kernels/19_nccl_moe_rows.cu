// 19 — the NCCL baseline of the MoE suites, its local permutations (1): rows by (token, slot) pair.
//
// NCCL moves contiguous blocks per peer, so around its all-to-allv the rows must be put in the
// order of the blocks and back. scatter = 0 gathers a send buffer in kernel 15's list order (grouped
// by destination rank): dst[i] = src[pairs[i] / k], the token of pair i. scatter = 1 puts returned
// expert outputs into the home rank's staging buffer: dst[pairs[i]] = src[i], row token·k + slot.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void moe_rows_by_pair(const kl_bf16* src, kl_bf16* dst, const int* pairs, int rows, int k, int hidden,
                                            int scatter) {
    const int w = hidden % KL_BF16X8 == 0 ? KL_BF16X8 : 1;
    const long long per = hidden / w, total = (long long)rows * per;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const int row = (int)(t / per);
        const long long c = (t - row * per) * w;
        const long long from = scatter ? row : pairs[row] / k, to = scatter ? pairs[row] : row;
        kl_bf16_copy(dst + to * hidden, src + from * hidden, c, w);
    }
}
