// index3d.cu — 3-D grids and blocks: every thread writes who it is.
#include "kl.cuh"

extern "C" __global__ void who(int4* out, int3* dims) {
    const int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
    const int block = bx + gridDim.x * (by + gridDim.y * bz);
    const int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int nthreads = blockDim.x * blockDim.y * blockDim.z;
    const int g = block * nthreads + thread;
    out[g] = make_int4(block, threadIdx.x, threadIdx.y, threadIdx.z);
    if (g == 0) {
        dims[0] = make_int3(gridDim.x, gridDim.y, gridDim.z);
        dims[1] = make_int3(blockDim.x, blockDim.y, blockDim.z);
        dims[2] = make_int3(warpSize, 0, 0);
    }
}
