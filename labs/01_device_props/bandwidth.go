package devprops

// The bandwidth suites: hbm_bandwidth copies a buffer, l2_bandwidth reads one many times; both
// read a source the fill kernel wrote.

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// hashedSource is what the bandwidth suites (copy, L2 read) share: the problem's `bytes`, the
// passes one Run makes over them (copyCase says why there are several), and a source of floats
// filled on the device with the hash of seed.
type hashedSource struct {
	env           *lab.Env
	bytes, passes int64
	seed          uint64
	src           *gpu.Buffer[float32]
}

// newHashedSource reads the problem's bytes, a positive multiple of unit (why says of what), and
// fills a source of one float per bytesPerFloat. A Run makes run_bytes / bytes passes (runBytes
// by default), at least one; emuPasses on an emulated device, whose timings mean nothing.
//
// Element i of the source is HashFloat(seed, i), written by the helper kernel fill_f32 (lab.yaml
// helpers:): gigabytes of input are generated faster on the device than uploaded.
func newHashedSource(env *lab.Env, p lab.Problem, unit, bytesPerFloat int64, why string, runBytes, emuPasses int64) (hashedSource, error) {
	h := hashedSource{env: env, bytes: p.Int("bytes", 0)}
	if h.bytes < unit || h.bytes%unit != 0 {
		return h, fmt.Errorf("bytes = %d: it must be a positive multiple of %d (%s)", h.bytes, unit, why)
	}
	h.seed, h.passes = env.RNG.Uint64(), max(1, p.Int("run_bytes", runBytes)/h.bytes)
	if env.Device.Info().Emulated {
		h.passes = emuPasses
	}
	a := lab.NewPrep(env)
	a.Need(h.bytes)
	if h.src = lab.PrepAlloc[float32](a, "src", int(h.bytes/bytesPerFloat)); a.Err != nil {
		return h, a.Err
	}
	k, err := env.KernelByEntry(FillEntry)
	if err != nil {
		return h, fmt.Errorf("the input generator %s (kernels/00_fill.cu, a helper in lab.yaml) is not loaded: did it build? %w", FillEntry, err)
	}
	const block = 256
	grid := gpu.GridFor(h.src.Len(), block, smCount(env), 8)
	if err := gpu.Launch(k, cfg(env, grid, block), h.src, int64(h.src.Len()), h.seed); err != nil {
		return h, fmt.Errorf("filling the input on the device: %w", err)
	}
	return h, env.Stream.Synchronize()
}

// Work counts every pass, of both suites. (Ops stays 0: the rate is bytes over the time of the
// whole Run.)
func (h hashedSource) Work() lab.Work { return lab.Work{Bytes: float64(h.bytes * h.passes)} }

// copyCase is one problem of hbm_bandwidth: copy n floats from src to dst, `passes` times in a
// row within one Run.
//
// The problem's `bytes` is the working set, bytes read plus bytes written (2 × 4n), because that
// is what crosses the memory interface and what the datasheet's bandwidth counts.
//
// Why several passes: a copy of a few MiB takes a few microseconds, about what a launch costs, so
// one copy per Run would measure the launch, not the memory. A Run therefore repeats the copy
// back to back until about run_bytes (default 1 GiB) have moved, and Work counts every pass. The
// repeated passes also leave a small working set in L2, which is the point: below the L2 size
// this suite measures L2, above it HBM. Both the library copy and the kernels run the same passes.
type copyCase struct {
	hashedSource
	dst *gpu.Buffer[float32]
}

// copyBytesPerRun is how many bytes (read + written) one Run moves at least, by default.
const copyBytesPerRun = 1 << 30

func prepareCopy(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	// One pass on the emulator: enough to check.
	src, err := newHashedSource(env, p, 8, 8, "the working set: n floats read plus n written", copyBytesPerRun, 1)
	if err != nil {
		return nil, err
	}
	dst, err := lab.Output[float32](env, "dst", src.src.Len(), lab.PoisonNaN32)
	return &copyCase{hashedSource: src, dst: dst}, err
}

