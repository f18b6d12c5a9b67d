// Package grade grades students' exercise files, writes the reports that CI systems read, and
// exports the student edition of the course.
//
// Grading (labrun grade NN) builds the submitted files in place of a lab's exercise variants and
// runs the grading plan through the run engine (internal/lab) in grading mode: every run of a
// submission gets fresh random inputs and poisoned outputs, is checked, and is guarded (NaN red
// zones around every buffer, inputs verified unchanged, time limits, crashes and hangs isolated in
// worker processes). Points come from the lab's `grading:` section (lab.Grading): correctness
// tests on the suite's problems.grade everywhere, speed against a reference kernel measured in the
// same run on a GPU only. Reports: a terminal summary, JUnit XML, a Gradescope results.json and a
// markdown summary (GitHub's step summary).
//
// Export (labrun export DIR) copies the course with every BEGIN SOLUTION … END SOLUTION region
// replaced by a TODO stub that compiles, and writes a GitHub Actions workflow that grades the
// student's repository on an ordinary runner.
package grade

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// Options select what a grade does.
type Options struct {
	Root string
	Lab  string // as typed: "2", "02", "02_gemm"
	// Submission is a folder (a student's repository or a folder of exercise files) or one file;
	// empty grades the exercise files of the course tree at Root.
	Submission string
	Backend    string // "auto", "cuda", "emu"
	Device     int
	Seed       uint64
	SeedSet    bool
	// Secret is the secret seed (LABRUN_SECRET_SEED, read by the caller): hidden tests draw their
	// inputs from it combined with Seed. Workers never see it.
	Secret string
	// Overrides of the manifest (0: the manifest's).
	Rounds         int
	TimeLimit      time.Duration
	TotalTimeLimit time.Duration
	// Only these exercises (variant names) and only tests whose problems are all among Problems.
	Exercises []string
	Problems  []string
	// NoSpeed skips the speed tests even on a GPU.
	NoSpeed bool
	// NoDeviceCheck grades on the emulator without the device-code check (clang++ in CUDA
	// mode), which a grade otherwise needs; the report says that it did not run.
	NoDeviceCheck bool
	// UnsafeNoSandbox grades on the emulator without the sandbox (a kernel without Landlock or
	// seccomp): a submission's code then runs in the worker and could forge its grade. The
	// reports say so.
	UnsafeNoSandbox bool
	Progress        io.Writer
	Worker          func() *exec.Cmd // the engine's worker (tests)

	redZone int64 // tests: the red zones' size (-1: none)
}

// Test kinds.
const (
	KindCorrectness = "correctness"
	KindSpeed       = "speed"
)

// Test statuses.
const (
	StatusPassed    = "passed"
	StatusFailed    = "failed"
	StatusPartial   = "partial"
	StatusNotGraded = "not graded"
)

// ReasonNotSubmitted is the reason of tests whose exercise file was not in the submission.
const ReasonNotSubmitted = "not_submitted"

// ReasonRefused is the reason of tests whose submitted file was refused before it was built (a
// symbolic link, a hard link to the course's own file).
const ReasonRefused = "refused"

// Report is the grade of one lab.
type Report struct {
	Lab        string         `json:"lab"`
	Title      string         `json:"title"`
	Device     gpu.DeviceInfo `json:"device"`
	Seed       uint64         `json:"seed"`
	SecretSeed bool           `json:"secret_seed"` // hidden tests used LABRUN_SECRET_SEED
	Files      []Submitted    `json:"files"`
	Score      float64        `json:"score"`
	MaxScore   float64        `json:"max_score"`
	PassMark   float64        `json:"pass_mark"` // fraction of MaxScore
	Passed     bool           `json:"passed"`
	// NotGraded says why nothing of the lab could be graded on this runner ("" when something
	// was): its tests are listed as not graded and the lab counts neither way.
	NotGraded string       `json:"not_graded,omitempty"`
	Speed     string       `json:"speed"`   // how speed was graded, or why not
	Sandbox   string       `json:"sandbox"` // how the submission's code was isolated
	Rules     []string     `json:"rules"`   // the scoring rules, in words
	Notes     []string     `json:"notes,omitempty"`
	Tests     []TestResult `json:"tests"`
	ElapsedS  float64      `json:"elapsed_s"`
}

