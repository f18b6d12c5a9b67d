package gpu

import (
	"errors"
	"fmt"
)

// Communicator is the vendor baseline for collectives between the devices of one process (NCCL,
// later RCCL): one rank per device, every call issued for all ranks at once, each rank's work on
// its own stream. Calls are asynchronous like kernel launches: synchronize the streams before
// reading the results.
type Communicator interface {
	// Ranks is the number of devices in the communicator.
	Ranks() int
	// AllReduce sums count elements of type t over the ranks: recv[i] on rank i receives the
	// elementwise sum of every rank's send buffer. send[i] may equal recv[i] (in place).
	AllReduce(send, recv []Ptr, count int, t DataType, streams []Stream) error
	// AllGather concatenates the ranks' send buffers of count elements each: recv[i] on rank i
	// receives Ranks()·count elements, rank j's contribution at offset j·count.
	AllGather(send, recv []Ptr, count int, t DataType, streams []Stream) error
	// ReduceScatter sums Ranks()·count elements over the ranks and leaves block i (count elements
	// at offset i·count) of the sum in recv[i].
	ReduceScatter(send, recv []Ptr, count int, t DataType, streams []Stream) error
	Close() error
}

// CommunicatorProvider is implemented by devices whose backend has a collectives library.
type CommunicatorProvider interface {
	// OpenCommunicator creates one communicator over devs (this device among them, all of the
	// same backend), rank i on devs[i].
	OpenCommunicator(devs []Device) (Communicator, error)
}

// ErrNoCollectives means the backend has no collectives library (the CPU emulator).
var ErrNoCollectives = errors.New("no collectives library")

// OpenCommunicator opens the backend's collectives library over devs (rank i on devs[i]), or
// returns an error that says why there is none: an error wrapping ErrNoCollectives for a backend
// without one, ErrLibraryMissing when the library is not installed.
func OpenCommunicator(devs []Device) (Communicator, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("open communicator: no devices")
	}
	p, ok := Unwrap(devs[0]).(CommunicatorProvider)
	if !ok {
		return nil, fmt.Errorf("backend %s: %w (NCCL runs on NVIDIA GPUs only)", devs[0].Info().Backend, ErrNoCollectives)
	}
	return p.OpenCommunicator(devs)
}

// CheckCollective validates the arguments of a collective call: one send and one receive buffer
// and one stream per rank, a count that is not negative. Backends call it before the library.
func CheckCollective(op string, ranks int, send, recv []Ptr, count int, streams []Stream) error {
	switch {
	case len(send) != ranks || len(recv) != ranks:
		return fmt.Errorf("%s: %d send and %d receive buffers for %d ranks (one each per rank)", op, len(send), len(recv), ranks)
	case len(streams) != ranks:
		return fmt.Errorf("%s: %d streams for %d ranks (one per rank)", op, len(streams), ranks)
	case count < 0:
		return fmt.Errorf("%s: negative count %d", op, count)
	}
	for i := range send {
		if count > 0 && (send[i] == 0 || recv[i] == 0) {
			return fmt.Errorf("%s: rank %d has a null buffer", op, i)
		}
		if streams[i] == nil {
			return fmt.Errorf("%s: rank %d has no stream (NCCL needs an explicit stream per rank)", op, i)
		}
	}
	return nil
}

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
