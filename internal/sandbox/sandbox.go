// Package sandbox confines the processes that run code the grader does not trust: a student's
// kernel module loaded by the emulator, and the compilers that build a submission.
//
// A sandboxed process is a re-execution of labrun ("labrun __sandbox POLICY -- PROGRAM ARGS…")
// that, on one locked OS thread, closes every file descriptor but the ones it is told to keep,
// restricts itself with Landlock (the filesystem: read only the policy's Read paths, write only
// its Write folders) and seccomp (no network, no ptrace or reading other processes' memory, no
// signals outside itself, no leaving its process group, no namespaces or mounts, and, unless
// the policy allows it, no new processes at all), then execs PROGRAM with the policy's
// environment and nothing else. The program inherits every restriction, and so does anything it
// starts. It runs in a process group of its own that it cannot leave and that Kill ends, and it
// dies with its parent; where the kernel allows it, it also gets new user, network and IPC
// namespaces.
//
// Check says whether this kernel can do all of this. The grader refuses to grade where it cannot,
// unless the instructor says the grade may be unsafe.
package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Policy is what a sandboxed program may do.
type Policy struct {
	// Read lists files and folders the program may read (and execute, and map): its own
	// binary, the system's libraries and tools, its inputs. Everything else is invisible.
	Read []string `json:"read"`
	// Write lists folders the program may create, write and remove files in (its scratch).
	Write []string `json:"write"`
	// Exec allows starting other programs (a compiler driver runs its passes). They inherit the
	// sandbox. Without it, execve, fork and clone of a new process fail: such a policy can only
	// run labrun itself, which denies them to itself at its start (EnforceNoSpawn), before it
	// loads any untrusted code.
	Exec bool `json:"exec"`
	// Env is the program's whole environment.
	Env []string `json:"env"`
	// KeepFiles is how many descriptors after stderr (3, 4, …) stay open: the caller's
	// exec.Cmd.ExtraFiles. Every other descriptor is closed.
	KeepFiles int `json:"keep_files"`
	// Secret lists paths that must stay unreachable (the reference solutions, the grader's
	// reports): a policy whose Read or Write list contains one of them, or lies inside one, is
	// refused.
	Secret []string `json:"secret,omitempty"`
	// Program is the program's binary (and its real path): readable, whatever Secret says.
	// Command sets it.
	Program []string `json:"program,omitempty"`
}

var (
	secretMu sync.Mutex
	secrets  []string
)

// AddSecret adds paths that no policy of this process may expose (the course tree, the
// grader's reports), on top of each policy's own Secret list.
func AddSecret(paths ...string) {
	secretMu.Lock()
	defer secretMu.Unlock()
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			secrets = append(secrets, abs)
			if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
				secrets = append(secrets, real)
			}
		}
	}
}

// SystemRead is what most programs need to start: the system's libraries, tools and loader
// configuration. Nothing in it is the course's.
var SystemRead = []string{"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/alternatives"}

// ErrUnsupported wraps the reason this kernel cannot sandbox.
var ErrUnsupported = errors.New("this kernel cannot sandbox untrusted code")

// validate refuses a policy that would expose a secret path, or that names relative paths.
func (p Policy) validate() error {
	for _, list := range [][]string{p.Read, p.Write} {
		for _, path := range list {
			if !filepath.IsAbs(path) {
				return fmt.Errorf("sandbox policy: %q is not an absolute path", path)
			}
			for _, s := range p.Secret {
				if within(path, s) || within(s, path) {
					return fmt.Errorf("sandbox policy: %s would expose %s, which must stay out of reach", path, s)
				}
			}
		}
	}
	return nil
}

