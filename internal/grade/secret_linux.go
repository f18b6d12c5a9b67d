//go:build linux

package grade

import "syscall"

// ProtectProcess makes this process non-dumpable, so that processes of the same user (a
// submission running in a worker, or compiled by the compiler this process starts) cannot read
// its memory or its initial environment (/proc/PID/environ, which still shows a variable after
// os.Unsetenv). Root can; see the README on where to keep the secret seed.
func ProtectProcess() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
