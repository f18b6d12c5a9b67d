// ptx.cu — the emulator's forms of cp.async, ldmatrix and mma.sync (emu/kl_emu_ptx.h), used as a
// kernel's asm wrappers use them under KL_BACKEND_EMU (and as PTX on a GPU).
#include "kl.cuh"

#include "grouped_sched.cuh"
#include "grouped_mma.cuh" // kl_mma's wrappers: inline PTX on a GPU, the emulator's forms under KL_BACKEND_EMU

using namespace kl_mma;

// ldmatrix .x2 .trans, which the course's kernels do not use, wrapped the same way.
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned addr, unsigned (&r)[2]) {
#if defined(KL_BACKEND_EMU)
    kl_emu_ptx::ldmatrix(addr, r, 2, true);
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
#endif
}

// C (16×8, fp32, row-major) = A (16×16, bf16, row-major) · B (16×8, bf16, row-major), one warp:
// A and B staged in shared memory by cp.async, A's fragment by ldmatrix.x4, B's by ldmatrix.x2
// .trans (B row-major is the "col" operand transposed), one mma.sync.m16n8k16.
extern "C" __global__ void mma_16x8x16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C) {
    __shared__ __align__(16) __nv_bfloat16 sA[16 * 16], sB[16 * 8];
    const int lane = threadIdx.x;
    // 32 chunks of 16 bytes of A, 16 of B.
    cp_async16(smem_u32(sA + lane * 8), A + lane * 8, 16);
    if (lane < 16) cp_async16(smem_u32(sB + lane * 8), B + lane * 8, 16);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    // ldmatrix.x4 of A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15,
    // k 8-15) are a0a1, a2a3, a4a5, a6a7 of the fragment.
    unsigned a[4], b[2];
    const int r = lane % 16, c = lane / 16;
    ldmatrix_x4(smem_u32(sA + r * 16 + c * 8), a[0], a[1], a[2], a[3]);
    // ldmatrix.x2.trans of B: matrices k 0-7 and k 8-15 (8 columns each), lanes 0-15 give the rows.
    ldmatrix_x2_trans(smem_u32(sB + (lane % 16) * 8), b);
    float d[4] = {0, 0, 0, 0};
    mma_16816(d, a, b);
    const int g = lane / 4, t = lane % 4;
    C[g * 8 + 2 * t] = d[0];
    C[g * 8 + 2 * t + 1] = d[1];
    C[(g + 8) * 8 + 2 * t] = d[2];
    C[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// out[i] = what thread i reads of its shared slot before and after its cp.async lands: the old
// value (-1) before cp_async_wait, the copied one after; a group that is not waited for (wait(1)
// with two groups) has not landed either; a zero source size fills zeros.
extern "C" __global__ void cp_async_order(const int* in, int* out) {
    __shared__ __align__(16) int s[4 * 64], z[4 * 64];
    const int i = threadIdx.x;
    for (int j = 0; j < 4; j++) s[4 * i + j] = -1, z[4 * i + j] = -1;
    cp_async16(smem_u32(&s[4 * i]), in + 4 * i, 16);
    cp_async_commit();
    out[4 * i] = s[4 * i];                     // in flight: -1
    cp_async16(smem_u32(&z[4 * i]), in + 4 * i, 0);
    cp_async_commit();
    cp_async_wait<1>();                        // the first group has landed, the second has not
    out[4 * i + 1] = s[4 * i];                 // in[4i]
    out[4 * i + 2] = z[4 * i];                 // -1
    cp_async_wait<0>();
    out[4 * i + 3] = z[4 * i];                 // 0
}

// Misuse the emulator reports: an ldmatrix row address that is not 16-byte aligned (how = 0), an
// mma.sync that half the warp skips (1), more copies in flight than the emulator keeps (2).
extern "C" __global__ void ptx_misuse(int how) {
    __shared__ __align__(16) __nv_bfloat16 s[64 * 8];
    const int lane = threadIdx.x;
    unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    float d[4] = {0, 0, 0, 0};
    if (how == 0) ldmatrix_x4(smem_u32(s + (lane % 8) * 8 + 1), a[0], a[1], a[2], a[3]);
    if (how == 1 && lane < 16) mma_16816(d, a, b);
    if (how == 2)
        for (int i = 0; i < 65; i++) cp_async16(smem_u32(s + (i % 64) * 8), s, 0);
}
