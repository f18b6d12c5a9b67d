package grouped

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// MaxGroups is the most groups a kernel schedules (KL_GROUPED_MAX_GROUPS in grouped_sched.cuh:
// the prefix sums live in shared memory).
const MaxGroups = 1024

// Shape is one group: C (M×N) = A (M×K) · B (K×N), row-major.
type Shape struct{ M, N, K int }

// Empty reports whether the group has no output.
func (s Shape) Empty() bool { return s.M == 0 || s.N == 0 }

// FLOPs is 2·M·N·K.
func (s Shape) FLOPs() float64 { return 2 * float64(s.M) * float64(s.N) * float64(s.K) }

func (s Shape) String() string { return fmt.Sprintf("%d×%d×%d", s.M, s.N, s.K) }

// Problem parameters (lab.yaml). A problem is a list of groups, given one of two ways:
//
// Explicit groups: g (the number of groups) and, for each group i, mI (rows), nI and kI; a
// missing nI or kI takes the shared n or k. Four square GEMMs: {g: 4, m0: 128, n0: 128, k0: 128,
// m1: 256, ...}; four M×8192×8192: {g: 4, m0: 128, m1: 256, m2: 512, m3: 1024, n: 8192, k: 8192}.
//
// A mixture-of-experts layer: experts (E), tokens (T, the rows routed in total: tokens × top-k),
// n and k (every expert multiplies its rows, K wide, by its own K×N weights), and how the rows
// are spread over the experts:
//
//	dist   0 uniform (T/E each, the remainder to the first experts), 1 Zipf-like: expert of rank r
//	       gets a share ∝ 1/r^s, the ranks shuffled over the experts
//	skew   s × 100 for dist 1 (default 100, s = 1)
//	empty  how many experts receive no token at all (chosen at random; default 0)
//	seed   the seed of those random choices (default 1): the sizes are a property of the problem,
//	       the same in every run, while the matrices' values change from run to run
//
// The sizes are rounded so that they add up to T exactly (largest remainders).
const (
	ParamGroups  = "g"
	ParamExperts = "experts"
	ParamTokens  = "tokens"
	ParamDist    = "dist"
	ParamSkew    = "skew"
	ParamEmpty   = "empty"
	ParamSeed    = "seed"
)

// Distributions of tokens over experts.
const (
	DistUniform = 0
	DistZipf    = 1
)

// GroupsOf decodes a problem's groups and checks them.
func GroupsOf(p lab.Problem) ([]Shape, error) {
	var shapes []Shape
	_, explicit := p.Params[ParamGroups]
	_, moe := p.Params[ParamExperts]
	n, k := p.Int("n", -1), p.Int("k", -1)
	switch {
	case explicit && moe:
		return nil, fmt.Errorf("problem %q: give either g (explicit groups) or experts (a MoE layer), not both", p.Name)
	case explicit:
		g := int(p.Int(ParamGroups, 0))
		if g < 1 || g > MaxGroups {
			return nil, fmt.Errorf("problem %q: g=%d groups, must be 1..%d", p.Name, g, MaxGroups)
		}
		for i := 0; i < g; i++ {
			mi, ni, ki := fmt.Sprintf("m%d", i), fmt.Sprintf("n%d", i), fmt.Sprintf("k%d", i)
			m, ok := p.Params[mi]
			if !ok {
				return nil, fmt.Errorf("problem %q: group %d has no %s (rows)", p.Name, i, mi)
			}
			s := Shape{M: int(m), N: int(p.Int(ni, n)), K: int(p.Int(ki, k))}
			if s.N < 0 || s.K < 0 {
				return nil, fmt.Errorf("problem %q: group %d needs %s or n, and %s or k", p.Name, i, ni, ki)
			}
			shapes = append(shapes, s)
		}
	case moe:
		e, t := int(p.Int(ParamExperts, 0)), p.Int(ParamTokens, -1)
		if e < 1 || e > MaxGroups {
			return nil, fmt.Errorf("problem %q: experts=%d, must be 1..%d", p.Name, e, MaxGroups)
		}
		if t < 0 || n < 0 || k < 0 {
			return nil, fmt.Errorf("problem %q: a MoE problem needs tokens, n and k", p.Name)
		}
		rows, err := ExpertRows(e, int(t), int(p.Int(ParamDist, DistUniform)), float64(p.Int(ParamSkew, 100))/100,
			int(p.Int(ParamEmpty, 0)), uint64(p.Int(ParamSeed, 1)))
		if err != nil {
			return nil, fmt.Errorf("problem %q: %w", p.Name, err)
		}
		for _, m := range rows {
			shapes = append(shapes, Shape{M: m, N: int(n), K: int(k)})
		}
	default:
		return nil, fmt.Errorf("problem %q: set g and m0.. (explicit groups) or experts, tokens, n, k (a MoE layer)", p.Name)
	}
	for i, s := range shapes {
		if s.M < 0 || s.N < 0 || s.K < 1 {
			return nil, fmt.Errorf("problem %q: group %d is %s: M and N must be at least 0 and K at least 1", p.Name, i, s)
		}
		for _, e := range [][2]int{{s.M, s.K}, {s.K, s.N}, {s.M, s.N}} {
			if int64(e[0])*int64(e[1]) >= 1<<31 {
				return nil, fmt.Errorf("problem %q: group %d (%s) has a %d×%d matrix of 2^31 elements or more", p.Name, i, s, e[0], e[1])
			}
		}
	}
	return shapes, nil
}

