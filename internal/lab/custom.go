package lab

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Custom problems come from the command line (labrun 02 --shape 4096x14336x4096): an engineer's
// own shapes, checked and timed exactly like the built-in ones and recorded under a name that
// starts with "custom", so they never replace a built-in problem's results.

// CustomParser is implemented by drivers whose custom problems need more than integer
// parameters (lab 03's --tokens zipf:17480). It returns the problem for suite s, or an error
// that says what is accepted; a *NotApplicable error means the suite does not take these flags.
type CustomParser interface {
	ParseCustom(s *Suite, flags map[string]string) (Problem, error)
}

// NotApplicable says that a suite does not take a custom problem's flags.
type NotApplicable struct{ Reason string }

func (e *NotApplicable) Error() string { return e.Reason }

// customProblems builds the custom problem of every suite that accepts the flags.
func customProblems(m *Manifest, d Driver, flags map[string]string) (map[string]Problem, error) {
	out := map[string]Problem{}
	var why []string
	for _, s := range m.Suites {
		var p Problem
		var err error
		if cp, ok := d.(CustomParser); ok {
			p, err = cp.ParseCustom(s, flags)
		} else {
			p, err = parseCustom(s, flags)
		}
		if na, ok := err.(*NotApplicable); ok {
			why = append(why, fmt.Sprintf("%s: %s", s.Name, na.Reason))
			continue
		}
		if err == nil {
			err = checkCustom(d, s, p)
		}
		if err != nil {
			return nil, &UsageError{fmt.Sprintf("suite %s: %v", s.Name, err)}
		}
		p.Name = "custom " + customName(flags)
		out[s.Name] = p
	}
	if len(out) == 0 {
		return nil, &UsageError{fmt.Sprintf("no suite of lab %s takes %s:\n  %s", m.Name, describeFlags(flags), strings.Join(why, "\n  "))}
	}
	return out, nil
}

// ProblemChecker is implemented by drivers that can tell, before anything runs, whether a
// problem makes sense (a GEMM of 0 rows, a size past the kernels' 32-bit indices): a custom
// problem they refuse is refused at once, before a kernel is built or an entry written.
type ProblemChecker interface {
	CheckProblem(s *Suite, p Problem) error
}

// checkCustom refuses a custom problem whose parameters the suite cannot take: 0 where every one
// of its own problems has at least 1 (a size), or refused by the driver's own check.
func checkCustom(d Driver, s *Suite, p Problem) error {
	least := map[string]int64{}
	for _, set := range [][]Problem{s.Problems.GPU, s.Problems.Emu, s.Problems.Grade} {
		for _, q := range set {
			for k, v := range q.Params {
				if old, ok := least[k]; !ok || v < old {
					least[k] = v
				}
			}
		}
	}
	keys := make([]string, 0, len(p.Params))
	for k := range p.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if lo, ok := least[k]; ok && p.Params[k] < 1 && lo >= 1 {
			return fmt.Errorf("%s = %d: every problem of this suite has %s ≥ 1 (the smallest is %d); give a size of at least 1", k, p.Params[k], k, lo)
		}
	}
	if c, ok := d.(ProblemChecker); ok {
		return c.CheckProblem(s, p)
	}
	return nil
}

// parseCustom is the default: --shape AxBxC maps onto the suite's `shape:` keys, --param k=v
// sets any parameter, and any other flag (--bytes, --m, --experts...) sets the parameter of that
// name. Every parameter must be one the suite's built-in problems use.
func parseCustom(s *Suite, flags map[string]string) (Problem, error) {
	known := s.paramKeys()
	p := Problem{Params: map[string]int64{}}
	set := func(k, v string) error {
		if !known[k] {
			return &NotApplicable{fmt.Sprintf("takes no %s (its parameters: %s)", k, sortedKeys(known))}
		}
		x, err := ParseSize(v)
		if err != nil {
			return fmt.Errorf("--%s: %v", k, err)
		}
		if x < 0 {
			return fmt.Errorf("--%s: %d is negative", k, x)
		}
		p.Params[k] = x
		return nil
	}
	for _, flag := range sortedFlagNames(flags) {
		v := flags[flag]
		switch flag {
		case "shape":
			if len(s.Shape) == 0 {
				return p, &NotApplicable{"takes no --shape"}
			}
			dims := strings.Split(strings.ToLower(v), "x")
			if len(dims) != len(s.Shape) {
				return p, fmt.Errorf("--shape %s: give %d sizes separated by x (%s)", v, len(s.Shape), strings.Join(s.Shape, "x"))
			}
			for i, d := range dims {
				if err := set(s.Shape[i], d); err != nil {
					return p, err
				}
			}
		case "param":
			for _, kv := range strings.Split(v, ",") {
				k, val, ok := strings.Cut(kv, "=")
				if !ok {
					return p, fmt.Errorf("--param %s: write key=value (e.g. beta0=1)", kv)
				}
				if err := set(strings.TrimSpace(k), strings.TrimSpace(val)); err != nil {
					return p, err
				}
			}
		default:
			if err := set(flag, v); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// paramKeys lists the parameters the suite's built-in problems use.
func (s *Suite) paramKeys() map[string]bool {
	keys := map[string]bool{}
	for _, set := range [][]Problem{s.Problems.GPU, s.Problems.Emu, s.Problems.Grade} {
		for _, p := range set {
			for k := range p.Params {
				keys[k] = true
			}
		}
	}
	return keys
}

func sortedKeys(m map[string]bool) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func sortedFlagNames(flags map[string]string) []string {
	var ks []string
	for k := range flags {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// customName is the flags as typed, in a stable order: "shape=4096x14336x4096".
func customName(flags map[string]string) string {
	var parts []string
	for _, k := range sortedFlagNames(flags) {
		if k == "shape" {
			parts = append([]string{flags[k]}, parts...)
			continue
		}
		parts = append(parts, k+"="+flags[k])
	}
	return strings.Join(parts, " ")
}

func describeFlags(flags map[string]string) string {
	var parts []string
	for _, k := range sortedFlagNames(flags) {
		parts = append(parts, "--"+k+" "+flags[k])
	}
	return strings.Join(parts, " ")
}

// encodeParams writes parameters as "k=v,k=v" in key order; decodeParams reads them back.
func encodeParams(ps map[string]int64) string {
	keys := make([]string, 0, len(ps))
	for k := range ps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatInt(ps[k], 10)
	}
	return strings.Join(parts, ",")
}

func decodeParams(s string) map[string]int64 {
	ps := map[string]int64{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if x, err := strconv.ParseInt(v, 10, 64); err == nil {
				ps[k] = x
			}
		}
	}
	return ps
}
