package collectives

import (
	"fmt"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The uneven all-to-all (suites named all_to_allv...): a MoE dispatch whose blocks have the sizes
// the routing gave them. Every rank's send buffer holds its blocks packed in destination order, its
// receive buffer the blocks addressed to it packed in source order. Each rank's row of sizes lies
// on its own device; a kernel reads its peers' rows through peer memory (the exchange of sizes that
// precedes the data) from a table of the n row pointers, like the table of inputs.
//
// Problem parameters beyond bytes (the mean block size, as for all_to_all):
//
//	uneven     1: every block's size is drawn uniformly from 0 … 2·count, afresh for every run
//	empty_pct  each block is empty with this probability, in percent (0 … 100)
//
// Without them every block has count elements: the layout of all_to_all, which kernel 06 runs.
const (
	ParamUneven   = "uneven"
	ParamEmptyPct = "empty_pct"
)

// EntryAllToAllPull is kernel 06, which takes equal blocks only.
const EntryAllToAllPull = "all_to_all_pull"

// Blocks are the sizes of an uneven all-to-all (lab.Blocks: their layout and NCCL call).
type Blocks = lab.Blocks

// EqualBlocks are the sizes of an all-to-all whose blocks all hold count elements.
var EqualBlocks = lab.EqualBlocks

// BlockSizes draws the sizes of problem p for n ranks, count being its mean block size.
func BlockSizes(p lab.Problem, n, count int, rng *rand.Rand) (Blocks, error) {
	b := make(Blocks, n)
	for s := range b {
		row, err := ShardSizes(p, n, count, rng)
		if err != nil {
			return nil, err
		}
		b[s] = row
	}
	return b, nil
}

// ShardSizes draws n sizes of mean count as problem p says (uneven, empty_pct): one rank's row of
// an uneven all-to-all, or the shards of an uneven reduce-scatter.
func ShardSizes(p lab.Problem, n, count int, rng *rand.Rand) ([]int, error) {
	uneven := p.Int(ParamUneven, 0) != 0
	empty := p.Int(ParamEmptyPct, 0)
	if empty < 0 || empty > 100 {
		return nil, fmt.Errorf("problem %q: %s = %d must be a percentage, 0 to 100", p.Name, ParamEmptyPct, empty)
	}
	if uneven && 2*int64(count) > 1<<31-1 {
		return nil, fmt.Errorf("problem %q: blocks of up to 2·%d elements are beyond the kernels' 32-bit sizes", p.Name, count)
	}
	row := make([]int, n)
	for d := range row {
		size := count
		if uneven {
			size = rng.IntN(2*count + 1)
		}
		if empty > 0 && rng.IntN(100) < int(empty) {
			size = 0
		}
		row[d] = size
	}
	return row, nil
}

// ReferenceV is what rank r must receive: the block addressed to it in every rank's send buffer,
// concatenated in source order.
func ReferenceV(ins [][]float32, b Blocks, r int) []float64 {
	return reference(AllToAllV, ins, func(s int, x []float32) []float32 {
		o := b.SendOffset(s, r)
		return x[o : o+b[s][r]]
	})
}

// WorkOfV counts the bytes of an uneven all-to-all as nccl-tests counts all_to_all's, S being the
// mean block: the total sent over n ranks, of elements of size bytes.
func WorkOfV(b Blocks, size int) lab.Work {
	n := len(b)
	if n == 0 {
		return lab.Work{}
	}
	return lab.Work{Bytes: float64(size) * float64(b.Total()) / float64(n) * BusFactor(AllToAllV, n)}
}

// ---- the uneven reduce-scatter (suites named reduce_scatter_v...) ----
//
// Every rank's input is n shards packed in rank order, shard j of shards[j] elements (the same
// sizes on every rank: a sharded model's parameters); rank r keeps the sum of shard r. The
// kernels get the n+1 offsets of the shards (int64, on the rank's own device).

// ShardOffsets are the n+1 element offsets of the shards: shard j is [off[j], off[j+1]).
func ShardOffsets(shards []int) []int64 {
	off := make([]int64, len(shards)+1)
	for j, s := range shards {
		off[j+1] = off[j] + int64(s)
	}
	return off
}

// ReferenceRSV is what rank r must hold: the float64 sum over the ranks of their shard r.
func ReferenceRSV(ins [][]float32, shards []int, r int) []float64 {
	off := ShardOffsets(shards)
	return reference(ReduceScatterV, ins, func(_ int, x []float32) []float32 { return x[off[r]:off[r+1]] })
}

// WorkOfRSV counts the bytes of an uneven reduce-scatter as nccl-tests counts reduce_scatter's,
// S being the mean shard.
func WorkOfRSV(shards []int, size int) lab.Work {
	return lab.Work{Bytes: float64(size) * float64(lab.Sum(shards)) * BusFactor(ReduceScatterV, len(shards))}
}
