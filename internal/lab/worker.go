package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/nvml"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The engine runs device work in a child process (the same binary, re-executed as a worker) so
// that a kernel that crashes the process, corrupts the context or hangs costs one job, not the
// run. The parent writes a WorkerSpec on the child's stdin; the child writes one JSON Event per
// line on file descriptor 3 (stdout and stderr stay free for kernels' printf and for panics).

// WorkerSpec is everything a worker needs.
type WorkerSpec struct {
	Root         string            `json:"root"`
	Lab          string            `json:"lab"` // folder name
	Backend      string            `json:"backend"`
	Device       int               `json:"device"`
	Seed         uint64            `json:"seed"`
	Quick        bool              `json:"quick"`
	RecordDevice bool              `json:"record_device"`
	Images       map[string]string `json:"images"` // kernel entry key ("file:entry") → compiled image path
	Jobs         []Job             `json:"jobs"`
	Grade        *GradeSpec        `json:"grade,omitempty"` // how jobs with a grading mode run
	// Untrusted lists the images built from a student's code: the backend loads them in
	// isolation (gpu.LoadUntrusted), unless NoSandbox (the instructor's --unsafe-no-sandbox).
	Untrusted []string `json:"untrusted,omitempty"`
	NoSandbox bool     `json:"no_sandbox,omitempty"`
	// Ranks is the world size of a lab of ranks (0: a lab of one process): the worker is one
	// rank process of it (ranks.go), and every job of the worker has this world size. Graph
	// captures the timed runs of a collective in a graph (--graph).
	Ranks int  `json:"ranks,omitempty"`
	Graph bool `json:"graph,omitempty"`
}

// Job is one variant on one problem.
type Job struct {
	Suite   string `json:"suite"`
	Variant string `json:"variant"`
	Problem string `json:"problem"`
	Set     string `json:"set"` // which problem set the problem comes from
	// Grading jobs: Mode is GradeCheck (Rounds checked runs, fresh inputs each) or GradeSpeed
	// (checked runs, the last Reps of them timed); Seed, when not 0, replaces the run's seed (the
	// grader's hidden tests use a seed combined with a secret).
	Mode string `json:"mode,omitempty"`
	Reps int    `json:"reps,omitempty"`
	Seed uint64 `json:"seed,omitempty"`
	// Custom holds a custom problem's parameters ("k=4096,m=4096,n=14336"): such a problem is in
	// no problem set. A string keeps Job comparable (the grader uses jobs as map keys).
	Custom string `json:"custom,omitempty"`
	// Ranks is the world size of a job of a lab of ranks (0: the run's); Launches (grading)
	// runs the variant that many times on one prepared case before the check.
	Ranks    int `json:"ranks,omitempty"`
	Launches int `json:"launches,omitempty"`
}

func (j Job) String() string { return j.Suite + "/" + j.Variant + " " + j.Problem }

// problem finds the job's problem in its suite.
func (j Job) problem(s *Suite) Problem {
	if j.Custom != "" {
		return Problem{Name: j.Problem, Params: decodeParams(j.Custom)}
	}
	probs, _ := s.ProblemsFor(j.Set)
	for _, q := range probs {
		if q.Name == j.Problem {
			return q
		}
	}
	return Problem{Name: j.Problem}
}

// Event is one message from the worker.
type Event struct {
	Type  string         `json:"type"` // "start", "result", "describe", "log", "fatal"
	Job   int            `json:"job"`
	Entry *results.Entry `json:"entry,omitempty"`
	Data  map[string]any `json:"data,omitempty"`
	Msg   string         `json:"msg,omitempty"`
}

// exit codes of a worker
const (
	workerDone   = 0
	workerSticky = 3 // stopped after an error that spoils the context; the parent restarts it
)

// imageKey names a compiled image by what it was built from: the same file and entry built with
// other flags (a debug build that records a timeline) is another image.
func imageKey(file, entry string, flags []string) string {
	return file + ":" + entry + "|" + strings.Join(flags, " ")
}

