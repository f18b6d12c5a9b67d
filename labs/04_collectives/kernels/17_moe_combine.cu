// 17 — MoE combine, the return trip: every rank pushes its experts' output rows to their tokens.
//
// The expert outputs lie in the dispatch's layout (kernel 16's receive buffer after the experts
// ran), with its metadata: row i came from token meta[3i+1] of rank meta[3i], slot meta[3i+2].
// Each row goes into its home rank's staging buffer (which every rank maps) at row token·k + slot:
// the metadata is exactly what makes this a plain store, with no search and no atomics — no two
// rows share a (rank, token, slot). Stores over the link, 16 bytes at a time; after the device
// barrier that ends the push, every rank sums its k slots (kernel 18).
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void moe_combine_push(const kl_bf16* expert_out, const int* meta, int rows, kl_bf16* const* stages,
                                            int k, int hidden) {
    const int w = hidden % KL_BF16X8 == 0 ? KL_BF16X8 : 1;
    const long long per = hidden / w, total = (long long)rows * per;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const int row = (int)(t / per);
        const long long c = (t - row * per) * w;
        const int src = meta[3 * row], token = meta[3 * row + 1], slot = meta[3 * row + 2];
        const kl_bf16* x = expert_out + (long long)row * hidden;
        kl_bf16* y = stages[src] + ((long long)token * k + slot) * hidden;
        kl_bf16_copy(y, x, c, w);
    }
}
