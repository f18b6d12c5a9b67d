package collectives

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// What each collective is, apart from any device: its sizes, its reference, its byte count.

// Op is a suite's collective.
type Op int

const (
	AllReduce Op = iota
	AllGather
	ReduceScatter
	AllToAll
	AllToAllV      // all-to-all with blocks of different sizes
	ReduceScatterV // reduce-scatter into shards of different sizes
)

// ops are the collectives as nccl-tests describes them.
var ops = [...]struct {
	name      string
	inN, outN bool    // the input (output) is n blocks of count elements, else one
	sum       bool    // the output sums the ranks' inputs elementwise, else concatenates them
	bus       float64 // busbw / algbw = bus·(n−1)/n
	ref       string  // what the reference is, in a report's method
}{
	AllReduce:     {"allreduce", false, false, true, 2, "sum"},
	AllGather:     {"allgather", false, true, false, 1, "concatenation"},
	ReduceScatter: {"reduce_scatter", true, false, true, 1, "sum (its block)"},
	AllToAll:      {"all_to_all", true, true, false, 1, "gather (its block of each)"},
	AllToAllV:     {"all_to_allv", true, true, false, 1, "gather (its block of each, of the sizes in the table)"},
	// count is the shards' mean, so that the bus bytes read as reduce_scatter's for equal shards.
	ReduceScatterV: {"reduce_scatter_v", true, false, true, 1, "sum (its shard, of the sizes drawn)"},
}

func (o Op) String() string { return ops[o].name }

// OpOf is the collective a suite measures, by the start of its name after any "bf16_" (else allreduce).
func OpOf(s *lab.Suite) Op {
	for _, o := range []Op{AllGather, ReduceScatterV, ReduceScatter, AllToAllV, AllToAll} { // the v forms before their prefixes
		if strings.HasPrefix(strings.TrimPrefix(s.Name, "bf16_"), o.String()) {
			return o
		}
	}
	return AllReduce
}

// CountOf reads a problem's per-rank size in bytes and returns the element count in precision prec.
func CountOf(p lab.Problem, prec lab.Precision) (int, error) {
	b, e := p.Int("bytes", 0), int64(prec.Bytes())
	switch {
	case b < e:
		return 0, fmt.Errorf("problem %q: bytes must be at least %d (one %s element), got %d", p.Name, e, prec, b)
	case b%e != 0:
		return 0, fmt.Errorf("problem %q: bytes = %d is not a whole number of %s elements (a multiple of %d)", p.Name, b, prec, e)
	case b/e > math.MaxInt32:
		return 0, fmt.Errorf("problem %q: %d elements is beyond the kernels' 32-bit counts", p.Name, b/e)
	}
	return int(b / e), nil
}

// Layout is where a collective's data lies on its ranks: blocks of Count elements (nccl-tests'
// count), or an all-to-all's block sizes (equal for all_to_all), or uneven reduce-scatter shards.
type Layout struct {
	Op           Op
	Ranks, Count int
	Blocks       lab.Blocks
	Shards       []int
}

// Sizes are rank r's input and output lengths.
func (l Layout) Sizes(r int) (in, out int) {
	switch {
	case l.Blocks != nil:
		return l.Blocks.Sent(r), l.Blocks.Received(r)
	case l.Shards != nil:
		return lab.Sum(l.Shards), l.Shards[r]
	}
	in, out = l.Count, l.Count
	if ops[l.Op].inN {
		in *= l.Ranks
	}
	if ops[l.Op].outN {
		out *= l.Ranks
	}
	return in, out
}

// Span is the part [lo, hi) of rank s's input that goes into rank r's output.
func (l Layout) Span(s, r int) (lo, hi int) {
	size := l.Count
	switch {
	case l.Blocks != nil:
		lo, size = l.Blocks.SendOffset(s, r), l.Blocks[s][r]
	case l.Shards != nil:
		lo, size = lab.Sum(l.Shards[:r]), l.Shards[r]
	case ops[l.Op].inN:
		lo = r * l.Count
	}
	return lo, lo + size
}