// WorkerMain runs a worker: it reads the spec from in and writes events to out. It returns the
// process exit code.
func WorkerMain(in io.Reader, out io.Writer) int {
	var spec WorkerSpec
	enc := json.NewEncoder(out)
	emit := func(e Event) {
		if _, err := json.Marshal(e); err != nil && e.Entry != nil {
			// JSON has no NaN or Inf, which a failed check reports (an unwritten output is NaN):
			// record them as 0 rather than lose the result.
			safe := jsonSafeEntry(*e.Entry)
			e.Entry = &safe
		}
		if err := enc.Encode(e); err != nil && e.Type == "result" {
			_ = enc.Encode(Event{Type: "result", Job: e.Job, Entry: &results.Entry{Suite: e.Entry.Suite,
				Variant: e.Entry.Variant, Problem: e.Entry.Problem, Status: results.StatusFailed,
				Error: "the worker could not encode this result: " + err.Error(), Seed: e.Entry.Seed, RunAt: e.Entry.RunAt}})
		}
	}
	if err := json.NewDecoder(in).Decode(&spec); err != nil {
		emit(Event{Type: "fatal", Msg: "reading worker spec: " + err.Error()})
		return 2
	}
	w, err := newWorker(spec, emit)
	if err != nil {
		emit(Event{Type: "fatal", Msg: err.Error()})
		return 2
	}
	defer w.close()
	return w.run()
}

type worker struct {
	spec  WorkerSpec
	man   *Manifest
	drv   Driver
	dev   gpu.Device
	env   *Env
	emit  func(Event)
	flush *gpu.Buffer[uint8]
	mods  []gpu.Module
	hook  JobHook    // runs the jobs with a mode (grading), set when the spec has Grade
	rk    *rankState // a rank process of a lab of ranks (ranks.go)
	// timing is what the timing of the last job adds to its entry's data (a collective's batch).
	timing     map[string]any
	graphNoted bool        // --graph was asked for where the backend cannot capture (said once)
	holds      holds       // the variants whose timed runs cannot be queued behind a hold (hold.go)
	peers      peerServers // the peer scripts kept running across jobs (peer_serve.go)
	// power reads whether the board's power cap held the clocks down while a job was timed
	// (nil where NVML cannot see the device, in grading and in a lab of ranks).
	power *nvml.PowerWatch
}

func newWorker(spec WorkerSpec, emit func(Event)) (*worker, error) {
	man, err := LoadManifest(filepath.Join(spec.Root, "labs", spec.Lab))
	if err != nil {
		return nil, err
	}
	drv, ok := DriverFor(spec.Lab)
	if !ok {
		return nil, fmt.Errorf("lab %s has no Go driver registered (is it imported by cmd/labrun?)", spec.Lab)
	}
	be, _, err := gpu.Open(spec.Backend)
	if err != nil {
		return nil, err
	}
	devIndex, gpus := spec.Device, 0
	if spec.Ranks > 0 {
		if devIndex, gpus, err = rankDevice(be); err != nil {
			return nil, err
		}
	}
	dev, err := be.Open(devIndex)
	if err != nil {
		return nil, err
	}
	if spec.Grade != nil {
		sandbox.AddSecret(GradeSecrets(spec.Root)...)
	}
	w := &worker{spec: spec, man: man, drv: drv, dev: dev, emit: emit}
	kernels, err := w.loadKernels(dev)
	if err != nil {
		dev.Close()
		return nil, err
	}
	stream, err := dev.NewStream()
	if err != nil {
		dev.Close()
		return nil, err
	}
	var envDev gpu.Device = dev
	if spec.Grade != nil {
		// Jobs with a mode run through the grader's hook, which guards the device the driver sees.
		if w.hook = jobHook(); w.hook == nil {
			stream.Close()
			dev.Close()
			return nil, fmt.Errorf("this binary has no grader linked in (internal/grade registers it): it cannot run grading jobs")
		}
		if envDev, err = w.hook.Setup(&w.spec, dev, kernels); err != nil {
			stream.Close()
			dev.Close()
			return nil, err
		}
	}
	w.env = NewEnv(envDev, stream, spec.Seed, kernels, func(f string, a ...any) {
		emit(Event{Type: "log", Msg: fmt.Sprintf(f, a...)})
	})
	w.env.Quick = spec.Quick
	if spec.Ranks > 0 {
		if err := w.joinRanks(gpus); err != nil {
			dev.Close()
			return nil, err
		}
		w.env.rk, w.env.w = w.rk, w
		w.drv = rankDriver{Driver: drv, w: w}
	}
	if spec.Grade == nil && spec.Ranks == 0 {
		w.power = nvml.NewPowerWatch(dev.Info())
	}
	return w, nil
}