// Submitted is the file graded for one exercise.
type Submitted struct {
	Exercise string `json:"exercise"`
	File     string `json:"file"`              // what was built
	Missing  bool   `json:"missing"`           // not in the submission: its tests score 0
	Refused  string `json:"refused,omitempty"` // why the file was refused unbuilt: its tests score 0
}

// TestResult is one test's outcome.
type TestResult struct {
	Name       string   `json:"name"`
	Exercise   string   `json:"exercise"`
	Kind       string   `json:"kind"`
	Problems   []string `json:"problems"`
	Score      float64  `json:"score"`
	MaxScore   float64  `json:"max_score"`
	Status     string   `json:"status"`
	Reason     string   `json:"reason,omitempty"` // a lab.Reason* code of the first failure
	Output     string   `json:"output,omitempty"` // for the student: what failed and the figures
	Hidden     bool     `json:"hidden,omitempty"`
	Visibility string   `json:"visibility"` // Gradescope: "visible" or "after_published"
	TimeS      float64  `json:"time_s,omitempty"`
}

// ReasonText is a reason code in words.
func ReasonText(code string) string {
	switch code {
	case ReasonWrong:
		return "wrong result"
	case ReasonUnwritten:
		return "outputs not written"
	case ReasonStale:
		return "returned a previous answer"
	case ReasonReadOutside:
		return "read outside its inputs"
	case ReasonOutOfBounds:
		return "wrote outside its buffers"
	case ReasonInputCorrupted:
		return "changed its inputs"
	case ReasonIllegalAddress:
		return "illegal memory access"
	case ReasonBarrier:
		return "barrier divergence or deadlock"
	case ReasonTimeout:
		return "time limit exceeded"
	case ReasonCrash:
		return "crashed"
	case ReasonTrap:
		return "trapped (assert, __trap, stack overflow)"
	case ReasonLaunch:
		return "launch refused"
	case ReasonCompile:
		return "does not compile"
	case ReasonNotSubmitted:
		return "not submitted"
	case ReasonRefused:
		return "submission refused"
	case "skipped":
		return "not run here"
	}
	return "error"
}

// HasExercises reports whether a lab has exercises to grade: a grading section, or kernel files
// with solution regions.
func HasExercises(m *lab.Manifest) bool {
	g, _ := GradingOf(m)
	return g != nil && len(g.Exercises) > 0
}

// GradingOf returns the lab's grading rules: its grading section, or rules derived from its
// exercise files (every kernel variant whose file lies in an exercises/ folder or has a solution
// region; each problem of its suite's grade set a test of 1 point; no speed test). derived says
// which.
func GradingOf(m *lab.Manifest) (g *lab.Grading, derived bool) {
	if m.Grading != nil {
		return m.Grading, false
	}
	g = &lab.Grading{PassMark: lab.DefaultPassMark, TimeLimit: m.Timeout, TotalTimeLimit: lab.DefaultTotalTimeLimit,
		Rounds: lab.DefaultGradeRounds}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if !v.IsKernel() || len(s.Problems.Grade) == 0 {
				continue
			}
			if !IsExerciseFile(m, v.File) {
				continue
			}
			g.Exercises = append(g.Exercises, &lab.Exercise{Variant: s.Name + "/" + v.Name, V: v, Points: 1})
		}
	}
	if len(g.Exercises) == 0 {
		return nil, true
	}
	return g, true
}

// IsExerciseFile says whether a kernel file of lab m is an exercise: it lies in an exercises/
// folder, or it has a solution region.
func IsExerciseFile(m *lab.Manifest, file string) bool {
	if strings.HasPrefix(filepath.ToSlash(file), "exercises/") || strings.Contains(filepath.ToSlash(file), "/exercises/") {
		return true
	}
	b, err := os.ReadFile(filepath.Join(m.Dir, file))
	return err == nil && HasSolution(b)
}

