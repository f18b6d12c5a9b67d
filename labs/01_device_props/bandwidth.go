package devprops

// The bandwidth suites (hbm_bandwidth copies, l2_bandwidth reads), on a source the fill kernel wrote.

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// source is what the bandwidth suites share: the problem's `bytes`, the passes one Run makes
// over them (Work counts every pass), and floats HashFloat(seed, i).
type source struct {
	bytes, passes int64
	seed          uint64
	buf           *gpu.Buffer[float32]
}

// newSource reads the problem's bytes, a positive multiple of unit (why says of what), and fills
// one float per bytesPerFloat with the helper kernel fill_f32: gigabytes of input are generated
// faster on the device than uploaded. An emulated device, whose timings mean nothing, makes
// emuPasses passes; others run_bytes / bytes (runBytes by default), at least one.
func newSource(env *lab.Env, p lab.Problem, unit, bytesPerFloat int64, why string, runBytes, emuPasses int64) (source, error) {
	s := source{bytes: p.Int("bytes", 0)}
	if s.bytes < unit || s.bytes%unit != 0 {
		return s, fmt.Errorf("bytes = %d: it must be a positive multiple of %d (%s)", s.bytes, unit, why)
	}
	s.seed, s.passes = env.RNG.Uint64(), max(1, p.Int("run_bytes", runBytes)/s.bytes)
	if env.Device.Info().Emulated {
		s.passes = emuPasses
	}
	a := lab.NewPrep(env)
	a.Need(s.bytes)
	if s.buf = lab.PrepAlloc[float32](a, "src", int(s.bytes/bytesPerFloat)); a.Err != nil {
		return s, a.Err
	}
	k, err := env.KernelByEntry(FillEntry)
	if err != nil {
		return s, fmt.Errorf("the input generator %s (kernels/00_fill.cu, a helper in lab.yaml) is not loaded: did it build? %w", FillEntry, err)
	}
	lc := env.Config1D(gpu.GridFor(s.buf.Len(), 256, env.SMs(), 8), 256)
	if err := gpu.Launch(k, lc, s.buf, int64(s.buf.Len()), s.seed); err != nil {
		return s, fmt.Errorf("filling the input on the device: %w", err)
	}
	return s, env.Stream.Synchronize()
}

