//go:build !cgo || !linux

package cuda

import (
	"errors"

	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
)

var errNoCgo = errors.New("this build has no cgo (or is not for Linux), so it cannot load NVIDIA's libraries")

// probe cannot look for a vendor library without cgo.
func probe(...string) (string, error) { return "", errNoCgo }

// doctor says that this build cannot use CUDA at all.
func doctor() ([]backends.Check, bool) {
	_, err := Open()
	return []backends.Check{{Name: "CUDA driver", Detail: err.Error(),
		Fix: "rebuild labrun with CGO_ENABLED=1 and a C compiler; without a GPU, use the CPU emulator: --backend emu"}}, false
}