// IsExercise says whether variant v of lab m is an exercise: a kernel whose file is an exercise
// file, or the variant of an exercise of the grading section.
func IsExercise(m *lab.Manifest, v *lab.Variant) bool {
	if !v.IsKernel() {
		return false
	}
	if g, _ := GradingOf(m); g != nil {
		for _, ex := range g.Exercises {
			if ex.V == v || ex.V.File == v.File {
				return true
			}
		}
	}
	return IsExerciseFile(m, v.File)
}

// isolation checks that a submission's code can be isolated on this device and says how. On the
// emulator a submission is host code: it runs only in a sandboxed launcher, which needs Landlock
// and seccomp. On a GPU a submission is device code only (nvcc builds device images; no host
// code of it is compiled or run), which the GPU runs under the driver's memory protection.
func isolation(info gpu.DeviceInfo, unsafe bool) (string, error) {
	if !info.Emulated {
		return "device code only: the submission's kernels run on the GPU; none of its host code is compiled or run", nil
	}
	if unsafe {
		return "OFF (--unsafe-no-sandbox): the submission's code ran in labrun's worker process", nil
	}
	if err := sandbox.Check(); err != nil {
		return "", &lab.EnvError{Err: fmt.Errorf("%w.\nOn the emulator a submission is host code, and labrun grades it only inside a sandbox "+
			"(Landlock and seccomp, Linux ≥ 5.13 with Landlock enabled). Grade on such a runner, or pass --unsafe-no-sandbox "+
			"to grade anyway: the reports then say that the grade could be forged", err)}
	}
	return "sandboxed launcher (" + sandbox.Status() + "): the submission's code runs in a process that can read only " +
		"the system's libraries and its own module, write nothing, start nothing, and reach no network", nil
}

// test is a test being planned.
type test struct {
	notHere  string // why this runner cannot grade it ("" when it can)
	res      TestResult
	ex       *lab.Exercise
	jobs     []int    // plan indices
	labels   []string // per job: its problem, and its world size when the test has several
	refJobs  []int    // speed: the reference's job on the same problem, or the one the rule names against it
	problems []string
}

