package matref

import "math/rand/v2"

// Input fillers the labs share. Both depend on the seed alone, not on the number of threads.

// FillUniform fills dst with values in [-1, 1) from seed, in parallel: chunk c draws from its own
// PCG stream (seed, c).
func FillUniform(dst []float32, seed uint64) {
	const chunk = 1 << 16
	ParallelFor((len(dst)+chunk-1)/chunk, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			end := min((c+1)*chunk, len(dst))
			for i := c * chunk; i < end; i++ {
				dst[i] = r.Float32()*2 - 1
			}
		}
	})
}

// HashUniform is the value at index i of a matrix filled from seed by FillHash: a uniform number
// in [-1, 1) with 24 random bits (splitmix64 of the seed and the index), so that any element can
// be recomputed alone.
func HashUniform(seed, i uint64) float32 {
	return float32(SplitMix64(seed, i)>>40)*(1.0/(1<<23)) - 1
}

// SplitMix64 is the i-th output (from 0) of the SplitMix64 generator seeded with seed: a
// counter-based generator, so element i needs no state from the elements before it (kernels
// compute the same function on the device: kl_splitmix64 in lab 01's hash.cuh).
func SplitMix64(seed, i uint64) uint64 {
	z := seed + (i+1)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// FillHash fills dst with HashUniform values.
func FillHash(dst []float32, seed uint64) { FillHashFrom(dst, seed, 0) }

// FillHashFrom fills dst with the HashUniform values of elements first, first+1, ...: a part of
// an array filled this way holds what FillHash of the whole array puts there.
func FillHashFrom(dst []float32, seed, first uint64) {
	ParallelFor(len(dst), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = HashUniform(seed, first+uint64(i))
		}
	})
}

// RoundBF16 rounds every value of x to bf16 in place and returns the bit patterns.
func RoundBF16(x []float32) []uint16 {
	bits := make([]uint16, len(x))
	ParallelFor(len(x), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			bits[i] = BF16FromFloat32(x[i])
			x[i] = Float32FromBF16(bits[i])
		}
	})
	return bits
}