// loadKernels loads each compiled image once on dev and looks up the entries the lab names.
func (w *worker) loadKernels(dev gpu.Device) (map[string]gpu.Kernel, error) {
	mods := map[string]gpu.Module{}
	get := func(file, entry string, flags []string) (gpu.Kernel, bool, error) {
		path, ok := w.spec.Images[imageKey(file, entry, flags)]
		if !ok {
			return nil, false, nil // not built for this run (skipped or filtered out)
		}
		m, ok := mods[path]
		if !ok {
			var err error
			load := dev.LoadModule
			if slices.Contains(w.spec.Untrusted, path) && !w.spec.NoSandbox {
				load = func(p string) (gpu.Module, error) { return gpu.LoadUntrusted(dev, p) }
			}
			if m, err = load(path); err != nil {
				return nil, false, fmt.Errorf("loading %s (built from %s): %w", path, file, err)
			}
			mods[path] = m
			w.mods = append(w.mods, m)
		}
		k, err := m.Kernel(entry)
		if err != nil {
			return nil, false, fmt.Errorf("%s has no kernel %q (is it declared extern \"C\" __global__?): %w", file, entry, err)
		}
		return k, true, nil
	}
	kernels := map[string]gpu.Kernel{}
	for _, s := range w.man.Suites {
		for _, v := range s.Variants {
			if !v.IsKernel() {
				continue
			}
			k, ok, err := get(v.File, v.Entry, v.Flags)
			if err != nil {
				return nil, err
			}
			if ok {
				kernels[v.Key()] = k
			}
		}
	}
	for _, h := range w.man.Helpers {
		k, ok, err := get(h.File, h.Entry, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			kernels["helper:"+h.Entry] = k
		}
	}
	return kernels, nil
}

func (w *worker) close() {
	w.peers.closeAll()
	w.power.Close()
	w.env.Close()
	w.flush.Free()
	for _, m := range w.mods {
		m.Close()
	}
	w.rk.close()
	w.dev.Close()
}

func (w *worker) run() int {
	if w.spec.RecordDevice {
		if d, ok := w.drv.(DeviceRecorder); ok {
			data, err := d.RecordDevice(w.env)
			if err != nil {
				w.emit(Event{Type: "log", Msg: "describing the device: " + err.Error()})
			} else {
				w.emit(Event{Type: "describe", Data: data})
			}
		}
	}
	for i, job := range w.spec.Jobs {
		w.emit(Event{Type: "start", Job: i})
		run := w.runJob
		if job.Mode != "" && w.hook != nil {
			run = func(j Job) (results.Entry, error) { return w.hook.RunJob(&HookWorker{w: w}, j) }
		}
		entry, err := run(job)
		if w.rk != nil {
			entry = w.endRankJob(i, entry)
		}
		w.emit(Event{Type: "result", Job: i, Entry: &entry})
		if err != nil && gpu.IsSticky(err) {
			return workerSticky // the context is spoiled: let the parent start a fresh process
		}
	}
	return workerDone
}

