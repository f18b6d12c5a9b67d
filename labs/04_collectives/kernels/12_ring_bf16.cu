// 12 — one step of the ring allreduce in bf16: kernel 04 with 16-byte vectors.
//
// The schedule is kernel 04's (the driver launches 2(n−1) steps with a device barrier after each),
// and what travels between neighbours is bf16: a reduce-scatter step reads its left neighbour's
// partial sum (bf16), adds its own input in fp32 and rounds the new partial sum to bf16 for the
// next hop. So an element is rounded once per reduce-scatter step, n−1 times, where kernels 09
// and 10 round once — the price of a ring that moves bf16, which NCCL's ring pays too (it adds
// bf16 pairs at every hop). The check allows for it (driver.go).
//
// The chunk [begin, end) starts anywhere (chunks of ceil(count/n) elements): the elements before
// the first multiple of 8 and after the last whole vector go one by one, the rest as vectors —
// src, mine and out are all at the same offset, so one boundary aligns all three.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void allreduce_ring_step(const kl_bf16* src, const kl_bf16* mine, kl_bf16* out, int begin,
                                               int end) {
    const int head = min(end, (begin + KL_BF16X8 - 1) / KL_BF16X8 * KL_BF16X8);
    const int vend = head + (end - head) / KL_BF16X8 * KL_BF16X8;
    const int stride = gridDim.x * blockDim.x;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    for (long long e = head + (long long)tid * KL_BF16X8; e < vend; e += (long long)stride * KL_BF16X8) {
        float acc[KL_BF16X8] = {};
        kl_bf16x8_add(acc, kl_bf16x8_load(src, e));
        if (mine != nullptr) kl_bf16x8_add(acc, kl_bf16x8_load(mine, e));
        kl_bf16x8_store(out, e, kl_bf16x8_round(acc));
    }
    // The single elements: [begin, head) and [vend, end), as one range of indices.
    const int singles = (head - begin) + (end - vend);
    for (int t = tid; t < singles; t += stride) {
        const int i = t < head - begin ? begin + t : vend + (t - (head - begin));
        float v = kl_bf162float(src[i]);
        if (mine != nullptr) v += kl_bf162float(mine[i]);
        out[i] = kl_float2bf16(v);
    }
}
