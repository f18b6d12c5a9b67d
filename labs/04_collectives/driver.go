// Package collectives is lab 04: allreduce, all-gather, reduce-scatter and all-to-all between the
// devices of one process, over peer memory, against NCCL, measured with nccl-tests' bus bandwidth.
//
// Like a collective of nccl-tests, the driver supplies only what differs: the buffers of every
// rank, the reference (a float64 sum or concatenation of the ranks' inputs), one call per
// variant, and the byte count that makes the engine's GB/s the bus bandwidth.
package collectives

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

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
)

// EntryRing is the entry of the ring allreduce: one launch per step and rank (see runRing).
const EntryRing = "allreduce_ring_step"

// Launch parameters a kernel variant may set (lab.yaml params:): threads per block (256) and
// blocks per SM (2); the grid is min(blocks the elements need, SMs × blocks_per_sm), and the
// kernels loop over what is left (grid-stride).
const (
	ParamThreads     = "threads"
	ParamBlocksPerSM = "blocks_per_sm"
)

// nanBits is the float32 NaN that outputs are poisoned with.
const nanBits = 0x7FC00000

// Op is a suite's collective.
type Op int

const (
	AllReduce Op = iota
	AllGather
	ReduceScatter
	AllToAll
	AllToAllV // all-to-all with blocks of different sizes (alltoallv.go)
)

func (o Op) String() string {
	switch o {
	case AllGather:
		return "allgather"
	case ReduceScatter:
		return "reduce_scatter"
	case AllToAll:
		return "all_to_all"
	case AllToAllV:
		return "all_to_allv"
	}
	return "allreduce"
}

// OpOf says which collective a suite measures, by the start of its name: allgather...,
// reduce_scatter..., all_to_allv..., all_to_all...; the others are allreduces.
func OpOf(s *lab.Suite) Op {
	for _, o := range []Op{AllGather, ReduceScatter, AllToAllV, AllToAll} { // all_to_allv before its prefix
		if strings.HasPrefix(s.Name, o.String()) {
			return o
		}
	}
	return AllReduce
}

// Counts are the per-rank element counts of a collective's input and output for n ranks and the
// problem's count (bytes/4): for allreduce count in and out; for all-gather count in, n·count
// out; for reduce-scatter and all-to-all count is one block (nccl-tests' count): n blocks in,
// one block (reduce-scatter) or n blocks (all-to-all) out.
func Counts(op Op, n, count int) (in, out int) {
	switch op {
	case AllGather:
		return count, n * count
	case ReduceScatter:
		return n * count, count
	case AllToAll, AllToAllV: // AllToAllV: when every block has count elements
		return n * count, n * count
	}
	return count, count
}

// Lab is the driver of lab 04.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

var _ lab.Driver = Lab{}

// CountOf reads a problem's per-rank size in bytes and returns the element count (fp32).
func CountOf(p lab.Problem) (int, error) {
	b := p.Int("bytes", 0)
	switch {
	case b < 4:
		return 0, fmt.Errorf("problem %q: bytes must be at least 4 (one fp32 element), got %d", p.Name, b)
	case b%4 != 0:
		return 0, fmt.Errorf("problem %q: bytes = %d is not a whole number of fp32 elements (a multiple of 4)", p.Name, b)
	case b/4 > math.MaxInt32:
		return 0, fmt.Errorf("problem %q: %d elements is beyond the kernels' 32-bit counts", p.Name, b/4)
	}
	return int(b / 4), nil
}

// BusFactor is nccl-tests' ratio busbw / algbw for n ranks: 2(n−1)/n for allreduce, (n−1)/n for
// all-gather, reduce-scatter and all-to-all. It turns the rate of one rank's data into the rate each link must sustain in a
// bandwidth-optimal algorithm, so that the figure is comparable across n and with the hardware.
func BusFactor(op Op, n int) float64 {
	if n < 1 {
		return 0
	}
	if op == AllReduce {
		return 2 * float64(n-1) / float64(n)
	}
	return float64(n-1) / float64(n)
}

// AlgBytes are the bytes that nccl-tests divides by the time for algbw: the per-rank buffer S
// for allreduce; n blocks of S = 4·count for the others (received by all-gather, sent by
// reduce-scatter, sent and received by all-to-all).
func AlgBytes(op Op, n, count int) float64 {
	s := 4 * float64(count)
	if op == AllReduce {
		return s
	}
	return float64(n) * s
}

