package gputest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMatmulRef(t *testing.T) {
	// [1 2; 3 4; 5 6] · [1 0 2; 0 1 3]
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float64{1, 0, 2, 0, 1, 3}
	assert.Equal(t, []float64{1, 2, 8, 3, 4, 18, 5, 6, 28}, MatmulRef(a, []float32{1, 0, 2, 0, 1, 3}, 3, 3, 2))
	assert.Equal(t, []float64{1, 2, 8, 3, 4, 18, 5, 6, 28}, MatmulRef([]float64{1, 2, 3, 4, 5, 6}, b, 3, 3, 2))
}

func TestRelErr(t *testing.T) {
	assert.Equal(t, 0.0, RelErr([]float32{3, 4}, []float64{3, 4}))
	assert.InDelta(t, 0.2, RelErr([]float32{3, 5}, []float64{3, 4}), 1e-12) // ‖(0, 1)‖ / ‖(3, 4)‖
	assert.True(t, math.IsNaN(RelErr([]float32{float32(math.NaN()), 4}, []float64{3, 4})), "an unwritten element")
}
