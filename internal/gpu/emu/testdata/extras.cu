// extras.cu — the rest of the surface: match and reduce collectives, barrier predicates,
// rounding modes, integer and float intrinsics, and the other WMMA shapes and types.
#include "kl.cuh"

using namespace nvcuda;

// out[8*i + ...] for each thread i of a 64-thread block.
extern "C" __global__ void warp_extras(const int* in, unsigned* out) {
    const int i = threadIdx.x;
    const int v = in[i];
    unsigned* o = out + 8 * i;
    o[0] = __match_any_sync(KL_FULL_MASK, v);
    int pred = -1;
    o[1] = __match_all_sync(KL_FULL_MASK, v, &pred);
    o[2] = (unsigned)pred;
    o[3] = __reduce_add_sync(KL_FULL_MASK, (unsigned)v);
    o[4] = (unsigned)__reduce_max_sync(KL_FULL_MASK, v);
    o[5] = (unsigned)__reduce_min_sync(KL_FULL_MASK, v);
    o[6] = (unsigned)(__syncthreads_and(v > -100) * 2 + __syncthreads_or(v == 3));
    o[7] = __activemask();
}

extern "C" __global__ void rounding(const float* in, unsigned short* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = in[i];
    unsigned short* o = out + 8 * i;
    o[0] = __half_as_ushort(__float2half_rn(x));
    o[1] = __half_as_ushort(__float2half_rz(x));
    o[2] = __half_as_ushort(__float2half_rd(x));
    o[3] = __half_as_ushort(__float2half_ru(x));
    o[4] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
    o[5] = __bfloat16_as_ushort(__float2bfloat16_rz(x));
    o[6] = __bfloat16_as_ushort(__float2bfloat16_rd(x));
    o[7] = __bfloat16_as_ushort(__float2bfloat16_ru(x));
}

extern "C" __global__ void int_intrinsics(const unsigned* in, unsigned* out) {
    const unsigned x = in[threadIdx.x];
    unsigned* o = out + 6 * threadIdx.x;
    o[0] = __popc(x);
    o[1] = __clz((int)x);
    o[2] = __brev(x);
    o[3] = __byte_perm(x, 0x76543210u, 0x5140u);
    o[4] = __funnelshift_l(x, ~x, threadIdx.x);
    o[5] = __ffs((int)x);
}

extern "C" __global__ void float_intrinsics(const float* in, float* out) {
    const float x = in[threadIdx.x];
    float* o = out + 6 * threadIdx.x;
    o[0] = rsqrtf(fabsf(x) + 1.0f);
    o[1] = __saturatef(x);
    o[2] = __fdividef(x, 3.0f);
    o[3] = __expf(x);
    o[4] = __fmaf_rn(x, x, 1.0f);
    o[5] = min(x, 0.25f) + max(x, -0.25f);
}

// One warp: C (32×8, half) = A (32×16, half, row-major) · B (16×8, half, row-major), half accumulator.
extern "C" __global__ void wmma_m32n8k16(const half* A, const half* B, half* C) {
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 32, 8, 16, half> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 8);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, 8, wmma::mem_row_major);
}

// One warp: C (16×16, int) = A (16×16, int8, row-major) · B (16×16, int8, col-major).
extern "C" __global__ void wmma_int8(const signed char* A, const signed char* B, int* C) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> c;
    wmma::fill_fragment(c, 0);
    wmma::load_matrix_sync(a, A, 16);
    wmma::load_matrix_sync(b, B, 16);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}

// One warp: C (16×16, float) = A (16×8) · B (8×16) in tf32, inputs rounded with __float_to_tf32.
extern "C" __global__ void wmma_tf32(const float* A, const float* B, float* C) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, A, 8);
    wmma::load_matrix_sync(b, B, 16);
    for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
    for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(C, c, 16, wmma::mem_col_major);
}

// A leading dimension that is not a multiple of 16 bytes is refused, as CUDA requires.
extern "C" __global__ void wmma_bad_ldm(const half* A) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::load_matrix_sync(a, A, 12);
}

// Warp-aggregated atomics: inside a branch, the lanes that took it elect a leader, which adds
// for all of them; each lane gets its own slot from the leader's result.
extern "C" __global__ void aggregated_append(const int* in, int* counter, int* slots, unsigned* masks) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32;
    masks[i] = 0;
    slots[i] = -1;
    if (in[i] > 0) {
        const unsigned mask = __activemask();
        const int leader = __ffs(mask) - 1;
        int base = 0;
        if (lane == leader) base = atomicAdd(counter, __popc(mask));
        base = __shfl_sync(mask, base, leader);
        slots[i] = base + __popc(mask & ((1u << lane) - 1));
        masks[i] = mask;
    }
}
