//go:build cgo && linux

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// No GPU needed: a library that is not there is ErrLibraryMissing, with what to do next.
func TestNCCLMissingLibrary(t *testing.T) {
	err := ncclLib.loadFrom([]string{"/nonexistent/kernellabs/libnccl.so.2"})
	if err == nil {
		t.Skip("NCCL is already loaded in this process")
	}
	require.ErrorIs(t, err, gpu.ErrLibraryMissing)
	assert.Contains(t, err.Error(), NCCLEnv)
	assert.Contains(t, err.Error(), "libnccl.so.2")
}

func TestNCCLCandidatesPutTheOverrideFirst(t *testing.T) {
	t.Setenv(NCCLEnv, "/opt/x/libnccl.so.2")
	c := ncclLib.candidates()
	require.NotEmpty(t, c)
	assert.Equal(t, "/opt/x/libnccl.so.2", c[0])
	assert.Contains(t, c, "libnccl.so.2")
}

func TestNCCLDataTypes(t *testing.T) {
	// nccl.h: ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9.
	assertTypeCodes(t, ncclDataType, map[gpu.DataType]int{gpu.F16: 6, gpu.F32: 7, gpu.F64: 8, gpu.BF16: 9})
	for typ, want := range map[gpu.DataType]int{gpu.F16: 2, gpu.F32: 4, gpu.F64: 8, gpu.BF16: 2} {
		assert.Equal(t, want, ncclTypes[typ].bytes, "%v", typ)
	}
}

func TestNCCLErrorNamesTheCall(t *testing.T) {
	err := ncclError("ncclAllReduce", 4)
	assert.Contains(t, err.Error(), "nccl: ncclAllReduce failed: ncclInvalidArgument")
	assert.False(t, gpu.IsSticky(err))
	assert.True(t, gpu.IsSticky(ncclError("ncclGroupEnd", 1)), "an unhandled CUDA error is sticky")
}
