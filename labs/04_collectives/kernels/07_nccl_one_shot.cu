// 07 — one-shot allreduce on NCCL's symmetric memory and device API (NCCL >= 2.28): kernel 01 in
// its production form.
//
// Kernel 01 gets a table of peer pointers that the course built itself (VMM handles exchanged
// through the rendezvous, every peer's buffer mapped) and synchronises through flags of its own
// (kl.cuh). Here NCCL does both: the input lives in a symmetric window (ncclMemAlloc +
// ncclCommWindowRegister, the same size on every rank), ncclGetLsaPointer(win, offset, peer) is
// peer's part of it as this GPU addresses it, and an LSA barrier of the device communicator
// (ncclDevCommCreate, copied to device memory by the backend) brackets the kernel. LSA (load/store
// accessible) is the team of ranks that reach each other's memory by plain loads and stores —
// the GPUs of one NVLink domain; the driver runs this kernel only when that team is every rank.
//
// The barrier is per block: block b of every rank arrives and waits at barrier b (one barrier per
// block, so the grid is at most the barriers the device communicator was made with, and the same
// on every rank). That is enough: block b's start barrier means every peer's kernel has begun
// (its input, written before on its stream, is there), and a rank's next launch starts only after
// all its blocks passed their end barriers, by which every peer's block b has finished its reads.
#include <nccl_device.h>

extern "C" __global__ void allreduce_nccl_one_shot(ncclDevComm const* comm, ncclWindow_t win, float* out, int count) {
    ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), *comm, ncclTeamLsa(*comm), comm->lsaBarrier, blockIdx.x);
    // Acquire: the peers' writes before their arrival (their inputs) are visible after the wait;
    // release: this rank's earlier writes are visible to them.
    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    int nranks = comm->lsaSize;
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        // In LSA rank order on every rank (the team is the world here), so that all ranks get the
        // same bits, as in kernel 01.
        float s = 0.0f;
        for (int p = 0; p < nranks; p++) s += static_cast<const float*>(ncclGetLsaPointer(win, 0, p))[i];
        out[i] = s;
    }
    // Release: this block's loads from the peers are done before they may overwrite their inputs.
    bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
