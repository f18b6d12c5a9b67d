package lab

import (
	"testing"

	"github.com/kernel-labs/kernellabs/internal/gpu"

	"github.com/stretchr/testify/assert"
)

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
