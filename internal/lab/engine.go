package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/term"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// Options select what a run does.
type Options struct {
	Root     string
	Lab      string   // as typed: "1", "01", "01_device_props"
	Variants []string // only these (empty: all)
	// Suites runs only the variants of these suites (empty: all); a variant can be in several.
	Suites []string
	// Problems runs only the problems of these names (empty: all of the set, or its --quick
	// subset); a name no selected suite has is a usage error.
	Problems []string
	Quick    bool   // the --quick subset and a shorter timing budget
	Backend  string // "auto", "cuda", "emu"
	Device   int
	Seed     uint64
	SeedSet  bool // Seed was given (0 is a valid seed)
	// Custom replaces the problem sets with one problem built from command-line flags
	// (shape, bytes, param, ...: see custom.go).
	Custom  map[string]string
	Set     string        // problem set: "gpu", "emu", "grade" (default: by backend)
	Timeout time.Duration // per job; default: the manifest's
	NoSave  bool          // do not write results (tests, dry runs)
	// Record writes an emulator run into the tracked results/emulator/ (what the course shows).
	// Without it an emulator run goes to results/local/emulator/, which git ignores, so a
	// student's run leaves the clone clean. GPU runs are always recorded.
	Record   bool
	Progress io.Writer // human progress; nil: discarded
	// Worker starts a worker process. Default: this executable with the argument WorkerArg.
	Worker func() *exec.Cmd
	// InProcess runs the jobs in this process instead of worker processes, for profilers (ncu,
	// nsys, compute-sanitizer) that do not follow labrun's workers: no time limit, and a crash
	// or a spoiled context ends the run. Not for grading.
	InProcess bool

	// Files builds other sources in place of variants' kernel files: the file as lab.yaml names
	// it (relative to the lab folder, e.g. "exercises/ex1_smem_tiling.cu") → the path of the file
	// to build instead (a student's submission). Such files are built hermetically, as
	// Submission says (toolchain.Submission; nil: the course tree at Root protected, no
	// device-code check).
	Files      map[string]string
	Submission *toolchain.Submission
	// Plan, when set, is the exact list of jobs to run (the grader's plan) instead of every
	// selected variant on every problem of the set. Outcome.Planned has one entry per job, in order.
	Plan []Job
	// Grade sets how jobs with a grading mode (Job.Mode) run: fresh inputs for every run, every
	// run checked, NaN red zones around buffers, inputs verified unchanged (see GradeSpec).
	Grade *GradeSpec
	// TotalTimeout bounds the whole run (0: none); jobs not finished by then fail with the reason.
	TotalTimeout time.Duration
	// UnsafeNoSandbox loads graded kernel files like the course's own, in the worker, instead of
	// in a sandboxed process: for kernels without Landlock or seccomp, when the instructor
	// accepts that a submission could then forge its grade.
	UnsafeNoSandbox bool
	// Ranks is the world size of a lab of ranks (lab.yaml ranks:; 0: the GPUs of the machine, or
	// the emulator's default), one process per rank. Graph captures a collective's timed runs in
	// a graph where the backend can.
	Ranks int
	Graph bool
}

