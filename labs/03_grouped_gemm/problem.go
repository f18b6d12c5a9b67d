package grouped

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// MaxGroups is the most groups a kernel schedules (KL_GROUPED_MAX_GROUPS in grouped_sched.cuh:
// the prefix sums live in shared memory).
const MaxGroups = 1024

// Shape is one group: C (M×N) = A (M×K) · B (K×N), row-major.
type Shape struct{ M, N, K int }

// Empty reports whether the group has no output.
func (s Shape) Empty() bool { return s.M == 0 || s.N == 0 }

func (s Shape) FLOPs() float64 { return 2 * float64(s.M) * float64(s.N) * float64(s.K) }

func (s Shape) String() string { return fmt.Sprintf("%d×%d×%d", s.M, s.N, s.K) }

// Tiles is the number of bm×bn tiles of the group (none for an empty one).
func (s Shape) Tiles(bm, bn int) int { return lab.CeilDiv(s.M, bm) * lab.CeilDiv(s.N, bn) }

// Problem parameters (lab.yaml). A problem is a list of groups, given one of two ways:
//   - explicit: g groups, group i with mI rows and nI, kI (or the shared n, k): {g: 4, m0: 128,
//     m1: 256, m2: 512, m3: 1024, n: 8192, k: 8192};
//   - a MoE layer: experts E, tokens T (the rows routed in all: tokens × top-k), n and k (each
//     expert multiplies its rows, K wide, by its own K×N weights), the rows spread over the
//     experts by dist (0 uniform: T/E each, the remainder to the first experts; 1 Zipf-like: the
//     expert of rank r gets a share ∝ 1/r^s, the ranks shuffled), skew (s × 100, default 100),
//     empty (how many experts, chosen at random, get no token; default 0) and seed (of those
//     choices, default 1: the sizes are a property of the problem, the same in every run, while
//     the values change from run to run). The sizes add up to T exactly (largest remainders).
const (
	ParamGroups, ParamExperts, ParamTokens = "g", "experts", "tokens"
	DistUniform, DistZipf                  = 0, 1 // dist: how the tokens spread over the experts
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
		rows, err := ExpertRows(e, int(t), int(p.Int("dist", DistUniform)), float64(p.Int("skew", 100))/100,
			int(p.Int("empty", 0)), uint64(p.Int("seed", 1)))
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
		weights = slices.Repeat([]float64{1}, e)
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
	return lab.Apportion(t, weights), nil // the sizes add up to t exactly
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

// Layout places the matrices of all groups in three arenas, one device allocation each for A, B
// and C. When every group has the same N and K, they are exactly the token matrix X (T×K), the
// weights W (E×K×N) and the output Y (T×N), with no gaps. Otherwise each matrix starts on a
// 256-byte boundary, and at least 64 bytes after each group's C, and 256 at the end, belong to no
// group: canaries, which must keep the NaN poison (an empty group's tiles or rows past the end of
// a group would overwrite them).
type Layout struct {
	Shapes           []Shape
	A, B, C          []int64 // element offset of each group's matrices in their arenas
	ALen, BLen, CLen int64   // arena lengths in elements
	MoE              bool    // shared N and K: X, W, Y with row offsets
	Offsets          []int32 // MoE: offs[0..E], the first row of each expert
	Canaries         [][2]int64
	Rows             int // of all groups together (T of a MoE layer)
}

const alignBytes, gapBytes, canaryBytes = 256, 64, 256

// NewLayout lays out the groups for elements of elemBytes (A, B and C alike).
func NewLayout(shapes []Shape, elemBytes int) Layout {
	n := len(shapes)
	l := Layout{Shapes: shapes, MoE: SharedNK(shapes), A: make([]int64, n), B: make([]int64, n), C: make([]int64, n)}
	// A MoE layer's matrices lie back to back; other groups' are aligned, with a gap after each C.
	al, gap := int64(1), int64(0)
	if !l.MoE {
		al, gap = int64(alignBytes/elemBytes), int64(gapBytes/elemBytes)
	} else {
		l.Offsets = []int32{0}
	}
	align := func(x int64) int64 { return (x + al - 1) / al * al }
	var a, b, c, end int64 // end: where the previous group's C ends
	for i, s := range shapes {
		l.Rows += s.M
		l.A[i], l.B[i], l.C[i] = align(a), align(b), align(c)
		if l.C[i] > end { // the canaries are everything of C outside the groups (which lie in order)
			l.Canaries = append(l.Canaries, [2]int64{end, l.C[i]})
		}
		a, b, end = l.A[i]+int64(s.M)*int64(s.K), l.B[i]+int64(s.K)*int64(s.N), l.C[i]+int64(s.M)*int64(s.N)
		c = end + gap // at least gap belongs to no group
		if l.MoE {
			l.Offsets = append(l.Offsets, l.Offsets[i]+int32(s.M))
		}
	}
	l.ALen, l.BLen, l.CLen = a, b, align(c)+int64(canaryBytes/elemBytes)
	l.Canaries = append(l.Canaries, [2]int64{end, l.CLen})
	return l
}

// ReadB is the element ranges of the B arena that a variant reads: the groups with rows, and the
// first group's matrix in the MoE form, which the dense variant multiplies whatever its rows.
func (l Layout) ReadB() lab.Ranges {
	var r lab.Ranges
	for g, s := range l.Shapes {
		if !s.Empty() || (g == 0 && l.MoE) {
			r.Add(l.B[g], int64(s.K)*int64(s.N))
		}
	}
	return r
}

// Dense is the one GEMM of the same FLOPs as the groups (MoE form only, shared N and K): the
// token matrix X (T×K) by one K×N matrix, W_0 — what the dense variant (LibDense) computes.
func (l Layout) Dense() Shape { return Shape{M: l.Rows, N: l.Shapes[0].N, K: l.Shapes[0].K} }

// GroupDescBytes is the size of one kl_group (grouped_sched.cuh): three pointers, six ints.
const GroupDescBytes = 48

// EncodeGroups writes the kl_group array of the groups in the given order, the arenas at device
// addresses aBase, bBase, cBase: three pointers, then M, N, K, lda, ldb, ldc, two int32 a word.
func (l Layout) EncodeGroups(order []int, aBase, bBase, cBase uint64, elemBytes int) []uint64 {
	pair := func(lo, hi int) uint64 { return uint64(uint32(lo)) | uint64(uint32(hi))<<32 }
	out, e := make([]uint64, 0, len(order)*GroupDescBytes/8), uint64(elemBytes)
	for _, g := range order {
		s := l.Shapes[g]
		out = append(out, aBase+uint64(l.A[g])*e, bBase+uint64(l.B[g])*e, cBase+uint64(l.C[g])*e,
			pair(s.M, s.N), pair(s.K, s.K), pair(s.N, s.N))
	}
	return out
}

// LongestFirst orders the groups by decreasing cost of one tile (K), larger groups first among
// equals: list scheduling's "longest processing time first", which lets short tiles fill the tail.
func LongestFirst(shapes []Shape) []int {
	o := make([]int, len(shapes))
	for i := range o {
		o[i] = i
	}
	slices.SortStableFunc(o, func(a, b int) int {
		sa, sb := shapes[a], shapes[b]
		return cmp.Or(cmp.Compare(sb.K, sa.K), cmp.Compare(int64(sb.M)*int64(sb.N), int64(sa.M)*int64(sa.N)))
	})
	return o
}

// ParseCustom builds a MoE problem from the command line (labrun 03 --experts 128 --tokens
// zipf:17480 --k 7168 --n 2048; --tokens N, uniform:N, zipf:N or zipf1.3:N, the Zipf exponent 1.3).
// --param sets any other parameter (empty=4, seed=7). Suites without MoE problems take none.
func (Lab) ParseCustom(s *lab.Suite, flags map[string]string) (lab.Problem, error) {
	if !slices.ContainsFunc(s.Problems.All(), func(q lab.Problem) bool { return q.Params[ParamExperts] > 0 }) {
		return lab.Problem{}, &lab.NotApplicable{Reason: "has no MoE problems (experts, tokens, n, k)"}
	}
	p := lab.Problem{Params: map[string]int64{}}
	set := func(key, v string) error {
		x, err := lab.ParseSize(v)
		if err != nil {
			return fmt.Errorf("--%s: %v", key, err)
		}
		if x < 0 {
			return fmt.Errorf("--%s: %d is negative", key, x)
		}
		p.Params[key] = x
		return nil
	}
	for name, v := range flags {
		var err error
		switch name {
		case "experts", "n", "k":
			err = set(name, v)
		case "tokens":
			err = parseTokens(p.Params, v, set)
		case lab.ParamFlag:
			err = lab.EachParam(v, "empty=4", set)
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

// parseTokens reads N, uniform:N, zipf:N or zipfS:N (S the exponent, e.g. zipf1.2:17480).
func parseTokens(params map[string]int64, v string, set func(key, v string) error) error {
	dist, count, hasDist := strings.Cut(v, ":")
	if !hasDist {
		dist, count = "uniform", v
	}
	switch {
	case dist == "uniform":
		params["dist"] = DistUniform
	case strings.HasPrefix(dist, "zipf"):
		params["dist"] = DistZipf
		if exp := strings.TrimPrefix(dist, "zipf"); exp != "" {
			s, err := strconv.ParseFloat(exp, 64)
			if err != nil || s < 0 {
				return fmt.Errorf("--tokens %s: the Zipf exponent %q is not a number ≥ 0", v, exp)
			}
			params["skew"] = int64(s*100 + 0.5)
		}
	default:
		return fmt.Errorf("--tokens %s: write N, uniform:N, zipf:N or zipf1.2:N", v)
	}
	return set(ParamTokens, count)
}