func (c *copyCase) Run(v *lab.Variant) error {
	pass := func() error { return c.dst.CopyFrom(c.src, c.env.Stream) }
	if v.Library != LibMemcpyDtoD {
		if !v.IsKernel() {
			return fmt.Errorf("variant %s: %s has no library %q (it knows %s)", v.Name, SuiteHBM, v.Library, LibMemcpyDtoD)
		}
		k, block, err := kernelOf(c.env, v, 256)
		if err != nil {
			return err
		}
		// Each thread moves vec × unroll floats per iteration. A grid-stride kernel is correct
		// with any grid: launch blocks_per_sm blocks on every SM (a full SM's worth of threads by
		// default), but no more than the data needs. blocks_per_sm = 0 asks for a flat grid
		// instead, as many blocks as the data needs, for kernels without a loop (copy_f4_flat).
		n, perThread := c.src.Len(), int(max(v.Int("vec", 1)*v.Int("unroll", 1), 1))
		grid := lab.CeilDiv(n, block*perThread)
		if bps := v.Int("blocks_per_sm", 8); bps > 0 {
			grid = min(grid, smCount(c.env)*int(bps))
		}
		if grid > math.MaxInt32 {
			return fmt.Errorf("variant %s: %d floats need a grid of %d blocks, more than a launch allows", v.Name, n, grid)
		}
		lc := cfg(c.env, grid, block)
		pass = func() error { return gpu.Launch(k, lc, c.src, c.dst, int64(n)) }
	}
	for range c.passes {
		if err := pass(); err != nil {
			return err
		}
	}
	return nil
}

// Check compares every element of dst with the fill hash recomputed on the CPU. The hash is never
// zero nor NaN, so comparing values is comparing bits.
func (c *copyCase) Check(_ *lab.Variant, out *lab.Outputs) (check.Report, error) {
	got, err := out.Float32(c.dst)
	if err != nil {
		return check.Report{}, err
	}
	want := make([]float32, len(got))
	matref.ParallelFor(len(want), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			want[i] = HashFloat(c.seed, uint64(i))
		}
	})
	rep := check.Exact(got, want)
	rep.Method = "exact (bitwise), every element, against the fill hash recomputed on the CPU"
	if rep.OK {
		return rep, nil
	}
	for i, g := range got {
		if d := math.Abs(float64(g) - float64(want[i])); math.IsNaN(d) {
			rep.Unwritten++
		} else {
			rep.MaxAbsErr = max(rep.MaxAbsErr, d)
		}
	}
	if rep.Unwritten > 0 {
		rep.Note += fmt.Sprintf(" (%d still hold the NaN poison: never written)", rep.Unwritten)
	}
	return rep, nil
}

// l2Case is one problem of l2_bandwidth: read a buffer of `bytes` `passes` times (kernels/
// 04_l2_read.cu). The variant's passes_per_launch says how the passes are split into launches:
// 0 is all of them in one launch (the launch paid once: L2 bandwidth), 1 is one launch per pass
// (what a copy repeated launch after launch measures: the launch rate, for a buffer this small).
//
// Work counts the bytes read, every pass: a read-only kernel, so this is L2 *read* bandwidth.
type l2Case struct {
	hashedSource
	n4  int64               // 16-byte words in the buffer
	out *gpu.Buffer[uint32] // one sum per thread, for the largest grid of the suite's variants
	// set by Run, read by Check: the threads and block of the launch, and the passes its last
	// launch made
	threads, block, lastFirst, lastCount int64
}

// l2BytesPerRun is how many bytes one Run reads at least, by default: at 8 TB/s about 0.25 ms,
// so that the one launch is about 2% of the time.
const l2BytesPerRun = 2 << 30

func prepareL2(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	// Two passes on the emulator: enough to check that later passes read the same buffer.
	src, err := newHashedSource(env, p, 16, 4, "the buffer, read as 16-byte words", l2BytesPerRun, 2)
	if err != nil {
		return nil, err
	}
	if src.passes > math.MaxInt32 {
		return nil, fmt.Errorf("run_bytes / bytes = %d passes: more than a launch parameter holds", src.passes)
	}
	c := &l2Case{hashedSource: src, n4: src.bytes / 16}
	// The output holds a sum per thread. Its size depends on the variant's grid, and Prepare does
	// not know the variant: size it for the largest grid of the suite (a variant with bad
	// parameters fails in Run, with the reason).
	threads := int64(1)
	for _, v := range s.Variants {
		if grid, block, _, err := c.shape(v); err == nil {
			threads = max(threads, grid*block)
		}
	}
	c.out, err = lab.Output[uint32](env, "out", int(threads), lab.PoisonNaN32)
	return c, err
}

