// dynsmem.cu — dynamic shared memory (extern __shared__), sized at launch, and the isolation
// of shared memory between blocks that run at the same time.
#include "kl.cuh"

// Reverses each block's slice of in through a dynamic shared buffer of blockDim.x floats.
extern "C" __global__ void reverse_dyn(const float* in, float* out) {
    extern __shared__ float buf[];
    const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    buf[t] = in[base + t];
    __syncthreads();
    out[base + t] = buf[blockDim.x - 1 - t];
}

// Fills `words` 32-bit words of dynamic shared memory, then checks them after a barrier;
// info[0] gets the misaligned bytes of the buffer's address (mod 16), info[1] the errors.
extern "C" __global__ void fill_dyn(int words, int* info) {
    extern __shared__ __align__(16) unsigned char raw[];
    unsigned int* w = reinterpret_cast<unsigned int*>(raw);
    for (int i = threadIdx.x; i < words; i += blockDim.x) w[i] = 0x9e3779b9u * (unsigned)i + blockIdx.x;
    __syncthreads();
    int bad = 0;
    for (int i = threadIdx.x; i < words; i += blockDim.x)
        if (w[i] != 0x9e3779b9u * (unsigned)i + blockIdx.x) bad++;
    if (bad) atomicAdd(&info[1], bad);
    if (threadIdx.x == 0 && blockIdx.x == 0) info[0] = (int)(reinterpret_cast<uintptr_t>(raw) % 16);
}

// Each block fills a static __shared__ tile with its own id, lets the other blocks run
// (__nanosleep is a scheduling point), and counts the entries that changed under it.
extern "C" __global__ void shared_isolation(int* errors, int rounds) {
    __shared__ int tile[256];
    for (int r = 0; r < rounds; r++) {
        tile[threadIdx.x] = blockIdx.x * 1000 + r;
        __syncthreads();
        for (int spin = 0; spin < 50; spin++) __nanosleep(100);
        if (tile[(threadIdx.x + 1) % blockDim.x] != (int)blockIdx.x * 1000 + r) atomicAdd(errors, 1);
        __syncthreads();
    }
}
