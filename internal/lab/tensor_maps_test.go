package lab

import (
	"testing"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tmaDevice encodes a tensor map as the first byte of its global address.
type tmaDevice struct{ gpu.Device }

func (tmaDevice) EncodeTensorMap(d gpu.TensorMapDesc) (gpu.RawArg, error) {
	return gpu.RawArg{byte(d.Global)}, nil
}

// TensorMaps encodes the descriptions in order; a device without TMA names what it was for.
func TestTensorMaps(t *testing.T) {
	env := caseEnv(t)
	_, err := TensorMaps(env, "A or B", BF16Tiles(1, 64, 64, 64, 64))
	require.ErrorContains(t, err, "tensor map of A or B")

	env.Device = tmaDevice{env.Device}
	maps, err := TensorMaps(env, "A or B", BF16Tiles(1, 64, 64, 64, 64), BF16Tiles(2, 64, 64, 64, 64))
	require.NoError(t, err)
	assert.Equal(t, []any{gpu.RawArg{1}, gpu.RawArg{2}}, maps)
}
