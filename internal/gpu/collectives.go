package gpu

import (
	"errors"
	"fmt"
)

// ErrNoCollectives means the backend has no collectives library (the CPU emulator).
var ErrNoCollectives = errors.New("no collectives library")

// RankCommunicator is the vendor baseline for collectives between processes, one rank per
// process (NCCL's ncclCommInitRank): each process holds its own rank's communicator, and every
// rank issues the same call with its own buffers and stream, as NCCL users do.
type RankCommunicator interface {
	Rank() int
	Ranks() int
	AllReduce(send, recv Ptr, count int, t DataType, s Stream) error
	AllGather(send, recv Ptr, count int, t DataType, s Stream) error
	ReduceScatter(send, recv Ptr, count int, t DataType, s Stream) error
	// AllToAllV sends sendCounts[j] elements from send at sendOffsets[j] to rank j, which receives
	// them at recvOffsets[this rank] of its recv buffer (grouped ncclSend/ncclRecv, as nccl-tests).
	AllToAllV(send Ptr, sendCounts, sendOffsets []int, recv Ptr, recvCounts, recvOffsets []int, t DataType, s Stream) error
	// ReduceScatterV sums, over the ranks, shard j of send (counts[j] elements, packed in rank
	// order) into rank j's recv: NCCL has no uneven reduce-scatter, so it is one ncclReduce per
	// shard to its owner in a group, as PyTorch's reduce_scatter of tensors of different sizes.
	ReduceScatterV(send Ptr, counts []int, recv Ptr, t DataType, s Stream) error
	Close() error
}

// RankCommunicatorProvider is implemented by devices whose backend can join a communicator of
// processes: rank 0 makes an id (NewCommID), the ranks exchange it through their rendezvous, and
// each calls OpenRankCommunicator with it.
type RankCommunicatorProvider interface {
	NewCommID() ([]byte, error)
	OpenRankCommunicator(id []byte, rank, ranks int) (RankCommunicator, error)
}

// NewCommID makes the id a communicator of processes is created with (on rank 0), or says why
// the backend has none (an error wrapping ErrNoCollectives).
func NewCommID(d Device) ([]byte, error) {
	p, ok := Unwrap(d).(RankCommunicatorProvider)
	if !ok {
		return nil, fmt.Errorf("backend %s: %w (NCCL runs on NVIDIA GPUs only)", d.Info().Backend, ErrNoCollectives)
	}
	return p.NewCommID()
}

// OpenRankCommunicator joins, as rank of ranks, the communicator that id names, on device d.
func OpenRankCommunicator(d Device, id []byte, rank, ranks int) (RankCommunicator, error) {
	p, ok := Unwrap(d).(RankCommunicatorProvider)
	if !ok {
		return nil, fmt.Errorf("backend %s: %w (NCCL runs on NVIDIA GPUs only)", d.Info().Backend, ErrNoCollectives)
	}
	return p.OpenRankCommunicator(id, rank, ranks)
}
