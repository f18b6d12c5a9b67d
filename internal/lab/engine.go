package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// Options select what a run does.
type Options struct {
	Root     string
	Lab      string   // as typed: "1", "01", "01_device_props"
	Variants []string // only these (empty: all)
	Quick    bool     // the --quick subset and a shorter timing budget
	Backend  string   // "auto", "cuda", "emu"
	Device   int
	Seed     uint64
	SeedSet  bool // Seed was given (0 is a valid seed)
	// Custom replaces the problem sets with one problem built from command-line flags
	// (shape, bytes, param, ...: see custom.go).
	Custom   map[string]string
	Set      string        // problem set: "gpu", "emu", "grade" (default: by backend)
	Timeout  time.Duration // per job; default: the manifest's
	NoSave   bool          // do not write results (tests, dry runs)
	Progress io.Writer     // human progress; nil: discarded
	// Worker starts a worker process. Default: this executable with the argument "__worker".
	Worker func() *exec.Cmd

	// Files builds other sources in place of variants' kernel files: the file as lab.yaml names
	// it (relative to the lab folder, e.g. "exercises/ex1_smem_tiling.cu") → the path of the file
	// to build instead (a student's submission). The original file's folder stays on the include
	// path.
	Files map[string]string
	// Plan, when set, is the exact list of jobs to run (the grader's plan) instead of every
	// selected variant on every problem of the set. Outcome.Planned has one entry per job, in order.
	Plan []Job
	// Grade sets how jobs with a grading mode (Job.Mode) run: fresh inputs for every run, every
	// run checked, NaN red zones around buffers, inputs verified unchanged (see GradeSpec).
	Grade *GradeSpec
	// TotalTimeout bounds the whole run (0: none); jobs not finished by then fail with the reason.
	TotalTimeout time.Duration
}

// Outcome is what a run produced.
type Outcome struct {
	Manifest  *Manifest
	Device    gpu.DeviceInfo
	Results   *results.File // this run's entries and extras (before merging with older results)
	Path      string        // the results file
	SavedTo   string        // where the results were written ("" when not saved)
	Note      string        // the backend choice, when auto fell back
	Seed      uint64
	Failures  int // entries that are wrong, failed, crashed or timed out
	SaveError error
	// Planned holds one entry per job of Options.Plan, in the plan's order.
	Planned []results.Entry
}

// EnvError is a missing piece of the environment (no GPU, no driver, no compiler).
type EnvError struct{ Err error }

func (e *EnvError) Error() string { return e.Err.Error() }
func (e *EnvError) Unwrap() error { return e.Err }

// SecretSeedEnv names the environment variable with the grader's secret seed. The engine never
// passes it to a worker process: the code under test must not be able to read it back.
const SecretSeedEnv = "LABRUN_SECRET_SEED"

// TotalTimeError is the cause of a run stopped by Options.TotalTimeout.
type TotalTimeError struct{ Limit time.Duration }

func (e *TotalTimeError) Error() string {
	return fmt.Sprintf("the total time limit of %s was reached", e.Limit)
}

// stopReason says why ctx ended: the total time limit, or an interrupt.
func stopReason(ctx context.Context) (string, bool) {
	var te *TotalTimeError
	if errors.As(context.Cause(ctx), &te) {
		return te.Error(), true
	}
	return "interrupted", false
}