// Grade grades one lab.
func Grade(ctx context.Context, o Options) (*Report, error) {
	started := time.Now()
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	man, err := lab.Load(o.Root, o.Lab)
	if err != nil {
		return nil, err
	}
	g, derived := GradingOf(man)
	if g == nil {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s has no exercises to grade (no grading section in lab.yaml and no kernel file with a %q region)",
			man.Name, lab.SolutionMarker)}
	}
	if _, ok := lab.DriverFor(man.Name); !ok {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s has no Go driver in this labrun (is it imported by cmd/labrun/imports.go?)", man.Name)}
	}
	exercises, err := selectExercises(man, g, o.Exercises)
	if err != nil {
		return nil, err
	}
	for _, ex := range exercises {
		if tol := ex.V.Suite.Tolerance; tol <= 0 || tol > lab.MaxGradeTolerance {
			return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s: suite %s has tolerance %g; grading needs 0 < tolerance ≤ %g, or an all-zeros output (relative error 1) could pass",
				man.Name, ex.V.Suite.Name, tol, lab.MaxGradeTolerance)}
		}
	}
	files, subs, err := resolveSubmission(o.Root, man, exercises, o.Submission)
	if err != nil {
		return nil, err
	}

	be, _, err := gpu.Open(o.Backend)
	if err != nil {
		return nil, &lab.EnvError{Err: fmt.Errorf("%w\n(without a GPU, grade on the CPU emulator: --backend emu)", err)}
	}
	n, err := be.DeviceCount()
	if err != nil {
		return nil, &lab.EnvError{Err: err}
	}
	if o.Device < 0 || o.Device >= n {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("--device %d: the %s backend has %d device(s)", o.Device, be.Name(), n)}
	}
	info, err := be.DeviceInfo(o.Device)
	if err != nil {
		return nil, &lab.EnvError{Err: err}
	}
	sandbox.AddSecret(lab.GradeSecrets(o.Root)...)
	sandboxNote, err := isolation(info, o.UnsafeNoSandbox)
	if err != nil {
		return nil, err
	}
	// Submitted files (and, with no submission, the course's exercise files) are built
	// hermetically, their compiler confined by the sandbox; on the emulator they must also
	// compile as CUDA device code.
	var notes []string
	sub := &toolchain.Submission{Protect: []string{o.Root}, Sandbox: !o.UnsafeNoSandbox}
	if !info.Emulated && sub.Sandbox {
		if err := sandbox.Check(); err != nil {
			sub.Sandbox = false
			notes = append(notes, fmt.Sprintf("the compiler of the submission ran outside the sandbox (%v); the dependency audit still kept the course tree out of its build", err))
		}
	}
	if info.Emulated {
		if o.NoDeviceCheck {
			notes = append(notes, "the device-code check did not run (--no-device-check): host-only C++ in a kernel, which nvcc rejects, was not caught")
		} else if err := toolchain.CheckDeviceCompiler(); err != nil {
			return nil, &lab.EnvError{Err: err}
		} else {
			sub.DeviceCheck = true
		}
	}
	if !o.SeedSet {
		o.Seed = rand.Uint64() >> 16
	}
	hidden := HiddenSeed(o.Seed, o.Secret)

	rep := &Report{Lab: man.Name, Title: man.Title.EN, Device: info, Seed: o.Seed, SecretSeed: o.Secret != "",
		Files: subs, PassMark: g.PassMark, Sandbox: sandboxNote}
	if info.Emulated {
		rep.Notes = append(rep.Notes, machineNote(g, o.Seed))
	}
	if o.UnsafeNoSandbox && info.Emulated {
		rep.Notes = append(rep.Notes, "UNSAFE: graded without the sandbox (--unsafe-no-sandbox): the submission's code ran with the grader's rights, so this grade could be forged")
	}
	// Tests that need more GPUs than the runner has are not graded here (the emulator's devices
	// are emulated: it has as many as a test needs).
	have := n - o.Device
	short := func(need int) string {
		if info.Emulated || need <= have {
			return ""
		}
		s := fmt.Sprintf("needs %d GPUs; this runner has %d", need, have)
		if o.Device > 0 {
			s += fmt.Sprintf(" from device %d", o.Device)
		}
		return s
	}
	devicesShort := short(man.DeviceCount()) // the lab's own runs (speed)
	speedOn := !info.Emulated && !o.NoSpeed && devicesShort == ""
	switch {
	case info.Emulated:
		rep.Speed = "not graded: this runner has no GPU (the CPU emulator checks correctness only); speed points are left out of the maximum"
	case devicesShort != "":
		rep.Speed = "not graded here (" + devicesShort + ")"
	case o.NoSpeed:
		rep.Speed = "not graded (--no-speed); speed points are left out of the maximum"
	default:
		rep.Speed = fmt.Sprintf("graded on %s against the reference kernel timed in the same run", info.Name)
	}
	rep.Notes = append(rep.Notes, notes...)
	if derived {
		rep.Notes = append(rep.Notes, "lab.yaml has no grading section: every problem of the grade set is a test of 1 point")
	}
	rounds := g.Rounds
	if o.Rounds > 0 {
		rounds = o.Rounds
	}
	rep.Rules = rules(g, rounds)

	// The plan: one job per exercise × problem × (public or hidden) inputs, shared by the tests
	// that name it; speed jobs for the reference and the exercise on each speed problem.
	var plan []lab.Job
	jobAt := map[lab.Job]int{}
	addJob := func(j lab.Job) int {
		if i, ok := jobAt[j]; ok {
			return i
		}
		jobAt[j] = len(plan)
		plan = append(plan, j)
		return len(plan) - 1
	}
	missing := map[*lab.Exercise]bool{}
	refused := map[*lab.Exercise]string{}
	for i, ex := range exercises {
		missing[ex] = subs[i].Missing || subs[i].Refused != ""
		refused[ex] = subs[i].Refused
	}
	var tests []*test
	for _, ex := range exercises {
		v := ex.V
		tdefs := ex.Tests
		if len(tdefs) == 0 {
			for _, p := range v.Suite.Problems.Grade {
				tdefs = append(tdefs, lab.GradeTest{Problem: p.Name, Points: ex.Points})
			}
		}
		for _, td := range tdefs {
			ps := only(td.TestProblems(), o.Problems)
			if len(ps) == 0 {
				continue
			}
			name := td.Name
			if name == "" {
				name = strings.Join(ps, ", ")
			}
			if td.Hidden {
				name = "hidden: " + name
			}
			t := &test{ex: ex, problems: ps, res: TestResult{Name: v.Name + " / " + name, Exercise: v.Name,
				Kind: KindCorrectness, Problems: ps, MaxScore: td.Points, Hidden: td.Hidden, Visibility: "visible"}}
			if td.Hidden {
				t.res.Visibility = "after_published"
			}
			ranks := td.Ranks
			if len(ranks) == 0 {
				ranks = []int{man.GradeRanks()} // a lab of ranks' default world size (0: one process)
			}
			// Rank processes share the GPUs there are: a test of any world size runs on one GPU.
			t.notHere = short(1)
			if !missing[ex] && t.notHere == "" {
				for _, n := range ranks {
					for pi, p := range ps {
						j := lab.Job{Suite: v.Suite.Name, Variant: v.Name, Problem: p, Set: "grade", Mode: lab.GradeCheck,
							Ranks: n, Launches: td.Launches}
						if td.Hidden {
							j.Seed = hidden
						}
						label := p
						if len(td.Vary) > 0 {
							j = lab.VaryJob(j, problemOf(v.Suite, p), td.Vary, hiddenShapes(hidden, v.Name, name, pi))
							label = "a hidden shape drawn like " + p
						}
						if n > 0 {
							label += fmt.Sprintf(" at %d ranks", n)
						}
						t.jobs = append(t.jobs, addJob(j))
						t.labels = append(t.labels, label)
					}
				}
			}
			tests = append(tests, t)
		}
		if sp := ex.Speed; sp != nil && ex.Ref != nil && len(only(sp.Problems, o.Problems)) > 0 {
			sps := only(sp.Problems, o.Problems)
			t := &test{ex: ex, problems: sps, res: TestResult{
				Name: fmt.Sprintf("%s / speed against %s", v.Name, ex.Ref.Name), Exercise: v.Name, Kind: KindSpeed,
				Problems: sps, MaxScore: sp.Points, Visibility: "visible"}}
			t.notHere = devicesShort
			if speedOn && !missing[ex] {
				for _, p := range sps {
					t.refJobs = append(t.refJobs, addJob(lab.Job{Suite: v.Suite.Name, Variant: ex.Ref.Name, Problem: sp.ReferenceProblem(p), Set: "gpu",
						Mode: lab.GradeSpeed, Reps: sp.Reps}))
					t.jobs = append(t.jobs, addJob(lab.Job{Suite: v.Suite.Name, Variant: v.Name, Problem: p, Set: "gpu",
						Mode: lab.GradeSpeed, Reps: sp.Reps}))
				}
			}
			tests = append(tests, t)
		}
	}
	if len(tests) == 0 {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s: no test matches the selection", man.Name)}
	}

	if o.Secret == "" {
		for _, t := range tests {
			if t.res.Hidden {
				rep.Notes = append(rep.Notes, lab.SecretSeedEnv+" is not set: the hidden tests ran on inputs derived from the public seed")
				break
			}
		}
	}
	readOnly := map[string][]bool{}
	for _, ex := range exercises {
		src, err := os.ReadFile(filepath.Join(man.Dir, ex.V.File))
		if err == nil {
			if ro, err := ConstParams(string(src), ex.V.Entry); err == nil {
				readOnly[ex.V.Key()] = ro
			} else {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v; its inputs are not verified unchanged", ex.V.Name, err))
			}
		}
	}
	timeLimit, total := g.TimeLimit, g.TotalTimeLimit
	if o.TimeLimit > 0 {
		timeLimit = o.TimeLimit
	}
	if o.TotalTimeLimit > 0 {
		total = o.TotalTimeLimit
	}

	var planned []results.Entry
	if len(plan) > 0 {
		fmt.Fprintf(o.Progress, "grading %s: %d test(s), %d job(s), %d checked run(s) per correctness job\n",
			man.Name, len(tests), len(plan), rounds)
		out, err := lab.Run(ctx, lab.Options{Root: o.Root, Lab: man.Name, Backend: o.Backend, Device: o.Device,
			Seed: o.Seed, SeedSet: true, Set: "grade", Timeout: timeLimit, TotalTimeout: total, NoSave: true,
			Progress: o.Progress, Worker: o.Worker, Files: files, Submission: sub, Plan: plan, UnsafeNoSandbox: o.UnsafeNoSandbox,
			Grade: gradeSpec(g, rounds, readOnly, o)})
		if err != nil {
			return nil, err
		}
		planned = out.Planned
		stopped := 0
		for _, e := range planned {
			if strings.Contains(e.Error, "total time limit") {
				stopped++
			}
		}
		if stopped > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the grade reached its total time limit of %s: %d job(s) did not finish and score 0", total, stopped))
		}
		if ctx.Err() != nil {
			rep.Notes = append(rep.Notes, "the grade was interrupted: jobs that did not run score 0")
		}
	}

	for _, t := range tests {
		if t.notHere != "" {
			t.res.Status, t.res.Output = StatusNotGraded, "not graded here ("+t.notHere+")"
		} else {
			score(t, planned, g, missing[t.ex], refused[t.ex], speedOn, rep)
		}
		rep.Tests = append(rep.Tests, t.res)
	}
	for _, t := range rep.Tests {
		rep.Score += t.Score
		if t.Status != StatusNotGraded {
			rep.MaxScore += t.MaxScore
		}
	}
	rep.Score = round2(rep.Score)
	rep.MaxScore = round2(rep.MaxScore)
	if rep.MaxScore == 0 {
		for _, t := range tests {
			if t.notHere != "" {
				devicesShort = t.notHere
				break
			}
		}
	}
	switch {
	case rep.MaxScore == 0 && devicesShort != "":
		rep.NotGraded = devicesShort
	case rep.MaxScore == 0:
		rep.NotGraded = "no test of the selection is graded on this runner (" + rep.Speed + ")"
	}
	rep.Passed = rep.NotGraded == "" && rep.Score >= g.PassMark*rep.MaxScore-1e-9
	rep.ElapsedS = round2(time.Since(started).Seconds())
	return rep, nil
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// only keeps the problems of ps that are in filter (all of them when filter is empty).
func only(ps, filter []string) []string {
	if len(filter) == 0 {
		return ps
	}
	var out []string
	for _, p := range ps {
		for _, f := range filter {
			if f == p {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func selectExercises(m *lab.Manifest, g *lab.Grading, names []string) ([]*lab.Exercise, error) {
	if len(names) == 0 {
		return g.Exercises, nil
	}
	var out []*lab.Exercise
	var all []string
	for _, ex := range g.Exercises {
		all = append(all, ex.V.Name)
		for _, n := range names {
			if n == ex.V.Name || n == ex.V.Suite.Name+"/"+ex.V.Name {
				out = append(out, ex)
			}
		}
	}
	if len(out) == 0 {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("lab %s has no exercise %s; its exercises are: %s", m.Name,
			strings.Join(names, ", "), strings.Join(all, ", "))}
	}
	return out, nil
}

// gradeSpec is how the engine runs this grade's jobs, the emulated machine included.
func gradeSpec(g *lab.Grading, rounds int, readOnly map[string][]bool, o Options) *lab.GradeSpec {
	m := g.Emulator.Settings()
	spec := &lab.GradeSpec{Rounds: rounds, ReadOnly: readOnly, RedZone: o.redZone, EmuSMs: m.SMs}
	if m.Schedule == lab.ScheduleAdversarial {
		spec.EmuSchedule = fmt.Sprintf("%s:%d", lab.ScheduleAdversarial, o.Seed)
	}
	return spec
}

// machineNote describes the emulated machine of a grade for the reports.
func machineNote(g *lab.Grading, seed uint64) string {
	m := g.Emulator.Settings()
	s := fmt.Sprintf("emulated machine: %d SMs per device (from lab.yaml, whatever this runner's CPUs), ", m.SMs)
	if m.Schedule == lab.ScheduleAdversarial {
		return s + fmt.Sprintf("adversarial schedule from seed %d (shuffled block and thread order, late blocks, pauses at fences and atomics)", seed)
	}
	return s + "plain schedule"
}

// problemOf finds a problem of a suite's grade set by name.
func problemOf(s *lab.Suite, name string) lab.Problem {
	for _, p := range s.Problems.Grade {
		if p.Name == name {
			return p
		}
	}
	return lab.Problem{Name: name}
}

// hiddenShapes is the random stream that draws the shapes of one hidden test's problem.
func hiddenShapes(hidden uint64, exercise, test string, problem int) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "kernellabs-shapes/%d/%s/%s/%d", hidden, exercise, test, problem)
	x := h.Sum64()
	return rand.New(rand.NewPCG(x, x^0x9e3779b97f4a7c15))
}

// HiddenSeed combines the public seed with the secret one: the seed of the hidden tests' inputs.
// Without a secret, hidden tests still run, on inputs a student could reproduce.
func HiddenSeed(public uint64, secret string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "kernellabs-hidden/%s/%d", secret, public)
	s := h.Sum64()
	if s == 0 {
		s = 1
	}
	return s
}

