package gpu

import (
	"errors"
	"fmt"
)

// ErrRanksShareGPU means two ranks of one communicator of processes are on the same GPU, which
// NCCL does not support (it needs one GPU per rank); the course's own kernels still run there.
var ErrRanksShareGPU = errors.New("NCCL needs one GPU per rank")

// ErrNoSymmetricMemory means the communicator's library cannot give these ranks symmetric memory
// and a device communicator: NCCL says so itself for a communicator of one rank or of ranks that
// are not all directly peer-accessible ("Communicator does not support symmetric memory"), and an
// NCCL before 2.28 has no device API at all. Kernels on the device API are skipped with the
// library's reason, which the error carries; the communicator's host collectives still run.
var ErrNoSymmetricMemory = errors.New("no symmetric memory for these ranks")

// SymmetricWindows is implemented by rank communicators whose library allocates symmetric memory
// and lets kernels reach it through a device-side communicator (NCCL 2.28's device API:
// ncclMemAlloc + ncclCommWindowRegister, ncclDevCommCreate, LSA pointers and LSA barriers).
type SymmetricWindows interface {
	// AllocSymmetric allocates bytes on every rank and registers them as one window. It is
	// collective: every rank calls it, with the same sizes, in the same order. lsaBarriers is how
	// many LSA barriers the device communicator provides (one per block that synchronises).
	AllocSymmetric(bytes int64, lsaBarriers int) (SymmetricWindow, error)
}

// SymmetricWindow is one rank's part of a symmetric allocation, with what a kernel needs to reach
// the other ranks' parts.
type SymmetricWindow interface {
	// Local is this rank's buffer.
	Local() Ptr
	Bytes() int64
	// Window is the window handle (ncclWindow_t) for ncclGetLsaPointer(window, offset, peer) and
	// the like; pass it to kernels by value, as a pointer-sized argument.
	Window() Ptr
	// DevComm is the device address of the device communicator (an ncclDevComm): kernels take it
	// as `ncclDevComm const*` and use it for ncclTeamLsa and ncclLsaBarrierSession.
	DevComm() Ptr
	// LSARanks is how many ranks, this one included, are load/store accessible from here (the
	// LSA team: the ranks of this node that share memory with it).
	LSARanks() int
	// Free deregisters and frees the window; collective like AllocSymmetric.
	Free() error
}

// AllocSymmetric allocates a symmetric window through c's library, or says why it has none.
func AllocSymmetric(c RankCommunicator, bytes int64, lsaBarriers int) (SymmetricWindow, error) {
	s, ok := c.(SymmetricWindows)
	if !ok {
		return nil, fmt.Errorf("this communicator (%T) has no symmetric memory", c)
	}
	return s.AllocSymmetric(bytes, lsaBarriers)
}
