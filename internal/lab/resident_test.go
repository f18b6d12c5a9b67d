package lab

import (
	"testing"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
