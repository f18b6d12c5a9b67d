// gemm_common.cuh — small device helpers shared by the GEMM kernels of lab 02 (plain CUDA, so
// they run on the CPU emulator too). Include it after "kl.cuh".
//
// Every GEMM kernel of the lab computes C = alpha·A·B + beta·C with row-major A (M×K), B (K×N)
// and C (M×N), leading dimensions K, N and N. Two rules hold for all of them:
//   * beta == 0 means C is not read at all (BLAS semantics): C may hold anything, even NaN.
//   * elements outside the matrices are never read or written; loads of a partial tile are
//     filled with zeros, which add nothing to the dot products.
#pragma once

// kl_gemm_epilogue returns alpha·acc + beta·c_old, reading c_old only when beta != 0.
__device__ __forceinline__ float kl_gemm_epilogue(float acc, float alpha, float beta, const float* c) {
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * (*c);
}

// kl_load4 reads the four floats p[r·ld + c .. c+3] of a rows×cols row-major matrix, with zeros for
// the parts outside it. vec says the 16-byte load is legal whenever all four are inside: ld is a
// multiple of 4 and c is a multiple of 4 (every caller passes such c), so the address is 16-byte
// aligned. Otherwise the four elements are read one by one.
__device__ __forceinline__ float4 kl_load4(const float* __restrict__ p, int r, int c, int rows, int cols,
                                           int ld, bool vec) {
    if (vec && r < rows && c + 3 < cols) {
        return *reinterpret_cast<const float4*>(p + (long long)r * ld + c);
    }
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (r < rows) {
        const float* q = p + (long long)r * ld;
        if (c + 0 < cols) v.x = q[c + 0];
        if (c + 1 < cols) v.y = q[c + 1];
        if (c + 2 < cols) v.z = q[c + 2];
        if (c + 3 < cols) v.w = q[c + 3];
    }
    return v;
}

// kl_store4 writes alpha·acc + beta·C to C[r·ld + c .. c+3], skipping what lies outside the
// matrix; vec as in kl_load4.
__device__ __forceinline__ void kl_store4(float* __restrict__ C, int r, int c, int rows, int cols, int ld,
                                          bool vec, float4 acc, float alpha, float beta) {
    if (r >= rows) return;
    float* q = C + (long long)r * ld + c;
    if (vec && c + 3 < cols) {
        float4 out;
        if (beta == 0.0f) {
            out = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
        } else {
            const float4 old = *reinterpret_cast<const float4*>(q);
            out = make_float4(alpha * acc.x + beta * old.x, alpha * acc.y + beta * old.y,
                              alpha * acc.z + beta * old.z, alpha * acc.w + beta * old.w);
        }
        *reinterpret_cast<float4*>(q) = out;
        return;
    }
    if (c + 0 < cols) q[0] = kl_gemm_epilogue(acc.x, alpha, beta, q + 0);
    if (c + 1 < cols) q[1] = kl_gemm_epilogue(acc.y, alpha, beta, q + 1);
    if (c + 2 < cols) q[2] = kl_gemm_epilogue(acc.z, alpha, beta, q + 2);
    if (c + 3 < cols) q[3] = kl_gemm_epilogue(acc.w, alpha, beta, q + 3);
}
