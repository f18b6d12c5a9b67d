package lab

import (
	"fmt"
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

	line int
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

	line int
}

// SpeedRule grades speed against the reference variant, on a GPU only.
type SpeedRule struct {
	Points     float64  `yaml:"points"`
	FullWithin float64  `yaml:"full_within"`
	Problems   []string `yaml:"problems"`
	Reps       int      `yaml:"reps"`

	line int
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
			for _, p := range sp.Problems {
				if !gpuSet[p] {
					at(sp.line, "grading: exercise %s: speed problem %q is not in problems.gpu of suite %s", v.Name, p, s.Name)
				}
			}
		}
	}
	return errs
}
