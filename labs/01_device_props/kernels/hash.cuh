// hash.cuh — counter-based random numbers for lab 01's kernels.
//
// A counter-based generator has no state to carry from one element to the next: element i of a
// stream is a pure function of (seed, i). Every thread can compute its own values in any order,
// and the Go driver computes exactly the same values on the CPU to check the results
// (see kl_hash_float in numeric.go). Included by kernel files after "kl.cuh".
#pragma once

// kl_splitmix64 is the i-th output (counting from 0) of the SplitMix64 generator seeded with
// seed: the state after i+1 steps of adding the golden-ratio increment, passed through a mixer.
__device__ inline unsigned long long kl_splitmix64(unsigned long long seed, unsigned long long i) {
    unsigned long long z = seed + (i + 1ull) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// kl_unit_float maps the top 24 bits of a hash to an odd multiple of 2^-24 in (-1, 1).
// The value is exactly representable as a float and never zero, and the conversion involves no
// rounding, so the CPU reproduces it bit for bit.
__device__ inline float kl_unit_float(unsigned long long h) {
    const int u = (int)(h >> 40); // 24 random bits: 0 .. 2^24-1
    return (float)(2 * u + 1 - (1 << 24)) * (1.0f / 16777216.0f);
}

// kl_hash_float is element i of the float stream for seed.
__device__ inline float kl_hash_float(unsigned long long seed, unsigned long long i) {
    return kl_unit_float(kl_splitmix64(seed, i));
}
