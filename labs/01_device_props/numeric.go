package devprops

// The host side of this lab's checks: the fill hash and the FMA chains recomputed exactly. (The
// bf16 product's check — Freivalds' test per row with exactly recomputed entries — bf16 rounding,
// the hash generator and the parallel loops are matref's, shared with the GEMM labs.)

import (
	"math"

	"github.com/kernel-labs/kernellabs/internal/matref"
)

// ---- counter-based hash (the host twin of kernels/hash.cuh) ----

// UnitFloat maps the top 24 bits of h to an odd multiple of 2⁻²⁴ in (−1, 1): exact in float32,
// never zero. It is kl_unit_float in kernels/hash.cuh.
func UnitFloat(h uint64) float32 {
	u := int32(h >> 40)
	return float32(2*u+1-(1<<24)) * (1.0 / 16777216.0)
}

// HashFloat is element i of the float stream for seed (kl_hash_float on the device), from
// matref.SplitMix64 (kl_splitmix64 in kernels/hash.cuh).
func HashFloat(seed, i uint64) float32 { return UnitFloat(matref.SplitMix64(seed, i)) }

// ---- exact float32 fused multiply-add ----

// FMA32 returns x·y + z rounded once to float32 (round to nearest, ties to even), which is what
// the GPU's FFMA and C's fmaf compute.
//
// float32(math.FMA(x, y, z)) is not quite that: it rounds to float64 first and then to float32,
// and the two roundings disagree when the float64 result lands exactly halfway between two
// float32 values while the exact result does not. Rounding to odd in float64 first avoids that
// (Boldo and Melquiond): an inexact sum is replaced by its odd float64 neighbour, never a
// float32 halfway point, and float64 carries more than the 2 extra bits that needs.
func FMA32(x, y, z float32) float32 {
	p, c := float64(x)*float64(y), float64(z) // the product is exact: 24-bit × 24-bit mantissas fit in 53 bits
	s := p + c
	bv := s - p
	e := (p - (s - bv)) + (c - bv) // TwoSum: s + e == p + c exactly
	if e != 0 && !math.IsInf(s, 0) && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e)) // the odd neighbour on the side of the exact sum
	}
	return float32(s)
}

// ---- the FMA-chain reference (kernels/02_fma.cu) ----

// fmaKeysPerThread is the stride of hash indices between threads in 02_fma.cu.
const fmaKeysPerThread = 16

// maxFMAChains is the largest CHAINS the kernel's hash layout allows (indices 2..9 of 16).
const maxFMAChains = 8

// FMAChainRef computes on the CPU what thread tid of fma_chains<chains> writes: chains
// independent chains x = fma(x, a, b) of iters steps each, summed in order x0 + x1 + … .
func FMAChainRef(seed, tid uint64, chains, iters int) float32 {
	key := tid * fmaKeysPerThread
	a := float32(0x8000+uint32(matref.SplitMix64(seed, key)>>49)) * (1.0 / 65536.0)
	b := HashFloat(seed, key+1)
	var x [maxFMAChains]float32
	for j := 0; j < chains; j++ {
		x[j] = HashFloat(seed, key+2+uint64(j))
	}
	for i := 0; i < iters; i++ {
		for j := 0; j < chains; j++ {
			x[j] = FMA32(x[j], a, b)
		}
	}
	s := x[0]
	for j := 1; j < chains; j++ {
		s += x[j]
	}
	return s
}
