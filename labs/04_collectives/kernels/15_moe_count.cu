// 15 — MoE dispatch, the counting phase: how many rows this rank sends to every expert, and which.
//
// Every token of this rank is routed to k distinct experts: topk[t·k + j] is the expert of its
// slot j. One block counts, for every expert e, the (token, slot) pairs routed to it, and writes
// into this rank's shared table (which every peer maps):
//   counts[e]            the rows this rank sends to expert e,
//   counts[experts + e]  where expert e's list starts in sendlist (the exclusive prefix sum),
//   sendlist[...]        the pairs, as t·k + j, grouped by expert and in token order within one.
// Experts are spread evenly over the ranks (expert e lives on rank e / ⌈experts / nranks⌉), so the
// list is also grouped by destination rank. After a device barrier every rank reads its peers'
// counts and lists (kernel 16): that read is the exchange of sizes that precedes the data.
// A thread takes experts e = threadIdx.x, + blockDim.x, ...; each scans the routing twice, which
// is cheap next to the copies (at most a few thousand pairs).
#include "kl.cuh"

#define MOE_MAX_EXPERTS 1024 // the driver refuses more

extern "C" __global__ void moe_count(const int* topk, int pairs, int experts, int* counts, int* sendlist) {
    __shared__ int s_count[MOE_MAX_EXPERTS], s_start[MOE_MAX_EXPERTS];
    for (int e = threadIdx.x; e < experts; e += blockDim.x) {
        int c = 0;
        for (int i = 0; i < pairs; i++) c += topk[i] == e;
        s_count[e] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int o = 0;
        for (int e = 0; e < experts; e++) {
            s_start[e] = o;
            o += s_count[e];
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < experts; e += blockDim.x) {
        int o = s_start[e];
        for (int i = 0; i < pairs; i++) {
            if (topk[i] == e) sendlist[o++] = i;
        }
        counts[e] = s_count[e];
        counts[experts + e] = s_start[e];
    }
}
