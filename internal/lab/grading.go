package lab

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kernel-labs/kernellabs/internal/solution"
)

// Grading is the optional `grading:` section of a lab.yaml: how `labrun grade` scores a student's
// exercise files. Example:
//
//	grading:
//	  pass_mark: 0.6            # fraction of the points graded on this runner
//	  time_limit: 60s           # per test (one exercise on one problem, all its runs)
//	  total_time_limit: 15m     # the whole grade of the lab
//	  rounds: 3                 # checked runs per correctness test, each on fresh inputs
//	  exercises:
//	    - variant: ex1_smem_tiling      # a kernel variant (suite/variant when names repeat)
//	      reference: smem               # variant whose time, measured in the same run, sets the bar
//	      points: 1                     # per test when tests is empty: every grade problem is a test
//	      tests:                        # or explicit tests over the suite's problems.grade
//	        - { problems: ["1×1×1", "17×33×65"], points: 2 }
//	        - { problem: "129³", points: 1, hidden: true }   # inputs from the secret seed
//	      speed: { points: 2, full_within: 1.2, problems: ["2048³"], reps: 10 }
//
// A test scores its points when every run of the exercise on every one of its problems passes.
// Speed (GPU only) scores points × min(1, full_within × t_ref / t), t being the median time of
// the exercise and t_ref that of the reference on the same problems (problems.gpu), both measured
// in the same run.
type Grading struct {
	PassMark       float64       `yaml:"pass_mark"`
	TimeLimit      time.Duration `yaml:"time_limit"`
	TotalTimeLimit time.Duration `yaml:"total_time_limit"`
	Rounds         int           `yaml:"rounds"`
	Exercises      []*Exercise   `yaml:"exercises"`
	// Emulator fixes the machine that a grade on the CPU emulator runs on, whatever the runner's
	// CPUs or environment: the same submission gets the same grade everywhere.
	Emulator EmulatorGrading `yaml:"emulator"`

	line int
}

// EmulatorGrading is the emulated machine of a grade.
type EmulatorGrading struct {
	// SMs is how many blocks of a grid each emulated device runs at once (default 4).
	SMs int `yaml:"sms"`
	// Schedule is "adversarial" (the default: shuffled block and thread order, late blocks,
	// pauses at fences and atomics, from the grade's seed) or "plain".
	Schedule string `yaml:"schedule"`
}

// Emulator grading defaults.
const (
	DefaultGradeSMs      = 4
	ScheduleAdversarial  = "adversarial"
	SchedulePlain        = "plain"
	DefaultGradeSchedule = ScheduleAdversarial
)

// Settings gives the machine with defaults filled in.
func (e EmulatorGrading) Settings() EmulatorGrading {
	if e.SMs <= 0 {
		e.SMs = DefaultGradeSMs
	}
	if e.Schedule == "" {
		e.Schedule = DefaultGradeSchedule
	}
	return e
}

// Exercise is one graded kernel variant.
type Exercise struct {
	Variant   string      `yaml:"variant"`
	Reference string      `yaml:"reference"`
	Points    float64     `yaml:"points"`
	Tests     []GradeTest `yaml:"tests"`
	Speed     *SpeedRule  `yaml:"speed"`

	V    *Variant `yaml:"-"` // resolved by validation
	Ref  *Variant `yaml:"-"` // nil without a reference
	line int
}

// GradeTest is one correctness test: problems of the suite's grade set and the points they earn.
type GradeTest struct {
	Name     string   `yaml:"name"`
	Problem  string   `yaml:"problem"`
	Problems []string `yaml:"problems"`
	Points   float64  `yaml:"points"`
	Hidden   bool     `yaml:"hidden"`
	// Ranks runs the test at each of these world sizes (rank processes), for labs whose lab.yaml
	// declares ranks:; empty means the lab's default world size. Code hard-wired for one count fails at the others.
	Ranks []int `yaml:"ranks"`
	// Launches runs the variant this many times on one prepared case, its outputs poisoned again
	// before each, and checks the last (default 1): a protocol whose counters grow from run to
	// run (epochs) must work after the first.
	Launches int `yaml:"launches"`
	// Vary (hidden tests) draws these parameters of each problem afresh from the hidden seed:
	// key: [lo, hi] or [lo, hi, step], an integer uniformly from lo, lo+step, … ≤ hi. The
	// shapes of a hidden test are then as secret as its inputs.
	Vary map[string][]int64 `yaml:"vary"`

	line int
}

