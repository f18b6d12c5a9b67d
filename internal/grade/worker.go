package grade

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The grader's side of the worker: the engine runs every job with a grading mode (lab.Job.Mode)
// through this hook, in the same worker, driver and case lifecycle as a normal run.

func init() { lab.RegisterJobHook(&gradeHook{}) }

// gradeHook runs grading jobs; one worker process holds one.
type gradeHook struct {
	guard  *guardDevice           // the device as the driver sees it, with red zones and write tracking
	before map[*guardAlloc][]byte // the current run's buffers after the poison
	kernel bool                   // the current run is a kernel's (the guard checks it)
}

// Genuine refuses a passed result without its passed check or its runs: the worker's RunJob
// always sends both, so such a result was written by something else.
func (h *gradeHook) Genuine(job lab.Job, e *results.Entry) string {
	if e.Status != results.StatusOK {
		return ""
	}
	if runs, _ := e.Data["runs"].(float64); e.Check == nil || !e.Check.OK || int(runs) < 1 {
		return "a passed grading result without its check"
	}
	return ""
}

// Setup wraps the device and the kernels the driver gets. The emulator surrounds every buffer
// with NaN slack and faulting fences of its own: a read or write past a buffer faults there exactly
// as in a normal run. A GPU has no such fences, so the guard adds NaN red zones.
func (h *gradeHook) Setup(spec *lab.WorkerSpec, dev gpu.Device, kernels map[string]gpu.Kernel) (gpu.Device, error) {
	pad := redZone(spec.Grade)
	if dev.Info().Emulated {
		pad = 0
	}
	h.guard = newGuardDevice(dev, pad)
	for name, k := range kernels {
		kernels[name] = &guardKernel{Kernel: k, g: h.guard, readOnly: spec.Grade.ReadOnly[name]}
	}
	return h.guard, nil
}

func redZone(g *lab.GradeSpec) int64 {
	switch {
	case g.RedZone < 0:
		return 0
	case g.RedZone == 0:
		return lab.DefaultRedZone
	}
	return (g.RedZone + 255) / 256 * 256 // keep buffers 256-byte aligned, as cudaMalloc's are
}

// Reasons a grading job fails, in Entry.Data["reason"] (the parent adds ReasonTimeout,
// ReasonCrash and ReasonCompile for jobs that a worker could not finish).
const (
	ReasonWrong          = "wrong"           // the check failed: wrong values
	ReasonUnwritten      = "unwritten"       // some outputs still hold what was there before the run
	ReasonStale          = "stale"           // the output is the previous run's answer
	ReasonReadOutside    = "read_outside"    // NaN outputs computed from the red zones
	ReasonOutOfBounds    = "oob_write"       // wrote outside a buffer
	ReasonInputCorrupted = "input_corrupted" // changed an input
	ReasonIllegalAddress = "illegal_address" // a memory fault
	ReasonBarrier        = "barrier"         // barrier divergence or deadlock
	ReasonTimeout        = "timeout"         // ran past the time limit
	ReasonCrash          = "crash"           // the process died
	ReasonTrap           = "trap"            // assert, __trap, arithmetic trap, stack overflow
	ReasonLaunch         = "launch"          // refused launch (shape, shared memory)
	ReasonCompile        = "compile"         // did not compile
	ReasonError          = "error"           // any other error
)

// ReasonOfError classifies a backend error.
func ReasonOfError(err error) string {
	var ce *gpu.CallError
	name := ""
	if errors.As(err, &ce) {
		name = ce.Name
	}
	msg := err.Error()
	has := func(s string) bool { return name == s || strings.Contains(msg, s) }
	switch {
	case has("EMU_KERNEL_PROCESS_DIED"):
		return ReasonCrash
	case has("EMU_OUT_OF_BOUNDS_WRITE"):
		return ReasonOutOfBounds
	case has("EMU_ILLEGAL_ADDRESS"), has("CUDA_ERROR_ILLEGAL_ADDRESS"), has("CUDA_ERROR_MISALIGNED_ADDRESS"),
		has("EMU_MISALIGNED_ADDRESS"):
		return ReasonIllegalAddress
	case has("EMU_BARRIER_DIVERGENCE"), has("EMU_DEADLOCK"):
		return ReasonBarrier
	case has("EMU_TIMEOUT"), has("CUDA_ERROR_LAUNCH_TIMEOUT"):
		return ReasonTimeout
	case has("EMU_TRAP"), has("EMU_ARITHMETIC_TRAP"), has("EMU_STACK_OVERFLOW"), has("CUDA_ERROR_ASSERT"),
		has("CUDA_ERROR_LAUNCH_FAILED"), // __trap() and other faults without a more precise code
		has("CUDA_ERROR_ILLEGAL_INSTRUCTION"), has("CUDA_ERROR_HARDWARE_STACK_ERROR"):
		return ReasonTrap
	case has("EMU_INVALID_LAUNCH"), has("EMU_SHARED_LIMIT"), has("CUDA_ERROR_INVALID_VALUE"),
		has("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"), has("EMU_MISUSE"):
		return ReasonLaunch
	}
	return ReasonError
}

