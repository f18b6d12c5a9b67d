// 00 — the device barrier between ranks, as a kernel of its own (one block): the engine launches
// it before and after a collective kernel that does not synchronise the ranks itself, so that
// runs follow each other on every rank's stream with no host in between (and between the GEMM and
// the reduction of gemm_rs). kl.cuh explains the protocol.
#include "kl.cuh"

extern "C" __global__ void kl_rank_barrier(unsigned* const* sig, int rank, int nranks) {
    kl_rank_barrier_block(sig, rank, nranks);
}