// WorkOf is the work of one collective: Bytes = AlgBytes · BusFactor, so that the engine's GB/s
// (Bytes / time) is the bus bandwidth. No FLOPs: the (n−1)·count additions per rank are never
// what limits a collective, and a TFLOP/s figure would only distract.
func WorkOf(op Op, n, count int) lab.Work {
	return lab.Work{Bytes: AlgBytes(op, n, count) * BusFactor(op, n)}
}

// Reference computes what rank `rank` must hold, from every rank's input: the float64
// elementwise sum of the inputs (allreduce), their concatenation (all-gather), block `rank` of
// the sum (reduce-scatter), block `rank` of every input, concatenated (all-to-all).
func Reference(op Op, ins [][]float32, rank int) []float64 {
	n := len(ins)
	if n == 0 {
		return nil
	}
	in := len(ins[0])
	switch op {
	case AllGather:
		ref := make([]float64, 0, n*in)
		for _, x := range ins {
			for _, v := range x {
				ref = append(ref, float64(v))
			}
		}
		return ref
	case AllToAll:
		count := in / n
		ref := make([]float64, 0, in)
		for _, x := range ins {
			for _, v := range x[rank*count : (rank+1)*count] {
				ref = append(ref, float64(v))
			}
		}
		return ref
	}
	lo, hi := 0, in
	if op == ReduceScatter {
		lo, hi = rank*(in/n), (rank+1)*(in/n)
	}
	ref := make([]float64, hi-lo)
	for _, x := range ins {
		for i, v := range x[lo:hi] {
			ref[i] += float64(v)
		}
	}
	return ref
}

// SameForAllRanks says whether every rank's reference is the same (allreduce, all-gather).
func SameForAllRanks(op Op) bool { return op == AllReduce || op == AllGather }

// fillInputs fills x with values uniform in ±[2^-10, 1): random signs, never zero.
func fillInputs(x []float32, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0xda942042e4dd58b5))
	for i := range x {
		v := float32(r.Float64()*(1-1.0/1024) + 1.0/1024)
		if r.Uint32()&1 == 1 {
			v = -v
		}
		x[i] = v
	}
}

// Prepare allocates the inputs and outputs of every rank and the tables of peer pointers, and
// enables peer access between every pair of devices.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	count, err := CountOf(p)
	if err != nil {
		return nil, err
	}
	n := len(env.Devices)
	if n < 2 {
		return nil, lab.Skip("a collective needs at least 2 devices, this run has %d (set devices: in lab.yaml; the emulator: --emu-devices 2)", n)
	}
	if len(env.Streams) != n {
		return nil, fmt.Errorf("the engine gave %d devices and %d streams", n, len(env.Streams))
	}
	op := OpOf(s)
	var blocks Blocks
	if op == AllToAllV {
		if blocks, err = BlockSizes(p, n, count, env.RNG); err != nil {
			return nil, err
		}
	}
	c, err := prepare(env, op, count, blocks)
	if err != nil {
		return nil, fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err)
	}
	return c, nil
}

// collCase is one prepared problem on every rank.
type collCase struct {
	env   *lab.Env
	op    Op
	n     int
	count int
	ins   [][]float32 // host copies of the inputs, for the reference

	dIn, dOut []*gpu.Buffer[float32] // per rank
	// Per rank, the table of every rank's input (and output) pointer, on that rank's device.
	dInTab, dOutTab []*gpu.Buffer[uint64]

	// The uneven all-to-all: the block sizes, each rank's row of them on its device, and per rank
	// the table of every rank's row.
	blocks   Blocks
	dSizes   []*gpu.Buffer[int32]
	dSizeTab []*gpu.Buffer[uint64]

	// The ring allreduce's events, created on its first run: events[t][r] marks the end of step
	// t of rank r (one event per step, so that no event is recorded again before every wait for
	// its previous record has been queued).
	events [][]gpu.Event
}

// bufSizes are rank r's input and output element counts.
func (c *collCase) bufSizes(r int) (in, out int) {
	if c.op == AllToAllV {
		return c.blocks.Sent(r), c.blocks.Received(r)
	}
	return Counts(c.op, c.n, c.count)
}

