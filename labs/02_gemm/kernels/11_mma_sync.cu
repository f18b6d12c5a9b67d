#include "kl.cuh"
#include "gemm_common.cuh"

// 11_mma_sync.cu — the tensor cores without WMMA: mma.sync, ldmatrix and a cp.async pipeline.
//
// Over kernel 10: WMMA hides three things that matter for speed, and this kernel does them by hand
// in inline PTX (sm_80 and newer; on the CPU emulator each wrapper below calls the emulator's form
// of its instruction, emu/kl_emu_ptx.h, with PTX's register layouts):
//   * cp.async: a global → shared copy that bypasses the registers and does not block the thread.
//     With STAGES = 4 shared-memory buffers, the copies of K steps kt+1 .. kt+3 are in flight while
//     the warps compute step kt. cp.async.commit_group closes a group of copies,
//     cp.async.wait_group n waits until at most n groups are still pending. Copies outside the
//     matrices pass a source size of 0 bytes, which fills the 16 bytes with zeros.
//   * ldmatrix: one instruction loads four 8×8 bf16 matrices from shared memory straight into the
//     register layout the MMA expects (.trans transposes on the way, which turns the row-major
//     B tile into the "col" operand).
//   * mma.sync.m16n8k16: the warp-wide tensor-core instruction (HMMA.16816.F32.BF16 in SASS);
//     a warp's 64×32 tile is 4 × 4 of them per k16, 64 fp32 accumulators per thread.
// The shared tiles are XOR-swizzled so that the 8 rows an ldmatrix phase reads sit in 8 different
// 16-byte bank groups: for A (64-byte rows) chunk c of row r is stored at c ^ ((r/2) % 4), for
// B (256-byte rows) at c ^ (r % 8). Without it the B reads would be 8-way bank conflicts.
//
// Sizes: any M, N, K. cp.async moves 16-byte chunks, which needs K % 8 == 0 and N % 8 == 0; for
// other sizes the same pipeline is fed by ordinary loads (element by element, with bounds) — correct,
// slower.
//
// Launch: block 256 (8 warps, 2 × 4), grid (ceil(N/128), ceil(M/128)), 64 KiB of dynamic shared
// memory (4 stages × (8 KiB of A + 8 KiB of B)).

#define BM 128
#define BN 128
#define BK 32
#define STAGES 4
#define NT 256
#define WM 64
#define WN 32
#define MI (WM / 16) // 4 m16 tiles per warp
#define NI (WN / 8)  // 4 n8 tiles per warp
#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BK * BN * 2)
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
#if defined(KL_BACKEND_EMU) // the emulator's cp.async (emu/kl_emu_ptx.h), as the other wrappers here
    kl_emu_ptx::cp_async(dst, src, src_bytes);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(KL_BACKEND_EMU)
    kl_emu_ptx::cp_async_commit();
#else
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(KL_BACKEND_EMU)
    kl_emu_ptx::cp_async_wait(N);
#else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
#if defined(KL_BACKEND_EMU)
    unsigned r[4];
    kl_emu_ptx::ldmatrix(addr, r, 4, false);
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
#endif
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
#if defined(KL_BACKEND_EMU)
    unsigned r[4];
    kl_emu_ptx::ldmatrix(addr, r, 4, true);
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
#endif
}

// d += a·b for one m16n8k16 tile: a is 4 registers (8 bf16), b 2 registers (4 bf16), d 4 floats.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if defined(KL_BACKEND_EMU)
    kl_emu_ptx::mma_m16n8k16_bf16(d, a, b);
#else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Byte offsets of 16-byte chunk c of row r in the swizzled tiles.
__device__ __forceinline__ int a_off(int r, int c) { return r * (BK * 2) + ((c ^ ((r >> 1) & 3)) << 4); }
__device__ __forceinline__ int b_off(int r, int c) { return r * (BN * 2) + ((c ^ (r & 7)) << 4); }

