package gemm

import (
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/matref"
)

// ---- inputs ----

// fillUniform fills dst with values in [-1, 1) from seed, in parallel: chunk c draws from its own
// PCG stream (seed, c), so the values depend on the seed alone, not on the number of threads.
func fillUniform(dst []float32, seed uint64) {
	const chunk = 1 << 16
	matref.ParallelFor(ceilDiv(len(dst), chunk), func(lo, hi int) {
		for c := lo; c < hi; c++ {
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			end := min((c+1)*chunk, len(dst))
			for i := c * chunk; i < end; i++ {
				dst[i] = r.Float32()*2 - 1
			}
		}
	})
}

// roundToBF16 rounds every value of x to bf16 in place and returns the bit patterns.
func roundToBF16(x []float32) []uint16 {
	bits := make([]uint16, len(x))
	matref.ParallelFor(len(x), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			bits[i] = matref.BF16FromFloat32(x[i])
			x[i] = matref.Float32FromBF16(bits[i])
		}
	})
	return bits
}

// ---- the problem as the CPU sees it ----

// Product is the CPU view of a problem (see matref).
type Product = matref.Product