// Outcome is what a run produced.
type Outcome struct {
	Manifest   *Manifest
	Device     gpu.DeviceInfo
	Results    *results.File // this run's entries and extras (before merging with older results)
	Path       string        // the results file: results/<device>/, or results/local/ for an unrecorded emulator run
	Local      bool          // Path is under results/local/ (not tracked, not on the site)
	SavedTo    string        // where the results were written ("" when not saved)
	Unfinished int           // jobs an interrupted run did not finish (not saved, not failures)
	Note       string        // the backend choice, when auto fell back
	Seed       uint64
	Failures   int // entries that are wrong, failed, crashed or timed out
	SaveError  error
	// Planned holds one entry per job of Options.Plan, in the plan's order.
	Planned []results.Entry

	unfinished map[string]bool // by entryKey: the jobs counted in Unfinished
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

// Finished reports whether e is a result: false for a job that an interrupted run did not finish
// (its entry says so; it is not saved, and it is no failure of its variant).
func (o *Outcome) Finished(e *results.Entry) bool { return !o.unfinished[entryKey(e)] }

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
	for _, s := range o.Suites {
		if man.Suite(s) == nil {
			var names []string
			for _, x := range man.Suites {
				names = append(names, x.Name)
			}
			return nil, &UsageError{fmt.Sprintf("lab %s has no suite %q; its suites are: %s", man.Name, s, strings.Join(names, ", "))}
		}
	}
	if len(o.Problems) > 0 && len(o.Custom) > 0 {
		return nil, &UsageError{"--problem picks problems of the lab's sets; a custom problem (--shape, --bytes, ...) replaces them: give one or the other"}
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
	if o.InProcess && (o.Grade != nil || len(o.Plan) > 0) {
		return nil, &UsageError{"--in-process is for profiling, not for grading: the grader keeps the code under test in worker processes"}
	}
	if o.TotalTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.TotalTimeout, &TotalTimeError{Limit: o.TotalTimeout})
		defer cancel()
	}
	be, note, err := gpu.Open(o.Backend)
	if err != nil {
		if instead := backends.Instead(o.Backend, err); instead != "" {
			err = fmt.Errorf("%w\n(%s)", err, instead)
		}
		return nil, &EnvError{err}
	}
	if note != "" {
		fmt.Fprintln(o.Progress, note)
	}
	reg, err := backends.Lookup(be.Name())
	if err != nil {
		return nil, &EnvError{err}
	}
	n, err := be.DeviceCount()
	if err != nil {
		return nil, &EnvError{err}
	}
	if o.Device < 0 || o.Device >= n {
		return nil, &UsageError{fmt.Sprintf("--device %d: the %s backend has %d device(s) (0..%d)", o.Device, be.Name(), n, n-1)}
	}
	info, err := be.DeviceInfo(o.Device)
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
	if err := checkProblemNames(man, o.Suites, o.Variants, set, o.Problems); err != nil {
		return nil, err
	}
	if !o.SeedSet {
		o.Seed = rand.Uint64() >> 16 // short enough to retype
	}
	ext, err := joinExternal(ctx, man, &o) // one rank of a job that mpirun, srun or torchrun started
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "lab %s — %s\n", man.Name, man.Title.EN)
	fmt.Fprintf(o.Progress, "on %s (%s, %s), problem set %s\n", info.Name, be.Name(), reg.Rules.Target(info, nil), set)
	fmt.Fprintf(o.Progress, "seed %d (repeat with --seed %d)\n", o.Seed, o.Seed)
	if info.Emulated {
		fmt.Fprintln(o.Progress, "the emulator checks correctness: its times are emulated, not performance figures")
	}

	r := &runner{o: o, man: man, be: be, reg: reg, info: info, set: set, custom: custom, compileErr: map[*Variant]string{},
		untrusted: map[string]bool{},
		available: n - o.Device}
	r.ext = ext
	if r.ranks, err = r.ranksFor(n); err != nil {
		return nil, err
	}
	r.reportRanks(n)
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
	if s, ok := driverOf(man).(Deriver); ok {
		if sum, err := s.Derive(info, views(file.Entries)); err != nil {
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
	out := &Outcome{Manifest: man, Device: info, Results: file, Note: note, Seed: o.Seed, Planned: planned}
	out.Path, out.Local = resultsPath(o.Root, info, man.Name, o.Record)
	if r.ranks > 1 && !out.Local {
		out.Path = filepath.Join(o.Root, "results", results.RanksSlug(info, r.ranks), man.Name+".json")
	}
	file.Ranks = r.ranks
	if r.sharedGPURun(file.Entries) { // times of ranks on one GPU are no performance results
		out.Path, out.Local = results.LocalPathFor(o.Root, info, man.Name), true
	}
	for _, e := range file.Entries {
		if r.unfinished[entryKey(&e)] {
			out.Unfinished++ // not a result, and no failure of its variant
		} else if e.Status != results.StatusOK && e.Status != results.StatusSkipped {
			out.Failures++
		}
	}
	out.unfinished = r.unfinished
	if !o.NoSave {
		toSave := file
		if ctx.Err() != nil {
			// Stopped early: keep what was measured, and let the old file keep its entries for
			// the jobs this run did not finish.
			partial := *file
			partial.Entries = nil
			for _, e := range file.Entries {
				if out.Finished(&e) {
					partial.Entries = append(partial.Entries, e)
				}
			}
			toSave = &partial
		}
		if len(toSave.Entries) > 0 {
			out.SavedTo, out.SaveError = save(out.Path, toSave, man)
		}
	}
	return out, nil
}

// resultsPath is where a run's results go: results/<device>/ for a GPU or a recorded emulator
// run, results/local/emulator/ (ignored by git) for a student's emulator run.
func resultsPath(root string, info gpu.DeviceInfo, lab string, record bool) (path string, local bool) {
	if info.Emulated && !record {
		return results.LocalPathFor(root, info, lab), true
	}
	return results.PathFor(root, info, lab), false
}

func driverOf(m *Manifest) Driver {
	d, _ := DriverFor(m.Name)
	return d
}

func checkVariantNames(m *Manifest, names []string) error {
	var all []string // each name once: suites share their baselines
	seen := map[string]bool{}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if !seen[v.Name] {
				seen[v.Name] = true
				all = append(all, v.Name)
			}
		}
	}
	for _, n := range names {
		found := false
		for _, a := range all {
			found = found || a == n
		}
		if !found {
			msg := fmt.Sprintf("lab %s has no variant %q", m.Name, n)
			if s := term.Suggest(n, all); s != "" {
				// A likely typo: one line, the full list is a command away.
				return &UsageError{msg + fmt.Sprintf(" (did you mean %s?); 'labrun list' shows them all", s)}
			}
			return &UsageError{msg + "; its variants are: " + strings.Join(all, ", ")}
		}
	}
	return nil
}

