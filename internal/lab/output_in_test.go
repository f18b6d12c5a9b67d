package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An output in either precision has an address and reads back widened; a failed one has none.
func TestOutputIn(t *testing.T) {
	env := caseEnv(t)
	p := NewPrep(env)
	f32, bf16 := PrepOutputIn(p, "f32", FP32, 2, PoisonNaN), PrepOutputIn(p, "bf16", BF16, 2, PoisonNaN)
	require.NoError(t, p.Err)
	require.NotZero(t, f32.Ptr())
	require.NotZero(t, bf16.Ptr())
	require.NoError(t, f32.f32.CopyFromHost([]float32{1.5, -2}, nil))
	require.NoError(t, bf16.bf16.CopyFromHost([]uint16{0x3FC0, 0xC000}, nil)) // 1.5, -2
	o := newOutputs(env, 0)
	for _, b := range []*OutputIn{f32, bf16} {
		got, err := b.Read(o)
		require.NoError(t, err)
		assert.Equal(t, []float32{1.5, -2}, got)
	}
	p.Err = assert.AnError
	assert.Zero(t, PrepOutputIn(p, "after", BF16, 2, PoisonNaN).Ptr(), "nothing allocated after an error")
}
