#include "kl.cuh"

// 01_copy.cu — how fast can the device move bytes? Four copy kernels.
//
// A copy does no arithmetic, so its speed is set by the memory system alone. What the kernel
// controls is how it asks for the bytes:
//   copy_f32      a grid-stride loop, one 4-byte load per thread per iteration: each warp
//                 instruction moves only 128 bytes, and each thread has 4 bytes in flight;
//   copy_f4       the same loop with 16-byte (float4) loads: 4x the bytes per instruction;
//   copy_f4_x4    four independent float4 loads issued before the first store: 64 bytes in flight
//                 per thread (Little's law: bytes in flight = bandwidth x latency);
//   copy_f4_flat  no loop at all: one float4 per thread and a grid that covers the whole array,
//                 so the block scheduler hands out the work, in address order, as blocks finish.
// Consecutive threads touch consecutive elements, so every warp access is coalesced into whole
// 32-byte sectors. Measure, then explain: the fastest at large sizes is not the one with the most
// bytes in flight per thread.

// copy_body copies nv elements of type V. Each thread handles U elements per iteration, spaced
// blockDim.x apart so that each of the U accesses is coalesced across the block.
template <typename V, int U>
__device__ inline void copy_body(const V* __restrict__ src, V* __restrict__ dst, long long nv) {
    const long long block = (long long)blockDim.x;
    const long long stride = (long long)gridDim.x * block * U;
    for (long long base = (long long)blockIdx.x * block * U + threadIdx.x; base < nv; base += stride) {
        if (base + (U - 1) * block < nv) {
            // The common case: the whole group is in range. Issue all U loads, then all U
            // stores, so that U requests are in flight before the thread waits for the first.
            V r[U];
#pragma unroll
            for (int u = 0; u < U; ++u) r[u] = src[base + u * block];
#pragma unroll
            for (int u = 0; u < U; ++u) dst[base + u * block] = r[u];
        } else {
            // The last, partial group.
            for (int u = 0; u < U; ++u) {
                const long long i = base + u * block;
                if (i < nv) dst[i] = src[i];
            }
        }
    }
}

// copy_tail copies the floats [from, n) that do not fill a whole float4 (at most 3).
__device__ inline void copy_tail(const float* __restrict__ src, float* __restrict__ dst, long long from, long long n) {
    if (blockIdx.x != 0) return;
    for (long long i = from + threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

extern "C" __global__ void copy_f32(const float* __restrict__ src, float* __restrict__ dst, long long n) {
    copy_body<float, 1>(src, dst, n);
}

// The float4 kernels need src and dst aligned to 16 bytes (device allocations are aligned to at
// least 256 bytes). n need not be a multiple of 4: the remainder is copied as floats.
extern "C" __global__ void copy_f4(const float* __restrict__ src, float* __restrict__ dst, long long n) {
    const long long n4 = n / 4;
    copy_body<float4, 1>(reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
    copy_tail(src, dst, n4 * 4, n);
}

extern "C" __global__ void copy_f4_x4(const float* __restrict__ src, float* __restrict__ dst, long long n) {
    const long long n4 = n / 4;
    copy_body<float4, 4>(reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
    copy_tail(src, dst, n4 * 4, n);
}

// copy_f4_flat: launched with ceil(n / 4 / blockDim.x) blocks, one float4 per thread.
extern "C" __global__ void copy_f4_flat(const float* __restrict__ src, float* __restrict__ dst, long long n) {
    const long long n4 = n / 4;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) reinterpret_cast<float4*>(dst)[i] = reinterpret_cast<const float4*>(src)[i];
    copy_tail(src, dst, n4 * 4, n);
}
