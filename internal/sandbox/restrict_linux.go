//go:build linux

package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Check says whether this kernel has what the sandbox needs: Landlock (any ABI) and seccomp
// filters. The error says what is missing.
func Check() error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		why := "Landlock is not enabled (boot with lsm=…,landlock, Linux ≥ 5.13)"
		if err != nil {
			why += ": " + err.Error()
		}
		return fmt.Errorf("%w: %s", ErrUnsupported, why)
	}
	if !seccomp.Supported() {
		return fmt.Errorf("%w: seccomp filters are not available (Linux with CONFIG_SECCOMP_FILTER)", ErrUnsupported)
	}
	return nil
}

// Status says in a line what the sandbox uses on this kernel.
func Status() string {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		return "unavailable: " + err.Error()
	}
	return fmt.Sprintf("Landlock ABI %d, seccomp filter", abi)
}

// WrapperMain is labrun's hidden "__sandbox POLICY -- PROGRAM ARGS…" command: it confines
// itself and execs the program. It returns only on failure, with exit status 126.
func WrapperMain(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "labrun sandbox: "+format+"\n", a...)
		return 126
	}
	if len(args) < 3 || args[1] != "--" {
		return fail("usage: labrun %s POLICY -- PROGRAM [ARGS…]", WrapperCommand)
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		return fail("bad policy: %v", err)
	}
	if err := p.validate(); err != nil {
		return fail("%v", err)
	}
	prog, argv := args[2], args[2:]
	// Whatever the program does, it dies first when memory runs out, and leaves no core file.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	// Everything from here to the exec happens on this one thread, which the program inherits.
	runtime.LockOSThread()
	// Every other descriptor closes at the exec, not now: the Go runtime of this wrapper still
	// uses its own (the network poller's) until then, and dies if they vanish under it.
	if err := unix.CloseRange(uint(3+p.KeepFiles), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail("marking inherited descriptors close-on-exec: %v", err)
	}
	if err := restrictThread(p); err != nil {
		return fail("%v", err)
	}
	env := p.Env
	if !p.Exec {
		env = append(append([]string(nil), env...), NoSpawnEnv+"=1")
	}
	err := syscall.Exec(prog, argv, env)
	return fail("starting %s: %v", filepath.Base(prog), err)
}

// restrictThread applies Landlock and seccomp to the calling thread (locked by the caller), for
// it and everything it execs or starts.
func restrictThread(p Policy) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	rules := []landlock.Rule{landlock.RWFiles("/dev/null").IgnoreIfMissing()}
	for _, path := range append(append([]string(nil), p.Read...), p.Program...) {
		if st, err := os.Stat(path); err == nil && !st.IsDir() {
			rules = append(rules, landlock.ROFiles(path))
		} else {
			rules = append(rules, landlock.RODirs(path).IgnoreIfMissing())
		}
	}
	for _, dir := range p.Write {
		rules = append(rules, landlock.RWDirs(dir))
	}
	// The newest ABI this library knows, degraded to what the kernel has: the filesystem always,
	// TCP connect/bind (ABI 4), and signals and abstract sockets scoped to the sandbox (ABI 6).
	cfg := landlock.V7.BestEffort()
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("%w: Landlock is not available", ErrUnsupported)
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	// The wrapper must still exec its program: without Exec, the program (labrun itself, see
	// Command) adds the rest at its start (NoSpawnEnv, ForbidSpawn).
	return loadSeccomp(true, os.Getpid())
}

// denied lists the system calls no sandboxed process may make. The default is to allow, so that
// compilers and the Go runtime work unchanged; Landlock covers the filesystem.
var denied = []string{
	// network
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
	// other processes' memory and state
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
	"pidfd_open", "pidfd_getfd", "pidfd_send_signal", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
	// leaving the process group that Kill ends
	"setsid", "setpgid",
	// namespaces, mounts, the kernel
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "settimeofday", "clock_settime", "adjtimex",
	"iopl", "ioperm", "personality", "lookup_dcookie", "fanotify_init",
}

// noSpawn lists what a process that may not start programs is also denied: new programs and
// processes, and changes to files' metadata, which Landlock does not cover (a sandbox running as
// root could otherwise chmod or chown what it cannot write).
var noSpawn = []string{"execve", "execveat", "fork", "vfork", "tkill",
	"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
	"utime", "utimes", "futimesat", "utimensat"}

func loadSeccomp(exec bool, pid int) error {
	groups := []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: denied}}
	if !exec {
		groups = append(groups,
			seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: noSpawn},
			// Threads (CLONE_THREAD) are allowed; a new process is not. clone3 hides its flags
			// in memory that a filter cannot read: ENOSYS makes the C library fall back to clone.
			seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
			seccomp.SyscallGroup{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: unix.CLONE_THREAD}}},
				// Signals only to itself (the Go runtime preempts its own threads with tgkill).
				{Name: "kill", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: uint64(pid)}}},
				{Name: "tgkill", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: uint64(pid)}}},
			}})
	}
	f := seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}}
	if err := seccomp.LoadFilter(f); err != nil {
		return fmt.Errorf("loading the seccomp filter: %w", err)
	}
	return nil
}

// ForbidSpawn adds, for the whole calling process (every thread), the seccomp rules of a policy
// without Exec: no new programs or processes, and signals only to itself. A sandboxed labrun
// that loads untrusted code (the emulator's launcher) calls it before loading that code, on top
// of the restrictions it inherited from the wrapper.
func ForbidSpawn() error { return loadSeccomp(false, os.Getpid()) }