// prepareCopy is one problem of hbm_bandwidth: copy the source to dst `passes` times in a row
// (a copy of a few MiB costs about a launch: one per Run would measure the launch). The passes
// leave a small working set in L2, which is the point: below the L2 size this measures L2.
func prepareCopy(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	src, err := newSource(env, p, 8, 8, "the working set: n floats read plus n written", 1<<30, 1) // 1 GiB a Run; 1 pass on the emulator
	if err != nil {
		return nil, err
	}
	n := src.buf.Len()
	dst, err := lab.Output[float32](env, "dst", n, lab.PoisonNaN32)
	if err != nil {
		return nil, err
	}
	run := func(v *lab.Variant) error {
		pass := func() error { return dst.CopyFrom(src.buf, env.Stream) }
		if v.Library != LibMemcpyDtoD {
			if !v.IsKernel() {
				return fmt.Errorf("variant %s: %s has no library %q (it knows %s)", v.Name, SuiteHBM, v.Library, LibMemcpyDtoD)
			}
			k, err := env.Kernel(v)
			if err != nil {
				return err
			}
			block, err := env.Block(v, "block", 256)
			if err != nil {
				return err
			}
			// A thread moves vec × unroll floats per iteration. A grid-stride kernel is correct with
			// any grid: blocks_per_sm blocks per SM, no more than the data needs (0: a flat grid).
			grid := lab.CeilDiv(n, block*int(max(v.Int("vec", 1)*v.Int("unroll", 1), 1)))
			if bps := v.Int("blocks_per_sm", 8); bps > 0 {
				grid = min(grid, env.SMs()*int(bps))
			}
			if grid > math.MaxInt32 {
				return fmt.Errorf("variant %s: %d floats need a grid of %d blocks, more than a launch allows", v.Name, n, grid)
			}
			lc := env.Config1D(grid, block)
			pass = func() error { return gpu.Launch(k, lc, src.buf, dst, int64(n)) }
		}
		for range src.passes {
			if err := pass(); err != nil {
				return err
			}
		}
		return nil
	}
	// The hash is never zero nor NaN, so comparing values is comparing bits.
	chk := func(_ *lab.Variant, out *lab.Outputs) (check.Report, error) {
		got, err := out.Float32(dst)
		if err != nil {
			return check.Report{}, err
		}
		want := make([]float32, len(got))
		matref.ParallelFor(len(want), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				want[i] = HashFloat(src.seed, uint64(i))
			}
		})
		rep := check.Exact(got, want)
		rep.Method = "exact (bitwise), every element, against the fill hash recomputed on the CPU"
		for i := 0; !rep.OK && i < len(got); i++ { // a failed copy: count the poison left, and the error
			if d := math.Abs(float64(got[i]) - float64(want[i])); math.IsNaN(d) {
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
	return lab.CaseOf(run, chk, lab.Work{Bytes: float64(src.bytes * src.passes)}), nil
}

// prepareL2 is one problem of l2_bandwidth: read the source `passes` times (kernels/
// 04_l2_read.cu), passes_per_launch of them per launch (0: all). Work counts the bytes read,
// every pass: a read-only kernel, so this is L2 *read* bandwidth.
func prepareL2(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	// 2 GiB: at 8 TB/s 0.25 ms, so that the one launch is about 2% of the time. Two passes on the
	// emulator: enough to check that later passes read the same buffer.
	src, err := newSource(env, p, 16, 4, "the buffer, read as 16-byte words", 2<<30, 2)
	if err != nil {
		return nil, err
	}
	if src.passes > math.MaxInt32 {
		return nil, fmt.Errorf("run_bytes / bytes = %d passes: more than a launch parameter holds", src.passes)
	}
	n4 := src.bytes / 16 // 16-byte words in the buffer
	// shape is blocks_per_sm blocks on every SM (no more than the buffer needs) and the passes per launch.
	shape := func(v *lab.Variant) (grid, block, perLaunch int64, err error) {
		b, err := env.Block(v, "block", 256)
		if err != nil {
			return 0, 0, 0, err
		}
		block = int64(b)
		grid = min(int64(env.SMs())*v.Int("blocks_per_sm", 8), (n4+block-1)/block)
		if perLaunch = v.Int("passes_per_launch", 0); perLaunch < 0 {
			return 0, 0, 0, fmt.Errorf("variant %s: passes_per_launch = %d (0: all passes in one launch)", v.Name, perLaunch)
		}
		if perLaunch == 0 || perLaunch > src.passes {
			perLaunch = src.passes
		}
		return max(grid, 1), block, perLaunch, nil
	}
	// One sum per thread. Prepare does not know the variant: size it for the largest grid of the
	// suite (a variant with bad parameters fails in Run, with the reason).
	threads := int64(1)
	for _, v := range s.Variants {
		if grid, block, _, err := shape(v); err == nil {
			threads = max(threads, grid*block)
		}
	}
	out, err := lab.Output[uint32](env, "out", int(threads), lab.PoisonNaN32)
	if err != nil {
		return nil, err
	}
	// Set by Run, read by Check: the launch's threads and block, and the passes of its last launch.
	var used, block, lastFirst, lastCount int64
	run := func(v *lab.Variant) error {
		k, err := env.Kernel(v)
		if err != nil {
			return err
		}
		grid, b, perLaunch, err := shape(v)
		if err != nil {
			return err
		}
		if grid*b > int64(out.Len()) {
			return fmt.Errorf("variant %s: a grid of %d×%d threads, but the output was sized for the suite's variants (%d)", v.Name, grid, b, out.Len())
		}
		used, block = grid*b, b
		for first := int64(0); first < src.passes; first += perLaunch {
			n := min(perLaunch, src.passes-first)
			if err := gpu.Launch(k, env.Config1D(int(grid), int(b)), src.buf, n4, int32(first), int32(n), out); err != nil {
				return err
			}
			lastFirst, lastCount = first, n
		}
		return nil
	}
	// word is the sum of the 32-bit words of 16-byte word j, as the fill wrote them.
	word := func(j int64) (s uint32) {
		for e := range int64(4) {
			s += math.Float32bits(HashFloat(src.seed, uint64(4*j+e)))
		}
		return s
	}
	// threadSum is what thread tid of the last launch must have written: the sum of the words it
	// read in each of that launch's passes (the kernel's rotation, recomputed).
	threadSum := func(tid int) (acc uint32) {
		for p := lastFirst; p < lastFirst+lastCount; p++ {
			off := (p * 37 * block) % n4
			for i := int64(tid); i < n4; i += used {
				acc += word((i + off) % n4) // i + off < 2·n4: the kernel's wrap-around
			}
		}
		return acc
	}
	// Integer sums are exact in any order: the sum over all threads must be passes × the sum of
	// the buffer, and sampled threads must hold their own sums.
	chk := func(_ *lab.Variant, outs *lab.Outputs) (check.Report, error) {
		got, err := lab.Raw(outs, out)
		if err != nil {
			return check.Report{}, err
		}
		got = got[:used] // the threads of the last launch; the rest keep the poison
		rep := lab.CheckThreads(got, int(block), threadSamples, src.seed, threadSum)
		rep.Method = "exact: the sum of every thread's output against passes × the buffer's sum, and " +
			"sampled threads against their own reads recomputed on the CPU"
		var total atomic.Uint32
		matref.ParallelFor(int(n4), func(lo, hi int) {
			var s uint32
			for j := lo; j < hi; j++ {
				s += word(int64(j))
			}
			total.Add(s)
		})
		var sum uint32
		for _, x := range got {
			sum += x
		}
		if want := total.Load() * uint32(lastCount); sum != want {
			rep.RelErr = 1
			rep.FailWith(fmt.Sprintf("sum of the outputs %d, want %d (%d passes × the buffer's sum)", sum, want, lastCount))
		}
		return rep, nil
	}
	return lab.CaseOf(run, chk, lab.Work{Bytes: float64(src.bytes * src.passes)}), nil
}
