package lab

import (
	"errors"
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/gpu"
)

// NCCL's own symmetric memory for a lab of ranks: the production form of AllocShared. Where
// AllocShared exchanges VMM handles through the rendezvous and hands kernels a table of peer
// pointers, a symmetric window is allocated and registered by NCCL (ncclMemAlloc +
// ncclCommWindowRegister), and kernels reach the peers' parts through NCCL's device API
// (nccl_device.h: the device communicator, ncclGetLsaPointer, ncclLsaBarrierSession).

// NeedNCCLDevice is lab.yaml's need of a kernel that includes nccl_device.h: it compiles against
// NCCL's headers and runs on a communicator with symmetric memory only (the CUDA backend's rules
// check the library and the headers; the emulator and AMD GPUs have no such API). It goes with
// nvidia.
const NeedNCCLDevice = "nccl_device"

// SymmetricWindow allocates bytes of NCCL symmetric memory on every rank (every rank calls it at
// the same point, with the same bytes), with a device communicator of lsaBarriers LSA barriers
// (one per block of the kernels that synchronise through it). The engine frees it with the case,
// on every rank. Where NCCL cannot give these ranks symmetric memory (world size 1, ranks that
// share a GPU or are not all peer-accessible, an NCCL without the device API) the error is a skip
// with NCCL's reason.
func SymmetricWindow(e *Env, name string, bytes int64, lsaBarriers int) (gpu.SymmetricWindow, error) {
	comm, err := e.RankCommunicator()
	if err != nil {
		return nil, err
	}
	w, err := gpu.AllocSymmetric(comm, bytes, lsaBarriers)
	if err != nil {
		err = fmt.Errorf("%s (NCCL symmetric window): %w", name, err)
		if errors.Is(err, gpu.ErrNoSymmetricMemory) || errors.Is(err, gpu.ErrLibraryMissing) {
			err = Skip("%v", err)
		}
	}
	// Every rank learns whether every other got its part (NCCL decides alike on every rank, so
	// this only turns one rank's odd failure into an error on all instead of a hang later).
	if aerr := e.w.agreeErr("nccl-window", err); aerr != nil {
		if w != nil {
			w.Free()
		}
		return nil, aerr
	}
	a := e.arena()
	a.bufs = append(a.bufs, &caseBuf{name: name + " (NCCL symmetric window)", ptr: w.Local(), free: w.Free,
		read: func() ([]byte, error) { return nil, nil }})
	return w, nil
}
