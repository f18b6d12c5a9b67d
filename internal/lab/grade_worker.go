package lab

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Grading modes of a job (Job.Mode).
const (
	GradeCheck = "check" // correctness: GradeSpec.Rounds checked runs, fresh inputs each
	GradeSpeed = "speed" // speed: GradeSpec.Warmup + Job.Reps checked runs, the last Reps timed
)

// GradeSpec is how the worker runs grading jobs. Unlike a normal run (one checked run, then
// timed runs whose outputs nobody reads), every run of a grading job is a checked run:
//
//   - the case is prepared afresh before every run, with inputs drawn from a stream of the seed
//     of its own (so an answer cached from an earlier call is wrong), and its outputs poisoned;
//   - every buffer is surrounded by NaN red zones, checked after the run (writes outside a buffer),
//     and NaN read from them shows in the outputs (reads outside a buffer);
//   - the inputs are compared with their contents before the run (a kernel must not change them);
//   - the outputs are checked against the reference, and a failure is explained: outputs left
//     unwritten, the previous run's answer returned, NaN computed from outside the inputs, or
//     plainly wrong values.
type GradeSpec struct {
	Rounds  int   `json:"rounds"`   // checked runs of a GradeCheck job (default 3)
	Warmup  int   `json:"warmup"`   // checked, untimed runs before a GradeSpeed job's timed ones (default 2)
	RedZone int64 `json:"red_zone"` // bytes of 0xFF before and after every buffer (default 64 KiB; -1: none)
	// ReadOnly says, for a graded variant (by Variant.Key), which kernel parameters point at
	// inputs (const T* in the course's own signature of the kernel, not the submission's).
	ReadOnly map[string][]bool `json:"read_only,omitempty"`
	// The emulated machine (lab.yaml's grading.emulator): SMs per device, and the schedule as the
	// emulator takes it ("adversarial:SEED", or "" for the plain order).
	EmuSMs      int    `json:"emu_sms,omitempty"`
	EmuSchedule string `json:"emu_schedule,omitempty"`
}

// DefaultRedZone is the size of the red zones around buffers in grading.
const DefaultRedZone = 64 << 10

func (g *GradeSpec) redZone() int64 {
	switch {
	case g.RedZone < 0:
		return 0
	case g.RedZone == 0:
		return DefaultRedZone
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

// reseedRun gives run r of a grading job its own random stream.
func (e *Env) reseedRun(seed uint64, j Job, r int) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s/%s/run%d", seed, j.Suite, j.Variant, j.Problem, r)
	s := h.Sum64()
	e.RNG = rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	e.Seed = s
}

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
	case has("EMU_ILLEGAL_ADDRESS"), has("CUDA_ERROR_ILLEGAL_ADDRESS"), has("CUDA_ERROR_MISALIGNED_ADDRESS"):
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
func (w *worker) runGradeJob(job Job) (e results.Entry, err error) {
	s, v, p, e := w.startEntry(job)
	defer func() {
		if r := recover(); r != nil {
			e.Status = results.StatusCrashed
			e.Error = fmt.Sprintf("panic in the lab driver: %v\n%s", r, debug.Stack())
			e.Data = map[string]any{"reason": ReasonCrash}
		}
	}()
	if k, kerr := w.env.Kernel(v); kerr == nil {
		if attrs, aerr := k.Attrs(); aerr == nil {
			e.Kernel = &attrs
		}
	}
	seed := w.spec.Seed
	if job.Seed != 0 {
		seed = job.Seed
	}
	g := w.spec.Grade
	runs, warm, timed := max(g.Rounds, 1), 0, job.Mode == GradeSpeed
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
	var work Work
	for r := 0; r < total; r++ {
		w.env.reseedRun(seed, job, r)
		o := w.gradeRun(s, v, p, timed && r >= warm, max(job.Launches, 1), prev, &work)
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
		st := bench.Summarize(samples)
		e.Time = &st
		e.Ops = work.Ops
		ops := max(work.Ops, 1)
		if sec := st.MedianMs / 1e3; sec > 0 {
			if work.FLOPs > 0 {
				e.TFLOPs = work.FLOPs / sec / 1e12
			}
			if work.Bytes > 0 {
				e.GBps = work.Bytes / sec / 1e9
			}
		}
		e.PerOpUs = st.MedianMs * 1e3 / float64(ops)
	}
	e.Status = results.StatusOK
	return e, nil
}

// gradeRun is one checked run: prepare afresh, poison, snapshot, run (timed when asked), then
// the red zones, the inputs and the outputs.
func (w *worker) gradeRun(s *Suite, v *Variant, p Problem, timed bool, launches int, prev [][]byte, work *Work) (o runOutcome) {
	g := w.guard
	g.begin()
	defer g.setPhase(phaseIdle)
	fail := func(reason, stage string, err error) runOutcome {
		return runOutcome{reason: reason, msg: stage + ": " + err.Error(), err: err}
	}
	c, err := w.prepare(s, v, p)
	if why, ok := skipReason(err); ok {
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
	g.setPhase(phasePoison)
	if err := c.Poison(); err != nil {
		return fail(ReasonError, "poison outputs", err)
	}
	g.setPhase(phaseIdle)
	if err := w.env.Stream.Synchronize(); err != nil {
		return fail(ReasonOfError(err), "poison outputs", err)
	}
	before, err := g.snapshot()
	if err != nil {
		return fail(ReasonError, "reading the inputs", err)
	}

	// Launches > 1: run on the same case again, the outputs poisoned afresh before each run, so
	// that what the check sees is the last run's (a counter that grows across runs must work).
	for l := 1; l < launches; l++ {
		g.setPhase(phaseRun)
		err = c.Run()
		g.setPhase(phaseIdle)
		if err == nil {
			err = w.env.Stream.Synchronize()
		}
		if why, ok := skipReason(err); ok {
			return runOutcome{skip: why}
		}
		if err != nil {
			return fail(ReasonOfError(err), fmt.Sprintf("run %d of %d on one case", l, launches), err)
		}
		g.setPhase(phasePoison)
		if err := c.Poison(); err != nil {
			return fail(ReasonError, "poison outputs", err)
		}
		g.setPhase(phaseIdle)
	}
	g.setPhase(phaseRun)
	if timed {
		o.ms, err = c.TimedRun(nil, nil)
	} else {
		err = c.Run()
	}
	g.setPhase(phaseIdle)
	if why, ok := skipReason(err); ok {
		return runOutcome{skip: why}
	}
	if err == nil {
		err = w.env.Stream.Synchronize()
	}
	if err == nil {
		err = g.Device.Synchronize()
	}
	if err != nil {
		return fail(ReasonOfError(err), "run", err)
	}

	if v.IsKernel() {
		msg, err := g.checkZones()
		if err != nil {
			return fail(ReasonOfError(err), "reading the red zones", err)
		}
		if msg != "" {
			return runOutcome{reason: ReasonOutOfBounds, msg: "the kernel " + msg +
				" (in grading every buffer has a red zone around it, checked after each run)"}
		}
		msg, err = g.changedInputs(before)
		if err != nil {
			return fail(ReasonOfError(err), "reading the inputs back", err)
		}
		if msg != "" {
			return runOutcome{reason: ReasonInputCorrupted, msg: "the kernel " + msg}
		}
	}
	rep, err := c.Check()
	if err != nil {
		return fail(ReasonOfError(err), "check", err)
	}
	o.rep = &rep
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
