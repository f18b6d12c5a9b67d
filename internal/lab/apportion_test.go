package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestApportion(t *testing.T) {
	assert.Equal(t, []int{4, 3, 3}, Apportion(10, []float64{1, 1, 1}), "equal weights: the rest to the first")
	assert.Equal(t, []int{0, 7, 3}, Apportion(10, []float64{0, 0.66, 0.34}), "largest remainder, none for weight 0")
	assert.Equal(t, []int{0, 0}, Apportion(0, []float64{0, 0}))
	got := Apportion(17480, []float64{1, 0.5, 1.0 / 3, 0.25})
	assert.Equal(t, 17480, got[0]+got[1]+got[2]+got[3])
}