// Reference is what rank r must hold, in float64: the sum of the ranks' spans for it (allreduce,
// reduce-scatter), or their concatenation in rank order (all-gather, all-to-all).
func (l Layout) Reference(ins [][]float32, r int) []float64 {
	ref := []float64{}
	for s, x := range ins {
		lo, hi := l.Span(s, r)
		if !ops[l.Op].sum {
			ref = appendWide(ref, x[lo:hi])
			continue
		}
		if s == 0 {
			ref = make([]float64, hi-lo)
		}
		for i, v := range x[lo:hi] {
			ref[i] += float64(v)
		}
	}
	return ref
}

// Work is nccl-tests' algbw bytes (the larger of a rank's input and output; the uneven all-to-all's
// mean over the ranks) times busbw / algbw = bus·(n−1)/n, the rate each link must sustain in a
// bandwidth-optimal algorithm, comparable across n: the engine's GB/s is the bus bandwidth. No
// FLOPs: the additions are never what limits a collective.
func (l Layout) Work(size int) lab.Work {
	in, out := l.Sizes(0)
	bytes := float64(size) * float64(max(in, out))
	if l.Op == AllToAllV {
		bytes = float64(size) * float64(l.Blocks.Total()) / float64(l.Ranks)
	}
	return lab.Work{Bytes: bytes * (ops[l.Op].bus * float64(l.Ranks-1) / float64(l.Ranks))}
}

func appendWide(ref []float64, x []float32) []float64 {
	for _, v := range x {
		ref = append(ref, float64(v))
	}
	return ref
}

// elem is how a case's data lies in device memory: fp32, or bf16 bit patterns.
type elem interface{ float32 | uint16 }

// fillInputs fills x with values uniform in ±[2^-10, 1), never zero, rounded to bf16 in place for
// bf16 data (T uint16), and returns them as the device holds them.
func fillInputs[T elem](x []float32, seed uint64) []T {
	r := rand.New(rand.NewPCG(seed, seed^0xda942042e4dd58b5))
	for i := range x {
		v := float32(r.Float64()*(1-1.0/1024) + 1.0/1024)
		if r.Uint32()&1 == 1 {
			v = -v
		}
		x[i] = v
	}
	return lab.DeviceElems[T](x)
}

// RingChunk is the element range [begin, end) of chunk c when count elements are cut into n
// chunks of ceil(count/n): the last chunks may be shorter or empty.
func RingChunk(count, n, c int) (begin, end int) {
	size := lab.CeilDiv(count, n)
	begin = min(count, c*size)
	return begin, min(count, begin+size)
}

// RingStep is what rank r does at step t (0 … 2(n−1)−1) of the ring allreduce: the chunk it writes,
// and whether it adds its own input (the n−1 reduce-scatter steps) or copies (the n−1 all-gather
// steps). It reads that chunk from its left neighbour's input at step 0, from its output after.
func RingStep(n, r, t int) (chunk int, reduce bool) {
	if t < n-1 {
		return ((r-1-t)%n + n) % n, true
	}
	s := t - (n - 1)
	return ((r-s)%n + n) % n, false
}

// PartialSums is ‖Σ_r |x_r|‖₂ / ‖Σ_r x_r‖₂ over the elements of a sum (ref, from element lo of
// the inputs): the most a partial sum can exceed the whole, in norm. A variant that rounds each
// partial sum to bf16 (the ring; NCCL, which adds bf16 pairs at every hop) errs by up to 2^-8 of it.
func PartialSums(ins [][]float32, ref []float64, lo int) float64 {
	var abs, sum float64
	for i, s := range ref {
		a := 0.0
		for _, x := range ins {
			a += math.Abs(float64(x[lo+i]))
		}
		abs, sum = abs+a*a, sum+s*s
	}
	return math.Sqrt(abs / max(sum, math.SmallestNonzeroFloat64))
}
