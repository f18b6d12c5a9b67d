package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestColumns(t *testing.T) {
	a := []int{0, 1, 2, 3, 10, 11, 12, 13} // 2 × 4
	assert.Equal(t, []int{1, 2, 11, 12}, Columns(a, 2, 4, 1, 2))
	assert.Equal(t, []int{3, 13}, Columns(a, 2, 4, 3, 1))
}
