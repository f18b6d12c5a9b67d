package grouped

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// ParseCustom builds a MoE problem from the command line:
//
//	labrun 03 --experts 128 --tokens zipf:17480 --k 7168 --n 2048
//
// --tokens is a row count, optionally with its distribution over the experts: uniform:N or
// zipf:N (Zipf exponent 1), zipf1.3:N (exponent 1.3). --param sets any other parameter
// (empty=4, seed=7). Suites without MoE problems do not take these flags.
func (Lab) ParseCustom(s *lab.Suite, flags map[string]string) (lab.Problem, error) {
	if !suiteHasMoE(s) {
		return lab.Problem{}, &lab.NotApplicable{Reason: "has no MoE problems (experts, tokens, n, k)"}
	}
	p := lab.Problem{Params: map[string]int64{}}
	for name, v := range flags {
		var err error
		switch name {
		case "experts", "n", "k":
			err = setInt(p.Params, name, v)
		case "tokens":
			err = parseTokens(p.Params, v)
		case lab.ParamFlag:
			err = lab.EachParam(v, "empty=4", func(k, val string) error { return setInt(p.Params, k, val) })
		default:
			return p, &lab.NotApplicable{Reason: fmt.Sprintf("takes --experts, --tokens, --n, --k and --param, not --%s", name)}
		}
		if err != nil {
			return p, err
		}
	}
	for _, need := range []string{ParamExperts, ParamTokens, "n", "k"} {
		if _, ok := p.Params[need]; !ok {
			return p, fmt.Errorf("a MoE problem needs --experts, --tokens, --n and --k (missing --%s)", need)
		}
	}
	_, err := GroupsOf(p) // the same validation as the built-in problems
	return p, err
}

func suiteHasMoE(s *lab.Suite) bool {
	return slices.ContainsFunc(s.Problems.All(), func(q lab.Problem) bool { return q.Params[ParamExperts] > 0 })
}

func setInt(params map[string]int64, key, v string) error {
	x, err := lab.ParseSize(v)
	if err != nil {
		return fmt.Errorf("--%s: %v", key, err)
	}
	if x < 0 {
		return fmt.Errorf("--%s: %d is negative", key, x)
	}
	params[key] = x
	return nil
}

// parseTokens reads N, uniform:N, zipf:N or zipfS:N (S the exponent, e.g. zipf1.2:17480).
func parseTokens(params map[string]int64, v string) error {
	dist, count, hasDist := strings.Cut(v, ":")
	if !hasDist {
		dist, count = "uniform", v
	}
	switch {
	case dist == "uniform":
		params[ParamDist] = DistUniform
	case strings.HasPrefix(dist, "zipf"):
		params[ParamDist] = DistZipf
		if exp := strings.TrimPrefix(dist, "zipf"); exp != "" {
			s, err := strconv.ParseFloat(exp, 64)
			if err != nil || s < 0 {
				return fmt.Errorf("--tokens %s: the Zipf exponent %q is not a number ≥ 0", v, exp)
			}
			params[ParamSkew] = int64(s*100 + 0.5)
		}
	default:
		return fmt.Errorf("--tokens %s: write N, uniform:N, zipf:N or zipf1.2:N", v)
	}
	return setInt(params, ParamTokens, count)
}
