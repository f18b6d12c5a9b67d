package grouped

import (
	"cmp"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// Layout places the matrices of all groups in three arenas, one device allocation each for A, B
// and C, as a real MoE layer keeps them:
//
//   - When every group has the same N and K (the experts of a MoE layer), the arenas are exactly
//     the token matrix X (T×K, the groups' rows one after the other), the weights W (E×K×N) and
//     the output Y (T×N), with no gaps: the MoE-form kernels and the single dense GEMM use them
//     as such, the grouped-form kernels through per-group pointers into them.
//   - Otherwise each matrix starts on a 256-byte boundary, and after each group's C come at least
//     64 bytes that belong to no group.
//
// C ends with 256 bytes that belong to no group either. Those gaps are canaries: the engine
// poisons the whole C arena with NaN bytes before the checked run, and Check fails a kernel that wrote anywhere outside its groups —
// an empty group's tiles, a tile's rows past the end of its group.
type Layout struct {
	Shapes           []Shape
	A, B, C          []int64 // element offset of each group's matrices in their arenas
	ALen, BLen, CLen int64   // arena lengths in elements
	MoE              bool    // shared N and K: X, W, Y with row offsets
	Offsets          []int32 // MoE: offs[0..E], the first row of each expert
	Canaries         [][2]int64
}

const (
	alignBytes  = 256
	gapBytes    = 64
	canaryBytes = 256
)

// NewLayout lays out the groups for elements of elemBytes (A, B and C are all in the suite's
// precision).
func NewLayout(shapes []Shape, elemBytes int) Layout {
	n := len(shapes)
	l := Layout{Shapes: shapes, MoE: SharedNK(shapes), A: make([]int64, n), B: make([]int64, n), C: make([]int64, n)}
	// A MoE layer's matrices lie back to back; other groups' are aligned, with a gap after each C.
	align, gap := func(x int64) int64 { return x }, int64(0)
	if !l.MoE {
		align = func(x int64) int64 {
			a := int64(alignBytes / elemBytes)
			return (x + a - 1) / a * a
		}
		gap = int64(gapBytes / elemBytes)
	}
	var a, b, c, end int64 // end: where the previous group's C ends
	if l.MoE {
		l.Offsets = []int32{0}
	}
	for i, s := range shapes {
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

// Rows is the number of rows of all groups together (T of a MoE layer).
func (l Layout) Rows() int {
	t := 0
	for _, s := range l.Shapes {
		t += s.M
	}
	return t
}

// Dense is the one GEMM of the same FLOPs as the groups (MoE form only, shared N and K): the
// token matrix X (T×K) by one K×N matrix, W_0 — what the dense variant (LibDense) computes.
func (l Layout) Dense() Shape { return Shape{M: l.Rows(), N: l.Shapes[0].N, K: l.Shapes[0].K} }

// GroupDescBytes is the size of one kl_group (grouped_sched.cuh): three pointers, six ints.
const GroupDescBytes = 48

// EncodeGroups writes the kl_group array of the groups in the given order, with the arenas at
// bases aBase, bBase, cBase (device addresses) and elements of elemBytes: per group the three
// pointers, then the six int32 M, N, K, lda, ldb, ldc, two to a little-endian word.
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

// NaturalOrder is 0, 1, ..., G-1.
func NaturalOrder(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = i
	}
	return o
}

// LongestFirst orders the groups by decreasing cost of one tile (K: every tile of a group does
// tile_m·tile_n·K multiply-adds), larger groups first among equals: list scheduling's "longest
// processing time first", which lets the short tiles fill the tail.
func LongestFirst(shapes []Shape) []int {
	o := NaturalOrder(len(shapes))
	slices.SortStableFunc(o, func(a, b int) int {
		sa, sb := shapes[a], shapes[b]
		return cmp.Or(cmp.Compare(sb.K, sa.K), cmp.Compare(int64(sb.M)*int64(sb.N), int64(sa.M)*int64(sa.N)))
	})
	return o
}

// Tiles is the number of bm×bn tiles of a group (none for an empty one).
func Tiles(s Shape, bm, bn int) int { return lab.CeilDiv(s.M, bm) * lab.CeilDiv(s.N, bn) }

// TotalTiles is the number of tiles of all groups.
func TotalTiles(shapes []Shape, bm, bn int) int {
	t := 0
	for _, s := range shapes {
		t += Tiles(s, bm, bn)
	}
	return t
}
