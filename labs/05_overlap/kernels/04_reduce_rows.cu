// 04 — the reduce-scatter half of GEMM+RS, as a pull kernel: rank `rank` sums the rows it owns of
// every rank's partial product P_s (M×N each, on rank s's device) into its output block.
//
// parts[s] is rank s's P_s; the kernel reads rows [row0, row0 + rows) of each (row0 and rows those
// of this rank, ov_row0_of / ov_rows_of of M) through peer pointers and writes their sum to out
// (rows×N). The ranks are summed in the order 0, 1, …, n−1 on every rank and in every schedule,
// so the result does not depend on which partial arrived first. The sequential variant launches it
// once after every rank's whole GEMM; the chunked variant once per destination, as soon as the
// blocks of that destination's rows are done on every rank. A grid-stride loop over elements: the
// rate is that of the peer links, not of this loop. reduce_rows_bf16 is the same for bf16
// partials: summed in fp32 in rank order and rounded to bf16 once.
#include "kl.cuh"
#include "overlap_gemm.cuh"

template <typename T>
__device__ __forceinline__ void reduce(const T* const* parts, T* out, int N, int nranks, int row0, int rows) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long total = (long long)rows * N, base = (long long)row0 * N;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += stride) {
        float acc = 0.0f;
        for (int s = 0; s < nranks; ++s) acc += ov_float(parts[s][base + t]);
        ov_put(&out[t], acc);
    }
}

extern "C" __global__ void reduce_rows(const float* const* parts, float* out, int N, int nranks, int row0,
                                       int rows) {
    reduce(parts, out, N, nranks, row0, rows);
}

extern "C" __global__ void reduce_rows_bf16(const kl_bf16* const* parts, kl_bf16* out, int N, int nranks, int row0,
                                            int rows) {
    reduce(parts, out, N, nranks, row0, rows);
}