// startEntry finds a job's suite, variant and problem and starts its entry (failed until the job
// says otherwise).
func (w *worker) startEntry(job Job) (*Suite, *Variant, Problem, results.Entry) {
	s := w.man.Suite(job.Suite)
	p := job.problem(s)
	e := results.Entry{Suite: job.Suite, Variant: job.Variant, Problem: job.Problem, Params: p.Params,
		Custom: job.Custom != "", Seed: w.spec.Seed, RunAt: time.Now().UTC(), Emulated: w.dev.Info().Emulated,
		Status: results.StatusFailed}
	return s, s.Variant(job.Variant), p, e
}

// noteKernel records the compiled kernel's figures (registers, shared memory) in the entry.
func (w *worker) noteKernel(v *Variant, e *results.Entry) {
	if k, err := w.env.Kernel(v); err == nil {
		if attrs, err := k.Attrs(); err == nil {
			e.Kernel = &attrs
		}
	}
}

// SetRates records the timing of a job's runs in its entry, with the rates derived from the
// median time and the work of one run.
func SetRates(e *results.Entry, work Work, st bench.Stats) {
	e.Time = &st
	e.Ops = work.Ops
	if sec := st.MedianMs / 1e3; sec > 0 {
		if work.FLOPs > 0 {
			e.TFLOPs = work.FLOPs / sec / 1e12
		}
		if work.Bytes > 0 {
			e.GBps = work.Bytes / sec / 1e9
		}
	}
	e.PerOpUs = st.MedianMs * 1e3 / float64(max(work.Ops, 1))
}

// withTiming adds what the timing of a job recorded (timing: nil for nothing) to its entry's data.
func withTiming(data, timing map[string]any) map[string]any {
	if len(timing) == 0 {
		return data
	}
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range timing {
		data[k] = v
	}
	return data
}

// runJob checks and times one variant on one problem. The returned error is only for the
// sticky-context decision; the entry already carries the outcome.
func (w *worker) runJob(job Job) (e results.Entry, err error) {
	s, v, p, e := w.startEntry(job)
	defer func() {
		if r := recover(); r != nil {
			e.Status = results.StatusCrashed
			e.Error = fmt.Sprintf("panic in the lab driver: %v\n%s", r, debug.Stack())
		}
	}()
	fail := func(stage string, err error) (results.Entry, error) {
		e.Error = stage + ": " + err.Error()
		return e, err
	}

	// Each job draws its inputs from its own stream of the seed, so a job's inputs do not depend
	// on which jobs ran before it in this worker.
	w.env.reseed(w.spec.Seed, job)
	if v.IsPeer() {
		return w.runPeer(s, v, p, e), nil
	}
	c, err := w.prepare(s, v, p)
	if why, ok := skipReason(err); ok {
		e.Status, e.Error = results.StatusSkipped, why
		return e, nil
	}
	if err != nil {
		return fail("prepare", err)
	}
	defer func() {
		if rerr := c.Release(); rerr != nil && err == nil && e.Status == results.StatusOK {
			e.Status, e.Error, err = results.StatusFailed, "release: "+rerr.Error(), rerr
		}
	}()
	w.noteKernel(v, &e)

	// Correct first: poison, run once, check.
	rep, _, step, err := c.CheckedRun(nil, 1, false)
	if why, ok := skipReason(err); ok {
		// A variant may refuse a problem it cannot run (a size its tiles do not support).
		e.Status, e.Error = results.StatusSkipped, why
		return e, nil
	}
	if err != nil {
		return fail(step, err)
	}
	e.Check = &rep
	if !rep.OK {
		e.Status = results.StatusWrong
		e.Error = rep.Detail()
		return e, nil
	}

	// Then time it.
	work := c.Case.Work()
	if vw, ok := c.Case.(VariantWorker); ok {
		work = vw.WorkFor(v)
	}
	opts := bench.Default
	if w.spec.Quick {
		opts = bench.Quick
	}
	stats, err := w.time(s, v, c, opts)
	if err != nil {
		return fail("timing", err)
	}
	SetRates(&e, work, stats)
	if r, ok := c.Case.(Recorder); ok {
		data, err := r.Record(v)
		if err != nil {
			return fail("record", err)
		}
		e.Data = data
	}
	if w.rk == nil { // a rank's timing data is merged with the other ranks' (endRankJob)
		e.Data = withTiming(e.Data, w.timing)
		w.timing = nil
	}
	e.Status = results.StatusOK
	return e, nil
}

