package overlap

import (
	"fmt"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// elem is how a suite's data lies on the device: fp32 values, or bf16 bit patterns.
type elem interface{ float32 | uint16 }

// BF16Rounding is what one rounding to bf16 may cost an element, relative to its error scale
// (Σ|a·b| plus the bias terms), which no value on the element's path exceeds. A bf16 suite's
// check adds it to lab.yaml's tolerance once per rounding on the variant's path.
const BF16Rounding = 1.0 / 256

// ovCase is a problem of either layer on this rank (driver.go prepares and schedules each). It is
// generic over how the data lies on the device (elem), so the bf16 suites (lab.PrecisionOf) run
// the fp32 schedules on the kernels' _bf16 entries.
type ovCase[T elem] struct {
	env     *lab.Env
	sh      Shape
	rank, n int
	k       int  // the GEMM's K: K (ag_gemm), or this rank's K_r columns of A (gemm_rs)
	rs      bool // gemm_rs
	prec    lab.Precision

	hostA, hostB []float32      // A (M×K), B (K×N): the same on every rank (bf16: rounded), for the reference
	devA, devB   []T            // the same as the device holds them
	hostBias     []float32      // problems with bias: 1 (bf16 suites): N values added to every row
	bias         gpu.Ptr        // the bias on the device (0: none)
	dB           *gpu.Buffer[T] // B (ag_gemm), or this rank's rows of it, B_r (K_r × N, gemm_rs)
	// The layer's GEMM out (M × N) = a (M × k) · B and this rank's block of its collective:
	// C = A_full · B, its rows of A (ag_gemm); P_r = A_r · B_r, its rows of C (gemm_rs).
	a, out, mine gpu.Ptr
	// Ready (ag_gemm) or arrival (gemm_rs) counters, shared: peers raise them. They are never
	// reset: every run raises them by its producers, and a wait compares with the epoch (the runs
	// so far), so a launch after a launch on one case waits for its own data.
	flags  *lab.Shared[uint32]
	epoch  uint32
	events []gpu.Event
	tl     lab.RunTimeline

	// ag_gemm
	dRows    *lab.Shared[T]        // every rank's block of A (RowsOf × K)
	dAFull   *lab.Shared[T]        // every rank's gathered A (M × K), a staging buffer (the push form writes peers')
	dC       *gpu.Buffer[T]        // C (M × N)
	resident lab.Memo[string, int] // fused kernels' resident blocks by variant: the ranks' GPUs are of one model
	// gemm_rs
	dCols *gpu.Buffer[T] // A_r (M × K_r)
	dP    *lab.Shared[T] // every rank's partial product P_r (M × N): the owners pull their rows
	dOut  *lab.Shared[T] // every rank's rows of C (RowsOf × N): the fused epilogues add into them
	// bf16 only, kernel 07's push: every rank's receive slots (one RowsOf × N per source rank), and
	// flags its arrival counters, one per source and tile of its rows.
	slots *lab.Shared[T]
}

// start refuses a problem whose elems elements do not fit, draws A, B and the bias, and starts the allocations.
func (c *ovCase[T]) start(p lab.Problem, elems int64) (*lab.Prep, error) {
	withBias := p.Int(ParamBias, 0) != 0
	if withBias && c.prec != lab.BF16 {
		return nil, fmt.Errorf("problem %q: bias: 1 is for the bf16 suites (the fp32 kernels take no bias)", p.Name)
	}
	if err := lab.NeedMemory(c.env, int64(c.prec.Bytes())*elems); err != nil {
		return nil, lab.Skip("%v", err)
	}
	c.hostA, c.hostB = lab.Uniform(c.env, c.sh.M*c.sh.K), lab.Uniform(c.env, c.sh.K*c.sh.N)
	c.devA, c.devB = lab.DeviceElems[T](c.hostA), lab.DeviceElems[T](c.hostB)
	pp := lab.NewPrep(c.env)
	if withBias {
		c.hostBias = lab.Uniform(c.env, c.sh.N)
		c.bias = pp.UploadAs("bias", c.prec, c.hostBias)
	}
	return pp, nil
}

func (c *ovCase[T]) rows() int { return RowsOf(c.rank, c.sh.M, c.n) }
func (c *ovCase[T]) row0() int { return Row0Of(c.rank, c.sh.M, c.n) }

func (c *ovCase[T]) at(p gpu.Ptr, elems int) gpu.Ptr { return p + gpu.Ptr(c.prec.Bytes()*elems) }

// dims appends the kernels' sizes to args: this rank, the ranks, M, N and the GEMM's K.
func (c *ovCase[T]) dims(args ...any) []any {
	return append(args, int32(c.rank), int32(c.n), int32(c.sh.M), int32(c.sh.N), int32(c.k))
}

// withBias appends the bias (0: none) to a bf16 GEMM's arguments; the fp32 kernels take none.
func (c *ovCase[T]) withBias(args []any) []any {
	if c.prec == lab.BF16 {
		return append(args, c.bias)
	}
	return args
}

// Run runs the variant's schedule between two device barriers (no host in between): the first
// keeps every rank's work after every peer's poisoned staging buffers, the second ends the run
// with every rank's.
func (c *ovCase[T]) Run(v *lab.Variant) error {
	if v.Library != "" {
		return c.runLibrary(v)
	}
	if ok, why := c.env.AllReachable(); !ok {
		return lab.Skip("%s", why)
	}
	st := c.env.Stream
	if err := c.tl.Begin(c.env, v.Int(ParamTimeline, 0) != 0, TimelineRecords(c.sh, c.n, c.env.Device.Info().SMs, v.Positive(ParamBlocksPerSM, 2)), st); err != nil {
		return err
	}
	if err := c.env.DeviceBarrier(st); err != nil {
		return err
	}
	// The fused kernels: pull, signal, push or kernel 06; the GEMM that adds into the owners' rows or kernel 07.
	suite, seq, chunked, run := SuiteAGGemm, c.agSequential, c.agChunked, c.agFused
	fused := v.Entry == EntryFusedPull || v.Entry == c.prec.Entry(EntryFusedSignal) || v.Params[ParamPush] != 0 || v.Entry == EntryWgmma
	if c.rs {
		suite, seq, chunked, run = SuiteGemmRS, c.rsSequential, c.rsChunked, c.rsFused
		fused = v.Entry == c.prec.Entry(EntryGemmRSFused) || v.Entry == EntryWgmmaRS
	}
	switch gemm := c.prec.Entry(EntryGemmRows); {
	case (v.Name == VarSequential || v.Name == VarChunked) && v.Entry != gemm:
		return fmt.Errorf("variant %s: the %s schedule launches entry %s, not %s", v.Name, v.Name, gemm, v.Entry)
	case v.Name == VarSequential:
		run = seq
	case v.Name == VarChunked:
		run = chunked
	case !fused:
		return fmt.Errorf("variant %s: the driver does not know how to run entry %s in suite %s", v.Name, v.Entry, suite)
	}
	if err := run(v); err != nil {
		return err
	}
	return c.env.DeviceBarrier(st)
}

// runLibrary: ncclAllGather into A_full, then the library's GEMM (ag_gemm); or the GEMM into P_r,
// then ncclReduceScatter into every rank's rows (gemm_rs).
func (c *ovCase[T]) runLibrary(v *lab.Variant) error {
	if v.Library != LibNCCLCublas {
		return fmt.Errorf("variant %s: library %q is not one lab 05 knows (%s)", v.Name, v.Library, LibNCCLCublas)
	}
	if err := equalBlocks(map[bool]string{false: "all-gather", true: "reduce-scatter"}[c.rs], c.sh, c.n); err != nil {
		return err
	}
	comm, err := c.env.RankCommunicator()
	if err != nil {
		return err
	}
	dt, st := c.prec.DataType(), c.env.Stream
	if c.rs {
		return lab.InOrder(func() error { return c.libraryGemm(v) },
			func() error { return comm.ReduceScatter(c.out, c.mine, c.sh.M/c.n*c.sh.N, dt, st) })
	}
	return lab.InOrder(func() error { return comm.AllGather(c.mine, c.a, c.sh.M/c.n*c.sh.K, dt, st) },
		func() error { return c.libraryGemm(v) })
}

// libraryGemm: cuBLAS SGEMM (fp32), or cuBLASLt with a bf16 output as PyTorch's a @ b, then the
// bias in a kernel of its own, as the distributed challenge's reference adds it.
func (c *ovCase[T]) libraryGemm(v *lab.Variant) error {
	blas, err := c.env.BLAS()
	if err != nil {
		return err
	}
	dt := c.prec.DataType()
	g := gpu.RowMajorGemm(c.sh.M, c.sh.N, c.k, c.a, c.dB.DevicePtr(), c.out, dt, dt)
	if c.prec == lab.FP32 {
		return blas.Sgemm(c.env.Stream, g)
	}
	if err := lab.LtMatmul(blas, v, c.env.Stream, g); err != nil || c.bias == 0 {
		return err
	}
	return c.copyLaunch(v, EntryAddBias, c.sh.M*c.sh.N, c.env.Stream, c.out, c.bias, int32(c.sh.M), int32(c.sh.N))
}

// equalBlocks skips a problem whose M is not a multiple of the n ranks: NCCL's collective op (the
// library baseline, the PyTorch peer) takes equal blocks.
func equalBlocks(op string, sh Shape, n int) error {
	if sh.M%n != 0 {
		return lab.Skip("NCCL's %s needs equal blocks: M = %d is not a multiple of %d ranks", op, sh.M, n)
	}
	return nil
}

// splitK skips a gemm_rs problem whose K columns of A cannot give each of the n ranks one.
func splitK(sh Shape, n int) error {
	if sh.K < n {
		return lab.Skip("K = %d columns cannot be split over %d ranks (every rank needs at least one column of A)", sh.K, n)
	}
	return nil
}

// launchRows launches the tile GEMM for rows [row0, row0+rows) of the output, from a (rows × k).
func (c *ovCase[T]) launchRows(v *lab.Variant, a gpu.Ptr, row0, rows int, s gpu.Stream) error {
	kern, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D2(lab.CeilDiv(c.sh.N, TileN), lab.CeilDiv(rows, TileM)), Block: gpu.D1(GemmThread), Stream: s}
	out := c.at(c.out, row0*c.sh.N)
	return c.tl.Launch(kern, cfg, append(c.withBias([]any{a, c.dB.DevicePtr(), out, int32(rows), int32(c.sh.N), int32(c.k)}), c.tl.Ptr())...)
}

