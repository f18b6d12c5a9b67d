// warp.cu — warp shuffles and votes.
#include "kl.cuh"

__device__ __forceinline__ float warp_sum(float v) {
    for (int off = KL_WARP_SIZE / 2; off > 0; off /= 2) v += __shfl_down_sync(KL_FULL_MASK, v, off);
    return v;
}

// Block-wide sum: shuffles within each warp, then the first warp reduces the warps' sums.
extern "C" __global__ void block_sum(const float* in, float* out, int n) {
    __shared__ float partial[32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    v = warp_sum(v);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const int nwarps = (blockDim.x + 31) / 32;
        v = lane < nwarps ? partial[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

// Every lane gets the warp's sum (butterfly), the value of lane 5 and its inclusive prefix sum.
extern "C" __global__ void warp_ops(const int* in, int* allsum, int* bcast, int* scan, int* seg) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32;
    int v = in[i];
    int s = v;
    for (int m = 16; m > 0; m /= 2) s += __shfl_xor_sync(KL_FULL_MASK, s, m);
    allsum[i] = s;
    bcast[i] = __shfl_sync(KL_FULL_MASK, v, 5);
    int x = v;
    for (int d = 1; d < 32; d *= 2) {
        int y = __shfl_up_sync(KL_FULL_MASK, x, d);
        if (lane >= d) x += y;
    }
    scan[i] = x;
    // segments of 8 lanes: the sum of each segment, by shuffles of width 8
    int t = v;
    for (int off = 4; off > 0; off /= 2) t += __shfl_down_sync(KL_FULL_MASK, t, off, 8);
    seg[i] = __shfl_sync(KL_FULL_MASK, t, 0, 8);
}

// Votes on in[i] > 0: out[4*warp + 0..3] = ballot, any, all, and the count from __syncthreads_count.
extern "C" __global__ void votes(const int* in, unsigned* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int warp = i / 32;
    const int p = in[i] > 0;
    unsigned b = __ballot_sync(KL_FULL_MASK, p);
    int any = __any_sync(KL_FULL_MASK, p);
    int all = __all_sync(KL_FULL_MASK, p);
    int count = __syncthreads_count(p);
    if (threadIdx.x % 32 == 0) {
        out[4 * warp + 0] = b;
        out[4 * warp + 1] = any;
        out[4 * warp + 2] = all;
        out[4 * warp + 3] = count;
    }
}

// Only the even lanes shuffle among themselves (a partial mask).
extern "C" __global__ void even_lanes(const int* in, int* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32;
    out[i] = -1;
    if (lane % 2 == 0) {
        // each even lane takes the value of the next even lane (wrapping)
        out[i] = __shfl_sync(0x55555555u, in[i], (lane + 2) % 32);
    }
    __syncwarp();
}