// violation is what the guard found wrong in a run (or could not read): a reason and a headline.
type violation struct {
	reason, msg string
	err         error // the device error, when reading failed
}

func (v *violation) Error() string { return v.msg }

func readFailure(reason, what string, err error) *violation {
	return &violation{reason: reason, msg: what + ": " + err.Error(), err: err}
}

// Phase, Poisoned and Ran make the hook the engine's lab.RunGuard of a checked run.
func (h *gradeHook) Phase(p lab.Phase) { h.guard.setPhase(p) }

// Poisoned takes the snapshot of every buffer that the inputs are compared with after the run.
func (h *gradeHook) Poisoned() error {
	var err error
	if h.before, err = h.guard.snapshot(); err != nil {
		return readFailure(ReasonError, "reading the inputs", err)
	}
	return nil
}

// Ran checks the red zones and the inputs of a kernel variant's run.
func (h *gradeHook) Ran() error {
	if !h.kernel {
		return nil
	}
	g := h.guard
	msg, err := g.checkZones()
	if err != nil {
		return readFailure(ReasonOfError(err), "reading the red zones", err)
	}
	if msg != "" {
		return &violation{reason: ReasonOutOfBounds, msg: "the kernel " + msg +
			" (in grading every buffer has a red zone around it, checked after each run)"}
	}
	if msg, err = g.changedInputs(h.before); err != nil {
		return readFailure(ReasonOfError(err), "reading the inputs back", err)
	}
	if msg != "" {
		return &violation{reason: ReasonInputCorrupted, msg: "the kernel " + msg}
	}
	return nil
}

// runOutcome is one checked run of a grading job.
type runOutcome struct {
	reason string // "" when the run passed
	msg    string
	rep    *check.Report
	err    error // for the sticky-context decision
	ms     float64
	out    [][]byte // the outputs, for the next run's comparison
	skip   string
}

// runGradeJob runs a grading job: every run prepared afresh, poisoned, checked and guarded.
func (h *gradeHook) RunJob(w *lab.HookWorker, job lab.Job) (e results.Entry, err error) {
	s, v, p, e := w.Start(job)
	defer func() {
		if r := recover(); r != nil {
			e.Status = results.StatusCrashed
			e.Error = fmt.Sprintf("panic in the lab driver: %v\n%s", r, debug.Stack())
			e.Data = map[string]any{"reason": ReasonCrash}
		}
	}()
	seed := w.Spec().Seed
	if job.Seed != 0 {
		seed = job.Seed
	}
	g := w.Spec().Grade
	runs, warm, timed := max(g.Rounds, 1), 0, job.Mode == lab.GradeSpeed
	if timed {
		warm = g.Warmup
		if warm == 0 {
			warm = 2
		}
		runs = max(job.Reps, 1)
	}
	total := warm + runs
	started := time.Now()
	var samples []float64
	var prev [][]byte
	var work lab.Work
	for r := 0; r < total; r++ {
		w.Reseed(seed, fmt.Sprintf("%s/%s/%s/run%d", job.Suite, job.Variant, job.Problem, r))
		o := h.gradeRun(w, s, v, p, timed && r >= warm, max(job.Launches, 1), prev, &work)
		if o.skip != "" {
			e.Status, e.Error = results.StatusSkipped, o.skip
			return e, nil
		}
		if o.reason != "" {
			if o.rep != nil {
				e.Check = o.rep
			}
			e.Status = results.StatusFailed
			if o.reason == ReasonWrong || o.reason == ReasonUnwritten || o.reason == ReasonStale || o.reason == ReasonReadOutside {
				e.Status = results.StatusWrong
			}
			e.Error = fmt.Sprintf("%s (run %d of %d; every run has fresh inputs)", o.msg, r+1, total)
			if o.rep != nil && !o.rep.OK {
				if f := o.rep.Figures(); f != "" { // the reason is said above: only the figures follow
					e.Error += "\n" + f
				}
			}
			e.Data = map[string]any{"reason": o.reason, "run": r + 1, "runs": total, "elapsed_s": time.Since(started).Seconds()}
			return e, o.err
		}
		if timed && r >= warm {
			samples = append(samples, o.ms)
		}
		prev = o.out
		e.Check = o.rep
	}
	e.Data = map[string]any{"runs": total, "elapsed_s": time.Since(started).Seconds()}
	if timed {
		lab.SetRates(&e, work, bench.StatsOf(samples))
	}
	e.Status = results.StatusOK
	return e, nil
}

