package collectives

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The uneven all-to-all (suites named all_to_allv...): a MoE dispatch whose blocks have the sizes
// the routing gave them. Blocks[src][dst] elements go from rank src to rank dst. Every rank's send
// buffer holds its blocks packed in destination order (block dst at the sum of the sizes before
// it), its receive buffer the blocks addressed to it packed in source order. Each rank's row of
// sizes lies on its own device; a kernel reads its peers' rows through peer memory (the exchange
// of sizes that precedes the data) and gets a table of the n row pointers, like the table of
// inputs.
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

// Blocks are the sizes of an uneven all-to-all: Blocks[src][dst] elements from src to dst.
type Blocks [][]int

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

// EqualBlocks are the sizes of an all-to-all of n ranks whose blocks all hold count elements.
func EqualBlocks(n, count int) Blocks {
	b := make(Blocks, n)
	for s := range b {
		b[s] = slices.Repeat([]int{count}, n)
	}
	return b
}

// PerPeer is rank r's side of the exchange as a send/receive library takes it: the elements it
// sends to each rank j and where they start in its send buffer, and the elements it receives from
// each rank j and where they go in its receive buffer.
func (b Blocks) PerPeer(r int) (sendCounts, sendOffsets, recvCounts, recvOffsets []int) {
	n := len(b)
	sendCounts, sendOffsets, recvCounts, recvOffsets = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	for j := range n {
		sendCounts[j], sendOffsets[j] = b[r][j], b.SendOffset(r, j)
		recvCounts[j], recvOffsets[j] = b[j][r], b.RecvOffset(r, j)
	}
	return
}

// AllToAllV is rank r's side of the exchange through the library's all-to-allv (grouped
// ncclSend/ncclRecv), each size counting unit elements (a row of them, say); back sends the
// received blocks back to their senders, into the places they were sent from.
func (b Blocks) AllToAllV(comm gpu.RankCommunicator, r, unit int, back bool, send, recv gpu.Ptr, t gpu.DataType, st gpu.Stream) error {
	sc, so, rc, ro := b.PerPeer(r)
	if back {
		sc, so, rc, ro = rc, ro, sc, so
	}
	for j := range sc {
		sc[j], so[j], rc[j], ro[j] = unit*sc[j], unit*so[j], unit*rc[j], unit*ro[j]
	}
	return comm.AllToAllV(send, sc, so, recv, rc, ro, t, st)
}

// Sent is the number of elements rank r sends (its send buffer).
func (b Blocks) Sent(r int) int { return sum(b[r]) }

// Received is the number of elements rank r receives (its receive buffer).
func (b Blocks) Received(r int) int { return sum(b.column(r)) }

// SendOffset is where the block for dst starts in src's send buffer.
func (b Blocks) SendOffset(src, dst int) int { return sum(b[src][:dst]) }

// RecvOffset is where the block from src starts in dst's receive buffer.
func (b Blocks) RecvOffset(dst, src int) int { return sum(b.column(dst)[:src]) }

// column is the sizes of the blocks rank dst receives, by source.
func (b Blocks) column(dst int) []int {
	col := make([]int, len(b))
	for s := range b {
		col[s] = b[s][dst]
	}
	return col
}

// Total is the number of elements that change hands, all ranks together.
func (b Blocks) Total() int { return sum(slices.Concat(b...)) }

func sum(xs []int) (t int) {
	for _, x := range xs {
		t += x
	}
	return t
}

// Equal reports whether every block has the same size (kernel 06's layout).
func (b Blocks) Equal() bool { return allEqual(slices.Concat(b...)) }

// Row is rank r's row of sizes as the kernels read it (int32).
func (b Blocks) Row(r int) []int32 {
	row := make([]int32, len(b[r]))
	for d, v := range b[r] {
		row[d] = int32(v)
	}
	return row
}

// ReferenceV is what rank r must receive: the block addressed to it in every rank's send buffer,
// concatenated in source order.
func ReferenceV(ins [][]float32, b Blocks, r int) []float64 {
	return reference(AllToAllV, ins, func(s int, x []float32) []float32 {
		o := b.SendOffset(s, r)
		return x[o : o+b[s][r]]
	})
}

// WorkOfV counts the bytes of an uneven all-to-all as nccl-tests counts all_to_all's (n·S per
// rank, then the bus factor (n−1)/n), S being the mean block: the total sent over n ranks, of
// elements of size bytes.
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

// WorkOfRSV counts the bytes of an uneven reduce-scatter as nccl-tests counts reduce_scatter's
// (n·S per rank, then the bus factor (n−1)/n), S being the mean shard.
func WorkOfRSV(shards []int, size int) lab.Work {
	return lab.Work{Bytes: float64(size) * float64(sum(shards)) * BusFactor(ReduceScatterV, len(shards))}
}

// allEqual reports whether every size is the same: every shard (kernel 13's layout), every block
// (kernel 06's).
func allEqual(sizes []int) bool {
	for _, s := range sizes {
		if s != sizes[0] {
			return false
		}
	}
	return true
}
