package devprops

import (
	"fmt"
	"math"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

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
	n   int // floats copied
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
	c := &copyCase{hashedSource: src, n: src.src.Len()}
	c.dst, err = lab.Output[float32](env, "dst", c.n, lab.PoisonNaN32)
	return c, err
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
		perThread := int(max(v.Int("vec", 1)*v.Int("unroll", 1), 1))
		grid := lab.CeilDiv(c.n, block*perThread)
		if bps := v.Int("blocks_per_sm", 8); bps > 0 {
			grid = min(grid, smCount(c.env)*int(bps))
		}
		if grid > math.MaxInt32 {
			return fmt.Errorf("variant %s: %d floats need a grid of %d blocks, more than a launch allows", v.Name, c.n, grid)
		}
		lc := cfg(c.env, grid, block)
		pass = func() error { return gpu.Launch(k, lc, c.src, c.dst, int64(c.n)) }
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

// Work counts every pass. (Ops stays 0: the rate is bytes over the time of the whole Run.)
func (c *copyCase) Work() lab.Work { return lab.Work{Bytes: float64(c.bytes * c.passes)} }
