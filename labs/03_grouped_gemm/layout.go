package grouped

import (
	"encoding/binary"
	"sort"

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

// NewLayout lays out the groups for inputs of inBytes and outputs of outBytes per element.
func NewLayout(shapes []Shape, inBytes, outBytes int) Layout {
	l := Layout{Shapes: shapes, MoE: SharedNK(shapes)}
	n := len(shapes)
	l.A, l.B, l.C = make([]int64, n), make([]int64, n), make([]int64, n)
	if l.MoE {
		l.Offsets = make([]int32, n+1)
		var rows int64
		for i, s := range shapes {
			l.Offsets[i] = int32(rows)
			l.A[i] = rows * int64(s.K)
			l.C[i] = rows * int64(s.N)
			l.B[i] = int64(i) * int64(s.K) * int64(s.N)
			rows += int64(s.M)
		}
		l.Offsets[n] = int32(rows)
		l.ALen = rows * int64(shapes[0].K)
		l.BLen = int64(n) * int64(shapes[0].K) * int64(shapes[0].N)
		end := rows * int64(shapes[0].N)
		tail := int64(canaryBytes / outBytes)
		l.CLen = end + tail
		l.Canaries = [][2]int64{{end, end + tail}}
		return l
	}
	align := func(x int64, elem int) int64 {
		a := int64(alignBytes / elem)
		return (x + a - 1) / a * a
	}
	var a, b, c int64
	for i, s := range shapes {
		l.A[i], l.B[i], l.C[i] = align(a, inBytes), align(b, inBytes), align(c, outBytes)
		a = l.A[i] + int64(s.M)*int64(s.K)
		b = l.B[i] + int64(s.K)*int64(s.N)
		c = l.C[i] + int64(s.M)*int64(s.N)
		c += int64(gapBytes / outBytes) // at least this much belongs to no group
	}
	l.ALen, l.BLen = a, b
	l.CLen = align(c, outBytes) + int64(canaryBytes/outBytes)
	// The canaries are everything of C outside the groups.
	type span struct{ lo, hi int64 }
	spans := make([]span, 0, n)
	for i, s := range shapes {
		spans = append(spans, span{l.C[i], l.C[i] + int64(s.M)*int64(s.N)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	pos := int64(0)
	for _, sp := range spans {
		if sp.lo > pos {
			l.Canaries = append(l.Canaries, [2]int64{pos, sp.lo})
		}
		pos = max(pos, sp.hi)
	}
	if pos < l.CLen {
		l.Canaries = append(l.Canaries, [2]int64{pos, l.CLen})
	}
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

// GroupDescBytes is the size of one kl_group (grouped_sched.cuh): three pointers, six ints.
const GroupDescBytes = 48

// EncodeGroups writes the kl_group array of the groups in the given order, with the arenas at
// bases aBase, bBase, cBase (device addresses) and elements of inBytes and outBytes.
func (l Layout) EncodeGroups(order []int, aBase, bBase, cBase uint64, inBytes, outBytes int) []uint64 {
	out := make([]uint64, 0, len(order)*GroupDescBytes/8)
	le := binary.LittleEndian
	var buf [GroupDescBytes]byte
	for _, g := range order {
		s := l.Shapes[g]
		le.PutUint64(buf[0:], aBase+uint64(l.A[g])*uint64(inBytes))
		le.PutUint64(buf[8:], bBase+uint64(l.B[g])*uint64(inBytes))
		le.PutUint64(buf[16:], cBase+uint64(l.C[g])*uint64(outBytes))
		for i, v := range []int{s.M, s.N, s.K, s.K, s.N, s.N} { // M, N, K, lda, ldb, ldc
			le.PutUint32(buf[24+4*i:], uint32(int32(v)))
		}
		for i := 0; i < GroupDescBytes; i += 8 {
			out = append(out, le.Uint64(buf[i:]))
		}
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
	sort.SliceStable(o, func(a, b int) bool {
		sa, sb := shapes[o[a]], shapes[o[b]]
		if sa.K != sb.K {
			return sa.K > sb.K
		}
		return int64(sa.M)*int64(sa.N) > int64(sb.M)*int64(sb.N)
	})
	return o
}

// Tiles is the number of bm×bn tiles of a group.
func Tiles(s Shape, bm, bn int) int {
	if s.Empty() {
		return 0
	}
	return lab.CeilDiv(s.M, bm) * lab.CeilDiv(s.N, bn)
}

// TotalTiles is the number of tiles of all groups.
func TotalTiles(shapes []Shape, bm, bn int) int {
	t := 0
	for _, s := range shapes {
		t += Tiles(s, bm, bn)
	}
	return t
}
