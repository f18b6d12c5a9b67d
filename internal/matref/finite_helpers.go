package matref

import "math"

// NonFinite counts the NaN and Inf elements of out: outputs never written (still the NaN poison)
// or computed from one.
func NonFinite(out []float32) int {
	n := 0
	for _, v := range out {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			n++
		}
	}
	return n
}