func prepare(env *lab.Env, op Op, count int, blocks Blocks) (*collCase, error) {
	n := len(env.Devices)
	c := &collCase{env: env, op: op, n: n, count: count, blocks: blocks}
	need := int64(0)
	for r := range n {
		in, out := c.bufSizes(r)
		need = max(need, 4*int64(in+out))
	}
	for i, d := range env.Devices {
		if free, total, err := d.MemInfo(); err == nil && total > 0 && need > free {
			return nil, fmt.Errorf("device %d: needs %s, %s of %s is free (use a smaller size)",
				i, gpu.HumanBytes(need), gpu.HumanBytes(free), gpu.HumanBytes(total))
		}
	}
	if err := gpu.EnablePeers(env.Devices); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			c.Release()
		}
	}()
	inPtrs := make([]uint64, n)
	outPtrs := make([]uint64, n)
	for r, d := range env.Devices {
		inCount, outCount := c.bufSizes(r)
		in := make([]float32, inCount)
		fillInputs(in, env.RNG.Uint64())
		c.ins = append(c.ins, in)
		// An empty buffer of an uneven all-to-all still gets one element, so that every rank has
		// a pointer to hand out; the kernels never touch it.
		b, err := gpu.Upload(d, append(in[:inCount:inCount], make([]float32, max(0, 1-inCount))...))
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading the input: %w", r, err)
		}
		c.dIn = append(c.dIn, b)
		o, err := gpu.Alloc[float32](d, max(outCount, 1))
		if err != nil {
			return nil, fmt.Errorf("rank %d: allocating the output: %w", r, err)
		}
		c.dOut = append(c.dOut, o)
		inPtrs[r], outPtrs[r] = uint64(b.DevicePtr()), uint64(o.DevicePtr())
	}
	for r, d := range env.Devices {
		t, err := gpu.Upload(d, inPtrs)
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading the table of inputs: %w", r, err)
		}
		c.dInTab = append(c.dInTab, t)
		if t, err = gpu.Upload(d, outPtrs); err != nil {
			return nil, fmt.Errorf("rank %d: uploading the table of outputs: %w", r, err)
		}
		c.dOutTab = append(c.dOutTab, t)
	}
	if op == AllToAllV {
		if err := c.uploadSizes(); err != nil {
			return nil, err
		}
	}
	ok = true
	return c, nil
}

// uploadSizes puts each rank's row of block sizes on its device and, on every device, the table
// of the n rows.
func (c *collCase) uploadSizes() error {
	rows := make([]uint64, c.n)
	for r, d := range c.env.Devices {
		b, err := gpu.Upload(d, c.blocks.Row(r))
		if err != nil {
			return fmt.Errorf("rank %d: uploading its block sizes: %w", r, err)
		}
		c.dSizes = append(c.dSizes, b)
		rows[r] = uint64(b.DevicePtr())
	}
	for r, d := range c.env.Devices {
		t, err := gpu.Upload(d, rows)
		if err != nil {
			return fmt.Errorf("rank %d: uploading the table of block sizes: %w", r, err)
		}
		c.dSizeTab = append(c.dSizeTab, t)
	}
	return nil
}

// syncAll waits on the host for every rank's stream and returns the first error.
func (c *collCase) syncAll() error { return gpu.SynchronizeAll(c.env.Streams) }

// Poison fills every rank's output with NaN and waits for it, so that no run sees a half-done fill.
func (c *collCase) Poison() error {
	if err := gpu.Fill32Each(c.dOut, nanBits, c.env.Streams); err != nil {
		return err
	}
	return c.syncAll()
}

// Run launches the collective on every rank's stream, then waits for all of them on the host: the
// engine's end event on rank 0's stream then comes after every rank's work, and no rank of this
// run can still be writing a peer's output when the next run starts. The wait is a host round trip
// inside the measured time.
func (c *collCase) Run(v *lab.Variant) error {
	var err error
	if v.Library != "" {
		err = c.runLibrary(v)
	} else {
		err = c.runKernel(v)
	}
	if err != nil {
		return err
	}
	return c.syncAll()
}

// Grid is the launch of a kernel variant over `work` elements on a device with sms SMs.
func Grid(params map[string]int64, work, sms int) (grid, threads int) {
	threads = 256
	if t, ok := params[ParamThreads]; ok && t > 0 {
		threads = int(t)
	}
	per := 2
	if b, ok := params[ParamBlocksPerSM]; ok && b > 0 {
		per = int(b)
	}
	return gpu.GridFor(work, threads, sms, per), threads
}