// UsageError is a bad request (unknown variant, problem set...).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Run builds, checks, times and records one lab.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	man, err := Load(o.Root, o.Lab)
	if err != nil {
		return nil, err
	}
	if err := checkVariantNames(man, o.Variants); err != nil {
		return nil, err
	}
	var custom map[string]Problem
	if len(o.Custom) > 0 {
		d := driverOf(man)
		if d == nil {
			return nil, &UsageError{fmt.Sprintf("lab %s has no Go driver registered", man.Name)}
		}
		if custom, err = customProblems(man, d, o.Custom); err != nil {
			return nil, err
		}
	}
	if err := checkPlan(man, o.Plan); err != nil {
		return nil, err
	}
	if o.TotalTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.TotalTimeout, &TotalTimeError{Limit: o.TotalTimeout})
		defer cancel()
	}
	be, note, err := gpu.Open(o.Backend)
	if err != nil {
		return nil, &EnvError{fmt.Errorf("%w\n(without a GPU, run on the CPU emulator: --backend emu)", err)}
	}
	if note != "" {
		fmt.Fprintln(o.Progress, note)
	}
	n, err := be.DeviceCount()
	if err != nil {
		return nil, &EnvError{err}
	}
	if o.Device < 0 || o.Device >= n {
		return nil, &UsageError{fmt.Sprintf("--device %d: the %s backend has %d device(s) (0..%d)", o.Device, be.Name(), n, n-1)}
	}
	info, err := be.Describe(o.Device)
	if err != nil {
		return nil, &EnvError{err}
	}
	set := o.Set
	if set == "" {
		set = "gpu"
		if info.Emulated {
			set = "emu"
		}
	}
	if !o.SeedSet {
		o.Seed = rand.Uint64() >> 16 // short enough to retype
	}
	fmt.Fprintf(o.Progress, "lab %s — %s on %s (%s, %s), problem set %s, seed %d (repeat with --seed %d)\n",
		man.Name, man.Title.EN, info.Name, be.Name(), info.Arch(), set, o.Seed, o.Seed)

	r := &runner{o: o, man: man, be: be, info: info, set: set, custom: custom, compileErr: map[*Variant]string{},
		available: n - o.Device}
	file := &results.File{Lab: man.Name, Device: info, Time: time.Now().UTC(), Commit: gitCommit(o.Root),
		Command: strings.Join(append([]string{"labrun"}, os.Args[1:]...), " ")}
	images, entries, tc := r.build(ctx)
	file.Toolchain = tc
	var planned []results.Entry
	var extra map[string]any
	if len(o.Plan) > 0 {
		planned = r.runPlan(ctx, images)
		entries = append([]results.Entry(nil), planned...)
	} else {
		jobs, skipped := r.jobs(images)
		entries = append(entries, skipped...)
		var ran []results.Entry
		ran, extra = r.supervise(ctx, jobs, images)
		entries = append(entries, ran...)
	}
	addSpeedups(man, entries)
	file.Entries = sortEntries(man, entries)
	file.Extra = extra
	if s, ok := driverOf(man).(Summarizer); ok {
		if sum, err := s.Summarize(info, views(file.Entries)); err != nil {
			fmt.Fprintf(o.Progress, "summary: %v\n", err)
		} else {
			if file.Extra == nil {
				file.Extra = map[string]any{}
			}
			for k, v := range sum {
				file.Extra[k] = v
			}
		}
	}
	out := &Outcome{Manifest: man, Device: info, Results: file, Note: note, Seed: o.Seed,
		Path: results.PathFor(o.Root, info, man.Name), Planned: planned}
	for _, e := range file.Entries {
		if e.Status != results.StatusOK && e.Status != results.StatusSkipped {
			out.Failures++
		}
	}
	if ctx.Err() == nil && !o.NoSave {
		out.SavedTo, out.SaveError = save(out.Path, file, man)
	}
	return out, nil
}

func driverOf(m *Manifest) Driver {
	d, _ := DriverFor(m.Name)
	return d
}

func checkVariantNames(m *Manifest, names []string) error {
	var all []string
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			all = append(all, v.Name)
		}
	}
	for _, n := range names {
		found := false
		for _, a := range all {
			found = found || a == n
		}
		if !found {
			return &UsageError{fmt.Sprintf("lab %s has no variant %q; its variants are: %s", m.Name, n, strings.Join(all, ", "))}
		}
	}
	return nil
}

// save merges with the existing file and writes atomically. A corrupt existing file is left
// alone and this run's results go to a file beside it, so nothing measured is lost.
func save(path string, f *results.File, m *Manifest) (string, error) {
	old, err := results.Load(path)
	var ce *results.CorruptError
	if errors.As(err, &ce) {
		side := strings.TrimSuffix(path, ".json") + ".new-" + time.Now().UTC().Format("20060102T150405") + ".json"
		if serr := results.Save(side, f); serr != nil {
			return "", fmt.Errorf("%v; saving this run's results to %s also failed: %v", err, side, serr)
		}
		return side, fmt.Errorf("%v\nthis run's results were saved to %s", err, side)
	}
	if err != nil {
		return "", err
	}
	if old != nil && (old.Device.Name != f.Device.Name || old.Device.Backend != f.Device.Backend) {
		old = nil // a different device under the same folder name: start afresh
	}
	if old != nil {
		old.Entries = current(m, old.Entries)
	}
	return path, results.Save(path, results.Merge(old, f))
}

