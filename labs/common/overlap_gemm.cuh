// overlap_gemm.cuh — the pieces that every kernel of lab 05 (compute/communication overlap) shares:
// how the M rows of A are split over the ranks, and one 64×64 tile of a GEMM. The same split
// serves GEMM+ReduceScatter twice: the K columns of A (rows of B) over the ranks, and the M rows of
// the result over the ranks that own them.
//
// The GEMM is lab 02's 2-D register blocking, smaller: a block of 256 threads computes a 64×64
// tile of C, each thread a 4×4 block, stepping through K by 16 with the A and B tiles staged in
// shared memory. It is not the fastest GEMM of the course (lab 02 goes further); it is the same in
// every variant of lab 05, so that the differences measured there are the schedule's.
//
// Element types: float (the fp32 suites) or kl_bf16 (the bf16 suites). The tiles are staged in
// shared memory as fp32 (a bf16 widens exactly) and accumulated in fp32 on the CUDA cores, so the
// bf16 kernels run on every backend, the emulator included; each output element is rounded to
// bf16 once (the fast bf16 GEMM of the chapter is the wgmma kernel, 06_ag_gemm_wgmma.cu).
//
// All matrices are row-major. Edge tiles (rows, N or K not multiples of the tile) are handled:
// out-of-range loads read 0, out-of-range stores are skipped.
#pragma once

// Widening to fp32 (exact) and storing an fp32 value as the element type (bf16: rounded to nearest
// even, once).
__device__ __forceinline__ float ov_float(float x) { return x; }
__device__ __forceinline__ float ov_float(kl_bf16 x) { return kl_bf162float(x); }
__device__ __forceinline__ void ov_put(float* p, float v) { *p = v; }
__device__ __forceinline__ void ov_put(kl_bf16* p, float v) { *p = kl_float2bf16(v); }

// ov_atomic_add adds v into *p, which may be another rank's memory (a peer pointer). fp32:
// atomicAdd. bf16: a compare-and-swap of the 32-bit word that holds the element (every backend has
// a 32-bit CAS; not all have a bf16 atomicAdd), the sum taken in fp32 and rounded to bf16 once per
// add, so n ranks' adds round n times.
__device__ __forceinline__ void ov_atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void ov_atomic_add(kl_bf16* p, float v) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    unsigned int* w = reinterpret_cast<unsigned int*>(a & ~uintptr_t(3));
    const unsigned int shift = (a & 2) ? 16u : 0u; // little-endian: the element at the higher address is the high half
    unsigned int old = *w, assumed;
    do {
        assumed = old;
        const float sum = __uint_as_float(((assumed >> shift) & 0xFFFFu) << 16) + v;
        const unsigned int bits = kl_bf16_bits(kl_float2bf16(sum));
        old = atomicCAS(w, assumed, (assumed & ~(0xFFFFu << shift)) | (bits << shift));
    } while (old != assumed);
}

#define OV_BM 64
#define OV_BN 64
#define OV_BK 16
#define OV_TM 4
#define OV_TN 4
#define OV_THREADS ((OV_BM / OV_TM) * (OV_BN / OV_TN)) // 256

// The rows of A that rank s holds: M/n each, the first M%n ranks one more.
__device__ __forceinline__ int ov_rows_of(int s, int M, int nranks) {
    return M / nranks + (s < M % nranks ? 1 : 0);
}

// The first row of rank s's block in the gathered A (and in C).
__device__ __forceinline__ int ov_row0_of(int s, int M, int nranks) {
    return s * (M / nranks) + (s < M % nranks ? s : M % nranks);
}

// Tiles of a block of `rows` rows of C: row tiles × column tiles.
__device__ __forceinline__ int ov_tiles_of(int rows, int N) {
    return ((rows + OV_BM - 1) / OV_BM) * ((N + OV_BN - 1) / OV_BN);
}

