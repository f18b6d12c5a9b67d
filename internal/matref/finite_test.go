package matref

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNonFiniteCountsAndFirstPointsAtNaNAndInf(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name         string
		out          []float32
		count, first int
	}{
		{"empty", nil, 0, -1},
		{"all finite", []float32{0, -1, math.MaxFloat32}, 0, -1},
		{"a NaN", []float32{1, 2, nan}, 1, 2},
		{"Inf and NaN", []float32{1, -inf, 3, nan, inf}, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.count, NonFinite(tt.out))
			assert.Equal(t, tt.first, FirstNonFinite(tt.out))
		})
	}
}
