// Package collectives is lab 04: allreduce, all-gather, reduce-scatter and all-to-all between
// ranks, one process per GPU, over buffers that every rank of the node maps, against NCCL,
// measured with nccl-tests' bus bandwidth.
//
// The driver supplies each rank's buffers and inputs, the reference (a float64 sum or
// concatenation of every rank's inputs, which every rank draws from the same seeds), one call per
// variant, and the byte count that makes the engine's GB/s the bus bandwidth. Suites named
// bf16_... move bf16 data (lab.PrecisionOf), the others fp32, through the same case.
package collectives

import (
	"fmt"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

const LabDir = "04_collectives" // the lab's directory name, the key of its driver

// The library variants (lab.yaml library:).
const (
	LibAllReduce     = "nccl_allreduce"
	LibAllGather     = "nccl_allgather"
	LibReduceScatter = "nccl_reducescatter"
	LibAllToAll      = "nccl_alltoall" // grouped ncclSend/ncclRecv, as nccl-tests' alltoall
	LibReduceV       = "nccl_reduce_v" // grouped ncclReduce, one per shard, as PyTorch's uneven reduce_scatter
)

// Kernel entries that the driver launches in ways of their own.
const (
	EntryRing = "allreduce_ring_step" // one launch per step, a device barrier between steps (runRing)
	// The kernels on NCCL's device API (runSymmetric).
	EntryNCCLOneShot   = "allreduce_nccl_one_shot"
	EntryNCCLAllGather = "allgather_nccl_pull"
)

// Launch parameters a kernel variant may set (lab.yaml params:) besides lab.GridStride's.
const (
	ParamSharedOut    = "shared_out"    // 1: the kernel writes its peers' outputs (a push), so every rank maps its own
	ParamFusedBarrier = "fused_barrier" // 1: it synchronises the ranks itself (kl_rank_barrier_start/end, the signals after its buffers)
)

// Lab is the driver of lab 04.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

type collCase[T elem] struct {
	lab.RankCase
	Layout
	prec        lab.Precision
	ins         [][]float32 // every rank's input, for the reference (bf16 values in bf16 suites)
	in          *lab.Shared[T]
	sizeRows    *lab.Shared[int32]
	offsets     *gpu.Buffer[int64] // the n+1 shard offsets of an uneven reduce-scatter
	out         *gpu.Buffer[T]     // this rank's output
	outs        *lab.Shared[T]     // every rank's output, for kernels that push (shared_out)
	sig         *gpu.Buffer[uint64]
	inCount, oc int        // this rank's input and output lengths
	sym         *symmetric // NCCL's symmetric window of the input, made on first use
}

// Prepare draws every rank's input (the same seeds on every rank) and allocates this rank's buffers.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	switch {
	case s.Name == "moe_dispatch" || s.Name == "moe_combine": // moe.go
		return prepareMoE(env, s, p)
	case lab.PrecisionOf(s) == lab.BF16:
		return prepare[uint16](env, s, p)
	}
	return prepare[float32](env, s, p)
}

func prepare[T elem](env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	prec := lab.PrecisionOf(s)
	count, err := CountOf(p, prec)
	if err != nil {
		return nil, err
	}
	c := &collCase[T]{RankCase: lab.NewRankCase(env), prec: prec}
	if c.Layout, err = LayoutOf(OpOf(s), p, c.N, count, env.RNG); err != nil {
		return nil, err
	}
	var mine []T
	for r := range c.N {
		in, _ := c.Sizes(r)
		c.ins = append(c.ins, make([]float32, in))
		if dev := fillInputs[T](c.ins[r], env.RNG.Uint64()); r == c.Rank {
			mine = dev
		}
	}
	c.inCount, c.oc = c.Sizes(c.Rank)
	a := lab.NewPrep(env)
	a.Need(int64(prec.Bytes()) * int64(c.inCount+c.oc))
	c.in = lab.PrepUploadShared(a, "input", lab.OrOne(mine, 1)) // an uneven all-to-all's may be empty
	switch c.Op {
	case AllToAllV:
		c.sizeRows = lab.PrepUploadShared(a, "block sizes", c.Blocks.Row(c.Rank))
	case ReduceScatterV:
		c.offsets = lab.PrepUpload(a, "shard offsets", ShardOffsets(c.Shards))
	}
	// The output, NaN-poisoned: shared when a variant of the suite pushes into its peers' (shared_out).
	if slices.ContainsFunc(s.Variants, func(v *lab.Variant) bool { return v.Params[ParamSharedOut] != 0 }) {
		c.outs = lab.PrepSharedOutput[T](a, "output", max(c.oc, 1), prec.NaN(lab.NaNBits32))
	} else {
		c.out = lab.PrepOutput[T](a, "output", max(c.oc, 1), prec.NaN(lab.NaNBits32))
	}
	c.sig = a.Signals()
	if c.outs != nil {
		c.out = c.outs.Mine
	}
	return lab.Done[lab.Case](a, c)
}

// Run is one collective on this rank's stream, with no host in between: NCCL's call, or the
// kernel between two device barriers (inside it, for kernels that fuse them).
func (c *collCase[T]) Run(v *lab.Variant) error {
	if v.Library != "" {
		return c.runLibrary(v)
	}
	if OnNCCLDevice(v) {
		return c.runSymmetric(v)
	}
	k, err := c.Kernel(v)
	if err != nil {
		return err
	}
	if v.Params[ParamFusedBarrier] != 0 {
		return c.launch(k, v)
	}
	return lab.InOrder(c.Barrier, func() error { return c.launch(k, v) }, c.Barrier)
}

