package matref

import "math"

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
