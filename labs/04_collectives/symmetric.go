package collectives

import (
	"fmt"
	"math"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The variants on NCCL's own symmetric memory (kernels 07 and 08): the production form of the
// course's shared buffers. The case's input is copied once into an NCCL symmetric window
// (lab.SymmetricWindow: ncclMemAlloc + ncclCommWindowRegister, and a device communicator with one
// LSA barrier per block); the kernels reach the peers' parts with ncclGetLsaPointer and bracket
// themselves with ncclLsaBarrierSession, so a run is one launch, as for kernels 01 and 02.

// OnNCCLDevice says whether a variant is a kernel on NCCL's device API (needs: [nccl_device]).
func OnNCCLDevice(v *lab.Variant) bool {
	return v.IsKernel() && slices.Contains(v.Needs, lab.NeedNCCLDevice)
}

// symmetric is a case's NCCL symmetric window and the LSA barriers of its device communicator
// (the largest grid of a launch), or why it has none (a skip, kept for every run).
type symmetric struct {
	win      gpu.SymmetricWindow
	barriers int
	err      error
}

// window makes the case's symmetric window on the first run of a variant on NCCL's device API
// (every rank gets there at the same point: the ranks run the same variants in the same order)
// and fills it with this rank's input. It has one LSA barrier per block of the largest grid the
// variant can launch on this device.
func (c *collCase[T]) window(v *lab.Variant) symmetric {
	if c.sym != nil {
		return *c.sym
	}
	barriers, _ := Grid(v.Params, math.MaxInt32, c.env.Device.Info().SMs)
	bytes := int64(c.prec.Bytes()) * int64(c.inCount)
	w, err := lab.SymmetricWindow(c.env, "input", bytes, barriers)
	// Skip where NCCL's LSA team (the ranks this one reaches by load and store) is not every
	// rank: ranks on other nodes need the network, which LSA pointers do not cross.
	if err == nil && w.LSARanks() != c.n {
		err = lab.Skip("NCCL's load/store team (LSA) of rank %d has %d of the %d ranks: the others are on other nodes, "+
			"which LSA pointers do not reach (NCCL 2.28.7's GPU-initiated networking, GIN, would carry these kernels across nodes)", c.rank, w.LSARanks(), c.n)
	}
	if err == nil {
		err = c.env.Device.CopyDtoD(w.Local(), c.in.Mine.DevicePtr(), bytes, c.env.Stream)
	}
	c.sym = &symmetric{w, barriers, err}
	return *c.sym
}

// runSymmetric is one run of a kernel on NCCL's device API: one launch, its LSA barriers inside.
func (c *collCase[T]) runSymmetric(v *lab.Variant) error {
	sym := c.window(v)
	if sym.err != nil {
		return sym.err
	}
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	// A block waits at the barrier of its index on every rank: the grid never exceeds the
	// barriers (the kernels loop over what is left), and it is the same on every rank.
	cfg := launchOf(c.env, v, c.oc)
	cfg.Grid = gpu.D1(min(int(cfg.Grid.X), sym.barriers))
	if v.Entry == EntryNCCLOneShot && c.op == AllReduce || v.Entry == EntryNCCLAllGather && c.op == AllGather {
		return gpu.Launch(k, cfg, sym.win.DevComm(), sym.win.Window(), c.out, int32(c.count))
	}
	return fmt.Errorf("variant %s: entry %s on NCCL's device API does not compute an %s (lab 04 has %s for allreduce and %s for allgather)",
		v.Name, v.Entry, c.op, EntryNCCLOneShot, EntryNCCLAllGather)
}
