// Package collectives is lab 04: allreduce, all-gather, reduce-scatter and all-to-all between
// ranks, one process per GPU, over buffers that every rank of the node maps, against NCCL,
// measured with nccl-tests' bus bandwidth.
//
// Like a collective of nccl-tests, the driver supplies only what differs: each rank's buffers
// and inputs, the reference (a float64 sum or concatenation of every rank's inputs, which every
// rank draws from the same seeds), one call per variant, and the byte count that makes the
// engine's GB/s the bus bandwidth. The engine starts the ranks, keeps them in step, poisons and
// checks every rank's output, times back-to-back runs and frees everything.
package collectives

import (
	"fmt"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// LabDir is the lab's directory name, the key of its driver.
const LabDir = "04_collectives"

// The library variants (lab.yaml library:).
const (
	LibAllReduce     = "nccl_allreduce"
	LibAllGather     = "nccl_allgather"
	LibReduceScatter = "nccl_reducescatter"
	LibAllToAll      = "nccl_alltoall" // grouped ncclSend/ncclRecv, as nccl-tests' alltoall
)

// EntryRing is the entry of the ring allreduce: one launch per step, a device barrier between
// steps (see Run).
const EntryRing = "allreduce_ring_step"

// The entries of the kernels on NCCL's symmetric memory and device API (needs: [nccl_device]):
// they take the device communicator and the window of the case's NCCL symmetric window
// (symmetric.go) instead of the course's table of peer pointers.
const (
	EntryNCCLOneShot   = "allreduce_nccl_one_shot"
	EntryNCCLAllGather = "allgather_nccl_pull"
)

// Launch parameters a kernel variant may set (lab.yaml params:): threads per block (256) and
// blocks per SM (2), the grid being min(blocks the elements need, SMs × blocks_per_sm) with the
// kernels looping over what is left (grid-stride); shared_out: 1 for kernels that write their
// peers' outputs (a push), whose outputs every rank must map; fused_barrier: 1 for kernels that
// synchronise the ranks themselves (kl_rank_barrier_start/end, taking the signals after their
// buffers), which the engine's barrier kernel otherwise brackets.
const (
	ParamThreads      = "threads"
	ParamBlocksPerSM  = "blocks_per_sm"
	ParamSharedOut    = "shared_out"
	ParamFusedBarrier = "fused_barrier"
)

// Lab is the driver of lab 04.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

var _ lab.Driver = Lab{}

// collCase is one prepared problem on this rank.
type collCase struct {
	env         *lab.Env
	op          Op
	rank, n     int
	count       int
	ins         [][]float32 // every rank's input (each rank draws them all), for the reference
	blocks      Blocks      // the uneven all-to-all's block sizes (the same on every rank)
	in          *lab.Shared[float32]
	sizeRows    *lab.Shared[int32]
	out         *gpu.Buffer[float32] // this rank's output
	outs        *lab.Shared[float32] // every rank's output, for kernels that push (shared_out)
	sig         *gpu.Buffer[uint64]  // the device barrier's signals
	inCount, oc int                  // this rank's input and output lengths
	sym         symmetric            // NCCL's symmetric window of the input, made on first use
}

// Prepare draws every rank's input (the same seeds on every rank), allocates this rank's part of
// the shared input and its output, and the signals of the device barrier.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	count, err := CountOf(p)
	if err != nil {
		return nil, err
	}
	w := env.World()
	op := OpOf(s)
	c := &collCase{env: env, op: op, rank: w.Rank, n: w.Size, count: count}
	if op == AllToAllV {
		if c.blocks, err = BlockSizes(p, c.n, count, env.RNG); err != nil {
			return nil, err
		}
	}
	for r := range c.n {
		in, _ := c.sizesOf(r)
		x := make([]float32, in)
		fillInputs(x, env.RNG.Uint64())
		c.ins = append(c.ins, x)
	}
	c.inCount, c.oc = c.sizesOf(c.rank)
	if err := lab.NeedMemory(env, 4*int64(c.inCount+c.oc)); err != nil {
		return nil, err
	}
	// An empty buffer of an uneven all-to-all still gets one element, so that every rank has a
	// pointer to hand out; the kernels never touch it.
	if c.in, err = lab.AllocShared[float32](env, "input", max(c.inCount, 1)); err != nil {
		return nil, err
	}
	if err := c.in.Mine.CopyFromHost(append(c.ins[c.rank], make([]float32, max(0, 1-c.inCount))...), nil); err != nil {
		return nil, err
	}
	if op == AllToAllV {
		if c.sizeRows, err = lab.AllocShared[int32](env, "block sizes", c.n); err != nil {
			return nil, err
		}
		if err := c.sizeRows.Mine.CopyFromHost(c.blocks.Row(c.rank), nil); err != nil {
			return nil, err
		}
	}
	// The output: shared when a variant of the suite pushes into its peers' (shared_out).
	if slices.ContainsFunc(s.Variants, func(v *lab.Variant) bool { return v.Params[ParamSharedOut] != 0 }) {
		if c.outs, err = lab.SharedOutput[float32](env, "output", max(c.oc, 1), lab.PoisonNaN32); err != nil {
			return nil, err
		}
		c.out = c.outs.Mine
	} else if c.out, err = lab.Output[float32](env, "output", max(c.oc, 1), lab.PoisonNaN32); err != nil {
		return nil, err
	}
	c.sig, err = env.Signals()
	return c, err
}