// timingEvents creates the start and end events of one timing; closeEvents frees both.
func (w *worker) timingEvents() (start, end gpu.Event, closeEvents func(), err error) {
	if start, err = w.dev.NewEvent(); err != nil {
		return nil, nil, nil, err
	}
	if end, err = w.dev.NewEvent(); err != nil {
		start.Close()
		return nil, nil, nil, err
	}
	return start, end, func() { start.Close(); end.Close() }, nil
}

// time measures Runs of v with device events, flushing L2 before each when the suite asks. Each
// run is queued whole behind a hold of the stream before it starts (hold.go), after the device
// has idled for the pacer's gap (pace.go).
func (w *worker) time(s *Suite, v *Variant, c *Trial, o bench.Options) (bench.Stats, error) {
	if w.rk != nil {
		return w.rankTime(v, c, o)
	}
	start, end, closeEvents, err := w.timingEvents()
	if err != nil {
		return bench.Stats{}, err
	}
	defer closeEvents()
	flush, err := w.l2Flush(s)
	if err != nil {
		return bench.Stats{}, err
	}
	w.timing = nil
	pace := newPacer()
	mark := w.power.Mark()
	defer func() {
		if span, ok := w.power.Since(mark); ok {
			w.timing = map[string]any{"power_capped": math.Round(span.CappedShare*1000) / 1000, "sm_clock_mhz": span.SMClockMHz}
		}
	}()
	st, _, err := bench.Measure(o, func() (float64, error) {
		if err := flush(); err != nil {
			return 0, err
		}
		defer pace.ended()
		return c.timedRun(start, end, func(enqueue func() error) error {
			_, err := w.holds.queued(w.env, v, w.env.Stream, enqueue, pace)
			return err
		})
	})
	return st, err
}

// l2Flush returns what empties L2 before a timed run of suite s: nothing when the suite does not
// ask; the device's own flush by reading where it has one (gpu.L2Flusher, which leaves no dirty
// lines for the timed run to write back); else a write of twice the L2's size.
func (w *worker) l2Flush(s *Suite) (func() error, error) {
	if !s.FlushL2 {
		return func() error { return nil }, nil
	}
	if f, ok := gpu.Unwrap(w.dev).(gpu.L2Flusher); ok {
		return func() error { return f.FlushL2(w.env.Stream) }, nil
	}
	if w.flush == nil {
		n := 2 * w.dev.Info().L2Bytes
		if n < 1<<20 {
			n = 1 << 20
		}
		var err error
		if w.flush, err = gpu.Alloc[uint8](w.dev, int(n)); err != nil {
			return nil, fmt.Errorf("allocating the L2 flush buffer: %w", err)
		}
	}
	flips := uint8(0)
	return func() error {
		flips++
		return w.flush.FillBytes(flips, w.env.Stream)
	}, nil
}

// Trial is a case the engine holds for a job: the driver's Case, the variant it runs, and the
// buffers it owns (case.go). Grading (internal/grade) runs its checked runs through it too.
type Trial struct {
	Case    Case
	env     *Env
	dev     gpu.Device
	suite   *Suite
	variant *Variant
}

