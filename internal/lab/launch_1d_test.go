package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// The fake device: 4 SMs, 1024 threads per block.
func TestLaunch1D(t *testing.T) {
	env := caseEnv(t)
	assert.Equal(t, 4, env.SMs())
	lc := env.Config1D(6, 128)
	assert.Equal(t, gpu.D1(6), lc.Grid)
	assert.Equal(t, gpu.D1(128), lc.Block)
	assert.Equal(t, env.Stream, lc.Stream)

	b, err := env.Block(&Variant{Name: "v", Params: map[string]int64{"block": 512}}, "block", 256)
	require.NoError(t, err)
	assert.Equal(t, 512, b)
	b, err = env.Block(&Variant{Name: "v"}, "block", 256)
	require.NoError(t, err)
	assert.Equal(t, 256, b, "the default when unset")
	_, err = env.Block(&Variant{Name: "v", Params: map[string]int64{"block": 2048}}, "block", 256)
	assert.ErrorContains(t, err, "variant v: block 2048 is outside 1..1024 (params.block in lab.yaml)")
	_, err = env.Block(&Variant{Name: "v", Params: map[string]int64{"threads": 0}}, "threads", 256)
	assert.ErrorContains(t, err, "threads 0 is outside")
}
