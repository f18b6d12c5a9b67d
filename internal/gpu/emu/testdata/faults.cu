// faults.cu — kernels with bugs the emulator must report instead of hanging or crashing.
#include "kl.cuh"

// Half of the block skips the barrier.
extern "C" __global__ void divergent_barrier(float* x) {
    if (threadIdx.x < 16) __syncthreads();
    x[threadIdx.x] = 1.0f;
}

// Threads past n return before the barrier: barrier divergence.
extern "C" __global__ void early_return(float* x, int n) {
    __shared__ float s[256];
    if ((int)threadIdx.x >= n) return;
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[(threadIdx.x + 1) % n];
}

// Lane 0 waits at the block barrier while the other lanes wait for it in a shuffle.
extern "C" __global__ void deadlock(float* x) {
    float v = x[threadIdx.x];
    if (threadIdx.x == 0) {
        __syncthreads();
    } else {
        v = __shfl_sync(0xffffffffu, v, 0);
    }
    x[threadIdx.x] = v;
}

// One thread writes just past the end of x.
extern "C" __global__ void write_past_end(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 1.0f;
    if (i == n - 1) x[n + 3] = 2.0f; // 16 bytes past the last element
}

// One thread writes at x[index] (far away: a fault).
extern "C" __global__ void write_at(float* x, long long index) {
    if (threadIdx.x == 0 && blockIdx.x == 0) x[index] = 1.0f;
}

// A 16-byte load from x + offset bytes: misaligned unless offset is a multiple of 16.
extern "C" __global__ void load16_at(const char* x, long long offset, uint4* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) *out = *reinterpret_cast<const uint4*>(x + offset);
}

// Never ends: spins on a flag nobody sets.
extern "C" __global__ void endless(volatile int* flag) {
    while (*flag == 0) {
    }
}

// Never ends either, but spins with atomics.
extern "C" __global__ void endless_atomic(int* flag) {
    while (atomicAdd(flag, 0) == 0) {
    }
}

extern "C" __global__ void assert_positive(const int* x) {
    assert(x[threadIdx.x] > 0);
}

extern "C" __global__ void int_div(const int* a, const int* b, int* c) {
    c[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x];
}

extern "C" __global__ void bad_mask(int* x) {
    x[threadIdx.x] = __shfl_sync(1u << ((threadIdx.x + 1) % 32), x[threadIdx.x], 0);
}

__device__ __noinline__ int deep(int n, volatile int* sink) {
    volatile char pad[2048];
    pad[0] = (char)n;
    sink[0] = pad[0];
    return n == 0 ? 0 : deep(n - 1, sink) + pad[n % 2048];
}

extern "C" __global__ void stack_overflow(int* sink, int depth) { sink[1] = deep(depth, sink); }

// Block 0 fails an assertion; block 1 spins on a flag that block 0 would have set.
extern "C" __global__ void fail_while_other_waits(volatile int* flag) {
    if (threadIdx.x != 0) return;
    if (blockIdx.x == 0) {
        assert(flag[1] == 12345);
        *flag = 1;
    } else {
        while (*flag == 0) {
        }
    }
}
