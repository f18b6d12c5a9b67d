// Package collectives is lab 04: allreduce and all-gather between the devices of one process,
// over peer memory, against NCCL, measured with nccl-tests' bus bandwidth.
//
// Like a collective of nccl-tests, the driver supplies only what differs: the buffers of every
// rank, the reference (a float64 sum or concatenation of the ranks' inputs), one call per
// variant, and the byte count that makes the engine's GB/s the bus bandwidth.
package collectives

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// LabDir is the lab's directory name, the key of its driver.
const LabDir = "04_collectives"

// The library variants (lab.yaml library:).
const (
	LibAllReduce = "nccl_allreduce"
	LibAllGather = "nccl_allgather"
)

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
)

func (o Op) String() string {
	if o == AllGather {
		return "allgather"
	}
	return "allreduce"
}

// OpOf says which collective a suite measures: suites named allgather... are all-gathers, the
// others allreduces.
func OpOf(s *lab.Suite) Op {
	if len(s.Name) >= 9 && s.Name[:9] == "allgather" {
		return AllGather
	}
	return AllReduce
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
// all-gather. It turns the rate of one rank's data into the rate each link must sustain in a
// bandwidth-optimal algorithm, so that the figure is comparable across n and with the hardware.
func BusFactor(op Op, n int) float64 {
	if n < 1 {
		return 0
	}
	if op == AllGather {
		return float64(n-1) / float64(n)
	}
	return 2 * float64(n-1) / float64(n)
}

// AlgBytes are the bytes that nccl-tests divides by the time for algbw: the per-rank buffer S
// for allreduce, the received n·S for all-gather.
func AlgBytes(op Op, n, count int) float64 {
	s := 4 * float64(count)
	if op == AllGather {
		return float64(n) * s
	}
	return s
}

// WorkOf is the work of one collective: Bytes = AlgBytes · BusFactor, so that the engine's GB/s
// (Bytes / time) is the bus bandwidth. No FLOPs: the (n−1)·count additions per rank are never
// what limits a collective, and a TFLOP/s figure would only distract.
func WorkOf(op Op, n, count int) lab.Work {
	return lab.Work{Bytes: AlgBytes(op, n, count) * BusFactor(op, n)}
}

// Reference computes what every rank must hold: the float64 elementwise sum of the inputs
// (allreduce) or their concatenation (all-gather).
func Reference(op Op, ins [][]float32) []float64 {
	if len(ins) == 0 {
		return nil
	}
	count := len(ins[0])
	if op == AllGather {
		ref := make([]float64, 0, len(ins)*count)
		for _, in := range ins {
			for _, v := range in {
				ref = append(ref, float64(v))
			}
		}
		return ref
	}
	ref := make([]float64, count)
	for _, in := range ins {
		for i, v := range in {
			ref[i] += float64(v)
		}
	}
	return ref
}

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
	c, err := prepare(env, OpOf(s), count)
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

	comm gpu.Communicator // NCCL, opened on the first library run
}