// copyLaunch launches helper entry over work elements: threads (256) a block, blocks_per_sm (2).
func (c *ovCase[T]) copyLaunch(v *lab.Variant, entry string, work int, s gpu.Stream, args ...any) error {
	k, err := c.env.KernelByEntry(entry)
	if err != nil {
		return err
	}
	threads := v.Positive(ParamThreads, 256)
	grid := gpu.GridFor(work, threads, c.env.Device.Info().SMs, v.Positive(ParamBlocksPerSM, 2))
	return c.tl.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: s}, args...)
}

// sideStream is the second stream, its work from now on after the compute stream's so far.
func (c *ovCase[T]) sideStream() (gpu.Stream, error) {
	side, err := c.env.SideStream()
	if err != nil {
		return nil, err
	}
	return side, lab.Order(c.events[0], c.env.Stream, side)
}

// wgmmaLaunch readies kernel 06 or 07 (grid blocks, the variant's smem): the configuration and
// the TMA maps of A (M × k), B and out (outRows × N), boxes as lab 02's kernel 15's.
func (c *ovCase[T]) wgmmaLaunch(v *lab.Variant, kern gpu.Kernel, grid int, what string, out gpu.Ptr, outRows int) (gpu.LaunchConfig, []any, error) {
	smem := v.Positive(ParamSmem, 0)
	cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(WgmmaThreads), SharedBytes: smem, Stream: c.env.Stream}
	if err := lab.OptInShared(kern, smem); err != nil {
		return cfg, nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	maps, err := lab.TensorMaps(c.env, what, lab.BF16Tiles(c.a, c.sh.M, c.k, WgmmaTileM, 64),
		lab.BF16Tiles(c.dB.DevicePtr(), c.k, c.sh.N, 64, 64), lab.BF16Tiles(out, outRows, c.sh.N, 64, 64))
	return cfg, maps, err
}