// gradeRun is one checked run: prepare afresh, then the engine's checked run (poison, run, timed
// when asked, check) with the guard watching: a snapshot of every buffer after the poison, the red
// zones and the inputs after the run. A failed check is explained from the outputs.
func (h *gradeHook) gradeRun(w *lab.HookWorker, s *lab.Suite, v *lab.Variant, p lab.Problem, timed bool, launches int, prev [][]byte, work *lab.Work) (o runOutcome) {
	g := h.guard
	g.begin()
	fail := func(reason, stage string, err error) runOutcome {
		return runOutcome{reason: reason, msg: stage + ": " + err.Error(), err: err}
	}
	c, err := w.Prepare(s, v, p)
	if why, ok := lab.SkipReason(err); ok {
		return runOutcome{skip: why}
	}
	if err != nil {
		return fail(ReasonError, "prepare", err)
	}
	defer func() {
		if rerr := c.Release(); rerr != nil && o.reason == "" {
			o = fail(ReasonError, "release", rerr)
		}
	}()
	*work = c.Case.Work()
	h.before, h.kernel = nil, v.IsKernel()
	rep, ms, step, err := c.CheckedRun(h, launches, timed)
	var viol *violation
	switch {
	case err == nil:
	case errors.As(err, &viol):
		return runOutcome{reason: viol.reason, msg: viol.msg, err: viol.err}
	default:
		if why, ok := lab.SkipReason(err); ok {
			return runOutcome{skip: why}
		}
		return fail(ReasonOfError(err), step, err)
	}
	o.ms = ms
	o.rep = &rep
	before := h.before
	outs := g.outputs()
	for _, a := range outs {
		b, err := g.read(a.user, a.bytes)
		if err != nil {
			return fail(ReasonOfError(err), "reading the outputs", err)
		}
		o.out = append(o.out, b)
	}
	if !rep.OK {
		pre := make([][]byte, len(outs))
		for i, a := range outs {
			pre[i] = before[a]
		}
		o.reason, o.msg = explain(pre, o.out, prev)
	}
	return o
}

// explain says why a check failed, from the outputs before the run (poisoned), after it, and
// after the previous run (on other inputs): a reason code and a headline (the report's figures
// and first wrong elements follow it).
func explain(pre, out, prev [][]byte) (string, string) {
	total, unchanged, nanNew, zeros := 0, 0, 0, 0
	same := len(prev) == len(out) && len(out) > 0
	var first uint32
	constant := true
	for i, b := range out {
		if same && string(prev[i]) != string(b) {
			same = false
		}
		if len(b)%4 != 0 || len(pre[i]) != len(b) {
			continue
		}
		for j := 0; j+4 <= len(b); j += 4 {
			x := uint32(b[j]) | uint32(b[j+1])<<8 | uint32(b[j+2])<<16 | uint32(b[j+3])<<24
			y := uint32(pre[i][j]) | uint32(pre[i][j+1])<<8 | uint32(pre[i][j+2])<<16 | uint32(pre[i][j+3])<<24
			if total == 0 {
				first = x
			}
			constant = constant && x == first
			total++
			if x == y {
				unchanged++
			} else if f := math.Float32frombits(x); f != f {
				nanNew++
			}
			if x == 0 || x == 0x80000000 {
				zeros++
			}
		}
	}
	switch {
	case same:
		return ReasonStale, "returned the previous run's answer: the output is exactly the previous run's, although this " +
			"run's inputs are new (a cached result?)"
	case nanNew > 0:
		// Before "unwritten": outputs computed from a NaN the kernel should not have read (a
		// buffer's slack, shared memory, rows not there yet) carry that NaN's payload, not the
		// poison's, and outputs computed from them may sit beside ones it left unwritten.
		return ReasonReadOutside, fmt.Sprintf("computed NaN in %d of %d outputs: in grading every buffer is surrounded by NaN "+
			"and shared memory starts as NaN at every block, so a kernel that reads past the end (or before the start) of "+
			"its inputs, or shared memory it did not write, or data before it was ready, computes NaN", nanNew, total)
	case unchanged > 0:
		return ReasonUnwritten, fmt.Sprintf("did not write %d of %d outputs: they still hold the poison put there before the run",
			unchanged, total)
	case total > 0 && zeros == total:
		return ReasonWrong, "wrong result: every output is 0"
	case total > 1 && constant:
		return ReasonWrong, fmt.Sprintf("wrong result: every output is the same value (%g)", math.Float32frombits(first))
	}
	return ReasonWrong, "wrong result"
}

