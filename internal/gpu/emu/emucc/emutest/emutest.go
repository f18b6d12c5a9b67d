// Package emutest holds what tests that build kernels for the CPU emulator share. Only test files
// import it.
package emutest

import (
	"testing"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
)

// Need skips the test where the emulator cannot build kernels here, saying what to install.
func Need(t testing.TB) {
	t.Helper()
	if err := emucc.Check(); err != nil {
		t.Skipf("the CPU emulator cannot build kernels here (%v): install g++ and libboost-context-dev", err)
	}
}
