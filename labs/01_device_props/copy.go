package devprops

import (
	"fmt"
	"github.com/kernel-labs/kernellabs/internal/matref"
	"math"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
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
	env      *lab.Env
	n        int64
	passes   int64
	seed     uint64
	src, dst *gpu.Buffer[float32]
}

// copyBytesPerRun is how many bytes (read + written) one Run moves at least, by default.
const copyBytesPerRun = 1 << 30

func prepareCopy(env *lab.Env, p lab.Problem) (lab.Case, error) {
	bytes := p.Int("bytes", 0)
	if bytes < 8 || bytes%8 != 0 {
		return nil, fmt.Errorf("bytes = %d: it must be a positive multiple of 8 (the working set: n floats read plus n written)", bytes)
	}
	if err := checkFits(env, bytes); err != nil {
		return nil, err
	}
	c := &copyCase{env: env, n: bytes / 8, seed: env.RNG.Uint64()}
	target := p.Int("run_bytes", copyBytesPerRun)
	if env.Device.Info().Emulated {
		target = 0 // emulated timings mean nothing: one pass is enough to check
	}
	c.passes = max(1, target/bytes)
	var err error
	if c.src, err = gpu.Alloc[float32](env.Device, int(c.n)); err != nil {
		return nil, err
	}
	if c.dst, err = gpu.Alloc[float32](env.Device, int(c.n)); err != nil {
		c.Release()
		return nil, err
	}
	if err := fillHash(env, c.src.DevicePtr(), c.n, c.seed); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

func (c *copyCase) Poison() error { return c.dst.Fill32(nanBits, c.env.Stream) }

func (c *copyCase) Run(v *lab.Variant) error {
	env := c.env
	if v.Library == LibMemcpyDtoD {
		for range c.passes {
			if err := c.dst.CopyFrom(c.src, env.Stream); err != nil {
				return err
			}
		}
		return nil
	}
	if !v.IsKernel() {
		return fmt.Errorf("variant %s: %s has no library %q (it knows %s)", v.Name, SuiteHBM, v.Library, LibMemcpyDtoD)
	}
	k, err := env.Kernel(v)
	if err != nil {
		return err
	}
	block, err := blockSize(env, v, 256)
	if err != nil {
		return err
	}
	// Each thread moves vec × unroll floats per iteration. A grid-stride kernel is correct with
	// any grid: launch blocks_per_sm blocks on every SM (a full SM's worth of threads by default),
	// but no more than the data needs. blocks_per_sm = 0 asks for a flat grid instead, as many
	// blocks as the data needs, for kernels without a loop (copy_f4_flat).
	perThread := max(param(v, "vec", 1)*param(v, "unroll", 1), 1)
	grid := ceilDiv(c.n, int64(block)*perThread)
	if bps := param(v, "blocks_per_sm", 8); bps > 0 {
		grid = min(grid, smCount(env)*bps)
	}
	if grid > math.MaxInt32 {
		return fmt.Errorf("variant %s: %d floats need a grid of %d blocks, more than a launch allows", v.Name, c.n, grid)
	}
	for range c.passes {
		if err := gpu.Launch(k, cfg(env, grid, int64(block)), c.src, c.dst, c.n); err != nil {
			return err
		}
	}
	return nil
}

func (c *copyCase) Check(v *lab.Variant) (check.Report, error) {
	return verifyHash(c.env, c.dst.DevicePtr(), c.n, c.seed)
}

// Work counts every pass. (Ops stays 0: the rate is bytes over the time of the whole Run.)
func (c *copyCase) Work() lab.Work { return lab.Work{Bytes: float64(8 * c.n * c.passes)} }

func (c *copyCase) Release() error {
	err1 := c.src.Free()
	err2 := c.dst.Free()
	if err1 != nil {
		return err1
	}
	return err2
}

// verifyHash checks that the n floats at ptr are exactly HashFloat(seed, i), every one of them.
// The data streams through a pinned staging buffer, so the check needs no host memory in
// proportion to n and works for copies of many GiB.
func verifyHash(env *lab.Env, ptr gpu.Ptr, n int64, seed uint64) (check.Report, error) {
	rep := check.Report{Method: "exact (bitwise), every element, against the fill hash recomputed on the CPU", MaxErrAt: -1}
	staging, err := env.Device.MallocHost(min(n, stagingFloats) * 4)
	if err != nil {
		return rep, fmt.Errorf("pinned staging buffer for the check: %w", err)
	}
	defer staging.Free()
	buf := hostFloats(staging, int(min(n, stagingFloats)))

	var wrong, nans int64
	for off := int64(0); off < n; off += stagingFloats {
		cnt := min(n-off, stagingFloats)
		if err := env.Device.CopyDtoH(staging.Pointer(), ptr+gpu.Ptr(off*4), cnt*4, env.Stream); err != nil {
			return rep, fmt.Errorf("downloading the output: %w", err)
		}
		if err := syncStream(env); err != nil {
			return rep, err
		}
		part := buf[:cnt]
		var mu sync.Mutex
		var chunkWrong, chunkNaN int64
		var maxAbs float64
		matref.ParallelFor(int(cnt), func(lo, hi int) {
			var w, nn int64
			var ma float64
			for i := lo; i < hi; i++ {
				want := HashFloat(seed, uint64(off)+uint64(i))
				got := part[i]
				if math.Float32bits(got) != math.Float32bits(want) {
					w++
					if isNaN32(got) {
						nn++
					} else {
						ma = math.Max(ma, math.Abs(float64(got)-float64(want)))
					}
				}
			}
			mu.Lock()
			chunkWrong += w
			chunkNaN += nn
			maxAbs = math.Max(maxAbs, ma)
			mu.Unlock()
		})
		if chunkWrong > 0 && len(rep.Mismatches) < check.MaxMismatches {
			for i := int64(0); i < cnt && len(rep.Mismatches) < check.MaxMismatches; i++ {
				want := HashFloat(seed, uint64(off+i))
				if math.Float32bits(part[i]) != math.Float32bits(want) {
					if rep.MaxErrAt < 0 {
						rep.MaxErrAt = int(off + i)
					}
					rep.Mismatches = append(rep.Mismatches, check.Mismatch{Index: int(off + i), Got: float64(part[i]), Want: float64(want)})
				}
			}
		}
		wrong += chunkWrong
		nans += chunkNaN
		rep.MaxAbsErr = math.Max(rep.MaxAbsErr, maxAbs)
	}
	rep.Checked = int(n)
	rep.Unwritten = int(nans)
	rep.OK = wrong == 0
	if wrong > 0 {
		rep.RelErr = float64(wrong) / float64(n)
		rep.Note = fmt.Sprintf("%d of %d elements differ", wrong, n)
		if nans > 0 {
			rep.Note += fmt.Sprintf(" (%d still hold the NaN poison: never written)", nans)
		}
	}
	return rep, nil
}