type runner struct {
	o    Options
	man  *Manifest
	be   gpu.Backend
	info gpu.DeviceInfo
	set  string

	compileErr map[*Variant]string // variants whose kernel file did not compile
	custom     map[string]Problem  // by suite, when the run is of a custom problem
	available  int                 // devices from o.Device on (a lab may need several)
}

func (r *runner) selected(v *Variant) bool {
	if len(r.o.Plan) > 0 {
		for _, j := range r.o.Plan {
			if j.Suite == v.Suite.Name && j.Variant == v.Name {
				return true
			}
		}
		return false
	}
	if len(r.o.Variants) == 0 {
		return true
	}
	for _, n := range r.o.Variants {
		if n == v.Name {
			return true
		}
	}
	return false
}

// skipReason says why a variant cannot run on this backend and device ("" when it can).
func (r *runner) skipReason(needs []string, emuSkip string) string {
	if r.info.Emulated && emuSkip != "" {
		return "not on the emulator: " + emuSkip
	}
	if r.man != nil && r.available > 0 && r.man.DeviceCount() > r.available {
		return fmt.Sprintf("needs %d devices at once; the %s backend has %d from device %d (the emulator: --emu-devices %d)",
			r.man.DeviceCount(), r.be.Name(), r.available, r.o.Device, r.man.DeviceCount())
	}
	for _, n := range needs {
		switch {
		case n == "gpu" && r.info.Emulated:
			return "needs a GPU (the emulator runs plain CUDA only)"
		case n == "cublas" && r.info.Emulated:
			return "needs cuBLAS, which exists on NVIDIA GPUs only"
		case n == "sm_90a":
			if r.info.ComputeMajor != 9 || r.info.ComputeMinor != 0 {
				return fmt.Sprintf("needs sm_90a (Hopper: wgmma, TMA); this device is %s", r.info.Arch())
			}
		case strings.HasPrefix(n, "sm_"):
			var maj, min int
			if _, err := fmt.Sscanf(n, "sm_%1d%1d", &maj, &min); err == nil && !r.info.Emulated &&
				r.info.ComputeMajor*10+r.info.ComputeMinor < maj*10+min {
				return fmt.Sprintf("needs %s or newer; this device is %s", n, r.info.Arch())
			}
		}
	}
	return ""
}

// archFor picks the compile target: sm_90a when the variant uses Hopper-only instructions.
func (r *runner) archFor(needs []string) string {
	for _, n := range needs {
		if n == "sm_90a" {
			return "sm_90a"
		}
	}
	return r.info.Arch()
}

// buildItem is one compile: a kernel file with its flags and target, and the entries (variants
// and helpers) that use the image.
type buildItem struct {
	file     string
	arch     string
	flags    []string
	entries  []string
	variants []*Variant // variants that fail when the file does not compile
}