// checkRows compares out, C's rows from row0 on, with the float64 product of those rows of A and
// B plus biasTimes × the bias, within the suite's tolerance plus, in bf16, rounds × BF16Rounding.
func (c *ovCase[T]) checkRows(outs *lab.Outputs, out *gpu.Buffer[T], row0, rows int, what string, rounds, biasTimes int) (check.Report, error) {
	got, err := lab.Widened(outs, out)
	if err != nil {
		return check.Report{}, err
	}
	p := &matref.Product{M: rows, N: c.sh.N, K: c.sh.K, Alpha: 1, A: c.hostA[row0*c.sh.K : (row0+rows)*c.sh.K], B: c.hostB}
	if c.hostBias != nil {
		p.C0, p.Beta = slices.Repeat(c.hostBias, rows), float32(biasTimes)
	}
	tol := outs.Tolerance()
	if c.prec == lab.BF16 {
		tol += float64(rounds) * BF16Rounding
	}
	rep := matref.CheckProduct(p, got, c.env.RNG.Uint64(), tol)
	rep.Method = what + ": " + rep.Method
	return rep, nil
}

// The timeline (suite timeline): the -DKL_TIMELINE kernels append a record for every GEMM tile,
// block's copy of a source block and fused block's wait for a flag (labs/common/timeline.cuh), on
// the global timer, one clock for both streams; rank 0's become the entry's.

// TimelineKinds names the records' kinds, in the order of KL_TL_COMPUTE, KL_TL_COPY, KL_TL_WAIT.
var TimelineKinds = []string{"compute", "copy", "wait"}

// TimelineRecords bounds the records of one run: one per GEMM tile (sequential's GEMM has no more
// tiles than the blocks') and at most one wait each, one per block (SMs × blocks per SM at most)
// of a copy and source block.
func TimelineRecords(sh Shape, n, sms, blocksPerSM int) int {
	return 2*Tiles(sh, n) + n*sms*blocksPerSM
}

// Record returns the timeline of the last run for a timeline variant, nothing for the others.
func (c *ovCase[T]) Record(v *lab.Variant) (map[string]any, error) {
	return c.tl.Record(c.env, v, v.Int(ParamTimeline, 0) != 0, TimelineKinds)
}