// prepare has the driver prepare problem p of suite s for variant v, its buffers in a new arena.
func (w *worker) prepare(s *Suite, v *Variant, p Problem) (*Trial, error) {
	return NewTrial(w.env, w.drv, s, v, p)
}

// NewTrial has driver d prepare problem p of suite s for variant v on env, as the engine does;
// on an error nothing of the case is left allocated. Drivers' own tests use it to poison, run,
// check and release a case themselves.
func NewTrial(env *Env, d Driver, s *Suite, v *Variant, p Problem) (t *Trial, err error) {
	env.openCase()
	defer func() {
		if t == nil {
			env.closeCase()
		}
	}()
	c, err := d.Prepare(env, s, p)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%s, problem %q: Prepare returned neither a case nor an error", s.Name, p.Name)
	}
	return &Trial{Case: c, env: env, dev: env.Device, suite: s, variant: v}, nil
}

// Poison refills the case's outputs and scratch buffers (queued on their streams).
func (t *Trial) Poison() error {
	return t.env.arena().poison()
}

// Run launches the variant once.
func (t *Trial) Run() error { return t.Case.Run(t.variant) }

// Check compares the outputs of the last, completed Run with the reference.
func (t *Trial) Check() (check.Report, error) {
	rep, err := t.Case.Check(t.variant, newOutputs(t.env, t.suite.Tolerance))
	if err == nil && rep.Tolerance == 0 {
		rep.Tolerance = t.suite.Tolerance
	}
	return rep, err
}

// Outputs are the raw contents of the case's outputs, in allocation order.
func (t *Trial) Outputs() ([][]byte, error) { return t.env.caseOutputs() }

// Release frees every buffer of the case.
func (t *Trial) Release() error {
	return t.env.closeCase()
}

// Phase is what the host is doing with a case, for a RunGuard.
type Phase int

const (
	PhaseIdle   Phase = iota
	PhasePoison       // the engine is poisoning the outputs and scratch buffers
	PhaseRun          // the driver's Run is launching the variant
)

// A RunGuard watches the checked runs of a JobHook (the grader's red zones and input snapshots).
type RunGuard interface {
	// Phase says what the host is about to do with the case.
	Phase(p Phase)
	// Poisoned is called when the poison is on the device, before the first run.
	Poisoned() error
	// Ran is called when the last run is complete, before the check: an error fails the run.
	Ran() error
}

// CheckedRun is the checked run of every job, normal or graded: poison the outputs, run the
// variant launches times on the case (poisoning again between runs, so that the check sees the
// last), timed between device events when asked, wait for it, and check the outputs. g, when not
// nil, watches it. On an error, step names the step that failed; a refusal (Skip) is an error too.
func (t *Trial) CheckedRun(g RunGuard, launches int, timed bool) (rep check.Report, ms float64, step string, err error) {
	phase := func(p Phase) {
		if g != nil {
			g.Phase(p)
		}
	}
	defer phase(PhaseIdle)
	poison := func() error {
		phase(PhasePoison)
		defer phase(PhaseIdle)
		return t.Poison()
	}
	if err := poison(); err != nil {
		return rep, 0, "poison outputs", err
	}
	if g != nil {
		if err := t.env.Stream.Synchronize(); err != nil {
			return rep, 0, "poison outputs", err
		}
		if err := g.Poisoned(); err != nil {
			return rep, 0, "guard", err
		}
	}
	for l := 1; l < launches; l++ {
		phase(PhaseRun)
		err := t.Run()
		phase(PhaseIdle)
		if err == nil {
			err = t.env.Stream.Synchronize()
		}
		if err != nil {
			return rep, 0, fmt.Sprintf("run %d of %d on one case", l, launches), err
		}
		if err := poison(); err != nil {
			return rep, 0, "poison outputs", err
		}
	}
	phase(PhaseRun)
	if timed {
		ms, err = t.TimedRun(nil, nil)
	} else {
		err = t.Run()
	}
	phase(PhaseIdle)
	if err == nil {
		err = t.env.Stream.Synchronize()
	}
	if err == nil && g != nil {
		err = t.dev.Synchronize() // work a Run left on other streams of the device
	}
	if err != nil {
		return rep, 0, "run", err
	}
	if g != nil {
		if err := g.Ran(); err != nil {
			return rep, 0, "guard", err
		}
	}
	if rep, err = t.Check(); err != nil {
		return rep, 0, "check", err
	}
	return rep, ms, "", nil
}