// within says whether path is dir or lies inside it (both cleaned, no symlinks resolved).
func within(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	if path == dir {
		return true
	}
	if dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// Command returns a command that runs name with args under the policy. The caller may set
// Stdin, Stdout, Stderr, Dir and ExtraFiles (as many as p.KeepFiles) and must not change Env,
// Path, Args or SysProcAttr. Start it with Start (which falls back from namespaces the kernel
// refuses), and end it with Kill on every path.
func Command(p Policy, name string, args ...string) (*Cmd, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(name) {
		path, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		name = path
	}
	if abs, err := filepath.Abs(name); err == nil {
		name = abs
	}
	// The program itself must be readable (the loader maps it) and, through its symlinks, its
	// real file too. It may lie in a secret folder (labrun in the course's bin/): one file, which
	// exposes nothing else.
	p.Program = []string{name}
	if real, err := filepath.EvalSymlinks(name); err == nil && real != name {
		p.Program = append(p.Program, real)
	}
	secretMu.Lock()
	p.Secret = append(append([]string(nil), p.Secret...), secrets...)
	secretMu.Unlock()
	if err := p.validate(); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: finding labrun's own binary: %w", err)
	}
	if !p.Exec && name != self {
		return nil, fmt.Errorf("sandbox: a policy without Exec runs only labrun itself, not %s", name)
	}
	pol, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{WrapperCommand, string(pol), "--", name}, args...)...)
	// The wrapper itself runs with an empty environment too: it needs none.
	cmd.Env = []string{}
	return &Cmd{Cmd: cmd}, nil
}

// NoSpawnEnv is set in the environment of a program started under a policy without Exec.
const NoSpawnEnv = "LABRUN_SANDBOX_NO_SPAWN"

// EnforceNoSpawn is the first thing labrun does: a labrun started under a policy without Exec
// denies itself new processes before it does anything else.
func EnforceNoSpawn() error {
	if os.Getenv(NoSpawnEnv) == "" {
		return nil
	}
	return ForbidSpawn()
}

// WrapperCommand is the hidden labrun command that applies a policy and execs the program.
const WrapperCommand = "__sandbox"

// StandIn runs the wrapper when this process was started as one ("BINARY __sandbox POLICY --
// PROGRAM", as Command starts it), and run otherwise, and returns the exit status. A test binary
// whose code starts sandboxed processes stands in for labrun with it:
// func TestMain(m *testing.M) { os.Exit(sandbox.StandIn(m.Run)) }.
func StandIn(run func() int) int {
	if len(os.Args) > 1 && os.Args[1] == WrapperCommand {
		return WrapperMain(os.Args[2:])
	}
	return run()
}

// Cmd is a sandboxed command.
type Cmd struct {
	*exec.Cmd
	// Isolation says which namespaces the process got ("user, net, ipc namespaces", or "none").
	Isolation string
}

// Start starts the command in a process group of its own, in new namespaces where the kernel
// allows them, and dies with its parent.
func (c *Cmd) Start() error {
	// No PID namespace: its first process ignores the signals it sends itself (abort() would
	// not end it), and the process group already ends everything the program starts, since it
	// can leave the group neither by setsid nor by setpgid.
	flags, uid, gid := uintptr(syscall.CLONE_NEWUSER|syscall.CLONE_NEWNET|syscall.CLONE_NEWIPC),
		os.Getuid(), os.Getgid()
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false}
	err := c.Cmd.Start()
	if err == nil {
		c.Isolation = "user, net, ipc namespaces"
		return nil
	}
	if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSPC) &&
		!errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.ENOSYS) {
		return err
	}
	// No namespaces here (a container that forbids them): Landlock and seccomp still hold, and
	// the process group and the death signal still end what it starts.
	c.Process, c.ProcessState = nil, nil
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.Cmd.Start(); err != nil {
		return err
	}
	c.Isolation = "none (the kernel refused new namespaces)"
	return nil
}

// Kill ends the process and everything it started (its process group; with a PID namespace,
// the namespace dies with its first process). It is safe to call more than once and before
// Wait.
func (c *Cmd) Kill() {
	if c.Process == nil {
		return
	}
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	_ = c.Process.Kill()
}

// Run starts the command, waits for it, and kills whatever it left behind.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	err := c.Wait()
	c.Kill()
	return err
}

// CombinedOutput runs the command and returns what it wrote on stdout and stderr.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	var b strings.Builder
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	return []byte(b.String()), err
}
