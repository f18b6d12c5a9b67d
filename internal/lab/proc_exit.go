package lab

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exitedOnItsOwn says whether process pid has already exited (a zombie not yet reaped, or reaped
// already), without reaping it: the group's killer must not take the blame for a rank that died
// before it was killed, even when that rank's Wait has not returned yet.
func exitedOnItsOwn(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if errors.Is(err, unix.ECHILD) {
		return true // Wait reaped it already
	}
	return err == nil && info.Signo != 0 // WNOHANG leaves info zero while it still runs
}
