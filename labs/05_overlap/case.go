package overlap

// What the two suites' cases share: the shape and this rank's place in the world, the host
// inputs drawn alike on every rank, the memory precondition, the events and signals, the Run
// that puts a schedule between two device barriers, the launches of the tile GEMM, of the helper
// copies and of cuBLAS, and the check of a block of rows of C. A suite's case supplies the rest
// through schedules.

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// core is the part of a prepared problem that agCase and rsCase share.
type core struct {
	env     *lab.Env
	sh      Shape
	rank, n int

	hostA, hostB []float32   // host A (M×K) and B (K×N), the same on every rank, for the reference
	events       []gpu.Event // the schedules' events (how many is the suite's)
}

// newCore checks that this rank's buffers (elems float32 elements in all) fit on its device, and
// draws A and B from the environment's generator, A first.
func newCore(env *lab.Env, sh Shape, elems int64) (core, error) {
	w := env.World()
	c := core{env: env, sh: sh, rank: w.Rank, n: w.Size}
	if err := lab.NeedMemory(env, 4*elems); err != nil {
		return c, lab.Skip("%v", err)
	}
	c.hostA, c.hostB = make([]float32, sh.M*sh.K), make([]float32, sh.K*sh.N)
	matref.FillUniform(c.hostA, env.RNG.Uint64())
	matref.FillUniform(c.hostB, env.RNG.Uint64())
	return c, nil
}

// ready creates the schedules' events and the signals of the device barriers, after the buffers.
func (c *core) ready(events int) error {
	for range events {
		ev, err := lab.NewEvent(c.env)
		if err != nil {
			return err
		}
		c.events = append(c.events, ev)
	}
	_, err := c.env.Signals()
	return err
}

// rows and row0 are this rank's block of the rows of C (RowsOf, Row0Of of M).
func (c *core) rows() int { return RowsOf(c.rank, c.sh.M, c.n) }
func (c *core) row0() int { return Row0Of(c.rank, c.sh.M, c.n) }

// schedules is what a suite's case runs: the library baseline, the two host-queued schedules of
// entry gemm_rows, and the fused kernel for the variants fused(v) says are its.
type schedules interface {
	runLibrary(v *lab.Variant) error
	runSequential(v *lab.Variant) error
	runChunked(v *lab.Variant) error
	fused(v *lab.Variant) bool
	runFused(v *lab.Variant) error
}

// run runs the variant's schedule on this rank between two device barriers (no host in between):
// the first keeps every rank's work after every peer's poisoned staging buffers, the second makes
// the run end when every rank's has.
func (c *core) run(s schedules, suite string, v *lab.Variant) error {
	if v.Library != "" {
		return s.runLibrary(v)
	}
	if ok, why := c.env.AllReachable(); !ok {
		return lab.Skip("%s", why)
	}
	st := c.env.Stream
	if err := c.env.DeviceBarrier(st); err != nil {
		return err
	}
	var err error
	switch {
	case v.Name == VarSequential || v.Name == VarChunked:
		if v.Entry != EntryGemmRows {
			return fmt.Errorf("variant %s: the %s schedule launches entry %s, not %s", v.Name, v.Name, EntryGemmRows, v.Entry)
		}
		if v.Name == VarSequential {
			err = s.runSequential(v)
		} else {
			err = s.runChunked(v)
		}
	case s.fused(v):
		err = s.runFused(v)
	default:
		return fmt.Errorf("variant %s: the driver does not know how to run entry %s in suite %s", v.Name, v.Entry, suite)
	}
	if err != nil {
		return err
	}
	return c.env.DeviceBarrier(st)
}

// libraryComm is the communicator of the library baseline, which needs equal blocks: M a multiple
// of the ranks. op names the collective in the skip.
func (c *core) libraryComm(v *lab.Variant, op string) (gpu.RankCommunicator, error) {
	if v.Library != LibNCCLCublas {
		return nil, fmt.Errorf("variant %s: library %q is not one lab 05 knows (%s)", v.Name, v.Library, LibNCCLCublas)
	}
	if c.sh.M%c.n != 0 {
		return nil, lab.Skip("NCCL's %s needs equal blocks: M = %d is not a multiple of %d ranks", op, c.sh.M, c.n)
	}
	return c.env.RankCommunicator()
}

// launchTiles launches the tile GEMM of the variant (one 64×64 tile of out per block): out
// (rows × N) = a (rows × k) · b (k × N), all row-major.
func (c *core) launchTiles(v *lab.Variant, a, b, out gpu.Ptr, rows, k int, s gpu.Stream) error {
	kern, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D2(lab.CeilDiv(c.sh.N, TileN), lab.CeilDiv(rows, TileM)), Block: gpu.D1(GemmThread), Stream: s}
	return gpu.Launch(kern, cfg, a, b, out, int32(rows), int32(c.sh.N), int32(k))
}

// copyLaunch is helper entry's kernel and its launch over work elements on stream s: the
// variant's threads per block (256) and blocks per SM (2) at most.
func (c *core) copyLaunch(v *lab.Variant, entry string, work int, s gpu.Stream) (gpu.Kernel, gpu.LaunchConfig, error) {
	k, err := c.env.KernelByEntry(entry)
	threads := param(v, ParamThreads, 256)
	grid := gpu.GridFor(work, threads, c.env.Device.Info().SMs, param(v, ParamBlocksPerSM, 2))
	return k, gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: s}, err
}

// order makes the work queued on stream to from now on wait for the work queued on stream from
// so far: an event recorded on one, waited for on the other, with no host in between.
func order(ev gpu.Event, from, to gpu.Stream) error {
	if err := ev.Record(from); err != nil {
		return err
	}
	return to.WaitEvent(ev)
}

// sgemm is the library baseline's row-major product through cuBLAS on the compute stream: c
// (M × N) = a (M × k) · b (k × N) (gpu.RowMajorGemm).
func (c *core) sgemm(k int, a, b, out gpu.Ptr) error {
	blas, err := c.env.BLAS()
	if err != nil {
		return err
	}
	return blas.Sgemm(c.env.Stream, gpu.RowMajorGemm(c.sh.M, c.sh.N, k, a, b, out, gpu.F32, gpu.F32))
}

// checkRows compares the block of C in buffer out (rows from row0 on, all N columns) with the
// float64 product of those rows of A and B (matref.CheckProduct, as lab 02's C). what names the
// block in the method.
func (c *core) checkRows(outs *lab.Outputs, out *gpu.Buffer[float32], row0, rows int, what string) (check.Report, error) {
	got, err := outs.Float32(out)
	if err != nil {
		return check.Report{}, err
	}
	p := &matref.Product{M: rows, N: c.sh.N, K: c.sh.K, Alpha: 1, A: c.hostA[row0*c.sh.K : (row0+rows)*c.sh.K], B: c.hostB}
	rep := matref.CheckProduct(p, got, c.env.RNG.Uint64(), outs.Tolerance())
	rep.Method = what + ": " + rep.Method
	return rep, nil
}
