//go:build !cgo

package emu

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Without cgo the backend is registered but says what it needs.
func TestWithoutCgoTheBackendSaysWhy(t *testing.T) {
	_, err := Open()
	require.Error(t, err)
	assert.True(t, errors.Is(err, gpu.ErrLibraryMissing))
	assert.Contains(t, err.Error(), "CGO_ENABLED=1")
	t.Log("the emulator's kernel tests need cgo: ", err)
}