// checkProblemNames says which problems exist when a name given with --problem is in no suite
// that the run selects (the variants' suites, or every suite).
func checkProblemNames(m *Manifest, suites, variants []string, set string, names []string) error {
	var known []string
	for _, s := range m.Suites {
		if len(suites) > 0 && !slices.Contains(suites, s.Name) {
			continue
		}
		if len(variants) > 0 && !slices.ContainsFunc(s.Variants, func(v *Variant) bool { return slices.Contains(variants, v.Name) }) {
			continue
		}
		ps, _ := s.ProblemsFor(set)
		for _, p := range ps {
			if !slices.Contains(known, p.Name) {
				known = append(known, p.Name)
			}
		}
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return &UsageError{fmt.Sprintf("lab %s has no problem %q in the %s set of the suites this run selects; they are: %s",
				m.Name, n, set, strings.Join(known, ", "))}
		}
	}
	return nil
}

// save merges with the existing file and writes atomically. A corrupt existing file is left
// alone and this run's results go to a file beside it, so nothing measured is lost.
func save(path string, f *results.File, m *Manifest) (string, error) {
	err := results.Update(path, func(old *results.File) (*results.File, error) {
		if old != nil && (old.Device.Name != f.Device.Name || old.Device.Backend != f.Device.Backend) {
			old = nil // a different device under the same folder name: start afresh
		}
		if old != nil {
			old.Entries = current(m, old.Entries)
		}
		return results.Merge(old, f), nil
	})
	if err == nil {
		return path, nil
	}
	// Nothing measured is lost: a results file that is corrupt, locked or in a folder that
	// cannot be written keeps its old contents, and this run's results go beside it, or, when
	// even that folder refuses them, to the user's cache.
	stamp := time.Now().UTC().Format("20060102T150405")
	side := strings.TrimSuffix(path, ".json") + ".new-" + stamp + ".json"
	if serr := results.Save(side, f); serr == nil {
		return side, fmt.Errorf("%v\nthis run's results were saved to %s", err, side)
	}
	cache, cerr := os.UserCacheDir()
	if cerr != nil {
		cache = os.TempDir()
	}
	side = filepath.Join(cache, "kernellabs", "results", filepath.Base(filepath.Dir(path)),
		strings.TrimSuffix(filepath.Base(path), ".json")+".new-"+stamp+".json")
	if serr := results.Save(side, f); serr != nil {
		return "", fmt.Errorf("%v; saving this run's results to %s also failed: %v", err, side, serr)
	}
	return side, fmt.Errorf("%v\nthis run's results were saved to %s", err, side)
}

