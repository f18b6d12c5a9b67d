package lab

import (
	"slices"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// Blocks are the sizes of an uneven all-to-all of len(b) ranks: Blocks[src][dst] elements go from
// rank src to rank dst. Every rank's send buffer holds its blocks packed in destination order,
// its receive buffer the blocks addressed to it packed in source order (NCCL's all-to-allv, a MoE
// layer's dispatch).
type Blocks [][]int

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
func (b Blocks) Sent(r int) int { return Sum(b[r]) }

// Received is the number of elements rank r receives (its receive buffer).
func (b Blocks) Received(r int) int { return Sum(b.column(r)) }

// SendOffset is where the block for dst starts in src's send buffer.
func (b Blocks) SendOffset(src, dst int) int { return Sum(b[src][:dst]) }

// RecvOffset is where the block from src starts in dst's receive buffer.
func (b Blocks) RecvOffset(dst, src int) int { return Sum(b.column(dst)[:src]) }

// column is the sizes of the blocks rank dst receives, by source.
func (b Blocks) column(dst int) []int {
	col := make([]int, len(b))
	for s := range b {
		col[s] = b[s][dst]
	}
	return col
}

// Total is the number of elements that change hands, all ranks together.
func (b Blocks) Total() int { return Sum(slices.Concat(b...)) }

// Equal reports whether every block has the same size.
func (b Blocks) Equal() bool { return AllEqual(slices.Concat(b...)) }

// Row is rank r's row of sizes as kernels read it (int32).
func (b Blocks) Row(r int) []int32 {
	row := make([]int32, len(b[r]))
	for d, v := range b[r] {
		row[d] = int32(v)
	}
	return row
}

// Sum is the sum of xs (0 for none).
func Sum[T int | int32 | int64](xs []T) (t T) {
	for _, x := range xs {
		t += x
	}
	return t
}

// AllEqual reports whether every element of xs is the same (true for none).
func AllEqual[T comparable](xs []T) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}
