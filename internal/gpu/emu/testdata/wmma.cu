// wmma.cu — tensor-core GEMM through the WMMA API: one warp per 16×16 tile of C.
#include "kl.cuh"

using namespace nvcuda;

// C (M×N, float, row-major) = A (M×K, half, row-major) · B (K×N, half, row-major).
extern "C" __global__ void wmma_gemm_f16(const half* A, const half* B, float* C, int M, int N, int K) {
    const int tm = blockIdx.y, tn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + tm * 16 * K + k, K);
        wmma::load_matrix_sync(b, B + k * N + tn * 16, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + tm * 16 * N + tn * 16, acc, N, wmma::mem_row_major);
}

// C = alpha · A·B + beta · C with bf16 inputs, B column-major, C loaded into the accumulator.
extern "C" __global__ void wmma_gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* Bt, float* C,
                                          int M, int N, int K, float alpha, float beta) {
    const int tm = blockIdx.y, tn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + tm * 16 * K + k, K);
        wmma::load_matrix_sync(b, Bt + tn * 16 * K + k, K); // column j of B is row j of Bt
        wmma::mma_sync(acc, a, b, acc);
    }
    float* tile = C + tm * 16 * N + tn * 16;
    wmma::load_matrix_sync(c, tile, N, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; i++) c.x[i] = alpha * acc.x[i] + beta * c.x[i];
    wmma::store_matrix_sync(tile, c, N, wmma::mem_row_major);
}
