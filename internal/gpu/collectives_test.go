package gpu_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

func TestRankCommunicatorWithoutLibrary(t *testing.T) {
	dev := openFake(t)
	_, err := gpu.NewCommID(dev)
	require.ErrorIs(t, err, gpu.ErrNoCollectives)
	assert.Contains(t, err.Error(), "backend fake")
	_, err = gpu.OpenRankCommunicator(dev, make([]byte, 128), 0, 2)
	require.ErrorIs(t, err, gpu.ErrNoCollectives)
}