func prepare(env *lab.Env, op Op, count int) (*collCase, error) {
	n := len(env.Devices)
	outCount := count
	if op == AllGather {
		outCount = n * count
	}
	need := 4 * int64(count+outCount)
	for i, d := range env.Devices {
		if free, total, err := d.MemInfo(); err == nil && total > 0 && need > free {
			return nil, fmt.Errorf("device %d: needs %s, %s of %s is free (use a smaller size)",
				i, gpu.HumanBytes(need), gpu.HumanBytes(free), gpu.HumanBytes(total))
		}
	}
	if err := gpu.EnablePeers(env.Devices); err != nil {
		return nil, err
	}
	c := &collCase{env: env, op: op, n: n, count: count}
	ok := false
	defer func() {
		if !ok {
			c.Release()
		}
	}()
	inPtrs := make([]uint64, n)
	outPtrs := make([]uint64, n)
	for r, d := range env.Devices {
		in := make([]float32, count)
		fillInputs(in, env.RNG.Uint64())
		c.ins = append(c.ins, in)
		b, err := gpu.Upload(d, in)
		if err != nil {
			return nil, fmt.Errorf("rank %d: uploading the input: %w", r, err)
		}
		c.dIn = append(c.dIn, b)
		o, err := gpu.Alloc[float32](d, outCount)
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
	ok = true
	return c, nil
}

// syncAll waits on the host for every rank's stream and returns the first error.
func (c *collCase) syncAll() error {
	var first error
	for r, s := range c.env.Streams {
		if err := s.Synchronize(); err != nil && first == nil {
			first = fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return first
}

// Poison fills every rank's output with NaN and waits for it, so that no run sees a half-done fill.
func (c *collCase) Poison() error {
	for r, o := range c.dOut {
		if err := o.Fill32(nanBits, c.env.Streams[r]); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
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
	for r := range c.n {
		k, err := c.env.KernelOn(r, v)
		if err != nil {
			return err
		}
		work := c.count
		switch {
		case c.op == AllGather:
			work = c.n * c.count
		case v.Entry == "allreduce_two_shot":
			work = (c.count + c.n - 1) / c.n
		}
		grid, threads := Grid(v.Params, work, c.env.Devices[r].Info().SMs)
		cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: c.env.Streams[r]}
		n, cnt, rank := int32(c.n), int32(c.count), int32(r)
		switch v.Entry {
		case "allreduce_one_shot":
			err = gpu.Launch(k, cfg, c.dInTab[r], c.dOut[r], n, cnt)
		case "allreduce_two_shot":
			err = gpu.Launch(k, cfg, c.dInTab[r], c.dOutTab[r], rank, n, cnt)
		case "allgather_pull":
			err = gpu.Launch(k, cfg, c.dInTab[r], c.dOut[r], rank, n, cnt)
		default:
			return fmt.Errorf("variant %s: the driver does not know how to launch entry %s", v.Name, v.Entry)
		}
		if err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return nil
}

func (c *collCase) runLibrary(v *lab.Variant) error {
	if c.comm == nil {
		comm, err := gpu.OpenCommunicator(c.env.Devices)
		if err != nil {
			return err
		}
		c.comm = comm
	}
	send := make([]gpu.Ptr, c.n)
	recv := make([]gpu.Ptr, c.n)
	for r := range c.n {
		send[r], recv[r] = c.dIn[r].DevicePtr(), c.dOut[r].DevicePtr()
	}
	switch {
	case v.Library == LibAllReduce && c.op == AllReduce:
		return c.comm.AllReduce(send, recv, c.count, gpu.F32, c.env.Streams)
	case v.Library == LibAllGather && c.op == AllGather:
		return c.comm.AllGather(send, recv, c.count, gpu.F32, c.env.Streams)
	}
	return fmt.Errorf("variant %s: library %q does not compute an %s (lab 04 knows %s and %s)",
		v.Name, v.Library, c.op, LibAllReduce, LibAllGather)
}

// Check compares every rank's output with the reference; the report is the worst rank's, named.
func (c *collCase) Check(v *lab.Variant) (check.Report, error) {
	ref := Reference(c.op, c.ins)
	var worst check.Report
	for r, o := range c.dOut {
		out, err := o.Download()
		if err != nil {
			return check.Report{}, fmt.Errorf("rank %d: reading the output back: %w", r, err)
		}
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

func refWord(op Op) string {
	if op == AllGather {
		return "concatenation"
	}
	return "sum"
}

// Work makes the engine's GB/s the bus bandwidth (see WorkOf).
func (c *collCase) Work() lab.Work { return WorkOf(c.op, c.n, c.count) }

// Release frees every rank's buffers and the communicator.
func (c *collCase) Release() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if c.comm != nil {
		keep(c.comm.Close())
		c.comm = nil
	}
	for _, bs := range [][]*gpu.Buffer[float32]{c.dIn, c.dOut} {
		for _, b := range bs {
			keep(b.Free())
		}
	}
	for _, bs := range [][]*gpu.Buffer[uint64]{c.dInTab, c.dOutTab} {
		for _, b := range bs {
			keep(b.Free())
		}
	}
	return first
}
