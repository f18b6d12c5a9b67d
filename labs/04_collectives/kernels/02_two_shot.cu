// 02 — two-shot allreduce: a reduce-scatter, then an all-gather, both over peer memory.
//
// The count elements are cut into n chunks of ceil(count/n); rank r owns chunk r. Shot 1: rank r
// reads chunk r of every input (pull) and sums it. Shot 2: it writes that sum into chunk r of every
// rank's output (push). Each rank now reads (n−1)·S/n and writes (n−1)·S/n bytes over the links
// instead of one-shot's (n−1)·S: the 2(n−1)/n of the bandwidth-optimal algorithms, in two steps.
//
// Synchronization: because the sum is pushed straight from the registers to every output, no
// rank ever reads a value another rank computed, so no flags are needed between the shots: the
// rank that owns a chunk is its only writer. The device barriers at the start (every peer's input
// is ready and its output poisoned) and at the end (every push has landed before any rank goes
// on) are those of kernel 01. A pull-based all-gather would need a barrier between the shots:
// that is open exercise 2 of the notes.
#include "kl.cuh"

extern "C" __global__ void allreduce_two_shot(const float* const* ins, float* const* outs, unsigned* const* sig,
                                              int rank, int nranks, int count) {
    kl_rank_barrier_start(sig, rank, nranks);
    int chunk = (count + nranks - 1) / nranks;
    int begin = rank * chunk;
    int end = min(count, begin + chunk);
    int stride = gridDim.x * blockDim.x;
    for (int i = begin + blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) {
        float s = 0.0f;
        for (int r = 0; r < nranks; r++) s += ins[r][i]; // shot 1: pull and reduce chunk `rank`
        for (int r = 0; r < nranks; r++) {
            // Shot 2: push the sum to every rank, starting with the next one so that the n ranks
            // do not all write to the same device at once.
            int dst = rank + 1 + r;
            if (dst >= nranks) dst -= nranks;
            outs[dst][i] = s;
        }
    }
    kl_rank_barrier_end(sig, rank, nranks);
}
