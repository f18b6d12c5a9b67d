// grouped_mma.cuh — one 128×128 tile of a bf16 GEMM with mma.sync, ldmatrix and a 4-stage
// cp.async pipeline, for lab 03's tensor-core kernels. Inline PTX (sm_80 and newer); on the CPU
// emulator the wrappers call its forms of the same instructions (emu/kl_emu_ptx.h);
// include after "kl.cuh" and "grouped_sched.cuh".
//
// It is lab 02's kernel 11 (11_mma_sync.cu) cut loose from blockIdx, with general leading
// dimensions and a bf16 output: bf16 A and B, fp32 accumulation, C = bf16(A·B). 256 threads,
// 8 warps of 64×32, each warp 4 × 4 mma.sync.m16n8k16 per k16 step, K steps of 32, four
// shared-memory stages of 16 KiB (64 KiB of dynamic shared memory), XOR-swizzled so that ldmatrix
// reads are free of bank conflicts. cp.async moves 16-byte chunks: that needs K, N, lda and ldb to
// be multiples of 8 and A, B 16-byte aligned; other groups go through the same pipeline with
// ordinary loads (element by element, with bounds): correct, slower.
#pragma once

#define KL_MMA_BM 128
#define KL_MMA_BN 128
#define KL_MMA_THREADS 256
#define KL_MMA_SMEM (4 * (128 * 32 * 2 + 32 * 128 * 2)) // 65536 bytes

