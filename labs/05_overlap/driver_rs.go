package overlap

// gemm_rs: rank r holds A_r, a block of the columns of A (M × K_r), and B_r, the same block of the
// rows of B (K_r × N), K split like M (ColsOf, Col0Of). Its partial product P_r = A_r·B_r is
// M × N; C = Σ_r P_r, and rank r ends with its block of C's rows (RowsOf, Row0Of of M).

import (
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

// WgmmaRSTiles is the number of 128×256 tiles of kernel 07's order: with push, every destination's
// block of rows tiled on its own (a tile never spans two owners); without, the M rows at once.
func WgmmaRSTiles(sh Shape, n int, push bool) int {
	if !push {
		n = 1
	}
	return blockTiles(sh, n, WgmmaTileM, WgmmaTileN)
}

// ColsOf and Col0Of are rank s's block of the k columns of A (rows of B): the split of RowsOf.
func ColsOf(s, k, n int) int { return RowsOf(s, k, n) }
func Col0Of(s, k, n int) int { return Row0Of(s, k, n) }

// RSWorkOf is one run of gemm_rs: the ranks' partial products together are one M×N×K product.
func RSWorkOf(sh Shape) lab.Work { return WorkOf(sh, 1) }

// rsCase is one prepared gemm_rs problem on this rank (core's dB is B_r, K_r × N).
type rsCase[T elem] struct {
	core[T]
	dA   *gpu.Buffer[T] // A_r (M × K_r)
	dP   *lab.Shared[T] // every rank's partial product P_r (M × N): the owners pull their rows
	dOut *lab.Shared[T] // every rank's rows of C (RowsOf × N): the fused epilogues add into them
	// bf16 only, kernel 07's push: every rank's receive slots (one RowsOf × N per source rank), and
	// core's flags its arrival counters, one per source and tile of its rows.
	slots *lab.Shared[T]
}

func prepareRS[T elem](cr core[T], p lab.Problem) (*rsCase[T], error) {
	c := &rsCase[T]{core: cr}
	sh, kr, rows := c.sh, c.k, c.rows()
	k0 := Col0Of(c.rank, sh.K, c.n)
	slotElems := 0
	if c.prec == lab.BF16 {
		slotElems = c.n * rows * sh.N
	}
	pp, err := c.start(p, int64(sh.M)*int64(kr)+int64(kr)*int64(sh.N)+int64(sh.M)*int64(sh.N)+int64(rows)*int64(sh.N)+int64(slotElems))
	if err != nil {
		return nil, err
	}
	ar := make([]T, sh.M*kr)
	for i := range sh.M {
		copy(ar[i*kr:(i+1)*kr], c.devA[i*sh.K+k0:i*sh.K+k0+kr])
	}
	c.dA = lab.PrepUpload(pp, "A (this rank's columns)", ar)
	c.dB = lab.PrepUpload(pp, "B (this rank's rows)", c.devB[k0*sh.N:(k0+kr)*sh.N])
	// NaN before every checked run: a reduction that runs before its GEMM, or reads a receive slot
	// before its flag, leaves NaN in C.
	nan := c.prec.NaN(lab.NaNBits32)
	c.dP = lab.PrepSharedScratch[T](pp, "P (partial product)", sh.M*sh.N, nan)
	c.dOut = lab.PrepSharedOutput[T](pp, "C (this rank's rows)", rows*sh.N, nan)
	if slotElems > 0 {
		c.slots = lab.PrepSharedScratch[T](pp, "receive slots", slotElems, nan)
		c.flags = lab.PrepUploadShared(pp, "arrival counters", make([]uint32, c.n*WgmmaRSTiles(Shape{M: rows, N: sh.N}, 1, true)))
	}
	c.events = pp.Events(2) // chunked: the reduction's start and end
	if pp.Signals(); pp.Err == nil {
		c.a, c.out, c.mine = c.dA.DevicePtr(), c.dP.Mine.DevicePtr(), c.dOut.Mine.DevicePtr()
	}
	return lab.Done(pp, c)
}

func (c *rsCase[T]) Run(v *lab.Variant) error { return c.run(c, SuiteGemmRS, v) }

// fused: the GEMM whose epilogue adds into the owners' rows, or kernel 07.
func (c *rsCase[T]) fused(v *lab.Variant) bool {
	return v.Entry == c.prec.Entry(EntryGemmRSFused) || v.Entry == EntryWgmmaRS
}

// launchGemm computes rows [row0, row0+rows) of this rank's partial product.
func (c *rsCase[T]) launchGemm(v *lab.Variant, row0, rows int, s gpu.Stream) error {
	return c.launchRows(v, c.at(c.a, row0*c.k), row0, rows, s)
}

// launchReduce pulls this rank's rows of every rank's partial product and sums them into its C.
func (c *rsCase[T]) launchReduce(v *lab.Variant, s gpu.Stream) error {
	return c.copyLaunch(v, c.prec.Entry(EntryReduceRows), c.rows()*c.sh.N, s, c.dP.Table, c.dOut.Mine, int32(c.sh.N), int32(c.n), int32(c.row0()), int32(c.rows()))
}

// barrierThenReduce: a device barrier (every partial product is complete), then the reduction.
func (c *rsCase[T]) barrierThenReduce(v *lab.Variant) error {
	if err := c.env.DeviceBarrier(c.env.Stream); err != nil {
		return err
	}
	return c.launchReduce(v, c.env.Stream)
}

// runSequential: the whole GEMM, then the reduction after a device barrier.
func (c *rsCase[T]) runSequential(v *lab.Variant) error {
	if err := c.launchGemm(v, 0, c.sh.M, c.env.Stream); err != nil {
		return fmt.Errorf("GEMM: %w", err)
	}
	return c.barrierThenReduce(v)
}

// runChunked: the GEMM by destination blocks in rank order, a device barrier after each; the
// owner's reduction of its block then runs on the side stream beside the GEMMs that follow.
func (c *rsCase[T]) runChunked(v *lab.Variant) error {
	st := c.env.Stream
	var side gpu.Stream
	for d := range c.n {
		if err := c.launchGemm(v, Row0Of(d, c.sh.M, c.n), RowsOf(d, c.sh.M, c.n), st); err != nil {
			return fmt.Errorf("GEMM of rank %d's rows: %w", d, err)
		}
		if err := c.env.DeviceBarrier(st); err != nil {
			return err
		}
		if d != c.rank {
			continue
		}
		var err error
		if side, err = c.sideStream(); err != nil {
			return err
		}
		if err := c.launchReduce(v, side); err != nil {
			return fmt.Errorf("reduction of its rows: %w", err)
		}
	}
	return lab.Order(c.events[1], side, st) // the final barrier after the reduction too
}

// runFused: this rank's rows of C zeroed, a device barrier, then the fused GEMM whose epilogue
// adds each tile into its owner's rows through the table of outputs.
func (c *rsCase[T]) runFused(v *lab.Variant) error {
	if v.Entry == EntryWgmmaRS {
		return c.runWgmma(v)
	}
	st := c.env.Stream
	if err := c.dOut.Mine.FillBytes(0, st); err != nil {
		return fmt.Errorf("zeroing its rows of C: %w", err)
	}
	if err := c.env.DeviceBarrier(st); err != nil {
		return err
	}
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D1(Tiles(c.sh, c.n)), Block: gpu.D1(GemmThread), Stream: st}
	return gpu.Launch(k, cfg, c.withBias(c.dims(c.dA, c.dB, c.dOut.Table))...)
}

