package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMNKWork(t *testing.T) {
	s := MNK{M: 2, N: 3, K: 4}
	assert.Equal(t, Work{FLOPs: 48, Bytes: 4*(8+12) + 4*6}, s.Work(4, 4, false), "fp32: A, B read, C written")
	assert.Equal(t, Work{FLOPs: 48, Bytes: 2*(8+12) + 2*2*6}, s.Work(2, 2, true), "bf16, C read and written")
}