// ExpertRows spreads t token rows over e experts (see the problem parameters above).
func ExpertRows(e, t, dist int, skew float64, empty int, seed uint64) ([]int, error) {
	if empty < 0 || empty > e || (empty == e && t > 0) {
		return nil, fmt.Errorf("empty=%d experts without tokens: must be 0..%d (some expert must take the %d rows)", empty, e-1, t)
	}
	r := rand.New(rand.NewPCG(seed, 0x4d6f45)) // "MoE"
	weights := make([]float64, e)
	switch dist {
	case DistUniform:
		for i := range weights {
			weights[i] = 1
		}
	case DistZipf:
		if skew < 0 || skew > 10 {
			return nil, fmt.Errorf("skew=%g: the Zipf exponent must be 0..10", skew)
		}
		for i, rank := range r.Perm(e) {
			weights[i] = math.Pow(float64(rank+1), -skew)
		}
	default:
		return nil, fmt.Errorf("dist=%d: 0 (uniform) or 1 (Zipf)", dist)
	}
	for _, i := range r.Perm(e)[:empty] {
		weights[i] = 0
	}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	rows := make([]int, e)
	if t == 0 {
		return rows, nil
	}
	// Each expert's share rounded down; the rows left go to the largest remainders (uniform: all
	// remainders are equal, so to the first experts).
	frac := make([]float64, e)
	var takers []int // the experts with a share, by decreasing remainder
	given := 0
	for i, w := range weights {
		exact := float64(t) * w / sum
		rows[i] = int(math.Floor(exact))
		frac[i] = exact - float64(rows[i])
		given += rows[i]
		if w > 0 {
			takers = append(takers, i)
		}
	}
	sort.SliceStable(takers, func(a, b int) bool { return frac[takers[a]] > frac[takers[b]] })
	for j := 0; given < t; j++ {
		rows[takers[j%len(takers)]]++
		given++
	}
	return rows, nil
}

// SharedNK reports whether every group has the same N and K: then the groups are the experts of a
// MoE layer, one token matrix (T×K) with row offsets, one stack of weights (E×K×N).
func SharedNK(shapes []Shape) bool {
	for _, s := range shapes[1:] {
		if s.N != shapes[0].N || s.K != shapes[0].K {
			return false
		}
	}
	return len(shapes) > 0
}

// GroupsLine is the groups in one line, for messages: "64 groups, M 96..242 (2 empty), N 1408, K 2048".
func GroupsLine(shapes []Shape) string {
	minM, maxM, empty := math.MaxInt, 0, 0
	for _, s := range shapes {
		minM, maxM = min(minM, s.M), max(maxM, s.M)
		if s.Empty() {
			empty++
		}
	}
	out := fmt.Sprintf("%d groups, M %d..%d", len(shapes), minM, maxM)
	if empty > 0 {
		out += fmt.Sprintf(" (%d empty)", empty)
	}
	if SharedNK(shapes) {
		return out + fmt.Sprintf(", N %d, K %d", shapes[0].N, shapes[0].K)
	}
	return out + ", N and K per group"
}
