// 08 — all-gather on NCCL's symmetric memory and device API (NCCL >= 2.28): kernel 03 in its
// production form, between two LSA barriers.
//
// Every rank's input is its part of one symmetric window; rank r's output is the concatenation of
// the n parts, block j from the rank whose LSA index is j (the team of load/store-accessible
// ranks is the world here: the driver checks). As in kernel 03, blocks are visited starting with
// the caller's neighbour, so that the ranks spread their reads over the peers. Kernel 03 runs
// between two launches of the course's barrier kernel (00); this one synchronises inside itself,
// with one LSA barrier per block as kernel 07 explains.
#include <nccl_device.h>

extern "C" __global__ void allgather_nccl_pull(ncclDevComm const* comm, ncclWindow_t win, float* out, int count) {
    ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), *comm, ncclTeamLsa(*comm), comm->lsaBarrier, blockIdx.x);
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    int nranks = comm->lsaSize, me = comm->lsaRank;
    long long total = (long long)nranks * count;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        int b = (int)(t / count);
        int i = (int)(t - (long long)b * count);
        int src = me + 1 + b;
        while (src >= nranks) src -= nranks;
        out[(long long)src * count + i] = static_cast<const float*>(ncclGetLsaPointer(win, 0, src))[i];
    }
    bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