// sizesOf are rank r's input and output lengths.
func (c *collCase) sizesOf(r int) (in, out int) {
	if c.op == AllToAllV {
		return c.blocks.Sent(r), c.blocks.Received(r)
	}
	return Counts(c.op, c.n, c.count)
}

// Run is one collective on this rank's stream, with no host in between: NCCL's call, or the
// kernel between two device barriers (inside it, for kernels that fuse them).
func (c *collCase) Run(v *lab.Variant) error {
	if v.Library != "" {
		return c.runLibrary(v)
	}
	if OnNCCLDevice(v) {
		return c.runSymmetric(v)
	}
	if ok, why := c.env.AllReachable(); !ok {
		return lab.Skip("%s", why)
	}
	st := c.env.Stream
	if v.Params[ParamFusedBarrier] != 0 {
		return c.launch(v, st)
	}
	if err := c.env.DeviceBarrier(st); err != nil {
		return err
	}
	if err := c.launch(v, st); err != nil {
		return err
	}
	return c.env.DeviceBarrier(st)
}

func (c *collCase) launch(v *lab.Variant, st gpu.Stream) error {
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	if v.Entry == EntryRing {
		return c.runRing(k, v, st)
	}
	work := c.count
	switch {
	case c.op == AllGather || c.op == AllToAll:
		work = c.n * c.count
	case c.op == AllToAllV:
		work = c.oc
	case v.Entry == "allreduce_two_shot":
		work = (c.count + c.n - 1) / c.n
	}
	grid, threads := Grid(v.Params, work, c.env.Device.Info().SMs)
	cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: st}
	n, cnt, rank := int32(c.n), int32(c.count), int32(c.rank)
	switch v.Entry {
	case "allreduce_one_shot":
		return gpu.Launch(k, cfg, c.in.Table, c.out, c.sig, rank, n, cnt)
	case "allreduce_two_shot":
		return gpu.Launch(k, cfg, c.in.Table, c.outs.Table, c.sig, rank, n, cnt)
	case "allgather_pull", "reduce_scatter_direct":
		return gpu.Launch(k, cfg, c.in.Table, c.out, rank, n, cnt)
	case EntryAllToAllPull:
		if c.op == AllToAllV {
			if !c.blocks.Equal() {
				return lab.Skip("%s (kernel 06) takes blocks of equal size; this problem's differ", v.Name)
			}
			cnt = int32(c.blocks[0][0]) // the one size, drawn (or not) around the problem's mean
		}
		return gpu.Launch(k, cfg, c.in.Table, c.out, rank, n, cnt)
	}
	if c.op == AllToAllV {
		// (ins, out, sizes, rank, nranks): sizes is the table of the n ranks' rows.
		return gpu.Launch(k, cfg, c.in.Table, c.out, c.sizeRows.Table, rank, n)
	}
	return fmt.Errorf("variant %s: the driver does not know how to launch entry %s", v.Name, v.Entry)
}

