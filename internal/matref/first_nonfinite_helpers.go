package matref

import (
	"math"
	"slices"
)

// FirstNonFinite is the index of the first NaN or Inf element of out (the first that NonFinite
// counts), or -1 when there is none: where a failure message points.
func FirstNonFinite(out []float32) int {
	return slices.IndexFunc(out, func(v float32) bool { f := float64(v); return math.IsNaN(f) || math.IsInf(f, 0) })
}
