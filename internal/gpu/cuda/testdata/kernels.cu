// Kernels for the CUDA backend's tests. The tests compile this file at run time with
// nvcc -cubin -arch=sm_XY for the device at hand (the file is embedded in the test binary).

// saxpy: y = a*x + y. Its parameters (4, 4, 8 and 8 bytes) exercise argument checking.
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// bad_write stores through p, which the test points at unmapped memory: an illegal address,
// which leaves the context unusable (a sticky error).
extern "C" __global__ void bad_write(float* p) { p[threadIdx.x] = 1.0f; }
