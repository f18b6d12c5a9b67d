package lab

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Custom problems come from the command line (labrun 02 --shape 4096x14336x4096): an engineer's
// own shapes, checked and timed exactly like the built-in ones and recorded under a name that
// starts with "custom", so they never replace a built-in problem's results. Each lab declares its
// flags in lab.yaml (custom_flags); --param KEY=VALUE, which sets any parameter, is every lab's.

// CustomFlag is one flag of `labrun NN` that makes a custom problem, as lab.yaml declares it:
//
//	custom_flags:
//	  - name: shape
//	    help: {en: "M x N x K of a custom GEMM, e.g. 4096x14336x4096"}
//	    sets: [m, n, k]
//
// The flag's value is one size per parameter it sets, joined by x (4096x14336x4096); a suite
// takes the flag when its built-in problems use every one of those parameters. A driver that
// implements CustomParser reads the values itself (lab 03's --tokens zipf:17480).
type CustomFlag struct {
	Name string   `yaml:"name"` // the flag without its dashes
	Help Text     `yaml:"help"` // one line for labrun NN --help (the CLI speaks English: en is needed)
	Sets []string `yaml:"sets"` // the problem parameters it sets

	line int
}

// ParamFlag is the custom-problem flag every lab has: --param KEY=VALUE sets any parameter.
const ParamFlag = "param"

var customFlagRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// validateCustomFlags checks custom_flags: a flag name once, help in English, and parameters
// that some suite's problems use (else the flag could never apply).
func (m *Manifest) validateCustomFlags() []error {
	var errs []error
	used := map[string]bool{}
	for _, s := range m.Suites {
		for k := range s.paramKeys() {
			used[k] = true
		}
	}
	seen := map[string]bool{}
	for _, f := range m.CustomFlags {
		switch {
		case !customFlagRE.MatchString(f.Name):
			errs = append(errs, m.errAt(f.line, "custom flag %q: a name is lower-case letters, digits and -, starting with a letter", f.Name))
		case f.Name == ParamFlag:
			errs = append(errs, m.errAt(f.line, "custom flag --%s is every lab's already (it sets any parameter): remove it", f.Name))
		case seen[f.Name]:
			errs = append(errs, m.errAt(f.line, "custom flag --%s declared twice", f.Name))
		}
		seen[f.Name] = true
		if f.Help.EN == "" {
			errs = append(errs, m.errAt(f.line, "custom flag --%s: give help: {en: ...}, the line labrun %s --help shows", f.Name, m.ID))
		}
		if len(f.Sets) == 0 {
			errs = append(errs, m.errAt(f.line, "custom flag --%s: sets: lists the problem parameters it sets, e.g. [m, n, k]", f.Name))
		}
		for _, p := range f.Sets {
			if !used[p] {
				errs = append(errs, m.errAt(f.line, "custom flag --%s sets %s, which no problem of the lab has (its parameters: %s)",
					f.Name, p, sortedKeys(used)))
			}
		}
	}
	return errs
}

// CustomFlag finds a declared custom-problem flag by name.
func (m *Manifest) CustomFlag(name string) *CustomFlag {
	return byName(m.CustomFlags, name, func(f *CustomFlag) string { return f.Name })
}

