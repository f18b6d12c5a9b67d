package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// stepKernel records the launch configuration and the number of arguments it was given.
type stepKernel struct {
	gpu.Kernel
	cfg  gpu.LaunchConfig
	args int
}

func (k *stepKernel) Name() string                 { return "step" }
func (k *stepKernel) Params() ([]gpu.Param, error) { return []gpu.Param{{Size: 4}}, nil }
func (k *stepKernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	k.cfg, k.args = cfg, len(args)
	return nil
}

// A case of one rank (caseEnv): its place, a barrier that has nothing to wait for, its
// grid-stride steps on its stream and its variants' kernels.
func TestRankCase(t *testing.T) {
	env := caseEnv(t)
	r := NewRankCase(env)
	assert.Equal(t, RankCase{Env: env, Rank: 0, N: 1}, r)
	require.NoError(t, r.Barrier())
	v := &Variant{Name: "v", Params: map[string]int64{ParamThreads: 128}}
	assert.Equal(t, GridStride(env, v, 1000, env.Stream), r.GridStride(v, 1000))
	k := &stepKernel{}
	require.NoError(t, r.Step(k, v, 1000, int32(7))())
	assert.Equal(t, r.GridStride(v, 1000), k.cfg)
	assert.Equal(t, 1, k.args)
	_, err := r.Kernel(v)
	assert.ErrorContains(t, err, "variant v has no loaded kernel")
}