namespace kl_mma {

constexpr int BM = KL_MMA_BM, BN = KL_MMA_BN, BK = 32, STAGES = 4, NT = KL_MMA_THREADS;
constexpr int WM = 64, WN = 32, MI = WM / 16, NI = WN / 8;
constexpr int A_STAGE_BYTES = BM * BK * 2, B_STAGE_BYTES = BK * BN * 2;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
static_assert(STAGES * STAGE_BYTES == KL_MMA_SMEM, "KL_MMA_SMEM is the pipeline's size");

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
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2,
                                                  unsigned& r3) {
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
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
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

// Byte offsets of 16-byte chunk c of row r in the swizzled tiles (A: 64-byte rows, B: 256-byte rows).
__device__ __forceinline__ int a_off(int r, int c) { return r * (BK * 2) + ((c ^ ((r >> 1) & 3)) << 4); }
__device__ __forceinline__ int b_off(int r, int c) { return r * (BN * 2) + ((c ^ (r & 7)) << 4); }

// load_stage copies the A tile (rows m0.., columns k0..) and the B tile (rows k0.., columns n0..)
// of group g into one stage: 512 chunks of 16 bytes, two of A and two of B per thread.
template <bool ALIGNED>
__device__ __forceinline__ void load_stage(unsigned char* stage, const kl_gview<__nv_bfloat16, __nv_bfloat16>& g,
                                           int m0, int n0, int k0) {
    const int tid = threadIdx.x;
    unsigned char* sA = stage;
    unsigned char* sB = stage + A_STAGE_BYTES;
#pragma unroll
    for (int l = 0; l < (BM * BK / 8) / NT; ++l) {
        const int id = tid + l * NT, r = id >> 2, c = id & 3;
        const int gr = m0 + r, gk = k0 + c * 8;
        if (ALIGNED) {
            const bool in = gr < g.M && gk < g.K; // K % 8 == 0: a chunk is all in or all out
            cp_async16(smem_u32(sA + a_off(r, c)), in ? (const void*)(g.A + (long long)gr * g.lda + gk) : (const void*)g.A,
                       in ? 16 : 0);
        } else {
            uint4 v;
            __nv_bfloat16* e = reinterpret_cast<__nv_bfloat16*>(&v);
#pragma unroll
            for (int j = 0; j < 8; ++j)
                e[j] = (gr < g.M && gk + j < g.K) ? g.A[(long long)gr * g.lda + gk + j] : __float2bfloat16(0.0f);
            *reinterpret_cast<uint4*>(sA + a_off(r, c)) = v;
        }
    }
#pragma unroll
    for (int l = 0; l < (BK * BN / 8) / NT; ++l) {
        const int id = tid + l * NT, r = id >> 4, c = id & 15;
        const int gk = k0 + r, gn = n0 + c * 8;
        if (ALIGNED) {
            const bool in = gk < g.K && gn < g.N; // N % 8 == 0
            cp_async16(smem_u32(sB + b_off(r, c)), in ? (const void*)(g.B + (long long)gk * g.ldb + gn) : (const void*)g.B,
                       in ? 16 : 0);
        } else {
            uint4 v;
            __nv_bfloat16* e = reinterpret_cast<__nv_bfloat16*>(&v);
#pragma unroll
            for (int j = 0; j < 8; ++j)
                e[j] = (gk < g.K && gn + j < g.N) ? g.B[(long long)gk * g.ldb + gn + j] : __float2bfloat16(0.0f);
            *reinterpret_cast<uint4*>(sB + b_off(r, c)) = v;
        }
    }
}

template <bool ALIGNED>
__device__ __forceinline__ void tile_body(const kl_gview<__nv_bfloat16, __nv_bfloat16>& g, int m0, int n0,
                                          unsigned char* smem) {
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / (BN / WN), wn = warp % (BN / WN);
    const int numK = (g.K + BK - 1) / BK;

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
        if (s < numK) load_stage<ALIGNED>(smem + s * STAGE_BYTES, g, m0, n0, s * BK);
        cp_async_commit();
    }
    for (int kt = 0; kt < numK; ++kt) {
        cp_async_wait<STAGES - 2>(); // step kt has landed (this thread's copies)...
        __syncthreads();             // ...and everyone's; everyone is also done with step kt-1
        const int pf = kt + STAGES - 1;
        if (pf < numK) load_stage<ALIGNED>(smem + (pf % STAGES) * STAGE_BYTES, g, m0, n0, pf * BK);
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
                ldmatrix_x4_trans(sB + b_off(r, c), bfr[2 * np][0], bfr[2 * np][1], bfr[2 * np + 1][0],
                                  bfr[2 * np + 1][1]);
            }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) mma_16816(acc[mi][ni], af[mi], bfr[ni]);
        }
    }
    cp_async_wait<0>();
    __syncthreads(); // every warp is done with the stages: the block's next tile may refill them

    // Accumulator layout of m16n8: thread (q = lane/4, t = lane%4) holds rows q and q+8, columns 2t, 2t+1.
    const int q = lane >> 2, t = lane & 3;
    const bool pairs = (g.ldc % 2) == 0 && (reinterpret_cast<unsigned long long>(g.C) & 3ull) == 0;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm * WM + mi * 16 + q + h * 8;
                const int col = n0 + wn * WN + ni * 8 + 2 * t;
                if (row >= g.M || col >= g.N) continue;
                __nv_bfloat16* c = g.C + (long long)row * g.ldc + col;
                if (pairs && col + 1 < g.N) {
                    *reinterpret_cast<__nv_bfloat162*>(c) = __floats2bfloat162_rn(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
                } else {
                    c[0] = __float2bfloat16(acc[mi][ni][2 * h]);
                    if (col + 1 < g.N) c[1] = __float2bfloat16(acc[mi][ni][2 * h + 1]);
                }
            }
        }
    }
}

} // namespace kl_mma

// kl_mma_tile computes C[m0.., n0..] = A[m0.., :]·B[:, n0..] for the 128×128 tile of group g, with
// smem the block's 64 KiB of dynamic shared memory. Every thread of the block (256) calls it.
__device__ __forceinline__ void kl_mma_tile(const kl_gview<__nv_bfloat16, __nv_bfloat16>& g, int m0, int n0,
                                            unsigned char* smem) {
    const bool aligned = (g.K % 8) == 0 && (g.N % 8) == 0 && (g.lda % 8) == 0 && (g.ldb % 8) == 0 &&
                         ((reinterpret_cast<unsigned long long>(g.A) | reinterpret_cast<unsigned long long>(g.B)) & 15ull) == 0;
    if (aligned) {
        kl_mma::tile_body<true>(g, m0, n0, smem);
    } else {
        kl_mma::tile_body<false>(g, m0, n0, smem);
    }
}
