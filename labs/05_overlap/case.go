package overlap

// What the two suites' cases share (core). It is generic over how the data lies on the device
// (elem), so the bf16 suites (lab.PrecisionOf) run the fp32 schedules on the kernels' _bf16 entries.

import (
	"fmt"
	"slices"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// elem is how a suite's data lies on the device: fp32 values, or the bit patterns of bf16 ones.
type elem interface{ float32 | uint16 }

// BF16Rounding is what one rounding to bf16 may cost an element, relative to its error scale
// (Σ|a·b| plus the bias terms), which no value on the element's path exceeds. A bf16 suite's
// check adds it to lab.yaml's tolerance once per rounding on the variant's path.
const BF16Rounding = 1.0 / 256

type core[T elem] struct {
	env     *lab.Env
	sh      Shape
	rank, n int
	prec    lab.Precision

	hostA, hostB []float32      // A (M×K), B (K×N): the same on every rank (bf16: rounded), for the reference
	devA, devB   []T            // the same as the device holds them
	hostBias     []float32      // problems with bias: 1 (bf16 suites): N values added to every row
	bias         gpu.Ptr        // the bias on the device (0: none)
	dB           *gpu.Buffer[T] // B (ag_gemm), or this rank's rows of it (gemm_rs)
	// Ready (ag_gemm) or arrival (gemm_rs) counters, shared: peers raise them. They are never
	// reset: every run raises them by its producers, and a wait compares with the epoch (the runs
	// so far), so a launch after a launch on one case waits for its own data.
	flags  *lab.Shared[uint32]
	epoch  uint32
	events []gpu.Event // the schedules' events
	timeline
}

// newCore refuses a problem whose elems elements on this rank do not fit on its device, draws A,
// B and the bias (bias: 1) from the environment's generator, and starts the allocations.
func newCore[T elem](env *lab.Env, s *lab.Suite, p lab.Problem, sh Shape, elems int64) (core[T], *lab.Prep, error) {
	w := env.World()
	c := core[T]{env: env, sh: sh, rank: w.Rank, n: w.Size, prec: lab.PrecisionOf(s)}
	withBias := p.Int(ParamBias, 0) != 0
	if withBias && c.prec != lab.BF16 {
		return c, nil, fmt.Errorf("problem %q: bias: 1 is for the bf16 suites (the fp32 kernels take no bias)", p.Name)
	}
	if err := lab.NeedMemory(env, int64(c.prec.Bytes())*elems); err != nil {
		return c, nil, lab.Skip("%v", err)
	}
	c.hostA, c.hostB = make([]float32, sh.M*sh.K), make([]float32, sh.K*sh.N)
	matref.FillUniform(c.hostA, env.RNG.Uint64())
	matref.FillUniform(c.hostB, env.RNG.Uint64())
	c.devA, c.devB = onDevice[T](c.hostA), onDevice[T](c.hostB)
	pp := lab.NewPrep(env)
	if withBias {
		c.hostBias = make([]float32, sh.N)
		matref.FillUniform(c.hostBias, env.RNG.Uint64())
		c.bias = pp.UploadAs("bias", c.prec, c.hostBias)
	}
	return c, pp, nil
}

// onDevice is vals as the device holds them: the fp32 values, or (bf16) their bit patterns, vals
// rounded in place so that the reference computes from what the device has.
func onDevice[T elem](vals []float32) []T {
	if same, ok := any(vals).([]T); ok {
		return same
	}
	return any(matref.RoundBF16(vals)).([]T)
}

// ready makes the schedules' events and the signals of the device barriers, after the buffers.
func (c *core[T]) ready(pp *lab.Prep, events int) {
	c.events = pp.Events(events)
	pp.Signals()
}

func (c *core[T]) rows() int { return RowsOf(c.rank, c.sh.M, c.n) }
func (c *core[T]) row0() int { return Row0Of(c.rank, c.sh.M, c.n) }

// entry is the kernel entry name for the suite's data: name (fp32), or name_bf16.
func (c *core[T]) entry(name string) string {
	if c.prec == lab.BF16 {
		return name + "_bf16"
	}
	return name
}

func (c *core[T]) at(p gpu.Ptr, elems int) gpu.Ptr { return p + gpu.Ptr(c.prec.Bytes()*elems) }

// withBias appends the bias (0: none) to a bf16 GEMM's arguments; the fp32 kernels take none.
func (c *core[T]) withBias(args ...any) []any {
	if c.prec == lab.BF16 {
		return append(args, c.bias)
	}
	return args
}

// nan is the poison of a data buffer: 32-bit words of the given NaN (fp32), or 0xFF bytes, a bf16 NaN.
func (c *core[T]) nan(bits uint32) lab.Poison {
	if c.prec == lab.BF16 {
		return lab.PoisonNaN
	}
	return lab.Poison32(bits)
}

// schedules is what a suite's case runs: the library baseline, gemm_rows' two host-queued
// schedules, and the fused kernels (those fused(v) says are its).
type schedules interface {
	runLibrary(v *lab.Variant) error
	runSequential(v *lab.Variant) error
	runChunked(v *lab.Variant) error
	fused(v *lab.Variant) bool
	runFused(v *lab.Variant) error
}

// run runs the variant's schedule between two device barriers (no host in between): the first
// keeps every rank's work after every peer's poisoned staging buffers, the second ends the run
// with every rank's.
func (c *core[T]) run(s schedules, suite string, v *lab.Variant) error {
	if v.Library != "" {
		return s.runLibrary(v)
	}
	if ok, why := c.env.AllReachable(); !ok {
		return lab.Skip("%s", why)
	}
	st := c.env.Stream
	if err := c.startTimeline(v, st); err != nil {
		return err
	}
	if err := c.env.DeviceBarrier(st); err != nil {
		return err
	}
	var err error
	switch gemm := c.entry(EntryGemmRows); {
	case (v.Name == VarSequential || v.Name == VarChunked) && v.Entry != gemm:
		return fmt.Errorf("variant %s: the %s schedule launches entry %s, not %s", v.Name, v.Name, gemm, v.Entry)
	case v.Name == VarSequential:
		err = s.runSequential(v)
	case v.Name == VarChunked:
		err = s.runChunked(v)
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

// libraryComm is the library baseline's communicator; op names its collective in the skip.
func (c *core[T]) libraryComm(v *lab.Variant, op string) (gpu.RankCommunicator, error) {
	if v.Library != LibNCCLCublas {
		return nil, fmt.Errorf("variant %s: library %q is not one lab 05 knows (%s)", v.Name, v.Library, LibNCCLCublas)
	}
	if err := equalBlocks(op, c.sh, c.n); err != nil {
		return nil, err
	}
	return c.env.RankCommunicator()
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

// launchTiles launches the variant's tile GEMM, a 64×64 tile a block: out (rows × N) = a (rows ×
// k) · b (k × N) (+ the bias, bf16), all row-major.
func (c *core[T]) launchTiles(v *lab.Variant, a, b, out gpu.Ptr, rows, k int, s gpu.Stream) error {
	kern, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D2(lab.CeilDiv(c.sh.N, TileN), lab.CeilDiv(rows, TileM)), Block: gpu.D1(GemmThread), Stream: s}
	return c.launch(kern, cfg, append(c.withBias(a, b, out, int32(rows), int32(c.sh.N), int32(k)), c.tlPtr())...)
}

// copyLaunch launches helper entry over work elements on stream s: the variant's threads per
// block (256) and blocks per SM (2) at most.
func (c *core[T]) copyLaunch(v *lab.Variant, entry string, work int, s gpu.Stream, args ...any) error {
	k, err := c.env.KernelByEntry(entry)
	if err != nil {
		return err
	}
	threads := v.Positive(ParamThreads, 256)
	grid := gpu.GridFor(work, threads, c.env.Device.Info().SMs, v.Positive(ParamBlocksPerSM, 2))
	return c.launch(k, gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(threads), Stream: s}, args...)
}

// sideStream is the second stream, its work from now on after the compute stream's so far (the
// device barrier).
func (c *core[T]) sideStream() (gpu.Stream, error) {
	side, err := c.env.SideStream()
	if err != nil {
		return nil, err
	}
	return side, lab.Order(c.events[0], c.env.Stream, side)
}

// wgmmaLaunch readies kernel 06 or 07 for grid blocks on the compute stream with the variant's
// smem (opted in): the configuration and the TMA maps of a (M × k), b (k × N) and out (outRows ×
// N), its last arguments, boxes as lab 02's kernel 15 (A 128 × 64, B and out 64 × 64).
func (c *core[T]) wgmmaLaunch(v *lab.Variant, kern gpu.Kernel, grid int, what string, a, b, out gpu.Ptr, k, outRows int) (gpu.LaunchConfig, []any, error) {
	smem := v.Positive(ParamSmem, 0)
	cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(WgmmaThreads), SharedBytes: smem, Stream: c.env.Stream}
	if err := lab.OptInShared(kern, smem); err != nil {
		return cfg, nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	maps := make([]any, 0, 3)
	for _, d := range []gpu.TensorMapDesc{lab.BF16Tiles(a, c.sh.M, k, WgmmaTileM, 64),
		lab.BF16Tiles(b, k, c.sh.N, 64, 64), lab.BF16Tiles(out, outRows, c.sh.N, 64, 64)} {
		m, err := lab.TensorMap(c.env, what, d)
		if err != nil {
			return cfg, nil, err
		}
		maps = append(maps, m)
	}
	return cfg, maps, nil
}

// libraryGemm is the library baseline's row-major out (M × N) = a (M × k) · b (k × N): cuBLAS
// SGEMM (fp32), or cuBLASLt with a bf16 output as PyTorch's a @ b, then the bias in a kernel of
// its own, as the distributed challenge's reference adds it.
func (c *core[T]) libraryGemm(v *lab.Variant, k int, a, b, out gpu.Ptr) error {
	blas, err := c.env.BLAS()
	if err != nil {
		return err
	}
	dt := c.prec.DataType()
	g := gpu.RowMajorGemm(c.sh.M, c.sh.N, k, a, b, out, dt, dt)
	if c.prec == lab.FP32 {
		return blas.Sgemm(c.env.Stream, g)
	}
	lt, ok := blas.(gpu.LtBLAS)
	if !ok {
		return fmt.Errorf("variant %s: this device's BLAS has no cuBLASLt matmul", v.Name)
	}
	if err := lt.LtMatmul(c.env.Stream, g); err != nil || c.bias == 0 {
		return err
	}
	return c.copyLaunch(v, EntryAddBias, c.sh.M*c.sh.N, c.env.Stream, out, c.bias, int32(c.sh.M), int32(c.sh.N))
}

// checkRows compares out, C's rows from row0 on, with the float64 product of those rows of A and
// B plus biasTimes × the bias, within the suite's tolerance plus, in bf16, rounds × BF16Rounding.
func (c *core[T]) checkRows(outs *lab.Outputs, out *gpu.Buffer[T], row0, rows int, what string, rounds, biasTimes int) (check.Report, error) {
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

// The timeline of a schedule (suite timeline): its -DKL_TIMELINE builds' kernels append a record
// for every GEMM tile, every block's copy of a source block and every wait of a fused GEMM block
// for a ready flag to one buffer (labs/common/timeline.cuh): SM, kind, start and end on the
// global timer, one clock for both streams. Record (lab.Recorder) returns the last run's records
// as a results.Timeline (rank 0's become the entry's); internal/site draws it per SM.

// TimelineKinds names the records' kinds, in the order of KL_TL_COMPUTE, KL_TL_COPY, KL_TL_WAIT.
var TimelineKinds = []string{"compute", "copy", "wait"}

// timeline is a case's record buffer and the kernel launches of its last run.
type timeline struct {
	tlOn     bool // the variant now running records
	tl       lab.AppendTimeline
	launches int
}

// tlPtr is the records' buffer for the kernels, null unless the variant records.
func (t *timeline) tlPtr() gpu.Ptr {
	if !t.tlOn {
		return 0
	}
	return t.tl.Ptr()
}

func (t *timeline) launch(k gpu.Kernel, cfg gpu.LaunchConfig, args ...any) error {
	t.launches++
	return gpu.Launch(k, cfg, args...)
}

// TimelineRecords bounds the records of one run: one per GEMM tile (sequential's GEMM has no more
// tiles than the blocks'), at most one wait per tile, and one per block of a copy (at most
// SMs × blocks per SM) and source block.
func TimelineRecords(sh Shape, n, sms, blocksPerSM int) int {
	return 2*Tiles(sh, n) + n*sms*blocksPerSM
}

// startTimeline, before a run: whether v records and, if so, its buffer readied for it.
func (c *core[T]) startTimeline(v *lab.Variant, s gpu.Stream) error {
	c.launches = 0
	if c.tlOn = v.Int(ParamTimeline, 0) != 0; !c.tlOn {
		return nil
	}
	return c.tl.Start(c.env, TimelineRecords(c.sh, c.n, c.env.Device.Info().SMs, v.Positive(ParamBlocksPerSM, 2)), s)
}

// Record returns the timeline of the last run for a timeline variant, nothing for the others.
// Records past the buffer's end (never, while TimelineRecords bounds them) count as missing.
func (c *core[T]) Record(v *lab.Variant) (map[string]any, error) {
	if v.Int(ParamTimeline, 0) == 0 {
		return nil, nil
	}
	tl, ok, err := c.tl.Read(c.env.Device.Info().SMs, c.launches)
	if !ok || err != nil {
		return nil, err
	}
	if len(tl.Tiles) == 0 {
		// The output was right (the check passed), so the kernels ran without recording.
		return nil, fmt.Errorf("the run left no timeline record: variant %s runs kernels built without -DKL_TIMELINE", v.Name)
	}
	tl.Kinds = TimelineKinds
	return map[string]any{results.TimelineKey: tl}, nil
}
