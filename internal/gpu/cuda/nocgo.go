//go:build !cgo || !linux

// Package cuda is the NVIDIA backend of package gpu. This build has no cgo (or is not Linux), so
// the backend registers itself but always reports that it cannot load the driver.
package cuda

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// DefaultLibrary is the driver library Open would load.
const DefaultLibrary = "libcuda.so.1"

func init() {
	gpu.Register("cuda", func() (gpu.Backend, error) { return Open() })
}

// Open reports that this build cannot use CUDA.
func Open() (gpu.Backend, error) { return OpenLibrary(DefaultLibrary) }

// OpenLibrary reports that this build cannot use CUDA.
func OpenLibrary(path string) (gpu.Backend, error) {
	return nil, fmt.Errorf("cuda: %w: this build has no cgo (or is not for Linux), so it cannot load %s, "+
		"the NVIDIA driver's library; rebuild with CGO_ENABLED=1 and a C compiler, "+
		"or run with --backend emu to use the CPU emulator", gpu.ErrLibraryMissing, path)
}
