package collectives

import (
	"fmt"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The uneven all-to-all (suites all_to_allv...) is a MoE dispatch with the routing's block sizes
// (lab.Blocks); a kernel reads its peers' rows of sizes through peer memory (the exchange of sizes
// before the data) from a table of the n row pointers. The uneven reduce-scatter (reduce_scatter_v)
// packs n shards of the same sizes in every rank's input (a sharded model's parameters); rank r
// keeps the sum of shard r. Sizes (lab.yaml): uneven: 1 draws each from 0 … 2·count afresh every
// run, empty_pct: P empties each with probability P %; else all_to_all's (kernel 06's) layout.
const (
	ParamUneven   = "uneven"
	ParamEmptyPct = "empty_pct"
)

// LayoutOf is problem p's layout of op on n ranks, count being its (mean) block: equal blocks for
// all_to_all, the sizes drawn from rng for the uneven forms.
func LayoutOf(op Op, p lab.Problem, n, count int, rng *rand.Rand) (l Layout, err error) {
	l = Layout{Op: op, Ranks: n, Count: count}
	switch op {
	case AllToAll:
		l.Blocks = lab.EqualBlocks(n, count)
	case AllToAllV:
		l.Blocks = make(lab.Blocks, n)
		for s := range l.Blocks {
			if l.Blocks[s], err = ShardSizes(p, n, count, rng); err != nil {
				return l, err
			}
		}
	case ReduceScatterV:
		l.Shards, err = ShardSizes(p, n, count, rng)
	}
	return l, err
}

// ShardSizes draws n sizes of mean count as problem p says: one rank's row of an uneven
// all-to-all, or the shards of an uneven reduce-scatter.
func ShardSizes(p lab.Problem, n, count int, rng *rand.Rand) ([]int, error) {
	uneven, empty := p.Int(ParamUneven, 0) != 0, p.Int(ParamEmptyPct, 0)
	if empty < 0 || empty > 100 {
		return nil, fmt.Errorf("problem %q: %s = %d must be a percentage, 0 to 100", p.Name, ParamEmptyPct, empty)
	}
	if uneven && 2*int64(count) > 1<<31-1 {
		return nil, fmt.Errorf("problem %q: blocks of up to 2·%d elements are beyond the kernels' 32-bit sizes", p.Name, count)
	}
	row := make([]int, n)
	for d := range row {
		row[d] = count
		if uneven {
			row[d] = rng.IntN(2*count + 1)
		}
		if empty > 0 && rng.IntN(100) < int(empty) {
			row[d] = 0
		}
	}
	return row, nil
}

// ShardOffsets are the n+1 element offsets of the shards: shard j is [off[j], off[j+1]).
func ShardOffsets(shards []int) []int64 {
	off := make([]int64, len(shards)+1)
	for j, s := range shards {
		off[j+1] = off[j] + int64(s)
	}
	return off
}
