// 20 — the NCCL baseline of the MoE suites, its local permutations (2): between NCCL's order of
// received rows (by source rank, then local expert) and the dispatch layout (by local expert, then
// source rank), both in the source's token order within a segment.
//
// counts[src·L + le] are the rows of local expert le from rank src (what NCCL's all-to-all of
// counts delivered), L = ⌈experts / nranks⌉. Every block takes both orders' segment starts in
// shared memory, as kernel 16 does. to_layout = 1 (dispatch): dst[layout row] = src[NCCL row], and
// the row's metadata (source rank, token, slot) from the (token, slot) pair that NCCL delivered
// with it; to_layout = 0 (combine): dst[NCCL row] = src[layout row], the way back.
#include "kl.cuh"
#include "bf16x8.cuh"

#define MOE_MAX_EXPERTS 1024 // the driver refuses more

extern "C" __global__ void moe_permute(const kl_bf16* src, kl_bf16* dst, const int* counts, const int* pairs, int* meta,
                                       int rank, int nranks, int experts, int k, int hidden, int to_layout) {
    __shared__ int s_lay[MOE_MAX_EXPERTS + 1], s_nccl[MOE_MAX_EXPERTS];
    const int per_rank = (experts + nranks - 1) / nranks, e0 = rank * per_rank;
    const int local = max(0, min(experts, e0 + per_rank) - e0), segs = local * nranks;
    for (int s = threadIdx.x; s < segs; s += blockDim.x) {
        const int le = s / nranks, from = s - le * nranks;
        s_lay[s + 1] = counts[from * per_rank + le];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        s_lay[0] = 0;
        int o = 0; // NCCL's order: source-major
        for (int from = 0; from < nranks; from++) {
            for (int le = 0; le < local; le++) {
                s_nccl[le * nranks + from] = o;
                o += s_lay[le * nranks + from + 1];
            }
        }
        for (int s = 0; s < segs; s++) s_lay[s + 1] += s_lay[s];
    }
    __syncthreads();
    const int w = hidden % KL_BF16X8 == 0 ? KL_BF16X8 : 1;
    const long long per = hidden / w, total = (long long)s_lay[segs] * per;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const int row = (int)(t / per);
        const long long c = (t - row * per) * w;
        int lo = 0, hi = segs - 1;
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (s_lay[mid] <= row) lo = mid; else hi = mid - 1;
        }
        const long long nrow = s_nccl[lo] + row - s_lay[lo];
        const long long from = to_layout ? nrow : row, to = to_layout ? row : nrow;
        kl_bf16_copy(dst + to * hidden, src + from * hidden, c, w);
        if (to_layout && c == 0) {
            const int pair = pairs[nrow], token = pair / k;
            meta[3 * row] = lo % nranks;
            meta[3 * row + 1] = token;
            meta[3 * row + 2] = pair - token * k;
        }
    }
}