func rules(g *lab.Grading, rounds int) []string {
	r := []string{
		fmt.Sprintf("A correctness test earns its points when every run of the exercise passes on each of its problems: %d run(s) per problem, each on fresh random inputs with poisoned outputs, every output checked against the reference.", rounds),
		"A run fails when its output is wrong, when it leaves outputs unwritten, returns an earlier answer, computes NaN from outside its inputs (every buffer is surrounded by NaN), writes outside its buffers, changes its inputs, faults, crashes or passes the time limit.",
		fmt.Sprintf("The lab passes at %.0f%% of the points graded on this runner.", g.PassMark*100),
	}
	for _, ex := range g.Exercises {
		if sp := ex.Speed; sp != nil && ex.Ref != nil {
			r = append(r, fmt.Sprintf("Speed of %s (GPU only): %g point(s), full within %.2g× the median time of %s measured in the same run, proportional beyond (points × %.2g × t_ref / t); every timed run is checked.",
				ex.V.Name, sp.Points, sp.FullWithin, ex.Ref.Name, sp.FullWithin))
			for _, p := range sp.Problems {
				if q := sp.ReferenceProblem(p); q != p {
					r = append(r, fmt.Sprintf("On %s, %s is held to %s's time on %s.", p, ex.V.Name, ex.Ref.Name, q))
				}
			}
		}
	}
	return r
}