// runRing queues the 2(n−1) steps of the ring allreduce on this rank's stream, one launch per
// step, a device barrier after each: step t+1 starts on no rank before every rank has finished
// step t, so a rank reads its left neighbour's chunk after it was written (read after write) and
// overwrites its own chunk after its right neighbour has read it (write after read).
func (c *collCase) runRing(k gpu.Kernel, v *lab.Variant, st gpu.Stream) error {
	if c.outs == nil {
		return fmt.Errorf("variant %s: the ring reads its neighbour's output (set %s: 1 on a variant of the suite in lab.yaml)", v.Name, ParamSharedOut)
	}
	if c.n == 1 {
		return lab.Skip("a ring needs at least 2 ranks")
	}
	left := (c.rank + c.n - 1) % c.n
	for t := range 2 * (c.n - 1) {
		if t > 0 {
			if err := c.env.DeviceBarrier(st); err != nil {
				return err
			}
		}
		chunk, reduce := RingStep(c.n, c.rank, t)
		begin, end := RingChunk(c.count, c.n, chunk)
		src := c.outs.Ptr(left)
		if t == 0 {
			src = c.in.Ptr(left)
		}
		var mine gpu.Ptr
		if reduce {
			mine = c.in.Mine.DevicePtr()
		}
		grid, threads := Grid(v.Params, end-begin, c.env.Device.Info().SMs)
		cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: st}
		if err := gpu.Launch(k, cfg, src, mine, c.out, int32(begin), int32(end)); err != nil {
			return fmt.Errorf("step %d: %w", t, err)
		}
	}
	return nil
}

func (c *collCase) runLibrary(v *lab.Variant) error {
	comm, err := c.env.RankCommunicator()
	if err != nil {
		return err
	}
	send, recv, st := c.in.Mine.DevicePtr(), c.out.DevicePtr(), c.env.Stream
	switch {
	case v.Library == LibAllReduce && c.op == AllReduce:
		return comm.AllReduce(send, recv, c.count, gpu.F32, st)
	case v.Library == LibAllGather && c.op == AllGather:
		return comm.AllGather(send, recv, c.count, gpu.F32, st)
	case v.Library == LibReduceScatter && c.op == ReduceScatter:
		return comm.ReduceScatter(send, recv, c.count, gpu.F32, st)
	case v.Library == LibAllToAll && (c.op == AllToAll || c.op == AllToAllV):
		b := c.blocks
		if b == nil {
			b = EqualBlocks(c.n, c.count)
		}
		sc, so, rc, ro := b.PerPeer(c.rank)
		return comm.AllToAllV(send, sc, so, recv, rc, ro, gpu.F32, st)
	}
	return fmt.Errorf("variant %s: library %q does not compute an %s (lab 04 knows %s, %s, %s and %s)",
		v.Name, v.Library, c.op, LibAllReduce, LibAllGather, LibReduceScatter, LibAllToAll)
}

// Check compares this rank's output with the reference (the engine reports the worst rank's).
func (c *collCase) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	got, err := out.Float32(c.out)
	if err != nil {
		return check.Report{}, err
	}
	var ref []float64
	if c.op == AllToAllV {
		ref = ReferenceV(c.ins, c.blocks, c.rank)
	} else {
		ref = Reference(c.op, c.ins, c.rank)
	}
	rep := check.Against(got[:c.oc], ref, out.Tolerance()) // an empty output has one unwritten element
	rep.Method = fmt.Sprintf("every rank's output elementwise against a float64 %s of the %d ranks' inputs", refWord(c.op), c.n)
	return rep, nil
}

func refWord(op Op) string {
	switch op {
	case AllGather:
		return "concatenation"
	case ReduceScatter:
		return "sum (its block)"
	case AllToAll:
		return "gather (its block of each)"
	case AllToAllV:
		return "gather (its block of each, of the sizes in the table)"
	}
	return "sum"
}

// Work makes the engine's GB/s the bus bandwidth (see WorkOf).
func (c *collCase) Work() lab.Work {
	if c.op == AllToAllV {
		return WorkOfV(c.blocks)
	}
	return WorkOf(c.op, c.n, c.count)
}