func (c *collCase) runKernel(v *lab.Variant) error {
	if v.Entry == EntryRing {
		return c.runRing(v)
	}
	if c.op == AllToAllV && v.Entry == EntryAllToAllPull && !c.blocks.Equal() {
		return lab.Skip("%s (kernel 06) takes blocks of equal size; this problem's differ", v.Name)
	}
	for r := range c.n {
		k, err := c.env.KernelOn(r, v)
		if err != nil {
			return err
		}
		work := c.count
		switch {
		case c.op == AllGather || c.op == AllToAll:
			work = c.n * c.count
		case c.op == AllToAllV:
			_, work = c.bufSizes(r)
		case v.Entry == "allreduce_two_shot":
			work = (c.count + c.n - 1) / c.n
		}
		grid, threads := Grid(v.Params, work, c.env.Devices[r].Info().SMs)
		cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: c.env.Streams[r]}
		n, cnt, rank := int32(c.n), int32(c.count), int32(r)
		switch {
		case c.op == AllToAllV && v.Entry != EntryAllToAllPull:
			// (ins, out, sizes, rank, nranks): sizes is the table of the n ranks' rows.
			err = gpu.Launch(k, cfg, c.dInTab[r], c.dOut[r], c.dSizeTab[r], rank, n)
		default:
			err = c.launchEqual(k, cfg, v, r, n, cnt, rank)
		}
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

// launchEqual launches the kernels whose blocks all have count elements, by entry.
func (c *collCase) launchEqual(k gpu.Kernel, cfg gpu.LaunchConfig, v *lab.Variant, r int, n, cnt, rank int32) error {
	switch v.Entry {
	case "allreduce_one_shot":
		return gpu.Launch(k, cfg, c.dInTab[r], c.dOut[r], n, cnt)
	case "allreduce_two_shot":
		return gpu.Launch(k, cfg, c.dInTab[r], c.dOutTab[r], rank, n, cnt)
	case "allgather_pull", "reduce_scatter_direct", EntryAllToAllPull:
		return gpu.Launch(k, cfg, c.dInTab[r], c.dOut[r], rank, n, cnt)
	}
	return fmt.Errorf("variant %s: the driver does not know how to launch entry %s", v.Name, v.Entry)
}

func (c *collCase) runLibrary(v *lab.Variant) error {
	comm, err := c.env.Communicator()
	if err != nil {
		return err
	}
	send := make([]gpu.Ptr, c.n)
	recv := make([]gpu.Ptr, c.n)
	for r := range c.n {
		send[r], recv[r] = c.dIn[r].DevicePtr(), c.dOut[r].DevicePtr()
	}
	switch {
	case v.Library == LibAllReduce && c.op == AllReduce:
		return comm.AllReduce(send, recv, c.count, gpu.F32, c.env.Streams)
	case v.Library == LibAllGather && c.op == AllGather:
		return comm.AllGather(send, recv, c.count, gpu.F32, c.env.Streams)
	case v.Library == LibReduceScatter && c.op == ReduceScatter:
		return comm.ReduceScatter(send, recv, c.count, gpu.F32, c.env.Streams)
	}
	return fmt.Errorf("variant %s: library %q does not compute an %s (lab 04 knows %s, %s and %s)",
		v.Name, v.Library, c.op, LibAllReduce, LibAllGather, LibReduceScatter)
}

// Check compares every rank's output with the reference; the report is the worst rank's, named.
func (c *collCase) Check(v *lab.Variant) (check.Report, error) {
	var ref []float64
	var worst check.Report
	for r, o := range c.dOut {
		if ref == nil || !SameForAllRanks(c.op) {
			ref = c.reference(r)
		}
		out, err := o.Download()
		if err != nil {
			return check.Report{}, fmt.Errorf("rank %d: reading the output back: %w", r, err)
		}
		_, outCount := c.bufSizes(r)
		out = out[:outCount] // an empty receive buffer has one element that nobody writes
		rep := check.Compare(out, ref, v.Suite.Tolerance)
		rep.Method = fmt.Sprintf("every rank's output elementwise against a float64 %s of the %d ranks' inputs", refWord(c.op), c.n)
		note := fmt.Sprintf("rank %d", r)
		if rep.Note != "" {
			note += ": " + rep.Note
		}
		rep.Note = note
		if r == 0 || (!rep.OK && worst.OK) || (rep.OK == worst.OK && rep.RelErr > worst.RelErr) {
			worst = rep
		}
	}
	if worst.OK {
		worst.Note = fmt.Sprintf("all %d ranks correct; largest error on %s", c.n, worst.Note)
	}
	return worst, nil
}

func (c *collCase) reference(r int) []float64 {
	if c.op == AllToAllV {
		return ReferenceV(c.ins, c.blocks, r)
	}
	return Reference(c.op, c.ins, r)
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

// Release frees every rank's buffers (the communicator belongs to the Env).
func (c *collCase) Release() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, evs := range c.events {
		for _, e := range evs {
			keep(e.Close())
		}
	}
	c.events = nil
	for _, bs := range [][]*gpu.Buffer[float32]{c.dIn, c.dOut} {
		for _, b := range bs {
			keep(b.Free())
		}
	}
	for _, b := range c.dSizes {
		keep(b.Free())
	}
	for _, bs := range [][]*gpu.Buffer[uint64]{c.dInTab, c.dOutTab, c.dSizeTab} {
		for _, b := range bs {
			keep(b.Free())
		}
	}
	return first
}

// RingChunk is the element range [begin, end) of chunk c when count elements are cut into n
// chunks of ceil(count/n): the last chunks may be shorter or empty.
func RingChunk(count, n, c int) (begin, end int) {
	size := (count + n - 1) / n
	begin = min(count, c*size)
	return begin, min(count, begin+size)
}

// RingStep says what rank r does at step t (0 … 2(n−1)−1) of the ring allreduce: which chunk it
// writes, and whether it adds its own input (the n−1 reduce-scatter steps) or copies (the n−1
// all-gather steps). It always reads that chunk from its left neighbour, rank (r−1) mod n: at
// step 0 from the neighbour's input, after that from the neighbour's output.
func RingStep(n, r, t int) (chunk int, reduce bool) {
	if t < n-1 {
		return ((r-1-t)%n + n) % n, true
	}
	s := t - (n - 1)
	return ((r-s)%n + n) % n, false
}

// runRing queues the 2(n−1) steps of the ring allreduce on every rank's stream, one launch per
// step and rank. The order across devices comes from events: before step t ≥ 1, rank r's stream
// waits for step t−1 of its left neighbour (whose output it reads now: read after write) and of
// its right neighbour (which at step t−1 or earlier read the chunk of rank r's output that step t
// may overwrite: write after read). No flags and no spinning: a step cannot start before the data
// it needs, whatever the number of resident blocks.
func (c *collCase) runRing(v *lab.Variant) error {
	n := c.n
	steps := 2 * (n - 1)
	if c.events == nil {
		for range steps {
			evs := make([]gpu.Event, n)
			for r, d := range c.env.Devices {
				e, err := d.NewEvent()
				if err != nil {
					for _, x := range evs[:r] {
						x.Close()
					}
					return fmt.Errorf("rank %d: creating the ring's events: %w", r, err)
				}
				evs[r] = e
			}
			c.events = append(c.events, evs)
		}
	}
	ks := make([]gpu.Kernel, n)
	for r := range n {
		k, err := c.env.KernelOn(r, v)
		if err != nil {
			return err
		}
		ks[r] = k
	}
	for t := range steps {
		for r := range n {
			left, right := (r+n-1)%n, (r+1)%n
			st := c.env.Streams[r]
			if t > 0 {
				if err := st.WaitEvent(c.events[t-1][left]); err != nil {
					return fmt.Errorf("rank %d, step %d: %w", r, t, err)
				}
				if right != left {
					if err := st.WaitEvent(c.events[t-1][right]); err != nil {
						return fmt.Errorf("rank %d, step %d: %w", r, t, err)
					}
				}
			}
			chunk, reduce := RingStep(n, r, t)
			begin, end := RingChunk(c.count, n, chunk)
			src := c.dOut[left].DevicePtr()
			if t == 0 {
				src = c.dIn[left].DevicePtr()
			}
			var mine gpu.Ptr
			if reduce {
				mine = c.dIn[r].DevicePtr()
			}
			grid, threads := Grid(v.Params, end-begin, c.env.Devices[r].Info().SMs)
			cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: st}
			if err := gpu.Launch(ks[r], cfg, src, mine, c.dOut[r].DevicePtr(), int32(begin), int32(end)); err != nil {
				return fmt.Errorf("rank %d, step %d: %w", r, t, err)
			}
			if err := c.events[t][r].Record(st); err != nil {
				return fmt.Errorf("rank %d, step %d: %w", r, t, err)
			}
		}
	}
	return nil
}