// entryReason is the reason code of a failed entry.
func entryReason(e *results.Entry) string {
	if r, ok := e.Data["reason"].(string); ok && r != "" {
		return r
	}
	switch e.Status {
	case results.StatusTimeout:
		return ReasonTimeout
	case results.StatusCrashed:
		return ReasonCrash
	case results.StatusSkipped:
		return "skipped"
	case results.StatusWrong:
		return ReasonWrong
	}
	if strings.HasPrefix(e.Error, "compile: ") {
		return ReasonCompile
	}
	return ReasonOfError(errors.New(e.Error))
}

// score fills a test's result from the entries of its jobs.
func score(t *test, planned []results.Entry, g *lab.Grading, missing bool, refused string, speedOn bool, rep *Report) {
	r := &t.res
	if refused != "" {
		r.Status, r.Reason, r.Output = StatusFailed, ReasonRefused, "the submitted file was refused: "+refused
		if t.res.Kind == KindSpeed && !speedOn {
			r.Status = StatusNotGraded
		}
		return
	}
	if missing {
		r.Status, r.Reason = StatusFailed, ReasonNotSubmitted
		r.Output = fmt.Sprintf("no file was submitted for exercise %s (expected %s)", t.ex.V.Name, t.ex.V.File)
		if t.res.Kind == KindSpeed && !speedOn {
			r.Status = StatusNotGraded
		}
		return
	}
	if r.Kind == KindSpeed {
		scoreSpeed(t, planned, speedOn)
		return
	}
	var out []string
	for k, ji := range t.jobs {
		e := &planned[ji]
		r.TimeS += timeOf(e)
		if e.OK() {
			continue
		}
		code := entryReason(e)
		if r.Reason == "" {
			r.Reason = code
		}
		switch {
		case r.Hidden:
			out = append(out, fmt.Sprintf("%s: failed (%s); the details of hidden tests are not shown", t.label(k), ReasonText(code)))
		case len(out) == 0:
			out = append(out, fmt.Sprintf("%s: %s", t.label(k), trimOutput(e.Error)))
		default:
			out = append(out, fmt.Sprintf("%s: %s", t.label(k), firstLine(e.Error)))
		}
	}
	r.TimeS = round2(r.TimeS)
	if r.Reason == "" {
		r.Status, r.Score = StatusPassed, r.MaxScore
		r.Output = fmt.Sprintf("passed: %d problem(s) × every run checked on fresh inputs", len(t.jobs))
		return
	}
	r.Status = StatusFailed
	r.Output = strings.Join(out, "\n")
}

