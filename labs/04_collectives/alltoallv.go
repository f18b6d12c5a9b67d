package collectives

import (
	"fmt"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The uneven all-to-all (suites all_to_allv...) is a MoE dispatch whose blocks have the sizes the
// routing gave them (lab.Blocks). Each rank's row of sizes lies on its own device; a kernel reads
// its peers' rows through peer memory (the exchange of sizes that precedes the data) from a table
// of the n row pointers, like the table of inputs. The uneven reduce-scatter (suites
// reduce_scatter_v...) packs n shards in every rank's input, shard j of shards[j] elements on every
// rank (a sharded model's parameters); rank r keeps the sum of shard r, and the kernels get the
// n+1 offsets of the shards.
//
// Problem parameters beyond bytes (the mean block size):
//
//	uneven     1: every block's size is drawn uniformly from 0 … 2·count, afresh for every run
//	empty_pct  each block is empty with this probability, in percent (0 … 100)
//
// Without them every block has count elements: the layout of all_to_all, which kernel 06 runs.
const (
	ParamUneven   = "uneven"
	ParamEmptyPct = "empty_pct"
)

// BlockSizes draws the sizes of problem p for n ranks, count being its mean block size.
func BlockSizes(p lab.Problem, n, count int, rng *rand.Rand) (lab.Blocks, error) {
	b := make(lab.Blocks, n)
	for s := range b {
		row, err := ShardSizes(p, n, count, rng)
		if err != nil {
			return nil, err
		}
		b[s] = row
	}
	return b, nil
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
