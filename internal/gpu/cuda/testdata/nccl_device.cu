// A kernel on NCCL's device API (nccl_device.h, NCCL 2.28), compiled by the tests to check that the
// arguments the CUDA backend hands out for a symmetric window (gpu.SymmetricWindow: the device
// communicator's address and the window handle) are what such kernels take.
#include <nccl_device.h>

// lsa_sum_f32: out[i] = the sum over the LSA ranks of their window's float at offset + 4i,
// between two LSA barriers (one per block), as an all-reduce kernel starts and ends.
extern "C" __global__ void lsa_sum_f32(ncclDevComm const* comm, ncclWindow_t win, size_t offset, float* out,
                                       size_t count) {
    ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), *comm, ncclTeamLsa(*comm), comm->lsaBarrier, blockIdx.x);
    bar.sync(ncclCoopCta(), cuda::memory_order_acquire);
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
        float s = 0;
        for (int peer = 0; peer < comm->lsaSize; peer++)
            s += static_cast<float const*>(ncclGetLsaPointer(win, offset, peer))[i];
        out[i] = s;
    }
    bar.sync(ncclCoopCta(), cuda::memory_order_release);
}
