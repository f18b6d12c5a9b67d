// 16 — MoE dispatch by pull: every rank gathers the rows routed to its experts from every rank.
//
// After kernel 15 and a device barrier, rank r owns experts e0 … e0+L−1 (L = ⌈experts / nranks⌉,
// e0 = r·L; the last ranks own fewer where nranks does not divide the experts). Its receive buffer
// is packed by local expert, then by source rank, then in the source's token order: segment
// (le, src) holds counts_src[e0+le] rows. Every block reads the n·L counts from the peers' tables
// (peer memory) and takes the prefix sums in shared memory: where each segment starts in the
// receive buffer, and where its list starts in the source's sendlist. Then a grid-stride loop
// over rows × 16-byte vectors: a row finds its segment by a binary search over the prefix sums,
// its (token, slot) in the source's sendlist, and copies the token's hidden state from the
// source's x (peer memory) into the receive buffer. The first vector's thread also writes the
// row's metadata (source rank, source token, slot): what the combine needs to send the expert's
// output back to the right token's right slot.
#include "kl.cuh"
#include "bf16x8.cuh"

#define MOE_MAX_EXPERTS 1024 // the driver refuses more

extern "C" __global__ void moe_dispatch(const kl_bf16* const* xs, const int* const* counts, const int* const* sendlists,
                                        kl_bf16* recv, int* meta, int rank, int nranks, int experts, int k, int hidden) {
    __shared__ int s_row[MOE_MAX_EXPERTS + 1], s_list[MOE_MAX_EXPERTS];
    const int per_rank = (experts + nranks - 1) / nranks, e0 = rank * per_rank; // expert e lives on rank e / per_rank
    const int local = max(0, min(experts, e0 + per_rank) - e0), segs = local * nranks;
    for (int s = threadIdx.x; s < segs; s += blockDim.x) {
        const int le = s / nranks, src = s - le * nranks;
        s_row[s + 1] = counts[src][e0 + le];           // the rows of segment s
        s_list[s] = counts[src][experts + e0 + le];    // where they are listed on src
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        s_row[0] = 0;
        for (int s = 0; s < segs; s++) s_row[s + 1] += s_row[s];
    }
    __syncthreads();
    const int w = hidden % KL_BF16X8 == 0 ? KL_BF16X8 : 1; // elements a thread copies at once
    const long long per = hidden / w, total = (long long)s_row[segs] * per;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        const int row = (int)(t / per);
        const long long c = (t - row * per) * w;
        int lo = 0, hi = segs - 1; // the last segment s with s_row[s] <= row (empty ones skipped)
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (s_row[mid] <= row) lo = mid; else hi = mid - 1;
        }
        const int src = lo % nranks;
        const int pair = sendlists[src][s_list[lo] + row - s_row[lo]];
        const int token = pair / k;
        const kl_bf16* x = xs[src] + (long long)token * hidden;
        kl_bf16* y = recv + (long long)row * hidden;
        kl_bf16_copy(y, x, c, w);
        if (c == 0) {
            meta[3 * row] = src;
            meta[3 * row + 1] = token;
            meta[3 * row + 2] = pair - token * k;
        }
    }
}