// In grading, the driver sees the device through a guardDevice. It changes nothing a correct
// kernel can observe, and lets the worker see what a wrong or dishonest one did:
//
//   - Every allocation is surrounded by red zones of RedZone bytes filled with 0xFF (a NaN in
//     every floating-point format, -1 as an integer). A kernel that reads a little past the end (or
//     before the start) of an input computes with NaN, and its output shows it; a kernel that writes
//     there changes a red zone, which is checked after every run. (Beyond the red zone the
//     emulator's own guard pages fault; on a GPU, far accesses may go unnoticed.)
//   - It records which buffers the host writes while the case poisons its outputs (the outputs)
//     and while it runs (workspaces reset by the driver), and which buffers kernels receive as
//     pointers to writable memory. Every other buffer of the case is an input, and must hold the
//     same bytes after the run as before it.

// The phases of a case (lab.Phase): while the engine poisons, host writes mark outputs; while
// the driver runs, they mark workspaces.
const (
	phaseIdle   = lab.PhaseIdle
	phasePoison = lab.PhasePoison
	phaseRun    = lab.PhaseRun
)

type guardAlloc struct {
	user, base gpu.Ptr
	bytes      int64
	gen        int // the run that allocated it
	order      int // allocation order within its run
}

type guardDevice struct {
	gpu.Device
	pad int64

	mu       sync.Mutex
	allocs   map[gpu.Ptr]*guardAlloc // by the address handed out
	phase    lab.Phase
	gen      int
	order    int
	poisoned map[*guardAlloc]bool // written by the host while poisoning: outputs
	hostRun  map[*guardAlloc]bool // written by the host while running
	writable map[*guardAlloc]bool // passed to a kernel as a pointer it may write through
	constArg map[*guardAlloc]int  // passed to the graded kernel as this const pointer parameter
}

func newGuardDevice(d gpu.Device, pad int64) *guardDevice {
	return &guardDevice{Device: d, pad: pad, allocs: map[gpu.Ptr]*guardAlloc{}}
}

// Unwrap gives backends the device under the guard (to enable peer access with it, say).
func (g *guardDevice) Unwrap() gpu.Device { return g.Device }

// begin starts a new run: allocations from now on belong to it.
func (g *guardDevice) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
	g.order = 0
	g.phase = phaseIdle
	g.poisoned = map[*guardAlloc]bool{}
	g.hostRun = map[*guardAlloc]bool{}
	g.writable = map[*guardAlloc]bool{}
	g.constArg = map[*guardAlloc]int{}
}

func (g *guardDevice) setPhase(p lab.Phase) {
	g.mu.Lock()
	g.phase = p
	g.mu.Unlock()
}

func (g *guardDevice) Malloc(bytes int64) (gpu.Ptr, error) {
	base, err := g.Device.Malloc(bytes + 2*g.pad)
	if err != nil {
		return 0, err
	}
	a := &guardAlloc{user: base + gpu.Ptr(g.pad), base: base, bytes: bytes}
	if err := g.fillZones(a); err != nil {
		g.Device.Free(base)
		return 0, fmt.Errorf("filling the red zones of a new buffer: %w", err)
	}
	g.mu.Lock()
	a.gen, a.order = g.gen, g.order
	g.order++
	g.allocs[a.user] = a
	if g.phase == phaseRun {
		g.hostRun[a] = true // a buffer the driver makes while running is its workspace
	}
	g.mu.Unlock()
	return a.user, nil
}

func (g *guardDevice) fillZones(a *guardAlloc) error {
	if g.pad == 0 {
		return nil
	}
	if err := g.Device.MemsetD8(a.base, 0xFF, g.pad, nil); err != nil {
		return err
	}
	if err := g.Device.MemsetD8(a.user+gpu.Ptr(a.bytes), 0xFF, g.pad, nil); err != nil {
		return err
	}
	return g.Device.Synchronize()
}

