package lab

import (
	"math"
	"sort"
)

// Apportion splits total whole units over len(weights) parts in proportion to the weights (≥ 0;
// some above 0 unless total is 0) by largest remainders: each exact share rounded down, the units
// left one each to the parts of the largest remainders, ties to the first (equal weights: the
// first parts). Parts of weight 0 get nothing.
func Apportion(total int, weights []float64) []int {
	parts := make([]int, len(weights))
	if total == 0 {
		return parts
	}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	frac := make([]float64, len(weights))
	var takers []int // the parts with a share, by decreasing remainder
	given := 0
	for i, w := range weights {
		exact := float64(total) * w / sum
		parts[i] = int(math.Floor(exact))
		frac[i] = exact - float64(parts[i])
		given += parts[i]
		if w > 0 {
			takers = append(takers, i)
		}
	}
	sort.SliceStable(takers, func(a, b int) bool { return frac[takers[a]] > frac[takers[b]] })
	for j := 0; given < total; j++ {
		parts[takers[j%len(takers)]]++
		given++
	}
	return parts
}