// build compiles every kernel file the run needs, once per file, flags and target, in parallel.
// It returns the images by "file:entry" and failed entries for variants whose kernel did not
// compile.
func (r *runner) build(ctx context.Context) (map[string]string, []results.Entry, results.Toolchain) {
	byKey := map[string]*buildItem{}
	var items []*buildItem
	add := func(file, entry string, needs, flags []string, v *Variant) {
		arch := r.archFor(needs)
		key := file + "|" + arch + "|" + strings.Join(flags, " ")
		it, ok := byKey[key]
		if !ok {
			it = &buildItem{file: file, arch: arch, flags: flags}
			byKey[key] = it
			items = append(items, it)
		}
		it.entries = append(it.entries, entry)
		if v != nil {
			it.variants = append(it.variants, v)
		}
	}
	for _, s := range r.man.Suites {
		for _, v := range s.Variants {
			if v.IsKernel() && r.selected(v) && r.skipReason(v.Needs, v.EmuSkip) == "" {
				add(v.File, v.Entry, v.Needs, v.Flags, v)
			}
		}
	}
	for _, h := range r.man.Helpers {
		if r.skipReason(nil, h.EmuSkip) == "" {
			add(h.File, h.Entry, nil, nil, nil)
		}
	}
	tc := results.Toolchain{Compiler: r.be.Toolchain(), Arch: r.info.Arch()}
	images := map[string]string{}
	var failed []results.Entry
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	started := time.Now()
	for _, it := range items {
		wg.Add(1)
		go func(it *buildItem) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			req := toolchain.Request{
				Source:      filepath.Join(r.man.Dir, it.file),
				IncludeDirs: []string{filepath.Join(r.o.Root, "labs", "common"), r.man.Dir},
				Arch:        it.arch,
				Flags:       it.flags,
			}
			if sub, ok := r.o.Files[it.file]; ok {
				// A submission: its own folder comes first (-iquote), the original's stays reachable.
				req.Source = sub
				req.IncludeDirs = append(req.IncludeDirs, filepath.Dir(filepath.Join(r.man.Dir, it.file)))
			}
			art, err := toolchain.Build(ctx, r.be.Toolchain(), req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Fprintf(r.o.Progress, "build %s: %v\n", it.file, err)
				for _, v := range it.variants {
					failed = append(failed, r.failAll(v, "compile: "+err.Error())...)
					r.compileErr[v] = "compile: " + err.Error()
				}
				return
			}
			for _, e := range it.entries {
				images[imageKey(it.file, e, it.flags)] = art.Path
			}
		}(it)
	}
	wg.Wait()
	if len(items) > 0 {
		fmt.Fprintf(r.o.Progress, "built %d kernel file(s) in %.1fs\n", len(items), time.Since(started).Seconds())
	}
	if v, err := toolchain.Version(r.be.Toolchain()); err == nil {
		tc.Version = v
	}
	return images, failed, tc
}

func (r *runner) problems(s *Suite) []Problem {
	if r.custom != nil {
		if p, ok := r.custom[s.Name]; ok {
			return []Problem{p}
		}
		return nil
	}
	ps, _ := s.ProblemsFor(r.set)
	if !r.o.Quick {
		return ps
	}
	var q []Problem
	for _, p := range ps {
		if p.Quick {
			q = append(q, p)
		}
	}
	if len(q) == 0 && len(ps) > 0 {
		q = ps[:1]
	}
	return q
}

func (r *runner) failAll(v *Variant, msg string) []results.Entry {
	var es []results.Entry
	for _, p := range r.problems(v.Suite) {
		es = append(es, results.Entry{Suite: v.Suite.Name, Variant: v.Name, Problem: p.Name, Params: p.Params,
			Status: results.StatusFailed, Error: msg, Seed: r.o.Seed, RunAt: time.Now().UTC(), Emulated: r.info.Emulated,
			Custom: r.custom != nil})
	}
	return es
}

// jobs lists the variant × problem pairs to run, problem by problem so that a variant and its
// baseline run close together in time; skipped variants become skipped entries.
func (r *runner) jobs(images map[string]string) ([]Job, []results.Entry) {
	var jobs []Job
	var skipped []results.Entry
	for _, s := range r.man.Suites {
		for _, v := range s.Variants {
			if !r.selected(v) {
				continue
			}
			if why := r.skipReason(v.Needs, v.EmuSkip); why != "" {
				for _, e := range r.failAll(v, why) {
					e.Status = results.StatusSkipped
					skipped = append(skipped, e)
				}
				fmt.Fprintf(r.o.Progress, "skip %s/%s: %s\n", s.Name, v.Name, why)
			}
		}
		for _, p := range r.problems(s) {
			for _, v := range s.Variants {
				if !r.selected(v) || r.skipReason(v.Needs, v.EmuSkip) != "" {
					continue
				}
				if _, built := images[imageKey(v.File, v.Entry, v.Flags)]; v.IsKernel() && !built {
					continue // its compile error is already recorded
				}
				j := Job{Suite: s.Name, Variant: v.Name, Problem: p.Name, Set: r.set}
				if r.custom != nil {
					j.Custom = encodeParams(p.Params) // in no problem set: the parameters travel with the job
				}
				jobs = append(jobs, j)
			}
		}
	}
	return jobs, skipped
}