// load_stage copies the A tile (rows m0.., columns k0..) and the B tile (rows k0.., columns n0..)
// into one stage: 512 chunks of 16 bytes each, two of A and two of B per thread.
template <bool ALIGNED>
__device__ __forceinline__ void load_stage(unsigned char* stage, const __nv_bfloat16* __restrict__ A,
                                           const __nv_bfloat16* __restrict__ B, int M, int N, int K, int m0,
                                           int n0, int k0) {
    const int tid = threadIdx.x;
    unsigned char* sA = stage;
    unsigned char* sB = stage + A_STAGE_BYTES;
#pragma unroll
    for (int l = 0; l < (BM * BK / 8) / NT; ++l) {
        const int id = tid + l * NT, r = id >> 2, c = id & 3;
        const int gr = m0 + r, gk = k0 + c * 8;
        if (ALIGNED) {
            const bool in = gr < M && gk < K; // K % 8 == 0: the chunk is all in or all out
            cp_async16(smem_u32(sA + a_off(r, c)), in ? (const void*)(A + (long long)gr * K + gk) : (const void*)A,
                       in ? 16 : 0);
        } else {
            uint4 v;
            __nv_bfloat16* e = reinterpret_cast<__nv_bfloat16*>(&v);
#pragma unroll
            for (int j = 0; j < 8; ++j)
                e[j] = (gr < M && gk + j < K) ? A[(long long)gr * K + gk + j] : __float2bfloat16(0.0f);
            *reinterpret_cast<uint4*>(sA + a_off(r, c)) = v;
        }
    }
#pragma unroll
    for (int l = 0; l < (BK * BN / 8) / NT; ++l) {
        const int id = tid + l * NT, r = id >> 4, c = id & 15;
        const int gk = k0 + r, gn = n0 + c * 8;
        if (ALIGNED) {
            const bool in = gk < K && gn < N; // N % 8 == 0
            cp_async16(smem_u32(sB + b_off(r, c)), in ? (const void*)(B + (long long)gk * N + gn) : (const void*)B,
                       in ? 16 : 0);
        } else {
            uint4 v;
            __nv_bfloat16* e = reinterpret_cast<__nv_bfloat16*>(&v);
#pragma unroll
            for (int j = 0; j < 8; ++j)
                e[j] = (gk < K && gn + j < N) ? B[(long long)gk * N + gn + j] : __float2bfloat16(0.0f);
            *reinterpret_cast<uint4*>(sB + b_off(r, c)) = v;
        }
    }
}

template <bool ALIGNED>
__device__ __forceinline__ void hgemm_mma_body(int M, int N, int K, float alpha, const __nv_bfloat16* __restrict__ A,
                                               const __nv_bfloat16* __restrict__ B, float beta, float* __restrict__ C,
                                               unsigned char* smem) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int numK = (K + BK - 1) / BK;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    // Prologue: the first STAGES-1 K steps in flight.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < numK) load_stage<ALIGNED>(smem + s * STAGE_BYTES, A, B, M, N, K, m0, n0, s * BK);
        cp_async_commit();
    }

    for (int kt = 0; kt < numK; ++kt) {
        cp_async_wait<STAGES - 2>(); // step kt has landed (this thread's copies)...
        __syncthreads();             // ...and everyone's; everyone is also done with step kt-1
        const int pf = kt + STAGES - 1;
        if (pf < numK) load_stage<ALIGNED>(smem + (pf % STAGES) * STAGE_BYTES, A, B, M, N, K, m0, n0, pf * BK);
        cp_async_commit();

        const unsigned char* stage = smem + (kt % STAGES) * STAGE_BYTES;
        const unsigned sA = smem_u32(stage), sB = smem_u32(stage + A_STAGE_BYTES);
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[MI][4], bfr[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                const int r = wm * WM + mi * 16 + (lane & 15);
                const int c = (kk >> 3) + (lane >> 4);
                ldmatrix_x4(sA + a_off(r, c), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
            }
#pragma unroll
            for (int np = 0; np < NI / 2; ++np) {
                const int r = kk + (lane & 15);
                const int c = (wn * WN + np * 16) / 8 + (lane >> 4);
                ldmatrix_x4_trans(sB + b_off(r, c), bfr[2 * np][0], bfr[2 * np][1], bfr[2 * np + 1][0], bfr[2 * np + 1][1]);
            }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) mma_bf16_16816(acc[mi][ni], af[mi], bfr[ni]);
        }
    }
    cp_async_wait<0>();

    // Accumulator layout of m16n8: thread (g = lane/4, t = lane%4) holds rows g and g+8, columns 2t, 2t+1.
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * WM + mi * 16 + g + h * 8;
                const int col = n0 + wn * WN + ni * 8 + 2 * t;
                if (row >= M) continue;
                float* c = C + (long long)row * N + col;
                if (col < N) c[0] = kl_gemm_epilogue(acc[mi][ni][2 * h], alpha, beta, c);
                if (col + 1 < N) c[1] = kl_gemm_epilogue(acc[mi][ni][2 * h + 1], alpha, beta, c + 1);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(NT)
hgemm_mma(int M, int N, int K, float alpha, const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
          float beta, float* __restrict__ C) {
    extern __shared__ __align__(128) unsigned char smem[];
    if ((K % 8) == 0 && (N % 8) == 0) {
        hgemm_mma_body<true>(M, N, K, alpha, A, B, beta, C, smem);
    } else {
        hgemm_mma_body<false>(M, N, K, alpha, A, B, beta, C, smem);
    }
}
