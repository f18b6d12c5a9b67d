//go:build cgo

package emu

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/frame"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
)

// An untrusted module — a student's submission, compiled as host C++ — never runs in labrun's
// processes. LoadUntrustedModule starts a launcher: labrun re-executed inside the sandbox
// (internal/sandbox: Landlock, seccomp, an empty environment, no descriptors but its channel, no
// new processes), which loads the module and performs the launches it is told to. Device memory
// is shared memory (a memfd per buffer) that this process maps and the launcher maps at the same
// address, so kernel pointers mean the same in both; the launcher sees only the buffers a
// launch can reach (its pointer arguments, and pointer tables in small buffers among them), never
// a reference or anything else of the case. This process prepares the inputs, checks the guard
// zones and reads the outputs: whatever the launcher answers, the grade comes from memory.

// LauncherCommand is labrun's hidden command that runs a launcher.
const LauncherCommand = "__emu-launcher"

// launcherEnv lists the emulator settings a launcher inherits (its environment is otherwise empty;
// the schedule is passed apart, as the environment sets it).
var launcherEnv = []string{"LABRUN_EMU_STACK_KIB", "LABRUN_EMU_NO_FAULT_HANDLER"}

// lmsg is one message between labrun and a launcher, in either direction.
type lmsg struct {
	Op string `json:"op"` // load, map, unmap, launch; the reply repeats it
	ID uint64 `json:"id"`

	Path  string  `json:"path,omitempty"`
	Base  uintptr `json:"base,omitempty"`
	Bytes int64   `json:"bytes,omitempty"`

	Entry     int       `json:"entry,omitempty"`
	Args      [][]byte  `json:"args,omitempty"`
	Grid      [3]uint32 `json:"grid,omitempty"`
	Block     [3]uint32 `json:"block,omitempty"`
	Shared    int       `json:"shared,omitempty"`
	Workers   int       `json:"workers,omitempty"`
	TimeoutMs int64     `json:"timeout_ms,omitempty"`
	Seed      uint64    `json:"seed,omitempty"`

	Err     string      `json:"err,omitempty"`
	Entries []lentry    `json:"entries,omitempty"`
	Result  *wireResult `json:"result,omitempty"`
}