// CheckCustomFlagNames refuses a custom flag whose name the command already uses (taken), at
// its line of lab.yaml.
func (m *Manifest) CheckCustomFlagNames(command string, taken func(name string) bool) error {
	var errs []error
	for _, f := range m.CustomFlags {
		if taken(f.Name) {
			errs = append(errs, m.errAt(f.line, "custom flag --%s is a flag of labrun %s already: give it another name", f.Name, command))
		}
	}
	return errors.Join(errs...)
}

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
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if name != ParamFlag && m.CustomFlag(name) == nil {
			declared := "none"
			if len(m.CustomFlags) > 0 {
				var known []string
				for _, f := range m.CustomFlags {
					known = append(known, "--"+f.Name)
				}
				declared = strings.Join(known, ", ") + " and no other"
			}
			return nil, &UsageError{fmt.Sprintf("lab %s takes no --%s for a custom problem (custom_flags in its lab.yaml: %s; --param KEY=VALUE sets any parameter)",
				m.Name, name, declared)}
		}
	}
	out := map[string]Problem{}
	var why []string
	for _, s := range m.Suites {
		var p Problem
		var err error
		if cp, ok := d.(CustomParser); ok {
			p, err = cp.ParseCustom(s, flags)
		} else {
			p, err = parseCustom(m, s, flags)
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
		p.Name = "custom " + customName(m, flags)
		out[s.Name] = p
	}
	if len(out) == 0 {
		return nil, &UsageError{fmt.Sprintf("no suite of lab %s takes %s:\n  %s", m.Name, flagsAsTyped(flags), strings.Join(why, "\n  "))}
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
	for _, q := range s.Problems.All() {
		for k, v := range q.Params {
			if old, ok := least[k]; !ok || v < old {
				least[k] = v
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Params)) {
		if lo, ok := least[k]; ok && p.Params[k] < 1 && lo >= 1 {
			return fmt.Errorf("%s = %d: every problem of this suite has %s ≥ 1 (the smallest is %d); give a size of at least 1", k, p.Params[k], k, lo)
		}
	}
	if c, ok := d.(ProblemChecker); ok {
		return c.CheckProblem(s, p)
	}
	return nil
}

// parseCustom is the default: each declared flag sets its parameters (one size each, joined by
// x), and --param k=v sets any parameter. Every parameter must be one the suite's built-in
// problems use.
func parseCustom(m *Manifest, s *Suite, flags map[string]string) (Problem, error) {
	known := s.paramKeys()
	p := Problem{Params: map[string]int64{}}
	set := func(flag, k, v string) error {
		if !known[k] {
			return &NotApplicable{fmt.Sprintf("takes no %s (its parameters: %s)", k, sortedKeys(known))}
		}
		x, err := ParseSize(v)
		if err != nil {
			return fmt.Errorf("--%s: %v", flag, err)
		}
		if x < 0 {
			return fmt.Errorf("--%s: %s = %d is negative", flag, k, x)
		}
		p.Params[k] = x
		return nil
	}
	for _, flag := range slices.Sorted(maps.Keys(flags)) {
		v := flags[flag]
		if flag == ParamFlag {
			if err := EachParam(v, "beta0=1", func(k, val string) error { return set(flag, k, val) }); err != nil {
				return p, err
			}
			continue
		}
		f := m.CustomFlag(flag)
		for _, k := range f.Sets {
			if !known[k] {
				return p, &NotApplicable{fmt.Sprintf("takes no --%s (it has no %s)", flag, k)}
			}
		}
		sizes := []string{v}
		if len(f.Sets) > 1 {
			sizes = strings.Split(strings.ToLower(v), "x")
			if len(sizes) != len(f.Sets) {
				return p, fmt.Errorf("--%s %s: give %d sizes separated by x (%s)", flag, v, len(f.Sets), strings.Join(f.Sets, " x "))
			}
		}
		for i, k := range f.Sets {
			if err := set(flag, k, sizes[i]); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// EachParam calls set with each KEY=VALUE of a --param value v (labrun joins the repeated flag
// with commas), key and value trimmed; a pair without = is refused with a lab's own example pair.
// parseCustom reads --param so, and so does a CustomParser (lab 03's).
func EachParam(v, example string, set func(key, val string) error) error {
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--param %s: write key=value (e.g. %s)", kv, example)
		}
		if err := set(strings.TrimSpace(k), strings.TrimSpace(val)); err != nil {
			return err
		}
	}
	return nil
}

// paramKeys lists the parameters the suite's built-in problems use.
func (s *Suite) paramKeys() map[string]bool {
	keys := map[string]bool{}
	for _, p := range s.Problems.All() {
		for k := range p.Params {
			keys[k] = true
		}
	}
	return keys
}

func sortedKeys(m map[string]bool) string { return strings.Join(slices.Sorted(maps.Keys(m)), ", ") }

// customName is the flags as typed, in a stable order: "4096x14336x4096 param=beta0=1". A flag
// that sets several parameters reads as a shape, so it is written first, without its name.
func customName(m *Manifest, flags map[string]string) string {
	var shapes, parts []string
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		if f := m.CustomFlag(k); f != nil && len(f.Sets) > 1 {
			shapes = append(shapes, flags[k])
			continue
		}
		parts = append(parts, k+"="+flags[k])
	}
	return strings.Join(append(shapes, parts...), " ")
}

func flagsAsTyped(flags map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		parts = append(parts, "--"+k+" "+flags[k])
	}
	return strings.Join(parts, " ")
}

// encodeParams writes parameters as "k=v,k=v" in key order; decodeParams reads them back.
func encodeParams(ps map[string]int64) string {
	keys := slices.Sorted(maps.Keys(ps))
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