// SpeedRule grades speed against the reference variant, on a GPU only.
type SpeedRule struct {
	Points     float64  `yaml:"points"`
	FullWithin float64  `yaml:"full_within"`
	Problems   []string `yaml:"problems"`
	// Against names, for some of Problems, the problem on which the reference is timed instead
	// of the same one: an odd-sized problem can be held to the reference's time on the aligned
	// size next to it, where the reference itself takes its fast path.
	Against map[string]string `yaml:"against"`
	Reps    int               `yaml:"reps"`

	line int
}

// ReferenceProblem is the problem on which the reference is timed for speed problem p.
func (sp *SpeedRule) ReferenceProblem(p string) string {
	if q, ok := sp.Against[p]; ok {
		return q
	}
	return p
}

// Grading defaults.
const (
	DefaultPassMark       = 0.6
	DefaultGradeRounds    = 3
	DefaultTotalTimeLimit = 30 * time.Minute
	DefaultSpeedReps      = 10
	DefaultFullWithin     = 1.2
	// MaxGradeTolerance is the largest relative tolerance a graded suite may have: an all-zeros
	// output has relative error 1, a constant one about 1 on inputs of mean zero.
	MaxGradeTolerance = 0.1
)

// SolutionMarker starts a solution region in an exercise file; EndSolutionMarker ends it.
const (
	SolutionMarker    = solution.Begin
	EndSolutionMarker = solution.End
)

// TestProblems lists the problem names of a test (problem and problems together).
func (t GradeTest) TestProblems() []string {
	var ps []string
	if t.Problem != "" {
		ps = append(ps, t.Problem)
	}
	return append(ps, t.Problems...)
}

// attachGradingLines records lines of the grading section's nodes for validation messages.
func (m *Manifest) attachGradingLines(doc *yaml.Node) {
	g := mapValue(doc, "grading")
	if g == nil || m.Grading == nil {
		return
	}
	m.Grading.line = g.Line
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "grading" {
			m.Grading.line = doc.Content[i].Line // the key's line, "grading:"
		}
	}
	exs := mapValue(g, "exercises")
	if exs == nil {
		return
	}
	for i, en := range exs.Content {
		if i >= len(m.Grading.Exercises) {
			break
		}
		ex := m.Grading.Exercises[i]
		ex.line = en.Line
		if ts := mapValue(en, "tests"); ts != nil {
			for j, tn := range ts.Content {
				if j < len(ex.Tests) {
					ex.Tests[j].line = tn.Line
				}
			}
		}
		if sp := mapValue(en, "speed"); sp != nil && ex.Speed != nil {
			ex.Speed.line = sp.Line
		}
	}
}