// label names job k of the test for the report.
func (t *test) label(k int) string {
	if k < len(t.labels) {
		return t.labels[k]
	}
	if k < len(t.problems) {
		return t.problems[k]
	}
	return fmt.Sprintf("job %d", k+1)
}

func timeOf(e *results.Entry) float64 {
	if e.Data != nil {
		if s, ok := e.Data["elapsed_s"].(float64); ok {
			return s
		}
	}
	return 0
}

func scoreSpeed(t *test, planned []results.Entry, speedOn bool) {
	r := &t.res
	if !speedOn || len(t.jobs) == 0 {
		r.Status = StatusNotGraded
		r.Output = "speed is graded on a GPU only; this runner checked correctness"
		return
	}
	sp := t.ex.Speed
	var lines []string
	sum := 0.0
	for k, ji := range t.jobs {
		e, ref := &planned[ji], &planned[t.refJobs[k]]
		p := t.label(k)
		switch {
		case !e.OK():
			code := entryReason(e)
			if r.Reason == "" {
				r.Reason = code
			}
			lines = append(lines, fmt.Sprintf("%s: 0 — %s: %s", p, ReasonText(code), trimOutput(e.Error)))
		case !ref.OK() || ref.Time == nil || ref.Time.MedianMs <= 0:
			sum++
			lines = append(lines, fmt.Sprintf("%s: full points — the reference %s did not run here (%s), so speed is not held against you",
				p, ref.Variant, firstLine(ref.Error)))
		default:
			ratio := e.Time.MedianMs / ref.Time.MedianMs
			frac := math.Min(1, sp.FullWithin/ratio)
			sum += frac
			against := ref.Variant
			if q := sp.ReferenceProblem(p); q != p {
				against += " on " + q
			}
			lines = append(lines, fmt.Sprintf("%s: %.3f ms (median of %d checked runs) against %s %.3f ms: %.2f× its time → %.0f%% of the points (full within %.2g×)",
				p, e.Time.MedianMs, e.Time.N, against, ref.Time.MedianMs, ratio, frac*100, sp.FullWithin))
		}
	}
	r.Score = round2(r.MaxScore * sum / float64(len(t.jobs)))
	switch {
	case r.Score >= r.MaxScore-1e-9:
		r.Status = StatusPassed
	case r.Score > 0:
		r.Status = StatusPartial
	default:
		r.Status = StatusFailed
	}
	r.Output = strings.Join(lines, "\n")
}

// trimOutput keeps a failure's message readable: its first lines (the reason, the error figures
// and the first wrong elements).
func trimOutput(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 8 {
		lines = append(lines[:8], "  …")
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Labs lists the labs of the course that have exercises, in order.
func Labs(root string) ([]string, error) {
	dirs, err := lab.LabDirs(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		m, err := lab.LoadManifest(filepath.Join(root, "labs", d))
		if err != nil {
			return nil, err
		}
		if HasExercises(m) {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out, nil
}
