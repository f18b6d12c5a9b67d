// templates.cu — templates behind extern "C" entries, and entries stamped out by a macro.
#include "kl.cuh"

template <typename T>
__device__ void axpy_t(T a, const T* __restrict__ x, T* __restrict__ y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

template <int F>
__device__ __forceinline__ void scale_t(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= F;
}

extern "C" __global__ void axpy_f32(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
    axpy_t<float>(a, x, y, n);
}

extern "C" __global__ void axpy_f64(double a,
                                    const double* __restrict__ x,
                                    double* __restrict__ y,
                                    int n) {
    axpy_t<double>(a, x, y, n);
}

#define SCALE_KERNEL(NAME, F) \
    extern "C" __global__ void NAME(float* x, int n) { scale_t<F>(x, n); }
SCALE_KERNEL(scale2, 2)
SCALE_KERNEL(scale3, 3)

// A template __global__ function has no extern "C" name: it is not an entry.
template <int B>
__global__ void not_an_entry(float* x) { x[threadIdx.x] = B; }

extern "C" {
__global__ void in_block(long long* out, unsigned long long v, char c) { out[0] = (long long)v + c; }
}

#if defined(KL_BACKEND_CUDA)
extern "C" __global__ void cuda_only(float* x) { asm volatile("trap;"); }
#endif
