// wave64.cu — per-warp sums and votes, written for any warp width and written for 32 lanes.
#include "kl.cuh"

// The portable way: the warp's width, mask type and full mask come from kl.cuh.
extern "C" __global__ void warp_sums_portable(const float* in, float* out, kl_lanemask_t* ballots) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int off = KL_WARP_SIZE / 2; off > 0; off /= 2) v += kl_shfl_xor_sync(KL_FULL_MASK, v, off);
    const kl_lanemask_t b = kl_ballot_sync(KL_FULL_MASK, in[i] > 0.0f);
    if (kl_lane() == 0) {
        out[i / KL_WARP_SIZE] = v;
        ballots[i / KL_WARP_SIZE] = b;
    }
}

// 32 lanes written in: CUDA's 32-bit full mask and offsets from 16. Right on NVIDIA GPUs; on a
// 64-lane warp the mask leaves out lanes 32-63.
extern "C" __global__ void warp_sums_mask32(const float* in, float* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (threadIdx.x % 32 == 0) out[i / 32] = v;
}
