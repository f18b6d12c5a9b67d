// 10 — two-shot allreduce in bf16: kernel 02 with 16-byte vectors.
//
// Shot 1 pulls and sums chunk `rank` of every input (fp32 accumulation, one rounding, as in
// kernel 09); shot 2 pushes the bf16 sum into chunk `rank` of every rank's output. The chunks are
// those of kernel 02 rounded up to whole vectors — ceil(ceil(count/n)/8)·8 elements — so that
// every chunk starts on a 16-byte boundary; the last chunks may be shorter or empty, and only the
// one that ends the buffer has a tail of single elements. The barriers are kernel 02's.
#include "kl.cuh"
#include "bf16x8.cuh"

extern "C" __global__ void allreduce_two_shot(const kl_bf16* const* ins, kl_bf16* const* outs, unsigned* const* sig,
                                              int rank, int nranks, int count) {
    kl_rank_barrier_start(sig, rank, nranks);
    const int per = (count + nranks - 1) / nranks;
    const long long chunk = (long long)(per + KL_BF16X8 - 1) / KL_BF16X8 * KL_BF16X8;
    const long long begin = min((long long)count, rank * chunk);
    const long long end = min((long long)count, begin + chunk);
    const long long vend = begin + (end - begin) / KL_BF16X8 * KL_BF16X8;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long e = begin + tid * KL_BF16X8; e < vend; e += stride * KL_BF16X8) {
        const uint4 s = kl_bf16x8_sum(ins, nranks, e); // shot 1
        for (int r = 0; r < nranks; r++) {
            int dst = rank + 1 + r; // shot 2, starting with the next rank, as in kernel 02
            if (dst >= nranks) dst -= nranks;
            kl_bf16x8_store(outs[dst], e, s);
        }
    }
    for (long long i = vend + tid; i < end; i += stride) {
        const kl_bf16 s = kl_bf16_sum(ins, nranks, i);
        for (int r = 0; r < nranks; r++) outs[r][i] = s;
    }
    kl_rank_barrier_end(sig, rank, nranks);
}
