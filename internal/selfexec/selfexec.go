// Package selfexec runs the hidden commands that labrun re-executes itself for inside the
// sandbox: the sandbox wrapper (internal/sandbox) and the emulator's launcher of untrusted
// modules (internal/gpu/emu). labrun's main and every test binary whose code may start them call
// Dispatch first, so that the same code runs whichever binary re-executes itself.
package selfexec

import (
	"fmt"
	"os"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
)

// Dispatch runs the hidden command named by os.Args[1], if it is one, and returns its exit
// status with ok true; otherwise it returns ok false and the caller goes on. Before anything
// else it applies what a sandboxed parent asked of this process (sandbox.EnforceNoSpawn).
func Dispatch() (code int, ok bool) {
	if err := sandbox.EnforceNoSpawn(); err != nil {
		fmt.Fprintf(os.Stderr, "labrun: %v\n", err)
		return 126, true
	}
	if len(os.Args) < 2 {
		return 0, false
	}
	switch os.Args[1] {
	case sandbox.WrapperCommand:
		return sandbox.WrapperMain(os.Args[2:]), true
	case emu.LauncherCommand:
		return emu.LauncherMain(), true
	}
	return 0, false
}