// runWgmma launches kernel 07, a persistent grid of at most one block an SM. Without push its
// tiles go into P, reduced after a device barrier as in sequential; with push: 1 each tile goes
// into its owner's receive slot for this rank, with a flag, and the owner reduces its tiles into C
// as they arrive. Every rank checks every rank's K_r for TMA, so all skip alike.
func (c *rsCase[T]) runWgmma(v *lab.Variant) error {
	if c.slots == nil {
		return fmt.Errorf("variant %s: kernel 07 is bf16 only (suite bf16_%s)", v.Name, SuiteGemmRS)
	}
	for s := range c.n {
		if kr := ColsOf(s, c.sh.K, c.n); kr%8 != 0 || c.sh.N%8 != 0 {
			return lab.Skip("the wgmma kernel moves tiles with TMA, whose row strides must be multiples of 16 bytes: every rank's K/%d columns and N must be multiples of 8 (this problem has K=%d, rank %d holds %d columns, N=%d)", c.n, c.sh.K, s, kr, c.sh.N)
		}
	}
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	push := v.Params[ParamPush] != 0
	out, outRows := c.out, c.sh.M // the partial product, or (push) this rank's rows of C
	if push {
		out, outRows = c.mine, c.rows()
	}
	grid := max(1, min(WgmmaRSTiles(c.sh, c.n, push), c.env.Device.Info().SMs))
	cfg, maps, err := c.wgmmaLaunch(v, k, grid, "A_r, B_r or the output", out, outRows)
	if err != nil {
		return err
	}
	var slots, flags any = gpu.Ptr(0), gpu.Ptr(0)
	pushArg := int32(0)
	if push {
		c.epoch++
		slots, flags, pushArg = c.slots.Table, c.flags.Table, 1
	}
	if err := gpu.Launch(k, cfg, append(append(c.dims(slots, flags, c.epoch, pushArg), c.bias), maps...)...); err != nil || push {
		return err
	}
	return c.barrierThenReduce(v)
}

// Check compares this rank's rows of C with the float64 product. bf16 roundings on an element's
// path: the partial product and the sum (sequential, chunked, kernel 07, whose pushed partials
// are bf16, summed in fp32); each add of the fused epilogues (n); the partial, the bias add and
// NCCL's n−1 ring hops (library). Every rank adds the bias, as the challenge's reference does.
func (c *rsCase[T]) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	rounds := 2
	if v.Library != "" || v.Entry == c.prec.Entry(EntryGemmRSFused) {
		rounds = c.n + 1
	}
	return c.checkRows(out, c.dOut.Mine, c.row0(), c.rows(), "every rank's rows of C", rounds, c.n)
}

func (c *rsCase[T]) Work() lab.Work { return RSWorkOf(c.sh) }