// supervise runs jobs in worker processes, restarting a worker after a crash, a hang or an
// error that spoils the context, and returns one entry per job.
func (r *runner) supervise(ctx context.Context, jobs []Job, images map[string]string) ([]results.Entry, map[string]any) {
	timeout := r.man.Timeout
	if r.o.Timeout > 0 {
		timeout = r.o.Timeout
	}
	done := make([]*results.Entry, len(jobs))
	var extra map[string]any
	_, wantDescribe := driverOf(r.man).(Describer)
	wantDescribe = wantDescribe && len(r.o.Plan) == 0 // grading does not describe the device
	next := 0
	for next < len(jobs) && ctx.Err() == nil {
		spec := WorkerSpec{Root: r.o.Root, Lab: r.man.Name, Backend: r.be.Name(), Device: r.o.Device,
			Seed: r.o.Seed, Quick: r.o.Quick, Describe: wantDescribe && extra == nil, Images: images, Jobs: jobs[next:],
			Grade: r.o.Grade}
		res := r.runWorker(ctx, spec, timeout, len(jobs), next)
		for i, e := range res.entries {
			done[next+i] = e
		}
		if res.describe != nil {
			extra = res.describe
		}
		wantDescribe = false
		finished := len(res.entries)
		if finished < len(spec.Jobs) && res.failure != "" {
			// The job in flight when the worker died takes the blame.
			j := spec.Jobs[finished]
			status := results.StatusCrashed
			if res.timedOut {
				status = results.StatusTimeout
			}
			if res.fatal != "" && !res.started {
				// The worker could not start at all: every remaining job fails the same way.
				for i := finished; i < len(spec.Jobs); i++ {
					done[next+i] = r.lostEntry(spec.Jobs[i], results.StatusFailed, res.failure)
				}
				break
			}
			done[next+finished] = r.lostEntry(j, status, res.failure)
			r.report(next+finished, len(jobs), done[next+finished])
			finished++
		}
		if finished == 0 && ctx.Err() == nil {
			break // no progress: do not loop forever
		}
		next += finished
	}
	var out []results.Entry
	for i, e := range done {
		if e == nil {
			reason := "not run: the worker stopped before reaching it"
			status := results.StatusFailed
			if ctx.Err() != nil {
				why, total := stopReason(ctx)
				reason = "not run: " + why
				if why == "interrupted" {
					reason = "not run: the run was interrupted"
				}
				if total {
					status = results.StatusTimeout
				}
			}
			e = r.lostEntry(jobs[i], status, reason)
		}
		out = append(out, *e)
	}
	return out, extra
}

func (r *runner) lostEntry(j Job, status, reason string) *results.Entry {
	p := j.problem(r.man.Suite(j.Suite))
	return &results.Entry{Suite: j.Suite, Variant: j.Variant, Problem: j.Problem, Params: p.Params, Status: status,
		Error: reason, Seed: r.o.Seed, RunAt: time.Now().UTC(), Emulated: r.info.Emulated, Custom: j.Custom != ""}
}

type workerResult struct {
	entries  []*results.Entry
	describe map[string]any
	failure  string // why the worker stopped early ("" when it finished its jobs)
	fatal    string
	started  bool // at least one job started
	timedOut bool
}

// tail keeps the first and the last bytes written to it, for crash reports: a Go crash report
// names the signal at its start and can run on for pages of goroutine dumps.
type tail struct {
	mu   sync.Mutex
	head []byte
	buf  []byte
	w    io.Writer
}

const keepBytes = 8192

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	if room := keepBytes - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > keepBytes {
		t.buf = t.buf[len(t.buf)-keepBytes:]
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.head) < keepBytes {
		return strings.TrimSpace(string(t.head)) // everything fitted in the head
	}
	return strings.TrimSpace(string(t.head) + "\n…\n" + string(t.buf))
}

func (r *runner) workerCmd() *exec.Cmd {
	if r.o.Worker != nil {
		return r.o.Worker()
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, "__worker")
}

