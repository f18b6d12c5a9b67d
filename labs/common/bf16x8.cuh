// bf16x8.cuh — eight bf16 values in one 16-byte vector (uint4), the unit in which lab 04's bf16
// kernels (09–14) move data: one load or store instruction of 16 bytes instead of eight of 2, so
// fewer, wider transactions on the links and in the memory system. Include it after "kl.cuh".
//
// A bf16 is the upper half of an fp32 (sign, 8 exponent bits, 7 of mantissa), so widening one is
// a shift and exact; the sums are taken in fp32 and rounded to bf16 once, at the end
// (kl_float2bf16: to nearest, ties to even). Element 2j of a vector is the low half of its word j,
// as in memory (little-endian).
//
// Alignment: a 16-byte load needs a 16-byte aligned address. Device buffers are (at least 256
// bytes), so element e of a buffer starts a vector when e is a multiple of 8; the kernels take
// the vectors where that holds and the remaining elements one by one.
#pragma once

#define KL_BF16X8 8 // bf16 elements in one 16-byte vector

// How many peers' vectors a thread loads before it adds them: the loads are independent, so they
// are all in flight at once instead of one round trip over the link after another.
#define KL_BF16X8_LOADS 8

__device__ __forceinline__ uint4 kl_bf16x8_load(const kl_bf16* p, long long e) {
    return *reinterpret_cast<const uint4*>(p + e);
}

__device__ __forceinline__ void kl_bf16x8_store(kl_bf16* p, long long e, uint4 v) {
    *reinterpret_cast<uint4*>(p + e) = v;
}

// kl_bf16_copy: dst[e …] = src[e …], w elements: one 16-byte vector (w = KL_BF16X8) or one
// element (w = 1, where the rows or blocks do not start on a vector).
__device__ __forceinline__ void kl_bf16_copy(kl_bf16* dst, const kl_bf16* src, long long e, int w) {
    if (w == KL_BF16X8) {
        kl_bf16x8_store(dst, e, kl_bf16x8_load(src, e));
    } else {
        dst[e] = src[e];
    }
}

// kl_bf16x8_add: acc[j] += element j of v, in fp32 (the widening is exact).
__device__ __forceinline__ void kl_bf16x8_add(float (&acc)[KL_BF16X8], uint4 v) {
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; j++) {
        acc[2 * j] += __uint_as_float(w[j] << 16);
        acc[2 * j + 1] += __uint_as_float(w[j] & 0xFFFF0000u);
    }
}

// kl_bf16x8_round: the eight fp32 values rounded to bf16 (once) and packed into a vector.
__device__ __forceinline__ uint4 kl_bf16x8_round(const float (&acc)[KL_BF16X8]) {
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        w[j] = (unsigned)kl_bf16_bits(kl_float2bf16(acc[2 * j])) |
               ((unsigned)kl_bf16_bits(kl_float2bf16(acc[2 * j + 1])) << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// kl_bf16x8_sum: the sum over the n ranks' arrays of the vector at element e (a multiple of 8),
// accumulated in fp32 in rank order (so every rank that computes it gets the same bits) and
// rounded once. The ranks' loads are issued KL_BF16X8_LOADS at a time before any is added.
__device__ __forceinline__ uint4 kl_bf16x8_sum(const kl_bf16* const* ins, int nranks, long long e) {
    float acc[KL_BF16X8] = {};
    for (int r0 = 0; r0 < nranks; r0 += KL_BF16X8_LOADS) {
        uint4 v[KL_BF16X8_LOADS];
#pragma unroll
        for (int j = 0; j < KL_BF16X8_LOADS; j++) {
            if (r0 + j < nranks) v[j] = kl_bf16x8_load(ins[r0 + j], e);
        }
#pragma unroll
        for (int j = 0; j < KL_BF16X8_LOADS; j++) {
            if (r0 + j < nranks) kl_bf16x8_add(acc, v[j]);
        }
    }
    return kl_bf16x8_round(acc);
}

// kl_bf16_sum: the same for one element (the parts that are no whole vector).
__device__ __forceinline__ kl_bf16 kl_bf16_sum(const kl_bf16* const* ins, int nranks, long long i) {
    float s = 0.0f;
    for (int r = 0; r < nranks; r++) s += kl_bf162float(ins[r][i]);
    return kl_float2bf16(s);
}