func (g *guardDevice) Free(p gpu.Ptr) error {
	g.mu.Lock()
	a, ok := g.allocs[p]
	delete(g.allocs, p)
	g.mu.Unlock()
	if !ok {
		return g.Device.Free(p)
	}
	return g.Device.Free(a.base)
}

// find returns the allocation that holds p (nil when none does).
func (g *guardDevice) find(p gpu.Ptr) *guardAlloc {
	for _, a := range g.allocs {
		if p >= a.user && p < a.user+gpu.Ptr(max(a.bytes, 1)) {
			return a
		}
	}
	return nil
}

func (g *guardDevice) noteWrite(dst gpu.Ptr) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.find(dst)
	if a == nil {
		return
	}
	switch g.phase {
	case phasePoison:
		g.poisoned[a] = true
	case phaseRun:
		g.hostRun[a] = true
	}
}

func (g *guardDevice) CopyHtoD(dst gpu.Ptr, src unsafe.Pointer, bytes int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.CopyHtoD(dst, src, bytes, s)
}

func (g *guardDevice) CopyDtoD(dst, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.CopyDtoD(dst, src, bytes, s)
}

func (g *guardDevice) MemsetD8(dst gpu.Ptr, value uint8, count int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.MemsetD8(dst, value, count, s)
}

func (g *guardDevice) MemsetD32(dst gpu.Ptr, value uint32, count int64, s gpu.Stream) error {
	g.noteWrite(dst)
	return g.Device.MemsetD32(dst, value, count, s)
}

func unwrapDevice(d gpu.Device) gpu.Device {
	if g, ok := d.(*guardDevice); ok {
		return g.Device
	}
	return d
}

func (g *guardDevice) CopyPeer(dst gpu.Ptr, dstDev gpu.Device, src gpu.Ptr, bytes int64, s gpu.Stream) error {
	return g.Device.CopyPeer(dst, unwrapDevice(dstDev), src, bytes, s)
}

func (g *guardDevice) CanAccessPeer(peer gpu.Device) (bool, error) {
	return g.Device.CanAccessPeer(unwrapDevice(peer))
}

func (g *guardDevice) EnablePeerAccess(peer gpu.Device) error {
	return g.Device.EnablePeerAccess(unwrapDevice(peer))
}

// BLAS and EncodeTensorMap pass the backend's optional interfaces through.
func (g *guardDevice) BLAS() (gpu.BLAS, error) { return gpu.OpenBLAS(g.Device) }

func (g *guardDevice) EncodeTensorMap(d gpu.TensorMapDesc) (gpu.RawArg, error) {
	return gpu.EncodeTensorMap(g.Device, d)
}

// noteLaunch records the buffers a kernel receives. readOnly[i] says that parameter i points at
// data the kernel must not change (const T* in the course's own signature); nil means unknown.
func (g *guardDevice) noteLaunch(readOnly []bool, args [][]byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, b := range args {
		if len(b) == 8 {
			a := g.find(gpu.Ptr(binary.LittleEndian.Uint64(b)))
			if a == nil {
				continue
			}
			if i < len(readOnly) && readOnly[i] {
				if _, seen := g.constArg[a]; !seen {
					g.constArg[a] = i
				}
			} else {
				g.writable[a] = true
			}
			continue
		}
		// A struct by value may hold pointers: whatever it points into may be written.
		for off := 0; off+8 <= len(b); off += 8 {
			if a := g.find(gpu.Ptr(binary.LittleEndian.Uint64(b[off:]))); a != nil {
				g.writable[a] = true
			}
		}
	}
}

// caseAllocs lists the current run's live allocations in allocation order.
func (g *guardDevice) caseAllocs() []*guardAlloc {
	g.mu.Lock()
	defer g.mu.Unlock()
	var as []*guardAlloc
	for _, a := range g.allocs {
		if a.gen == g.gen {
			as = append(as, a)
		}
	}
	sort.Slice(as, func(i, j int) bool { return as[i].order < as[j].order })
	return as
}

func (g *guardDevice) read(p gpu.Ptr, n int64) ([]byte, error) {
	buf := make([]byte, n)
	if n == 0 {
		return buf, nil
	}
	if err := g.Device.CopyDtoH(unsafe.Pointer(&buf[0]), p, n, nil); err != nil {
		return nil, err
	}
	return buf, g.Device.Synchronize()
}