// ov_copy copies n elements (floats or bf16) from src to dst (src may be on a peer GPU, read
// through a peer pointer); the caller's `stride` threads share the work, this one starting at
// element `first`. A read from a peer takes microseconds, so the rate is set by how many bytes are
// in flight: with 16-byte aligned pointers and n a whole number of 16-byte vectors (4 floats, 8
// bf16), each thread issues OV_COPY_UNROLL vector loads before it stores any of them (64 bytes in
// flight, 16 times the plain float loop's 4); otherwise it copies elements one at a time. Not 8:
// in fused_signal that raises the kernel from 64 to 80 registers, and its GEMM blocks from 4 to 3
// per SM.
#define OV_COPY_UNROLL 4
template <typename T>
__device__ __forceinline__ void ov_copy(T* dst, const T* src, long long n, long long first, long long stride) {
    constexpr int V = 16 / sizeof(T); // elements per 16-byte vector
    const bool aligned = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0;
    if (aligned && n % V == 0) {
        const uint4* s4 = reinterpret_cast<const uint4*>(src);
        uint4* d4 = reinterpret_cast<uint4*>(dst);
        const long long n4 = n / V;
        for (long long t = first; t < n4; t += OV_COPY_UNROLL * stride) {
            uint4 v[OV_COPY_UNROLL];
#pragma unroll
            for (int u = 0; u < OV_COPY_UNROLL; ++u)
                if (t + u * stride < n4) v[u] = s4[t + u * stride];
#pragma unroll
            for (int u = 0; u < OV_COPY_UNROLL; ++u)
                if (t + u * stride < n4) d4[t + u * stride] = v[u];
        }
        return;
    }
    for (long long t = first; t < n; t += stride) dst[t] = src[t];
}

// ov_gemm_tile computes the tile (tm, tn) of C = A·B (+ bias) for a block of `rows` rows: A is
// rows×K, B is K×N, C is rows×N, bias (N values, or none) is added to every row. As and Bs are the
// block's shared tiles (OV_BM·OV_BK and OV_BK·OV_BN floats). Every thread of the block must call
// it (it has __syncthreads inside).
//
// kAtomicAdd = true is the epilogue of fused GEMM+ReduceScatter: instead of storing its value, the
// thread adds it into C (ov_atomic_add: C may be another rank's memory, reached through a peer
// pointer), so that the partial products of all ranks accumulate in the owner's output.
template <bool kAtomicAdd = false, typename T>
__device__ __forceinline__ void ov_gemm_tile(const T* A, const T* __restrict__ B, T* C,
                                             int rows, int N, int K, int tm, int tn,
                                             float* As, float* Bs, const T* bias = nullptr) {
    const int tid = threadIdx.x;
    const int m0 = tm * OV_BM, n0 = tn * OV_BN;
    const int threadCol = tid % (OV_BN / OV_TN), threadRow = tid / (OV_BN / OV_TN);
    const int aCol = tid % OV_BK, aRow = tid / OV_BK; // rows aRow + 16·l of the A tile
    const int bCol = tid % OV_BN, bRow = tid / OV_BN; // rows bRow + 4·l of the B tile
    constexpr int aStride = OV_THREADS / OV_BK, bStride = OV_THREADS / OV_BN;

    float acc[OV_TM][OV_TN];
#pragma unroll
    for (int i = 0; i < OV_TM; ++i)
#pragma unroll
        for (int j = 0; j < OV_TN; ++j) acc[i][j] = 0.0f;
    float regM[OV_TM], regN[OV_TN];

    for (int k0 = 0; k0 < K; k0 += OV_BK) {
#pragma unroll
        for (int l = 0; l < OV_BM / aStride; ++l) {
            const int r = aRow + l * aStride;
            As[r * OV_BK + aCol] = (m0 + r < rows && k0 + aCol < K) ? ov_float(A[(long long)(m0 + r) * K + k0 + aCol]) : 0.0f;
        }
#pragma unroll
        for (int l = 0; l < OV_BK / bStride; ++l) {
            const int r = bRow + l * bStride;
            Bs[r * OV_BN + bCol] = (k0 + r < K && n0 + bCol < N) ? ov_float(B[(long long)(k0 + r) * N + n0 + bCol]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < OV_BK; ++kk) {
#pragma unroll
            for (int i = 0; i < OV_TM; ++i) regM[i] = As[(threadRow * OV_TM + i) * OV_BK + kk];
#pragma unroll
            for (int j = 0; j < OV_TN; ++j) regN[j] = Bs[kk * OV_BN + threadCol * OV_TN + j];
#pragma unroll
            for (int i = 0; i < OV_TM; ++i)
#pragma unroll
                for (int j = 0; j < OV_TN; ++j) acc[i][j] += regM[i] * regN[j];
        }
        __syncthreads(); // the tiles are overwritten by the next step (or the next tile)
    }
#pragma unroll
    for (int i = 0; i < OV_TM; ++i) {
        const int row = m0 + threadRow * OV_TM + i;
        if (row >= rows) break;
#pragma unroll
        for (int j = 0; j < OV_TN; ++j) {
            const int col = n0 + threadCol * OV_TN + j;
            if (col >= N) continue;
            const float v = bias ? acc[i][j] + ov_float(bias[col]) : acc[i][j];
            if (kAtomicAdd)
                ov_atomic_add(&C[(long long)row * N + col], v);
            else
                ov_put(&C[(long long)row * N + col], v);
        }
    }
}