func (r *runner) runWorker(ctx context.Context, spec WorkerSpec, timeout time.Duration, total, offset int) workerResult {
	var res workerResult
	cmd := r.workerCmd()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so a kill reaches its children too
	out := &tail{w: prefixWriter(r.o.Progress, "  | ")}
	cmd.Stdout, cmd.Stderr = out, out
	specJSON, _ := json.Marshal(spec)
	cmd.Stdin = strings.NewReader(string(specJSON))
	cmd.Env = withoutEnv(cmd.Env, SecretSeedEnv)
	pr, pw, err := os.Pipe()
	if err != nil {
		res.failure, res.fatal = "creating the worker pipe: "+err.Error(), "pipe"
		return res
	}
	cmd.ExtraFiles = []*os.File{pw}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		res.failure, res.fatal = "starting the worker: "+err.Error(), "start"
		return res
	}
	pw.Close()
	events := make(chan Event)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
	}()
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The worker gets a minute to start (load modules, open libraries) before its first job.
	timer := time.NewTimer(timeout + time.Minute)
	defer timer.Stop()
	current := -1
loop:
	for {
		select {
		case e, ok := <-events:
			if !ok {
				break loop
			}
			switch e.Type {
			case "start":
				current, res.started = e.Job, true
				timer.Reset(timeout)
			case "result":
				res.entries = append(res.entries, e.Entry)
				r.report(offset+e.Job, total, e.Entry)
				current = -1
			case "describe":
				res.describe = e.Data
			case "log":
				fmt.Fprintln(r.o.Progress, "  "+e.Msg)
			case "fatal":
				res.fatal = e.Msg
			}
		case <-timer.C:
			what := "starting the worker"
			if current >= 0 {
				what = spec.Jobs[current].String()
			}
			res.timedOut = true
			res.failure = fmt.Sprintf("timed out after %s in %s (a kernel that never finishes? a deadlock between blocks?); the worker was killed", timeout, what)
			kill()
		case <-ctx.Done():
			res.failure, res.timedOut = stopReason(ctx)
			kill()
		}
	}
	err = cmd.Wait()
	pr.Close()
	if res.failure == "" && len(res.entries) < len(spec.Jobs) {
		if cmd.ProcessState.ExitCode() == workerSticky && current < 0 {
			return res // it stopped on purpose after a sticky error; the parent restarts it
		}
		switch {
		case res.fatal != "":
			res.failure = res.fatal
		case err != nil:
			res.failure = describeExit(err, out.String())
		default:
			res.failure = "the worker exited early"
		}
		if t := crashExcerpt(out.String()); t != "" {
			res.failure += "\nlast output of the worker:\n" + t
		}
	}
	return res
}

