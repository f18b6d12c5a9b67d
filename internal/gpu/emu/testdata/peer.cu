// peer.cu — two devices exchange data through peer pointers while both kernels run.
//
// Each device's kernel writes its data (doubled) into the other device's receive buffer,
// raises the other device's flag, waits for its own flag, then reads what the peer wrote.
#include "kl.cuh"

extern "C" __global__ void exchange(const float* mine, float* peer_recv, const float* my_recv,
                                    volatile int* peer_flag, volatile int* my_flag, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) peer_recv[i] = 2.0f * mine[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        atomicAdd((int*)peer_flag, 1);
        while (*my_flag < (int)gridDim.x) {
        }
        __threadfence_system();
    }
    __syncthreads();
    if (i < n) out[i] = my_recv[i] + 1.0f;
}