// shape is the launch of a variant: a full SM's worth of blocks on every SM, no more than the
// buffer needs, and the passes per launch.
func (c *l2Case) shape(v *lab.Variant) (grid, block, perLaunch int64, err error) {
	b, err := blockSize(c.env, v, 256)
	if err != nil {
		return 0, 0, 0, err
	}
	block = int64(b)
	grid = min(int64(smCount(c.env))*v.Int("blocks_per_sm", 8), (c.n4+block-1)/block)
	perLaunch = v.Int("passes_per_launch", 0)
	if perLaunch < 0 {
		return 0, 0, 0, fmt.Errorf("variant %s: passes_per_launch = %d (0: all passes in one launch)", v.Name, perLaunch)
	}
	if perLaunch == 0 || perLaunch > c.passes {
		perLaunch = c.passes
	}
	return max(grid, 1), block, perLaunch, nil
}

func (c *l2Case) Run(v *lab.Variant) error {
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	grid, block, perLaunch, err := c.shape(v)
	if err != nil {
		return err
	}
	if grid*block > int64(c.out.Len()) {
		return fmt.Errorf("variant %s: a grid of %d×%d threads, but the output was sized for the suite's variants (%d)", v.Name, grid, block, c.out.Len())
	}
	c.threads, c.block = grid*block, block
	for first := int64(0); first < c.passes; first += perLaunch {
		n := min(perLaunch, c.passes-first)
		if err := gpu.Launch(k, cfg(c.env, int(grid), int(block)), c.src, c.n4, int32(first), int32(n), c.out); err != nil {
			return err
		}
		c.lastFirst, c.lastCount = first, n
	}
	return nil
}

// word returns the 32-bit words of 16-byte word j of the buffer, as the fill wrote them.
func (c *l2Case) word(j int64) uint32 {
	var s uint32
	for e := range int64(4) {
		s += math.Float32bits(HashFloat(c.seed, uint64(4*j+e)))
	}
	return s
}

// threadSum is what thread tid of the last launch must have written: the sum of the words it read
// in each of that launch's passes (the kernel's rotation and unrolling, recomputed).
func (c *l2Case) threadSum(tid int) uint32 {
	var acc uint32
	for p := c.lastFirst; p < c.lastFirst+c.lastCount; p++ {
		off := (p * 37 * c.block) % c.n4
		for i := int64(tid); i < c.n4; i += c.threads {
			acc += c.word((i + off) % c.n4) // i + off < 2·n4: the kernel's wrap-around
		}
	}
	return acc
}

// Check compares the sum over all threads with the passes × the sum of the buffer (integer sums
// are exact in any order), and sampled threads with their own sums.
func (c *l2Case) Check(_ *lab.Variant, outs *lab.Outputs) (check.Report, error) {
	out, err := lab.Raw(outs, c.out)
	if err != nil {
		return check.Report{}, err
	}
	out = out[:c.threads] // the threads of the last launch; the rest keep the poison
	rep := checkThreads(out, int(c.block), c.seed, c.threadSum)
	rep.Method = "exact: the sum of every thread's output against passes × the buffer's sum, and " +
		"sampled threads against their own reads recomputed on the CPU"
	var total atomic.Uint32
	matref.ParallelFor(int(c.n4), func(lo, hi int) {
		var s uint32
		for j := lo; j < hi; j++ {
			s += c.word(int64(j))
		}
		total.Add(s)
	})
	var got uint32
	for _, x := range out {
		got += x
	}
	if want := total.Load() * uint32(c.lastCount); got != want {
		rep.RelErr = 1
		failWith(&rep, fmt.Sprintf("sum of the outputs %d, want %d (%d passes × the buffer's sum)", got, want, c.lastCount))
	}
	return rep, nil
}