// wireResult is a launchResult on the wire.
type wireResult struct {
	Status     int    `json:"status"`
	Message    string `json:"message,omitempty"`
	Output     []byte `json:"output,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	FaultAddr  uint64 `json:"fault_addr,omitempty"`
	FaultWrite int    `json:"fault_write,omitempty"`
	Sticky     bool   `json:"sticky,omitempty"`
}

func toWire(r launchResult) *wireResult {
	return &wireResult{Status: r.status, Message: r.message, Output: r.output, Truncated: r.truncated,
		FaultAddr: r.faultAddr, FaultWrite: r.faultWrite, Sticky: r.sticky}
}

func (w *wireResult) result() launchResult {
	return launchResult{status: w.Status, message: w.Message, output: w.Output, truncated: w.Truncated,
		faultAddr: w.FaultAddr, faultWrite: w.FaultWrite, sticky: w.Sticky}
}

type lentry struct {
	Name       string   `json:"name"`
	Sizes      []int    `json:"sizes"`
	Types      []string `json:"types,omitempty"`
	MaxThreads int      `json:"max_threads"`
	WarpSize   int      `json:"warp_size"`
}

func writeFrame(w io.Writer, m *lmsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return frame.Write(w, b)
}

// maxFrame bounds a message (a launch's printf output is at most 4 MiB, base64 in JSON).
const maxFrame = 16 << 20

func readFrame(r io.Reader) (*lmsg, error) {
	b, err := frame.Read(r, maxFrame)
	if err != nil {
		return nil, err
	}
	var m lmsg
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// launcher is the labrun side of one sandboxed launcher process.
type launcher struct {
	b     *backend
	path  string
	cmd   *sandbox.Cmd
	conn  *net.UnixConn
	out   *tailWriter
	waitc chan struct{} // closed when the process has been waited for

	wmu     sync.Mutex // one writer at a time
	mu      sync.Mutex
	seq     uint64
	pending map[uint64]chan *lmsg
	dead    error

	syncMu sync.Mutex
	mapped map[gpu.Ptr]*allocation
}

// tailWriter keeps the first and the last bytes a launcher wrote, for the report when it dies (a
// Go crash report names the signal at its start, then runs on for pages).
type tailWriter struct {
	mu         sync.Mutex
	head, tail []byte
}

const tailKeep = 2048

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := min(tailKeep-len(t.head), len(p)); n > 0 {
		t.head = append(t.head, p[:n]...)
		p = p[n:]
	}
	t.tail = append(t.tail, p...)
	if len(t.tail) > tailKeep {
		t.tail = t.tail[len(t.tail)-tailKeep:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.tail) == 0 {
		return strings.TrimSpace(string(t.head))
	}
	return strings.TrimSpace(string(t.head) + "\n…\n" + string(t.tail))
}

// crashSignal finds the signal a Go crash report of the launcher names ("SIGSEGV: segmentation
// violation" at the start of a line).
func crashSignal(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, ": "); strings.HasPrefix(l, "SIG") && i > 3 && i < 10 {
			return l[:i]
		}
	}
	return ""
}

// startLauncher starts a sandboxed launcher for the module at path and loads it there.
func (b *backend) startLauncher(path string) (*launcher, []lentry, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the launcher's channel: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "launcher"), os.NewFile(uintptr(fds[1]), "launcher-peer")
	defer theirs.Close()
	env := []string{}
	for _, k := range launcherEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if s := scheduleSetting(); s != "" {
		env = append(env, EnvSchedule+"="+s)
	}
	read := append(append([]string(nil), sandbox.SystemRead...), path)
	read = append(read, localLibs(path)...)
	pol := sandbox.Policy{Read: read, KeepFiles: 1, Env: env}
	cmd, err := sandbox.Command(pol, self, LauncherCommand)
	if err != nil {
		mine.Close()
		return nil, nil, err
	}
	out := &tailWriter{}
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = out, out, []*os.File{theirs}
	if err := cmd.Start(); err != nil {
		mine.Close()
		return nil, nil, fmt.Errorf("starting the sandboxed launcher: %w", err)
	}
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		cmd.Kill()
		return nil, nil, err
	}
	l := &launcher{b: b, path: path, cmd: cmd, conn: c.(*net.UnixConn), out: out, waitc: make(chan struct{}),
		pending: map[uint64]chan *lmsg{}, mapped: map[gpu.Ptr]*allocation{}}
	go func() { _ = cmd.Wait(); cmd.Kill(); close(l.waitc) }()
	go l.readLoop()
	r, err := l.call(&lmsg{Op: "load", Path: path}, 2*time.Minute)
	if err != nil {
		l.kill()
		return nil, nil, err
	}
	return l, r.Entries, nil
}

func (l *launcher) readLoop() {
	rd := bufio.NewReader(l.conn)
	for {
		m, err := readFrame(rd)
		if err != nil {
			l.die(err)
			return
		}
		l.mu.Lock()
		ch := l.pending[m.ID]
		delete(l.pending, m.ID)
		l.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// die records why the launcher is gone and fails every call in flight.
func (l *launcher) die(cause error) {
	select {
	case <-l.waitc:
	case <-time.After(2 * time.Second):
		l.cmd.Kill()
		<-l.waitc
	}
	why := "it exited"
	if st := l.cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			why = "it was killed by signal " + ws.Signal().String()
		} else if sig := crashSignal(l.out.String()); sig != "" {
			why = "it crashed with signal " + sig + " (a crash in the submission's code)"
		} else {
			why = fmt.Sprintf("it exited with status %d", st.ExitCode())
		}
	}
	msg := "the sandboxed process that runs the submission's kernels died: " + why
	if t := l.out.String(); t != "" {
		msg += "; its last output:\n" + t
	} else if cause != nil && !errors.Is(cause, io.EOF) {
		msg += " (" + cause.Error() + ")"
	}
	l.mu.Lock()
	if l.dead == nil {
		l.dead = gpu.NewCallError("emu", "launcher", stInternal, "EMU_KERNEL_PROCESS_DIED", msg, true)
	}
	pend := l.pending
	l.pending = map[uint64]chan *lmsg{}
	l.mu.Unlock()
	for _, ch := range pend {
		close(ch)
	}
}

func (l *launcher) kill() {
	l.cmd.Kill()
	l.conn.Close()
}

// stop kills the launcher and waits until it is gone (at most a few seconds: SIGKILL is final).
func (l *launcher) stop() {
	l.kill()
	select {
	case <-l.waitc:
	case <-time.After(5 * time.Second):
	}
}

// call sends a request and waits for its reply, at most limit (0: forever).
func (l *launcher) call(m *lmsg, limit time.Duration, fds ...int) (*lmsg, error) {
	l.mu.Lock()
	if l.dead != nil {
		l.mu.Unlock()
		return nil, l.dead
	}
	l.seq++
	m.ID = l.seq
	ch := make(chan *lmsg, 1)
	l.pending[m.ID] = ch
	l.mu.Unlock()

	l.wmu.Lock()
	var err error
	if len(fds) > 0 {
		// The descriptors ride with the frame's first byte; the launcher queues them in order.
		var frame strings.Builder
		err = writeFrame(&frame, m)
		if err == nil {
			_, _, err = l.conn.WriteMsgUnix([]byte(frame.String()), syscall.UnixRights(fds...), nil)
		}
	} else {
		err = writeFrame(l.conn, m)
	}
	l.wmu.Unlock()
	if err != nil {
		l.kill()
		<-ch
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.dead != nil {
			return nil, l.dead
		}
		return nil, err
	}
	var timeout <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case r, ok := <-ch:
		if !ok {
			l.mu.Lock()
			defer l.mu.Unlock()
			return nil, l.dead
		}
		if r.Err != "" {
			return nil, errors.New(r.Err)
		}
		return r, nil
	case <-timeout:
		l.kill()
		return nil, gpu.NewCallError("emu", "launcher", stTimeout, "EMU_TIMEOUT",
			fmt.Sprintf("the sandboxed launcher did not answer a %s request within %s; it was killed", m.Op, limit), true)
	}
}

// syncMemory makes the launcher's mappings match the buffers a launch with args can reach:
// each pointer argument's buffer, and the buffers that pointer tables among them point into.
func (l *launcher) syncMemory(args [][]byte) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	want := l.b.reachable(args)
	for p, a := range l.mapped {
		if l.b.find(p, 1) != a {
			if _, err := l.call(&lmsg{Op: "unmap", Base: a.base, Bytes: a.bytes}, time.Minute); err != nil {
				return err
			}
			delete(l.mapped, p)
		}
	}
	for _, a := range want {
		if l.mapped[a.ptr] == a {
			continue
		}
		if _, err := l.call(&lmsg{Op: "map", Base: a.base, Bytes: a.bytes}, time.Minute, a.fd); err != nil {
			return fmt.Errorf("sharing a buffer of %d bytes with the sandboxed launcher: %w", a.bytes, err)
		}
		l.mapped[a.ptr] = a
	}
	return nil
}

// launch runs a grid in the launcher. The error is for a launcher that failed or died (sticky).
func (l *launcher) launch(entry int, args [][]byte, grid, block gpu.Dim3, shared, workers int, limitMs int64) (launchResult, error) {
	if err := l.syncMemory(args); err != nil {
		return launchResult{}, err
	}
	m := &lmsg{Op: "launch", Entry: entry, Args: args, Grid: [3]uint32{grid.X, grid.Y, grid.Z},
		Block: [3]uint32{block.X, block.Y, block.Z}, Shared: shared, Workers: workers, TimeoutMs: limitMs}
	// The runtime in the launcher stops a kernel at limitMs; past that and a grace period the
	// launcher itself is stuck (or lying) and is killed.
	r, err := l.call(m, time.Duration(limitMs)*time.Millisecond+20*time.Second)
	if err != nil {
		return launchResult{}, err
	}
	if r.Result == nil {
		l.kill()
		return launchResult{}, gpu.NewCallError("emu", "launcher", stInternal, "EMU_KERNEL_PROCESS_DIED",
			"the sandboxed launcher answered a launch without a result", true)
	}
	return r.Result.result(), nil
}

// reachable lists the live buffers that a launch with these argument bytes can reach: any
// buffer an 8-byte-aligned word of the arguments points into, then, transitively, any buffer a
// word of a reached buffer of at most pointerTableMax bytes points into (tables of pointers, as
// grouped GEMM and peer tables use).
func (b *backend) reachable(args [][]byte) []*allocation {
	seen := map[*allocation]bool{}
	var out, queue []*allocation
	visit := func(v uint64) {
		if a := b.find(gpu.Ptr(v), 1); a != nil && !seen[a] {
			seen[a] = true
			out = append(out, a)
			queue = append(queue, a)
		}
	}
	for _, a := range args {
		for off := 0; off+8 <= len(a); off += 8 {
			visit(binary.LittleEndian.Uint64(a[off:]))
		}
	}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		if a.bytes > pointerTableMax {
			continue
		}
		words := make([]byte, a.bytes/8*8)
		if len(words) > 0 {
			cCopyOut(unsafe.Pointer(&words[0]), a.ptr, int64(len(words)))
		}
		for off := 0; off+8 <= len(words); off += 8 {
			visit(binary.LittleEndian.Uint64(words[off:]))
		}
	}
	return out
}

// pointerTableMax is the largest buffer searched for pointers to other buffers.
const pointerTableMax = 1 << 20

// localLibs lists the shared libraries a module needs from its own folder (the emulator's
// runtime, found through $ORIGIN), which the launcher must be able to read.
func localLibs(path string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	var out []string
	for _, l := range libs {
		p := filepath.Join(filepath.Dir(path), l)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func closeFD(fd int) {
	if fd >= 0 {
		_ = syscall.Close(fd)
	}
}