func (c *collCase[T]) launch(k gpu.Kernel, v *lab.Variant) error {
	if v.Entry == EntryRing {
		return c.runRing(k, v)
	}
	work := c.oc // a thread per output element, but for the two-shot's share of the sum
	if v.Entry == "allreduce_two_shot" {
		work = lab.CeilDiv(c.Count, c.N)
	}
	cfg := c.GridStride(v, work)
	n, cnt, rank := int32(c.N), int32(c.Count), int32(c.Rank)
	switch v.Entry {
	case "allreduce_one_shot":
		return gpu.Launch(k, cfg, c.in.Table, c.out, c.sig, rank, n, cnt)
	case "allreduce_two_shot":
		return gpu.Launch(k, cfg, c.in.Table, c.outs.Table, c.sig, rank, n, cnt)
	case "allgather_pull", "reduce_scatter_direct":
		if c.Shards != nil {
			if !lab.AllEqual(c.Shards) {
				return lab.Skip("kernel 13 takes shards of equal size; this problem's differ")
			}
			cnt = int32(c.Shards[0])
		}
	case "all_to_all_pull": // kernel 06
		if c.Op == AllToAllV && !c.Blocks.Equal() {
			return lab.Skip("%s (kernel 06) takes blocks of equal size; this problem's differ", v.Name)
		}
		if c.Blocks != nil {
			cnt = int32(c.Blocks[0][0]) // the one size, drawn (or not) around the problem's mean
		}
	default:
		switch c.Op {
		case AllToAllV: // sizes: the table of the n ranks' rows
			return gpu.Launch(k, cfg, c.in.Table, c.out, c.sizeRows.Table, rank, n)
		case ReduceScatterV: // offsets: the n+1 starts of the shards
			return gpu.Launch(k, cfg, c.in.Table, c.out, c.offsets, rank, n)
		case ReduceScatter: // every reduce-scatter kernel (05, 13, exercise 2) takes kernel 05's arguments
		default:
			return fmt.Errorf("variant %s: the driver does not know how to launch entry %s", v.Name, v.Entry)
		}
	}
	return gpu.Launch(k, cfg, c.in.Table, c.out, rank, n, cnt)
}

// runRing queues the 2(n−1) steps of the ring allreduce, a device barrier between two: a rank
// reads its left neighbour's chunk after it was written and overwrites its own after its right
// neighbour has read it.
func (c *collCase[T]) runRing(k gpu.Kernel, v *lab.Variant) error {
	if c.outs == nil {
		return fmt.Errorf("variant %s: the ring reads its neighbour's output (set %s: 1 on a variant of the suite in lab.yaml)", v.Name, ParamSharedOut)
	}
	if c.N == 1 {
		return lab.Skip("a ring needs at least 2 ranks")
	}
	left := (c.Rank + c.N - 1) % c.N
	for t := range 2 * (c.N - 1) {
		if t > 0 {
			if err := c.Barrier(); err != nil {
				return err
			}
		}
		chunk, reduce := RingStep(c.N, c.Rank, t)
		begin, end := RingChunk(c.Count, c.N, chunk)
		src, mine := c.outs.Ptr(left), gpu.Ptr(0)
		if t == 0 {
			src = c.in.Ptr(left)
		}
		if reduce {
			mine = c.in.Mine.DevicePtr()
		}
		if err := gpu.Launch(k, c.GridStride(v, end-begin), src, mine, c.out, int32(begin), int32(end)); err != nil {
			return fmt.Errorf("step %d: %w", t, err)
		}
	}
	return nil
}

func (c *collCase[T]) runLibrary(v *lab.Variant) error {
	comm, err := c.Env.RankCommunicator()
	if err != nil {
		return err
	}
	send, recv, t, st := c.in.Mine.DevicePtr(), c.out.DevicePtr(), c.prec.DataType(), c.Env.Stream
	switch {
	case v.Library == LibAllReduce && c.Op == AllReduce:
		return comm.AllReduce(send, recv, c.Count, t, st)
	case v.Library == LibAllGather && c.Op == AllGather:
		return comm.AllGather(send, recv, c.Count, t, st)
	case v.Library == LibReduceScatter && c.Op == ReduceScatter:
		return comm.ReduceScatter(send, recv, c.Count, t, st)
	case v.Library == LibAllToAll && c.Blocks != nil:
		return c.Blocks.AllToAllV(comm, c.Rank, 1, false, send, recv, t, st)
	case v.Library == LibReduceV && c.Shards != nil:
		return comm.ReduceScatterV(send, c.Shards, recv, t, st)
	}
	return fmt.Errorf("variant %s: library %q does not compute an %s (lab 04 knows %s, %s, %s, %s and %s)",
		v.Name, v.Library, c.Op, LibAllReduce, LibAllGather, LibReduceScatter, LibAllToAll, LibReduceV)
}

// Check compares this rank's output with the reference (the engine reports the worst rank's).
func (c *collCase[T]) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	got, err := lab.Widened(out, c.out)
	if err != nil {
		return check.Report{}, err
	}
	ref := c.Reference(c.ins, c.Rank)
	lo, _ := c.Span(c.Rank, c.Rank) // where this rank's elements start in the inputs
	// lab.yaml's bf16 tolerance is one rounding of the sum; the ring and NCCL round n−2 partial sums too.
	tol := out.Tolerance()
	if c.prec == lab.BF16 && c.N > 2 && ops[c.Op].sum && (v.Library != "" || v.Entry == EntryRing) {
		tol *= 1 + float64(c.N-2)*PartialSums(c.ins, ref, lo)
	}
	rep := check.Against(got[:c.oc], ref, tol) // an empty output has one unwritten element
	rep.Method = fmt.Sprintf("every rank's output elementwise against a float64 %s of the %d ranks' inputs", ops[c.Op].ref, c.N)
	return rep, nil
}

func (c *collCase[T]) Work() lab.Work { return c.Layout.Work(c.prec.Bytes()) }