// snapshot reads every buffer of the current run.
func (g *guardDevice) snapshot() (map[*guardAlloc][]byte, error) {
	snap := map[*guardAlloc][]byte{}
	for _, a := range g.caseAllocs() {
		b, err := g.read(a.user, a.bytes)
		if err != nil {
			return nil, fmt.Errorf("reading a buffer of %d bytes: %w", a.bytes, err)
		}
		snap[a] = b
	}
	return snap, nil
}

// outputs lists the current run's buffers that the host poisoned (the outputs), in order.
func (g *guardDevice) outputs() []*guardAlloc {
	var out []*guardAlloc
	for _, a := range g.caseAllocs() {
		g.mu.Lock()
		p := g.poisoned[a]
		g.mu.Unlock()
		if p {
			out = append(out, a)
		}
	}
	return out
}

// describe names a buffer for a student: its size, its place among the case's buffers, and how
// the kernel got it.
func (g *guardDevice) describe(a *guardAlloc) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := fmt.Sprintf("buffer #%d of the problem (%s)", a.order+1, gpu.HumanBytes(a.bytes))
	switch {
	case g.poisoned[a]:
		s += ", an output"
	case g.hasConst(a):
		s += fmt.Sprintf(", the input passed as kernel argument %d", g.constArg[a])
	default:
		s += ", which the kernel is not given"
	}
	return s
}

func (g *guardDevice) hasConst(a *guardAlloc) bool { _, ok := g.constArg[a]; return ok }

// checkZones verifies the red zones of every live buffer and repairs them. It returns a
// description of the first violation ("" when none).
func (g *guardDevice) checkZones() (string, error) {
	if g.pad == 0 {
		return "", nil
	}
	g.mu.Lock()
	all := make([]*guardAlloc, 0, len(g.allocs))
	for _, a := range g.allocs {
		all = append(all, a)
	}
	g.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].user < all[j].user })
	var first string
	for _, a := range all {
		front, err := g.read(a.base, g.pad)
		if err != nil {
			return "", err
		}
		back, err := g.read(a.user+gpu.Ptr(a.bytes), g.pad)
		if err != nil {
			return "", err
		}
		lo, hi, n := -1, -1, 0
		for i, b := range front {
			if b != 0xFF {
				if lo < 0 {
					lo = i
				}
				n++
			}
		}
		bf, bl := -1, -1
		for i, b := range back {
			if b != 0xFF {
				if bf < 0 {
					bf = i
				}
				bl = i
				n++
			}
		}
		if n == 0 {
			continue
		}
		if first == "" {
			where := ""
			switch {
			case bf >= 0:
				where = fmt.Sprintf("past the end of %s: up to %d bytes past it", g.describe(a), bl+1)
			default:
				where = fmt.Sprintf("before the start of %s: from %d bytes before it", g.describe(a), int(g.pad)-lo)
			}
			_ = hi
			first = fmt.Sprintf("wrote %d bytes %s", n, where)
		}
		if err := g.fillZones(a); err != nil {
			return "", err
		}
	}
	return first, nil
}

// changedInputs compares the inputs of the current run with their snapshot taken before the run:
// every buffer of the case except the outputs, the buffers the host wrote while running, and those
// a kernel got as a pointer to writable memory.
func (g *guardDevice) changedInputs(before map[*guardAlloc][]byte) (string, error) {
	for _, a := range g.caseAllocs() {
		g.mu.Lock()
		skip := g.poisoned[a] || g.hostRun[a] || g.writable[a]
		g.mu.Unlock()
		old, ok := before[a]
		if skip || !ok {
			continue
		}
		now, err := g.read(a.user, a.bytes)
		if err != nil {
			return "", err
		}
		diff, at := 0, -1
		for i := range now {
			if now[i] != old[i] {
				if at < 0 {
					at = i
				}
				diff++
			}
		}
		if diff > 0 {
			return fmt.Sprintf("changed its input: %s — %d byte(s) differ after the run, the first at offset %d",
				g.describe(a), diff, at), nil
		}
	}
	return "", nil
}

// guardKernel records the buffers each launch receives.
type guardKernel struct {
	gpu.Kernel
	g        *guardDevice
	readOnly []bool
}

// Unwrap gives the kernel under the guard, for gpu.MaxActiveBlocksPerSM.
func (k *guardKernel) Unwrap() gpu.Kernel { return k.Kernel }

func (k *guardKernel) LaunchPacked(cfg gpu.LaunchConfig, args [][]byte) error {
	k.g.noteLaunch(k.readOnly, args)
	return k.Kernel.LaunchPacked(cfg, args)
}
