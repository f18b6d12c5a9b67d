package cuda_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/cuda"
)

// These tests need no GPU.

func TestOpenLibraryMissing(t *testing.T) {
	b, err := cuda.OpenLibrary("/nonexistent/libcuda.so.1")
	require.Error(t, err)
	assert.Nil(t, b)
	assert.ErrorIs(t, err, gpu.ErrLibraryMissing)
	msg := err.Error()
	assert.Contains(t, msg, "/nonexistent/libcuda.so.1", "the message names the library")
	assert.Contains(t, msg, "NVIDIA driver", "the message says what to install")
	assert.Contains(t, msg, "--backend emu", "the message offers the emulator")
}

func TestRegisteredAsCuda(t *testing.T) {
	assert.Contains(t, gpu.Backends(), "cuda")
}

func TestOpenThroughRegistry(t *testing.T) {
	b, _, err := gpu.Open("cuda")
	if err != nil {
		// No driver here, or no GPU: either way the error says which.
		assert.True(t, errorIsAny(err, gpu.ErrLibraryMissing, gpu.ErrNoDevice) || isCallError(err),
			"unexpected error kind: %v", err)
		return
	}
	assert.Equal(t, "cuda", b.Name())
	assert.Equal(t, "nvcc", b.Toolchain())
}
