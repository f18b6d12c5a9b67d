//go:build !cgo

package emu

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Open fails: the emulator loads its kernel modules with dlopen, which needs cgo.
func Open() (gpu.Backend, error) {
	return nil, fmt.Errorf("the CPU emulator needs cgo (a C compiler when labrun is built): rebuild with CGO_ENABLED=1 and gcc installed: %w", gpu.ErrLibraryMissing)
}

// LauncherCommand is labrun's hidden command that runs a launcher (launcher.go, cgo only).
const LauncherCommand = "__emu-launcher"

// LauncherMain refuses: without cgo there is no emulator to launch kernels with.
func LauncherMain() int { return 125 }