// findVariant resolves "variant" or "suite/variant".
func (m *Manifest) findVariant(name string) (*Variant, error) {
	if s, v, ok := strings.Cut(name, "/"); ok {
		su := m.Suite(s)
		if su == nil {
			return nil, fmt.Errorf("no suite %q", s)
		}
		if x := su.Variant(v); x != nil {
			return x, nil
		}
		return nil, fmt.Errorf("suite %s has no variant %q", s, v)
	}
	var found []*Variant
	for _, s := range m.Suites {
		if v := s.Variant(name); v != nil {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no variant %q", name)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("variant %q is in %d suites: write suite/variant", name, len(found))
}

func (m *Manifest) validateGrading() []error {
	g := m.Grading
	if g == nil {
		return nil
	}
	var errs []error
	at := func(line int, format string, args ...any) {
		if line == 0 {
			line = g.line
		}
		errs = append(errs, m.errAt(line, format, args...))
	}
	if g.PassMark == 0 {
		g.PassMark = DefaultPassMark
	}
	if g.PassMark < 0 || g.PassMark > 1 {
		at(g.line, "grading: pass_mark %g must be a fraction of the points, in (0, 1]", g.PassMark)
	}
	if g.Rounds == 0 {
		g.Rounds = DefaultGradeRounds
	}
	if g.Rounds < 1 || g.Rounds > 100 {
		at(g.line, "grading: rounds %d must be 1..100", g.Rounds)
	}
	if g.TimeLimit == 0 {
		g.TimeLimit = m.Timeout
	}
	if g.TotalTimeLimit == 0 {
		g.TotalTimeLimit = DefaultTotalTimeLimit
	}
	if g.TimeLimit < 0 || g.TotalTimeLimit < 0 {
		at(g.line, "grading: negative time limit")
	}
	if len(g.Exercises) == 0 {
		at(g.line, "grading: no exercises (list the variants a student writes)")
	}
	if g.Emulator.SMs < 0 || g.Emulator.SMs > 256 {
		at(g.line, "grading: emulator: sms %d must be 1..256", g.Emulator.SMs)
	}
	if sc := g.Emulator.Schedule; sc != "" && sc != ScheduleAdversarial && sc != SchedulePlain {
		at(g.line, "grading: emulator: schedule %q: want %s or %s", sc, ScheduleAdversarial, SchedulePlain)
	}
	seen := map[*Variant]bool{}
	for _, ex := range g.Exercises {
		v, err := m.findVariant(ex.Variant)
		if err != nil {
			at(ex.line, "grading: exercise %s: %v", ex.Variant, err)
			continue
		}
		ex.V = v
		s := v.Suite
		if !v.IsKernel() {
			at(ex.line, "grading: exercise %s is a library call; an exercise is a kernel file a student writes", ex.Variant)
		}
		if seen[v] {
			at(ex.line, "grading: exercise %s listed twice", ex.Variant)
		}
		seen[v] = true
		if s.Tolerance <= 0 || s.Tolerance > MaxGradeTolerance {
			at(s.line, "grading: suite %s has tolerance %g; a graded suite needs 0 < tolerance ≤ %g, or an all-zeros output (relative error 1) could pass",
				s.Name, s.Tolerance, MaxGradeTolerance)
		}
		if len(s.Problems.Grade) == 0 {
			at(s.line, "grading: suite %s has no problems.grade for exercise %s", s.Name, v.Name)
		}
		if ex.Reference != "" {
			r := s.Variant(ex.Reference)
			switch {
			case r == nil:
				at(ex.line, "grading: exercise %s: reference %q is not a variant of suite %s", v.Name, ex.Reference, s.Name)
			case r == v:
				at(ex.line, "grading: exercise %s: the reference must be another variant (the lab's own kernel for the same idea)", v.Name)
			default:
				ex.Ref = r
			}
		}
		if ex.Points == 0 {
			ex.Points = 1
		}
		if ex.Points < 0 {
			at(ex.line, "grading: exercise %s: negative points", v.Name)
		}
		grade := map[string]bool{}
		for _, p := range s.Problems.Grade {
			grade[p.Name] = true
		}
		for i := range ex.Tests {
			t := &ex.Tests[i]
			ps := t.TestProblems()
			if len(ps) == 1 && ps[0] == "all" {
				t.Problem, t.Problems = "", nil
				for _, p := range s.Problems.Grade {
					t.Problems = append(t.Problems, p.Name)
				}
				ps = t.TestProblems()
			}
			if len(ps) == 0 {
				at(t.line, "grading: exercise %s: a test needs problem or problems (names from problems.grade of suite %s)", v.Name, s.Name)
			}
			for _, p := range ps {
				if !grade[p] {
					at(t.line, "grading: exercise %s: problem %q is not in problems.grade of suite %s", v.Name, p, s.Name)
				}
			}
			if t.Points < 0 {
				at(t.line, "grading: exercise %s: negative points", v.Name)
			}
			if t.Points == 0 {
				t.Points = ex.Points
			}
			for _, r := range t.Ranks {
				if r < 1 || r > 64 {
					at(t.line, "grading: exercise %s: ranks %d must be 1..64", v.Name, r)
				}
			}
			if len(t.Ranks) > 0 && m.Ranks == nil {
				at(t.line, "grading: exercise %s: ranks is for labs of ranks (lab.yaml ranks:); this lab is one process", v.Name)
			}
			if t.Launches < 0 || t.Launches > 100 {
				at(t.line, "grading: exercise %s: launches %d must be 1..100", v.Name, t.Launches)
			}
			if len(t.Vary) > 0 && !t.Hidden {
				at(t.line, "grading: exercise %s: vary draws the shapes of a hidden test; mark the test hidden: true", v.Name)
			}
			known := s.paramKeys()
			for k, r := range t.Vary {
				if !known[k] {
					at(t.line, "grading: exercise %s: vary: %q is not a parameter of suite %s's problems", v.Name, k, s.Name)
				}
				if (len(r) != 2 && len(r) != 3) || r[0] > r[1] || (len(r) == 3 && r[2] < 1) {
					at(t.line, "grading: exercise %s: vary: %s: want [lo, hi] or [lo, hi, step] with lo ≤ hi and step ≥ 1", v.Name, k)
				}
			}
		}
		if sp := ex.Speed; sp != nil {
			if ex.Ref == nil {
				at(sp.line, "grading: exercise %s: speed needs a reference variant to compare with", v.Name)
			}
			if sp.Points <= 0 {
				at(sp.line, "grading: exercise %s: speed points must be positive", v.Name)
			}
			if sp.FullWithin == 0 {
				sp.FullWithin = DefaultFullWithin
			}
			if sp.FullWithin < 1 {
				at(sp.line, "grading: exercise %s: full_within %g must be at least 1 (a multiple of the reference time)", v.Name, sp.FullWithin)
			}
			if sp.Reps == 0 {
				sp.Reps = DefaultSpeedReps
			}
			if sp.Reps < 1 {
				at(sp.line, "grading: exercise %s: reps must be at least 1", v.Name)
			}
			if len(sp.Problems) == 0 {
				at(sp.line, "grading: exercise %s: speed needs problems (names from problems.gpu of suite %s)", v.Name, s.Name)
			}
			gpuSet := map[string]bool{}
			for _, p := range s.Problems.GPU {
				gpuSet[p.Name] = true
			}
			timed := map[string]bool{}
			for _, p := range sp.Problems {
				timed[p] = true
				if !gpuSet[p] {
					at(sp.line, "grading: exercise %s: speed problem %q is not in problems.gpu of suite %s", v.Name, p, s.Name)
				}
			}
			for p, q := range sp.Against {
				if !timed[p] {
					at(sp.line, "grading: exercise %s: against: %q is not one of the speed problems", v.Name, p)
				}
				if !gpuSet[q] {
					at(sp.line, "grading: exercise %s: against: reference problem %q is not in problems.gpu of suite %s", v.Name, q, s.Name)
				}
			}
		}
	}
	return errs
}

// VaryJob moves a grading job onto a shape nobody has seen: the job's problem (p) with each
// parameter of vary drawn from rng, carried in the job as a custom problem (Job.Custom).
func VaryJob(j Job, p Problem, vary map[string][]int64, rng *rand.Rand) Job {
	params := map[string]int64{}
	for k, v := range p.Params {
		params[k] = v
	}
	keys := make([]string, 0, len(vary))
	for k := range vary {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same draws for the same seed
	for _, k := range keys {
		r := vary[k]
		step := int64(1)
		if len(r) == 3 {
			step = r[2]
		}
		n := (r[1]-r[0])/step + 1
		params[k] = r[0] + rng.Int64N(n)*step
	}
	j.Custom = encodeParams(params)
	return j
}

// GradeSecrets lists what no sandboxed process of a grade may reach in the course tree at root:
// the reference solutions (every lab's exercises folder) and the reports' default folder.
func GradeSecrets(root string) []string {
	dirs, _ := filepath.Glob(filepath.Join(root, "labs", "*", "exercises"))
	return append(dirs, filepath.Join(root, "grade-report"))
}
