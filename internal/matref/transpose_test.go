package matref

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTranspose(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5, 6} // 2×3 row-major
	assert.Equal(t, []float32{1, 4, 2, 5, 3, 6}, Transpose(x, 2, 3))
	assert.Equal(t, x, Transpose(Transpose(x, 2, 3), 3, 2), "twice is the identity")
	assert.Equal(t, []float32{7}, Transpose([]float32{7}, 1, 1))
	assert.Empty(t, Transpose(nil, 0, 0))
}