// TimedRun runs the variant once between two device events (new ones when start is nil) and
// returns the milliseconds between them.
func (t *Trial) TimedRun(start, end gpu.Event) (float64, error) {
	if start == nil || end == nil {
		var err error
		if start, err = t.dev.NewEvent(); err != nil {
			return 0, err
		}
		defer start.Close()
		if end, err = t.dev.NewEvent(); err != nil {
			return 0, err
		}
		defer end.Close()
	}
	return t.timedRun(start, end, func(enqueue func() error) error { return enqueue() })
}

// timedRun queues the start event, the run and the end event through queue (which may hold the
// stream until all three are queued), then waits for the end event.
func (t *Trial) timedRun(start, end gpu.Event, queue func(enqueue func() error) error) (float64, error) {
	err := queue(func() error {
		if err := start.Record(t.env.Stream); err != nil {
			return err
		}
		if err := t.Run(); err != nil {
			return err
		}
		return end.Record(t.env.Stream)
	})
	if err != nil {
		return 0, err
	}
	if err := end.Synchronize(); err != nil {
		return 0, err
	}
	return end.ElapsedMs(start)
}

// RunWorkerFromEnv is the worker's entry point for the CLI: spec on stdin, events on fd 3.
func RunWorkerFromEnv() int {
	out := os.NewFile(3, "events")
	if out == nil {
		fmt.Fprintln(os.Stderr, "labrun worker: file descriptor 3 is not open (the worker is started by labrun itself)")
		return 2
	}
	return WorkerMain(os.Stdin, out)
}

// jsonSafeEntry replaces the non-finite numbers of an entry's check report and data by 0, and
// says so in the report's note; the entry's error text keeps the values as the check saw them.
func jsonSafeEntry(e results.Entry) results.Entry {
	fix := func(x *float64) bool {
		if math.IsNaN(*x) || math.IsInf(*x, 0) {
			*x = 0
			return true
		}
		return false
	}
	if e.Check != nil {
		c := *e.Check
		c.Mismatches = append([]check.Mismatch(nil), c.Mismatches...)
		changed := fix(&c.RelErr)
		changed = fix(&c.MaxAbsErr) || changed
		changed = fix(&c.Tolerance) || changed
		for i := range c.Mismatches {
			changed = fix(&c.Mismatches[i].Got) || changed
			changed = fix(&c.Mismatches[i].Want) || changed
		}
		if changed {
			c.Note = strings.TrimSpace(c.Note + " (NaN and Inf values are recorded as 0 in this report; the error message shows them)")
		}
		e.Check = &c
	}
	for _, p := range []*float64{&e.TFLOPs, &e.GBps, &e.PerOpUs, &e.Speedup} {
		fix(p)
	}
	if e.Data != nil {
		d := make(map[string]any, len(e.Data))
		for k, v := range e.Data {
			if f, ok := v.(float64); ok && fix(&f) {
				v = f
			}
			d[k] = v
		}
		e.Data = d
	}
	return e
}

// skipReason recognises a refusal: a *SkipError, or any error with a SkipReason method.
func skipReason(err error) (string, bool) {
	var skip *SkipError
	if errors.As(err, &skip) {
		return skip.Reason, true
	}
	var r interface{ SkipReason() string }
	if errors.As(err, &r) {
		return r.SkipReason(), true
	}
	return "", false
}
