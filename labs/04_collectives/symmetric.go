package collectives

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// The variants on NCCL's own symmetric memory (kernels 07 and 08), the production form of the
// course's shared buffers: the input is copied once into an NCCL symmetric window; the kernels reach
// the peers' parts with ncclGetLsaPointer inside an ncclLsaBarrierSession, one launch a run.

// OnNCCLDevice says whether a variant is a kernel on NCCL's device API (needs: [nccl_device]).
func OnNCCLDevice(v *lab.Variant) bool {
	return v.IsKernel() && slices.Contains(v.Needs, lab.NeedNCCLDevice)
}

// symmetric is a case's window and its LSA barriers (the largest grid), or why it has none (a skip).
type symmetric struct {
	win      gpu.SymmetricWindow
	barriers int
	err      error
}

// runSymmetric is one run of a kernel on NCCL's device API: one launch, its LSA barriers inside.
// The window is made on the first such run (every rank gets there at the same point: the ranks run
// the same variants in the same order), with one LSA barrier per block of the largest grid.
func (c *collCase[T]) runSymmetric(v *lab.Variant) error {
	if c.sym == nil {
		barriers := int(c.GridStride(v, math.MaxInt32).Grid.X)
		bytes := int64(c.prec.Bytes()) * int64(c.inCount)
		w, err := lab.SymmetricWindow(c.Env, "input", bytes, barriers)
		// Ranks on other nodes need the network, which LSA pointers do not cross.
		if err == nil && w.LSARanks() != c.N {
			err = lab.Skip("NCCL's load/store team (LSA) of rank %d has %d of the %d ranks: the others are on other nodes, "+
				"which LSA pointers do not reach (NCCL 2.28.7's GPU-initiated networking, GIN, would carry these kernels across nodes)", c.Rank, w.LSARanks(), c.N)
		}
		if err == nil {
			err = c.Env.Device.CopyDtoD(w.Local(), c.in.Mine.DevicePtr(), bytes, c.Env.Stream)
		}
		c.sym = &symmetric{w, barriers, err}
	}
	k, err := c.Env.Kernel(v)
	if err = cmp.Or(c.sym.err, err); err != nil {
		return err
	}
	// A block waits at the barrier of its index on every rank: the grid never exceeds the
	// barriers (the kernels loop over what is left), and it is the same on every rank.
	cfg := c.GridStride(v, c.oc)
	cfg.Grid = gpu.D1(min(int(cfg.Grid.X), c.sym.barriers))
	if v.Entry == EntryNCCLOneShot && c.Op == AllReduce || v.Entry == EntryNCCLAllGather && c.Op == AllGather {
		return gpu.Launch(k, cfg, c.sym.win.DevComm(), c.sym.win.Window(), c.out, int32(c.Count))
	}
	return fmt.Errorf("variant %s: entry %s on NCCL's device API does not compute an %s (lab 04 has %s for allreduce and %s for allgather)",
		v.Name, v.Entry, c.Op, EntryNCCLOneShot, EntryNCCLAllGather)
}