// withoutEnv returns env (the process's environment when nil) without the variable name.
func withoutEnv(env []string, name string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// checkPlan validates a plan's jobs against the manifest.
func checkPlan(m *Manifest, plan []Job) error {
	for _, j := range plan {
		s := m.Suite(j.Suite)
		if s == nil {
			return &UsageError{fmt.Sprintf("lab %s has no suite %q", m.Name, j.Suite)}
		}
		if s.Variant(j.Variant) == nil {
			return &UsageError{fmt.Sprintf("suite %s of lab %s has no variant %q", j.Suite, m.Name, j.Variant)}
		}
		ps, err := s.ProblemsFor(j.Set)
		if err != nil {
			return &UsageError{err.Error()}
		}
		found := j.Custom != "" // a custom problem is in no set
		for _, p := range ps {
			found = found || p.Name == j.Problem
		}
		if !found {
			return &UsageError{fmt.Sprintf("suite %s has no problem %q in its %s set", j.Suite, j.Problem, j.Set)}
		}
		if j.Mode != "" && j.Mode != GradeCheck && j.Mode != GradeSpeed {
			return &UsageError{fmt.Sprintf("job %s: unknown mode %q", j, j.Mode)}
		}
	}
	return nil
}

// runPlan runs Options.Plan and returns one entry per job, in order: variants that cannot run
// here are skipped with the reason, those whose kernel did not compile fail with the compiler's
// message, the rest run in worker processes.
func (r *runner) runPlan(ctx context.Context, images map[string]string) []results.Entry {
	out := make([]results.Entry, len(r.o.Plan))
	var jobs []Job
	var at []int
	for i, j := range r.o.Plan {
		v := r.man.Suite(j.Suite).Variant(j.Variant)
		if why := r.skipReason(v.Needs, v.EmuSkip); why != "" {
			out[i] = *r.lostEntry(j, results.StatusSkipped, why)
			continue
		}
		if msg, bad := r.compileErr[v]; bad {
			out[i] = *r.lostEntry(j, results.StatusFailed, msg)
			continue
		}
		if _, built := images[imageKey(v.File, v.Entry, v.Flags)]; v.IsKernel() && !built {
			out[i] = *r.lostEntry(j, results.StatusFailed, "the kernel was not built")
			continue
		}
		jobs = append(jobs, j)
		at = append(at, i)
	}
	ran, _ := r.supervise(ctx, jobs, images)
	for k, e := range ran {
		out[at[k]] = e
	}
	return out
}

// crashExcerpt keeps the informative start of a Go crash report (the signal and the first
// frames) rather than its goroutine dump, or else the last lines of the output.
func crashExcerpt(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "SIGSEGV") || strings.Contains(l, "SIGBUS") || strings.HasPrefix(strings.TrimLeft(l, "| "), "panic:") ||
			strings.HasPrefix(strings.TrimLeft(l, "| "), "fatal error:") || strings.Contains(l, "signal arrived during cgo") {
			end := min(i+12, len(lines))
			return strings.Join(lines[i:end], "\n")
		}
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

func describeExit(err error, output string) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("the worker process was killed by signal %s (a crash in kernel or driver code)", ws.Signal())
		}
		// Go's runtime turns a fault into exit status 2 with a report that names the signal.
		for _, sig := range []string{"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"} {
			if strings.Contains(output, sig) {
				return fmt.Sprintf("the worker process crashed with signal %s (a crash in kernel or driver code)", sig)
			}
		}
		if ee.ExitCode() == workerSticky {
			return "the device context was spoiled by an earlier error"
		}
		return fmt.Sprintf("the worker process exited with status %d", ee.ExitCode())
	}
	return "the worker failed: " + err.Error()
}

// report prints one progress line for a finished job.
func (r *runner) report(i, total int, e *results.Entry) {
	fmt.Fprintf(r.o.Progress, "[%d/%d] %s/%s %s: %s\n", i+1, total, e.Suite, e.Variant, e.Problem, Summary(e))
}

// Summary is a one-line description of an entry's outcome.
func Summary(e *results.Entry) string {
	switch e.Status {
	case results.StatusOK:
		s := fmt.Sprintf("ok %s", Rate(e))
		if e.Emulated {
			s += " (emulated, not a performance figure)"
		}
		return s
	case results.StatusWrong:
		return "WRONG " + firstLine(e.Error)
	case results.StatusSkipped:
		return "skipped: " + e.Error
	default:
		return strings.ToUpper(e.Status) + ": " + firstLine(e.Error)
	}
}

// Rate formats an entry's headline figures.
func Rate(e *results.Entry) string {
	if e.Time == nil {
		return ""
	}
	parts := []string{}
	if e.TFLOPs > 0 {
		parts = append(parts, fmt.Sprintf("%.2f TFLOP/s", e.TFLOPs))
	}
	if e.GBps > 0 {
		parts = append(parts, fmt.Sprintf("%.1f GB/s", e.GBps))
	}
	if e.Ops > 1 {
		parts = append(parts, fmt.Sprintf("%.2f µs/op", e.PerOpUs))
	} else {
		parts = append(parts, fmt.Sprintf("%.3f ms [%.3f–%.3f]", e.Time.MedianMs, e.Time.MinMs, e.Time.MaxMs))
	}
	if e.Speedup > 0 {
		parts = append(parts, fmt.Sprintf("%.2f× %s", e.Speedup, e.Baseline))
	}
	return strings.Join(parts, "  ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func prefixWriter(w io.Writer, prefix string) io.Writer {
	return &linePrefixer{w: w, prefix: prefix, atStart: true}
}

type linePrefixer struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	atStart bool
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sb strings.Builder
	for _, c := range string(b) {
		if p.atStart {
			sb.WriteString(p.prefix)
			p.atStart = false
		}
		sb.WriteRune(c)
		if c == '\n' {
			p.atStart = true
		}
	}
	_, err := io.WriteString(p.w, sb.String())
	return len(b), err
}