type runner struct {
	o    Options
	man  *Manifest
	be   gpu.Backend
	reg  backends.Registration // the backend's compiler and rules
	info gpu.DeviceInfo
	set  string

	compileErr map[*Variant]string // variants whose kernel file did not compile
	untrusted  map[string]bool     // images built from graded files: loaded only in a sandbox
	custom     map[string]Problem  // by suite, when the run is of a custom problem
	available  int                 // devices from o.Device on (a lab may need several)
	ranks      int                 // world size of a lab of ranks (0: a lab of one process)
	ext        *extRanks           // labrun is one rank of a job another launcher started
	lastReport time.Time           // when the previous progress line was printed

	// Jobs a stopped run did not finish (not run, or killed in flight by the interrupt): an
	// interrupted run saves everything else and leaves these entries of the old file alone.
	unfinished map[string]bool // by entryKey
}

// gradedFiles lists the kernel files of the variants that the plan grades: a student's code,
// wherever it came from (a submission, or the exercise files of the student's own repository).
func (r *runner) gradedFiles() map[string]bool {
	files := map[string]bool{}
	for _, j := range r.o.Plan {
		if j.Mode == "" {
			continue
		}
		if s := r.man.Suite(j.Suite); s != nil {
			if v := s.Variant(j.Variant); v != nil && v.IsKernel() {
				files[v.File] = true
			}
		}
	}
	for f := range r.o.Files {
		files[f] = true
	}
	return files
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
	if len(r.o.Suites) > 0 && !slices.Contains(r.o.Suites, v.Suite.Name) {
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

// skipReason says why a variant cannot run on this backend and device ("" when it can): the
// backend's rules judge lab.yaml's needs, emu_skip and the devices the lab uses at once; Python
// peers (torch, triton) are the engine's own.
func (r *runner) skipReason(needs []string, emuSkip string) string {
	req := backends.Requirements{Needs: needs, EmuSkip: emuSkip, Available: r.available, First: r.o.Device}
	if r.man != nil {
		req.Devices = r.man.DeviceCount()
	}
	if why := r.backend().Rules.SkipReason(r.info, req); why != "" {
		return why
	}
	return peerSkipReason(needs, r.info.Emulated)
}

// archFor is the compile target of a kernel with these needs, as the backend's rules name it.
func (r *runner) archFor(needs []string) string { return r.backend().Rules.Target(r.info, needs) }

// backend is the registration of the run's backend: its compiler and rules.
func (r *runner) backend() backends.Registration {
	if r.reg.Rules == nil {
		reg, err := backends.Lookup(r.be.Name())
		if err != nil {
			panic(err) // Run looked it up already: only a runner made by hand gets here
		}
		r.reg = reg
	}
	return r.reg
}

func (r *runner) problems(s *Suite) []Problem {
	if r.custom != nil {
		if p, ok := r.custom[s.Name]; ok {
			return []Problem{p}
		}
		return nil
	}
	ps, _ := s.ProblemsFor(r.set)
	if len(r.o.Problems) > 0 {
		var picked []Problem
		for _, p := range ps {
			if slices.Contains(r.o.Problems, p.Name) {
				picked = append(picked, p)
			}
		}
		return picked
	}
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
		var reasons []string // one progress line per suite: the skipped variants by reason
		byReason := map[string][]string{}
		for _, v := range s.Variants {
			if !r.selected(v) {
				continue
			}
			if why := r.skipReason(v.Needs, v.EmuSkip); why != "" {
				for _, e := range r.failAll(v, why) {
					e.Status = results.StatusSkipped
					skipped = append(skipped, e)
				}
				if _, ok := byReason[why]; !ok {
					reasons = append(reasons, why)
				}
				byReason[why] = append(byReason[why], v.Name)
			}
		}
		if len(reasons) > 0 {
			var parts []string
			for _, why := range reasons {
				parts = append(parts, strings.Join(byReason[why], ", ")+" ("+why+")")
			}
			fmt.Fprintf(r.o.Progress, "skip %s: %s\n", s.Name, strings.Join(parts, "; "))
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

// GitCommit is the commit of the course tree at root, as results files record it.
func GitCommit(root string) string { return gitCommit(root) }
