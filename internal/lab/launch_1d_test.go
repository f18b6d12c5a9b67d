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

// GridStride on the fake device (4 SMs).
func TestGridStride(t *testing.T) {
	env := caseEnv(t)
	sms := env.Device.Info().SMs
	v := func(params map[string]int64) *Variant { return &Variant{Params: params} }
	cfg := GridStride(env, v(map[string]int64{ParamThreads: 512, ParamBlocksPerSM: 2}), 1<<20, env.Stream)
	assert.Equal(t, gpu.D1(2*sms), cfg.Grid)
	assert.Equal(t, gpu.D1(512), cfg.Block)
	cfg = GridStride(env, v(nil), 1, env.Stream)
	assert.Equal(t, gpu.D1(1), cfg.Grid)
	assert.Equal(t, gpu.D1(256), cfg.Block, "256 threads unless the variant says")
	assert.Equal(t, gpu.D1(1), GridStride(env, v(nil), 0, env.Stream).Grid, "an empty range still launches one block")
	// vec: 8 elements a thread, so 8·512 + 1 elements need two blocks, not nine.
	cfg = GridStride(env, v(map[string]int64{ParamThreads: 512, ParamVec: 8, ParamBlocksPerSM: 4}), 8*512+1, env.Stream)
	assert.Equal(t, gpu.D1(2), cfg.Grid)
	cfg = GridStride(env, v(map[string]int64{ParamThreads: -1, ParamBlocksPerSM: 0}), 1<<20, env.Stream)
	assert.Equal(t, gpu.D1(256), cfg.Block, "a parameter of 0 or less is the default")
	assert.Equal(t, gpu.D1(2*sms), cfg.Grid)
}

// occKernel is a kernel whose occupancy calculator says fits blocks per SM.
type occKernel struct {
	gpu.Kernel
	fits int
}

func (k occKernel) MaxActiveBlocksPerSM(int, int) (int, error) { return k.fits, nil }

// ResidentBlocks is SMs × the fewer of perSM and what fits (the fake device: 4 SMs, not emulated).
func TestResidentBlocks(t *testing.T) {
	env := caseEnv(t)
	sms := env.Device.Info().SMs
	n, err := ResidentBlocks(env, occKernel{fits: 3}, 256, 2)
	require.NoError(t, err)
	assert.Equal(t, 2*sms, n)
	n, err = ResidentBlocks(env, occKernel{fits: 1}, 256, 2)
	require.NoError(t, err)
	assert.Equal(t, sms, n)
}