// current keeps the entries whose suite, variant and problem the manifest still has: a variant or
// problem removed from lab.yaml leaves the results with the next run.
func current(m *Manifest, es []results.Entry) []results.Entry {
	var keep []results.Entry
	for _, e := range es {
		if e.Custom {
			keep = append(keep, e) // an engineer's own problem: kept until they delete it
			continue
		}
		s := m.Suite(e.Suite)
		if s == nil || s.Variant(e.Variant) == nil {
			continue
		}
		found := false
		for _, set := range [][]Problem{s.Problems.GPU, s.Problems.Emu, s.Problems.Grade} {
			for _, p := range set {
				found = found || p.Name == e.Problem
			}
		}
		if found {
			keep = append(keep, e)
		}
	}
	return keep
}

// addSpeedups sets each entry's speedup over its suite's baseline on the same problem, measured
// in the same run.
func addSpeedups(m *Manifest, entries []results.Entry) {
	base := map[string]*results.Entry{}
	for i := range entries {
		e := &entries[i]
		if s := m.Suite(e.Suite); s != nil && s.Baseline == e.Variant && e.OK() {
			base[e.Suite+"/"+e.Problem] = e
		}
	}
	for i := range entries {
		e := &entries[i]
		s := m.Suite(e.Suite)
		b := base[e.Suite+"/"+e.Problem]
		if s == nil || b == nil || !e.OK() || e.Variant == s.Baseline || e.PerOpUs <= 0 {
			continue
		}
		e.Baseline = b.Variant
		e.Speedup = b.PerOpUs / e.PerOpUs
	}
}

// sortEntries orders entries as the manifest does: suite, then problem, then variant.
func sortEntries(m *Manifest, es []results.Entry) []results.Entry {
	rank := map[string]int{}
	n := 0
	for _, s := range m.Suites {
		for _, set := range [][]Problem{s.Problems.GPU, s.Problems.Emu, s.Problems.Grade} {
			for _, p := range set {
				if _, ok := rank["p:"+s.Name+"/"+p.Name]; !ok {
					rank["p:"+s.Name+"/"+p.Name] = n
					n++
				}
			}
		}
		for _, v := range s.Variants {
			rank["v:"+s.Name+"/"+v.Name] = n
			n++
		}
		rank["s:"+s.Name] = n
		n++
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Suite != b.Suite {
			return rank["s:"+a.Suite] < rank["s:"+b.Suite]
		}
		if a.Problem != b.Problem {
			return rank["p:"+a.Suite+"/"+a.Problem] < rank["p:"+b.Suite+"/"+b.Problem]
		}
		return rank["v:"+a.Suite+"/"+a.Variant] < rank["v:"+b.Suite+"/"+b.Variant]
	})
	return es
}

func views(es []results.Entry) []EntryView {
	vs := make([]EntryView, 0, len(es))
	for _, e := range es {
		v := EntryView{Suite: e.Suite, Variant: e.Variant, Problem: e.Problem, Params: e.Params, OK: e.OK(),
			TFLOPs: e.TFLOPs, GBps: e.GBps, PerOpUs: e.PerOpUs}
		if e.Time != nil {
			v.MedianMs = e.Time.MedianMs
		}
		vs = append(vs, v)
	}
	return vs
}

// gitCommit reads HEAD without running git (it may not be installed where the lab runs). A copy
// of the tree without .git (a GPU machine) can name its commit in $LABRUN_COMMIT.
func gitCommit(root string) string {
	if c := os.Getenv("LABRUN_COMMIT"); c != "" {
		return c
	}
	head, err := os.ReadFile(filepath.Join(root, ".git", "HEAD"))
	if err != nil {
		return ""
	}
	ref := strings.TrimSpace(string(head))
	if !strings.HasPrefix(ref, "ref: ") {
		return ref
	}
	name := strings.TrimPrefix(ref, "ref: ")
	if b, err := os.ReadFile(filepath.Join(root, ".git", name)); err == nil {
		return strings.TrimSpace(string(b))
	}
	if packed, err := os.ReadFile(filepath.Join(root, ".git", "packed-refs")); err == nil {
		for _, l := range strings.Split(string(packed), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[1] == name {
				return f[0]
			}
		}
	}
	return ""
}
