//go:build !linux

package sandbox

import "fmt"

// Check reports that only Linux can sandbox (Landlock and seccomp are Linux's).
func Check() error {
	return fmt.Errorf("%w: the sandbox needs Linux (Landlock and seccomp)", ErrUnsupported)
}

// Status says that there is no sandbox here.
func Status() string { return "unavailable: not Linux" }

// WrapperMain refuses: there is no sandbox to apply.
func WrapperMain(args []string) int { return 126 }

// ForbidSpawn refuses: there is no sandbox to apply.
func ForbidSpawn() error { return Check() }
