#include "kl.cuh"

// 01_copy.cu — synthetic copy kernels for the site's tests.

// copy_body copies n elements of V.
template <typename V>
__device__ inline void copy_body(const V* __restrict__ src, V* __restrict__ dst, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        dst[i] = src[i];
    }
}

/* One float per thread per iteration. */
extern "C" __global__ void copy_f32(const float* __restrict__ src, float* __restrict__ dst, long long n) {
    copy_body<float>(src, dst, n);
}

// One float4 per thread per iteration: "16 bytes" at a time.
extern "C" __global__ void
copy_f4(const float4* __restrict__ src, float4* __restrict__ dst, long long n) {
    copy_body<float4>(src, dst, n / 4);
}
