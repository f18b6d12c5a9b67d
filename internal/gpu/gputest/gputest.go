// Package gputest holds what the tests of several backends share: the float64 reference of a
// small matrix product and the relative error of a result against it.
package gputest

import (
	"math"

	"github.com/kernel-labs/kernellabs/internal/check"
)

// MatmulRef is the row-major product of m×k a and k×n b in float64.
func MatmulRef[T check.Float](a, b []T, m, n, k int) []float64 {
	c := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for p := 0; p < k; p++ {
			aip := float64(a[i*k+p])
			out := c[i*n : i*n+n]
			for j, bv := range b[p*n : p*n+n] {
				out[j] += aip * float64(bv)
			}
		}
	}
	return c
}

// RelErr is ‖got − want‖ / ‖want‖ over every element; a NaN in got (an element never written)
// makes it NaN, so that a bound on it fails.
func RelErr(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	return math.Sqrt(num / den)
}
