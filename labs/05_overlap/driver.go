// Package overlap is lab 05: hiding communication under computation between ranks (one process
// per GPU) on AllGather + GEMM and GEMM + ReduceScatter, tensor parallelism's two layers. The
// variants schedule the same communication and GEMM one after the other, chunked on two streams,
// or fused in one persistent kernel; the bf16_... suites run them on bf16 data, plus wgmma
// kernels on Hopper.
package overlap

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
	"github.com/kernel-labs/kernellabs/internal/ranks"
)

// LabDir is the lab's directory name, the key of its driver.
const LabDir = "05_overlap"

// The suites, variants (lab.yaml name:), library baseline and kernel entries of the lab.
const (
	SuiteAGGemm, SuiteGemmRS = "ag_gemm", "gemm_rs"

	VarSequential, VarChunked = "sequential", "chunked"
	LibNCCLCublas             = "nccl_cublas"

	EntryGemmRows    = "gemm_rows"
	EntryFusedPull   = "ag_gemm_fused_pull"
	EntryFusedSignal = "ag_gemm_fused_signal"
	EntryWgmma       = "ag_gemm_wgmma"  // bf16, sm_90a: kernel 06, whose producer waits for the flags
	EntryGemmRSFused = "gemm_rs_fused"  // the GEMM whose epilogue adds into peers
	EntryWgmmaRS     = "gemm_rs_wgmma"  // bf16, sm_90a: kernel 07, which stores or pushes its tiles
	EntryGather      = "gather_rows"    // helper: the copy of source blocks into A_full
	EntryGatherTL    = "gather_rows_tl" // helper: the copy with its timeline records
	EntryReduceRows  = "reduce_rows"    // helper: the pull reduction of one destination's rows
	EntryAddBias     = "add_bias_bf16"  // helper: the library baseline's bias, added after cuBLASLt
	EntryRaiseFlag   = "raise_flag"     // helper: the copy-engine all-gather's signal after each copy

	// Launch parameters a variant may set (lab.yaml params:), and a problem's bias.
	ParamThreads     = lab.ParamThreads // threads per block of the helper copies (default 256)
	ParamBlocksPerSM = "blocks_per_sm"  // blocks per SM of the copies' and the fused kernels' grids
	ParamProducers   = "producers"      // producer blocks of fused_signal (default 1)
	ParamPush        = "push"           // 1: the push form, writing into the peers' buffers
	ParamCopiers     = "copiers"        // kernel 06: the copy's blocks (default 8); with ce, SMs left to raise_flag
	ParamBeside      = "beside"         // kernel 06: 1 copies on a second stream beside the GEMM, 0 first
	ParamCE          = "ce"             // kernel 06: 1 copies on the copy engines (copyOnEngines)
	ParamSmem        = "smem"           // the wgmma kernels' dynamic shared memory
	ParamSplits      = "splits"         // the wgmma kernels' split-K of the last wave (default: SplitK's; 1: none)
	ParamTimeline    = "timeline"       // 1: a -DKL_TIMELINE build that leaves timeline records
	ParamBias        = "bias"           // a problem's 1: N values added to every row (bf16 suites)

	// The tile and block of overlap_gemm.cuh's GEMM, and the wgmma kernels' (06, 07).
	TileM, TileN, GemmThread             = 64, 64, 256
	WgmmaTileM, WgmmaTileN, WgmmaThreads = 128, 256, 384
	WgmmaTileK, MinSplitKBlocks          = 64, 4
	splitTileFloats                      = WgmmaTileM * WgmmaTileN // a split tile's fp32 sum
)

// SplitK is kernel 06's or 07's split-K (splitk_sm90.cuh) of tiles tiles on a grid of grid
// blocks, over kBlocks blocks of K: the tiles of the full waves run whole, and those of the last,
// partial wave (all of them when they do not fill one) are split into s runs of K blocks, want of
// them (0: as many as fill the grid) or fewer, each of at least MinSplitKBlocks (with fewer, the
// partials' round trip through L2 costs more than their MMAs), none empty. whole: the tiles not split.
func SplitK(tiles, grid, kBlocks, want int) (whole, s int) {
	tail := tiles % grid
	if want <= 0 {
		want = grid / max(tail, 1)
	}
	if s = evenSplit(min(want, kBlocks/MinSplitKBlocks), kBlocks); s == 1 || tail == 0 {
		return tiles, 1
	}
	return tiles - tail, s
}

// AgTile is the shape of kernel 06's tiles for an M × N GEMM on avail SMs: 128 × 256 (kernel 15's);
// 128 × 128 when those would fill fewer than half the SMs (twice the tiles need half the split-K);
// 64 × 64 for M ≤ 64, where the GEMM only streams B and wants the deepest pipeline (06's comment).
func AgTile(m, n, avail int) (tileM, tileN int) {
	if m <= WgmmaTileM/2 {
		return WgmmaTileM / 2, WgmmaTileN / 4
	} else if lab.CeilDiv(m, WgmmaTileM)*lab.CeilDiv(n, WgmmaTileN) < avail/2 {
		return WgmmaTileM, WgmmaTileN / 2
	}
	return WgmmaTileM, WgmmaTileN
}

// evenSplit is the number of runs of ⌈kBlocks/s⌉ blocks that cover kBlocks (at least 1).
func evenSplit(s, kBlocks int) int {
	if s <= 1 || kBlocks <= 1 {
		return 1
	}
	return lab.CeilDiv(kBlocks, lab.CeilDiv(kBlocks, s))
}

// stagedNaN poisons the gathered A_full with a NaN of another payload than C's, so that a C
// computed from rows read before they arrived tells itself from a C left unwritten.
const stagedNaN = 0x7FC0A11F

// Lab is the driver of lab 05.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

// Shape is one problem: C (M×N) = A_full (M×K) · B (K×N).
type Shape = lab.MNK

// ShapeOf reads m, n and k of a problem, all three required.
func ShapeOf(p lab.Problem) (Shape, error) { return lab.MNKOf(p, false) }

// Row0Of is the first row of rank s's block of m rows over n ranks: M/n rows each, the first M%n
// ranks one more (ov_row0_of in overlap_gemm.cuh); RowsOf is the block's rows.
func Row0Of(s, m, n int) int { return s*(m/n) + min(s, m%n) }
func RowsOf(s, m, n int) int { return Row0Of(s+1, m, n) - Row0Of(s, m, n) }

// Tiles is the number of 64×64 tiles of C, each rank's block of rows tiled on its own.
func Tiles(sh Shape, n int) int { return blockTiles(sh, n, TileM, TileN) }

func blockTiles(sh Shape, n, tm, tn int) int {
	t := 0
	for s := range n {
		t += lab.CeilDiv(RowsOf(s, sh.M, n), tm) * lab.CeilDiv(sh.N, tn)
	}
	return t
}

// WorkOf is one run: each of the n ranks computes the M×N×K product.
func WorkOf(sh Shape, n int) lab.Work {
	return lab.Work{FLOPs: 2 * float64(sh.M) * float64(sh.N) * float64(sh.K) * float64(n)}
}

// Ring is the order in which rank r visits the source blocks: itself first (its rows are local),
// then r+1, r+2, … so that the ranks do not all read rank 0 first.
func Ring(r, n int) []int {
	o := make([]int, n)
	for j := range n {
		o[j] = (r + j) % n
	}
	return o
}

// PersistentGrid is a fused kernel's grid: at most one wave of the resident blocks (a block that
// spins on a flag must never wait for one that cannot start), at least the producers plus one
// consumer, no more than there is work for.
func PersistentGrid(resident, producers, tiles int) (int, error) {
	if resident < producers+1 {
		return 0, fmt.Errorf("%d resident blocks cannot hold %d producer block(s) and a GEMM block (lower producers:)", resident, producers)
	}
	return max(producers+1, min(resident, producers+tiles)), nil
}

// Prepare prepares the suite's case once every rank has a row (and, in gemm_rs, a column of A).
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	if lab.PrecisionOf(s) == lab.BF16 {
		return prepare[uint16](env, s, p)
	}
	return prepare[float32](env, s, p)
}

func prepare[T elem](env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	sh, err := ShapeOf(p)
	if err != nil {
		return nil, err
	}
	w := env.World()
	if sh.M < w.Size {
		return nil, lab.Skip("M = %d rows cannot be split over %d ranks (every rank needs at least one row)", sh.M, w.Size)
	}
	c := &ovCase[T]{RankCase: lab.NewRankCase(env), sh: sh, k: sh.K, prec: lab.PrecisionOf(s)}
	if strings.TrimPrefix(s.Name, "bf16_") != SuiteGemmRS {
		return c.prepareAG(p)
	}
	if err := splitK(sh, w.Size); err != nil {
		return nil, err
	}
	c.rs, c.k = true, ColsOf(w.Rank, sh.K, w.Size)
	return c.prepareRS(p)
}

// elem is how a suite's data lies on the device: fp32 values, or bf16 bit patterns.
type elem interface{ float32 | uint16 }

// BF16Rounding is what one rounding to bf16 may cost an element, relative to its error scale
// (Σ|a·b| plus the bias terms), which no value on the element's path exceeds. A bf16 suite's
// check adds it to lab.yaml's tolerance once per rounding on the variant's path.
const BF16Rounding = 1.0 / 256

// ovCase is a problem of either layer on this rank (prepareAG, prepareRS and their schedules
// below), generic over how the data lies on the device (elem), so that the bf16 suites
// (lab.PrecisionOf) run the fp32 schedules on the kernels' _bf16 entries.
type ovCase[T elem] struct {
	lab.RankCase
	sh   Shape
	k    int  // the GEMM's K: K (ag_gemm), or this rank's K_r columns of A (gemm_rs)
	rs   bool // gemm_rs
	prec lab.Precision

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
	// kernel 07's push (bf16): receive slots, RowsOf × N per source; flags: one per source and tile
	slots *lab.Shared[T]
	// kernels 06 and 07's split-K (bf16): a split tile's fp32 sum and counter per SM
	splitWS     *gpu.Buffer[float32]
	splitCounts *gpu.Buffer[uint32]
}

// prepSplitK allocates the split-K workspace of a bf16 case, zero: a split tile's fp32 sum and
// counter per SM (the split tiles are fewer than a wave's blocks).
func (c *ovCase[T]) prepSplitK(pp *lab.Prep) {
	if c.prec == lab.BF16 {
		sms := c.Env.Device.Info().SMs
		c.splitWS = lab.PrepUpload(pp, "split-K sums", make([]float32, sms*splitTileFloats))
		c.splitCounts = lab.PrepUpload(pp, "split-K counters", make([]uint32, sms))
	}
}

// start refuses a problem whose elems elements do not fit, draws A, B and the bias, and starts
// the allocations.
func (c *ovCase[T]) start(p lab.Problem, elems int64) (*lab.Prep, error) {
	withBias := p.Int(ParamBias, 0) != 0
	if withBias && c.prec != lab.BF16 {
		return nil, fmt.Errorf("problem %q: bias: 1 is for the bf16 suites (the fp32 kernels take no bias)", p.Name)
	}
	if err := lab.NeedMemory(c.Env, int64(c.prec.Bytes())*elems); err != nil {
		return nil, lab.Skip("%v", err)
	}
	c.hostA, c.hostB = lab.Uniform(c.Env, c.sh.M*c.sh.K), lab.Uniform(c.Env, c.sh.K*c.sh.N)
	c.devA, c.devB = lab.DeviceElems[T](c.hostA), lab.DeviceElems[T](c.hostB)
	pp := lab.NewPrep(c.Env)
	if withBias {
		c.hostBias = lab.Uniform(c.Env, c.sh.N)
		c.bias = pp.UploadAs("bias", c.prec, c.hostBias)
	}
	return pp, nil
}

func (c *ovCase[T]) rows() int { return RowsOf(c.Rank, c.sh.M, c.N) }
func (c *ovCase[T]) row0() int { return Row0Of(c.Rank, c.sh.M, c.N) }

func (c *ovCase[T]) at(p gpu.Ptr, elems int) gpu.Ptr { return p + gpu.Ptr(c.prec.Bytes()*elems) }

// dims appends the kernels' sizes to args: this rank, the ranks, M, N and the GEMM's K.
func (c *ovCase[T]) dims(args ...any) []any {
	return append(args, int32(c.Rank), int32(c.N), int32(c.sh.M), int32(c.sh.N), int32(c.k))
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
	if ok, why := c.Env.AllReachable(); !ok {
		return lab.Skip("%s", why)
	}
	st := c.Env.Stream
	if err := c.tl.Begin(c.Env, v.Int(ParamTimeline, 0) != 0, TimelineRecords(c.sh, c.N, c.Env.Device.Info().SMs, v.Positive(ParamBlocksPerSM, 2)), st); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
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
	return c.Barrier()
}

// runLibrary: ncclAllGather into A_full, then the library's GEMM (ag_gemm); or the GEMM into P_r,
// then ncclReduceScatter into every rank's rows (gemm_rs).
func (c *ovCase[T]) runLibrary(v *lab.Variant) error {
	if v.Library != LibNCCLCublas {
		return fmt.Errorf("variant %s: library %q is not one lab 05 knows (%s)", v.Name, v.Library, LibNCCLCublas)
	}
	if err := equalBlocks(map[bool]string{false: "all-gather", true: "reduce-scatter"}[c.rs], c.sh, c.N); err != nil {
		return err
	}
	comm, err := c.Env.RankCommunicator()
	if err != nil {
		return err
	}
	dt, st := c.prec.DataType(), c.Env.Stream
	if c.rs {
		return lab.InOrder(func() error { return c.libraryGemm(v) },
			func() error { return comm.ReduceScatter(c.out, c.mine, c.sh.M/c.N*c.sh.N, dt, st) })
	}
	return lab.InOrder(func() error { return comm.AllGather(c.mine, c.a, c.sh.M/c.N*c.sh.K, dt, st) },
		func() error { return c.libraryGemm(v) })
}

// libraryGemm: cuBLAS SGEMM (fp32), or cuBLASLt with a bf16 output as PyTorch's a @ b, then the
// bias in a kernel of its own, as the distributed challenge's reference adds it.
func (c *ovCase[T]) libraryGemm(v *lab.Variant) error {
	blas, err := c.Env.BLAS()
	if err != nil {
		return err
	}
	dt := c.prec.DataType()
	g := gpu.RowMajorGemm(c.sh.M, c.sh.N, c.k, c.a, c.dB.DevicePtr(), c.out, dt, dt)
	if c.prec == lab.FP32 {
		return blas.Sgemm(c.Env.Stream, g)
	}
	if err := lab.LtMatmul(blas, v, c.Env.Stream, g); err != nil || c.bias == 0 {
		return err
	}
	return c.copyLaunch(v, EntryAddBias, c.sh.M*c.sh.N, c.Env.Stream, c.out, c.bias, int32(c.sh.M), int32(c.sh.N))
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
	kern, err := c.Env.Kernel(v)
	if err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D2(lab.CeilDiv(c.sh.N, TileN), lab.CeilDiv(rows, TileM)), Block: gpu.D1(GemmThread), Stream: s}
	return c.tl.Launch(kern, cfg, append(c.withBias([]any{a, c.dB.DevicePtr(), c.at(c.out, row0*c.sh.N), int32(rows), int32(c.sh.N), int32(c.k)}), c.tl.Ptr())...)
}

// copyLaunch launches helper entry over work elements as a grid-stride kernel (lab.GridStride).
func (c *ovCase[T]) copyLaunch(v *lab.Variant, entry string, work int, s gpu.Stream, args ...any) error {
	k, err := c.Env.KernelByEntry(entry)
	if err != nil {
		return err
	}
	return c.tl.Launch(k, lab.GridStride(c.Env, v, work, s), args...)
}

// sideStream is the second stream, its work from now on after the compute stream's so far.
func (c *ovCase[T]) sideStream() (gpu.Stream, error) {
	side, err := c.Env.SideStream()
	if err != nil {
		return nil, err
	}
	return side, lab.Order(c.events[0], c.Env.Stream, side)
}

// wgmmaLaunch readies kernel 06 or 07 for tiles tiles on at most avail SMs: the configuration
// (the variant's smem) and the arguments after the sizes and the output, the same in both: the
// bias, the split-K (SplitK's, or lab.yaml's splits: for the last wave's tiles, and its workspace),
// and the TMA maps of A (M × k), B and out (outRows × N), boxes as lab 02's kernel 15's.
func (c *ovCase[T]) wgmmaLaunch(v *lab.Variant, kern gpu.Kernel, tiles, avail, tileM int, what string, out gpu.Ptr, outRows int) (gpu.LaunchConfig, []any, error) {
	kBlocks := lab.CeilDiv(c.k, WgmmaTileK)
	whole, s := SplitK(tiles, avail, kBlocks, int(v.Int(ParamSplits, 0)))
	smem := v.Positive(ParamSmem, 0)
	cfg := gpu.LaunchConfig{Grid: gpu.D1(max(1, min(whole+(tiles-whole)*s, avail))), Block: gpu.D1(WgmmaThreads), SharedBytes: smem, Stream: c.Env.Stream}
	if err := lab.OptInShared(kern, smem); err != nil {
		return cfg, nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	maps, err := lab.TensorMaps(c.Env, what, lab.BF16Tiles(c.a, c.sh.M, c.k, tileM, 64),
		lab.BF16Tiles(c.dB.DevicePtr(), c.k, c.sh.N, 64, 64), lab.BF16Tiles(out, outRows, c.sh.N, 64, 64))
	return cfg, append([]any{c.bias, int32(whole), int32(s), c.splitWS, c.splitCounts}, maps...), err
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
	rep := matref.CheckProduct(p, got, c.Env.RNG.Uint64(), tol)
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
	return c.tl.Record(c.Env, v, v.Int(ParamTimeline, 0) != 0, TimelineKinds)
}

// prepareAG: an ag_gemm problem on this rank (A_full is hostA).
func (c *ovCase[T]) prepareAG(p lab.Problem) (*ovCase[T], error) {
	sh, rows, lo := c.sh, c.rows(), c.row0()
	pp, err := c.start(p, int64(rows)*int64(sh.K)+int64(sh.K)*int64(sh.N)+int64(sh.M)*int64(sh.K)+int64(sh.M)*int64(sh.N))
	if err != nil {
		return nil, err
	}
	c.dRows = lab.PrepUploadShared(pp, "A (this rank's rows)", c.devA[lo*sh.K:(lo+rows)*sh.K])
	c.dB = lab.PrepUpload(pp, "B", c.devB)
	// NaN before every checked run: a tile that reads its rows before they arrive turns C into NaN.
	c.dAFull = lab.PrepSharedScratch[T](pp, "A_full", sh.M*sh.K, c.prec.NaN(stagedNaN))
	c.dC = lab.PrepOutput[T](pp, "C", sh.M*sh.N, c.prec.NaN(lab.NaNBits32))
	c.flags = lab.PrepUploadShared(pp, "ready counters", make([]uint32, c.N)) // one per source rank
	c.prepSplitK(pp)
	c.events = pp.Events(c.N + 1) // the start, one per source block
	if pp.Signals(); pp.Err == nil {
		c.a, c.out, c.mine = c.dAFull.Mine.DevicePtr(), c.dC.DevicePtr(), c.dRows.Mine.DevicePtr()
	}
	return lab.Done(pp, c)
}

// launchGather copies count source blocks, from rank first on round the ring, into A_full.
func (c *ovCase[T]) launchGather(v *lab.Variant, first, count int, s gpu.Stream) error {
	work := 0
	for j := range count {
		work = max(work, RowsOf((first+j)%c.N, c.sh.M, c.N)*c.sh.K)
	}
	entry, args := c.prec.Entry(EntryGather), []any{c.dRows.Table, c.dAFull.Mine, int32(c.sh.M), int32(c.sh.K), int32(c.N), int32(first), int32(count)}
	if c.prec == lab.BF16 {
		args = append(args, gpu.Ptr(0)) // no flags
	}
	if c.tl.On {
		entry, args = EntryGatherTL, append(args, c.tl.Ptr())
	}
	return c.copyLaunch(v, entry, work, s, args...)
}

func (c *ovCase[T]) agSequential(v *lab.Variant) error {
	if err := c.launchGather(v, 0, c.N, c.Env.Stream); err != nil {
		return fmt.Errorf("all-gather: %w", err)
	}
	if err := c.launchRows(v, c.a, 0, c.sh.M, c.Env.Stream); err != nil {
		return fmt.Errorf("GEMM: %w", err)
	}
	return nil
}

// agChunked: the GEMM of this rank's own rows at once, the other blocks copied one launch each
// on the side stream; the compute stream waits for a block's event (not the host) before its
// GEMM, so block s+1 copies while block s multiplies, all queued up front.
func (c *ovCase[T]) agChunked(v *lab.Variant) error {
	compute := c.Env.Stream
	side, err := c.sideStream()
	if err != nil {
		return err
	}
	if err := c.launchRows(v, c.mine, c.row0(), c.rows(), compute); err != nil {
		return fmt.Errorf("GEMM of its own rows: %w", err)
	}
	for j, s := range Ring(c.Rank, c.N)[1:] {
		if err := c.launchGather(v, s, 1, side); err != nil {
			return fmt.Errorf("copy of rank %d's rows: %w", s, err)
		}
		if err := lab.Order(c.events[j+1], side, compute); err != nil {
			return fmt.Errorf("waiting for rank %d's rows: %w", s, err)
		}
		row0 := Row0Of(s, c.sh.M, c.N)
		if err := c.launchRows(v, c.at(c.a, row0*c.sh.K), row0, RowsOf(s, c.sh.M, c.N), compute); err != nil {
			return fmt.Errorf("GEMM of rank %d's rows: %w", s, err)
		}
	}
	return nil
}

// agFused: fused_pull reads the peers' rows through the table; fused_signal's producer blocks
// copy them into A_full and raise the counters its GEMM blocks wait on; in the push form each
// rank's producers write its rows into the peers' A_full and raise their counters.
func (c *ovCase[T]) agFused(v *lab.Variant) error {
	k, err := c.Env.Kernel(v)
	if err != nil {
		return err
	}
	if v.Entry == EntryWgmma {
		return c.agWgmma(v, k)
	}
	res, err := c.resident.Get(v.Key(), func() (int, error) {
		return lab.ResidentBlocks(c.Env, k, GemmThread, v.Positive(ParamBlocksPerSM, 1))
	})
	if err != nil {
		return err
	}
	tiles := Tiles(c.sh, c.N)
	if v.Entry == EntryFusedPull {
		cfg := gpu.LaunchConfig{Grid: gpu.D1(max(1, min(res, tiles))), Block: gpu.D1(GemmThread), Stream: c.Env.Stream}
		return gpu.Launch(k, cfg, c.dims(c.dRows.Table, c.dB, c.dC)...)
	}
	// At least one GEMM block for every producer... and never more producers than half a wave.
	prod := max(1, min(v.Positive(ParamProducers, 1), res/2))
	grid, err := PersistentGrid(res, prod, tiles)
	if err != nil {
		return err
	}
	c.epoch++
	cfg := gpu.LaunchConfig{Grid: gpu.D1(grid), Block: gpu.D1(GemmThread), Stream: c.Env.Stream}
	if v.Params[ParamPush] != 0 {
		return gpu.Launch(k, cfg, c.withBias(append(c.dims(c.dRows.Mine, c.dAFull.Table, c.flags.Table, c.dB, c.dC), int32(prod), c.epoch))...)
	}
	return c.tl.Launch(k, cfg, append(c.withBias(append(c.dims(c.dRows.Table, c.dAFull.Mine, c.flags.Mine, c.dB, c.dC), int32(prod), c.epoch)), c.tl.Ptr())...)
}

// agWgmma (kernel 06): gather_rows_bf16 copies every block into A_full with `copiers` blocks,
// raising the ready counters the wgmma GEMM's producer waits for before a tile's TMA loads.
// beside: 1 copies on the side stream, and the GEMM's grid leaves the copy SMs of its own (a
// spinning GEMM block, one an SM, must never keep the copy from running); else the copy runs first.
func (c *ovCase[T]) agWgmma(v *lab.Variant, k gpu.Kernel) error {
	if c.sh.K%8 != 0 || c.sh.N%8 != 0 {
		return lab.Skip("the wgmma kernel moves tiles with TMA, whose row strides must be multiples of 16 bytes: K and N must be multiples of 8 (this problem has K=%d, N=%d)", c.sh.K, c.sh.N)
	}
	copiers, beside, avail := v.Positive(ParamCopiers, 8), v.Params[ParamBeside] != 0, c.Env.Device.Info().SMs
	if beside {
		avail -= copiers
	}
	if avail < 1 {
		return fmt.Errorf("variant %s: %d copiers leave no SM of %d for the GEMM (lower copiers:)", v.Name, copiers, c.Env.Device.Info().SMs)
	}
	tileM, tileN := AgTile(c.sh.M, c.sh.N, avail)
	cfg, tail, err := c.wgmmaLaunch(v, k, lab.CeilDiv(c.sh.M, tileM)*lab.CeilDiv(c.sh.N, tileN), avail, tileM, "A_full, B or C", c.out, c.sh.M)
	if err != nil {
		return err
	}
	copy, compute := c.Env.Stream, c.Env.Stream
	gather, err := c.Env.KernelByEntry(c.prec.Entry(EntryGather))
	if beside && err == nil {
		copy, err = c.sideStream()
	}
	if err != nil {
		return err
	}
	c.epoch++
	ready := c.epoch * uint32(copiers) // every copier block adds 1 to a block's counter
	if v.Params[ParamCE] != 0 {
		err, ready = c.copyOnEngines(copy), c.epoch
	} else {
		err = gpu.Launch(gather, gpu.LaunchConfig{Grid: gpu.D1(copiers), Block: gpu.D1(256), Stream: copy},
			c.dRows.Table, c.dAFull.Mine, int32(c.sh.M), int32(c.sh.K), int32(c.N), int32(c.Rank), int32(c.N), c.flags.Mine)
	}
	if err != nil {
		return fmt.Errorf("the copy: %w", err)
	}
	if err := gpu.Launch(k, cfg, append(append(c.dims(c.flags.Mine, ready), c.dC, int32(tileM), int32(tileN)), tail...)...); err != nil || !beside {
		return err
	}
	return lab.Order(c.events[1], copy, compute) // the closing device barrier waits for the copy too
}

// copyOnEngines is agWgmma's all-gather on the copy engines: a cuMemcpyDtoDAsync per source
// block, each followed by raise_flag, which adds 1 to the block's counter once the copy landed.
// raise_flag still needs an SM outside the GEMM's grid (copiers), or it would never start.
func (c *ovCase[T]) copyOnEngines(s gpu.Stream) error {
	raise, err := c.Env.KernelByEntry(EntryRaiseFlag)
	if err != nil {
		return err
	}
	for _, src := range Ring(c.Rank, c.N) {
		if rows := RowsOf(src, c.sh.M, c.N); rows > 0 {
			dst := c.at(c.a, Row0Of(src, c.sh.M, c.N)*c.sh.K)
			if err := c.Env.Device.CopyDtoD(dst, c.dRows.Ptr(src), int64(c.prec.Bytes()*rows*c.sh.K), s); err != nil {
				return fmt.Errorf("copying block %d: %w", src, err)
			}
		}
		if err := gpu.Launch(raise, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(32), Stream: s}, c.flags.Mine, int32(src), uint32(1)); err != nil {
			return err
		}
	}
	return nil
}

// gemm_rs: rank r holds A_r, a block of the columns of A (M × K_r), and B_r, the same block of the
// rows of B (K_r × N), K split like M (ColsOf, Col0Of). Its partial product P_r = A_r·B_r is
// M × N; C = Σ_r P_r, and rank r ends with its block of C's rows (RowsOf, Row0Of of M).

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

func (c *ovCase[T]) prepareRS(p lab.Problem) (*ovCase[T], error) {
	sh, kr, k0, rows := c.sh, c.k, Col0Of(c.Rank, c.sh.K, c.N), c.rows()
	slotElems := 0
	if c.prec == lab.BF16 {
		slotElems = c.N * rows * sh.N
	}
	pp, err := c.start(p, int64(sh.M)*int64(kr)+int64(kr)*int64(sh.N)+int64(sh.M)*int64(sh.N)+int64(rows)*int64(sh.N)+int64(slotElems))
	if err != nil {
		return nil, err
	}
	c.dCols = lab.PrepUpload(pp, "A (this rank's columns)", lab.Columns(c.devA, sh.M, sh.K, k0, kr))
	c.dB = lab.PrepUpload(pp, "B (this rank's rows)", c.devB[k0*sh.N:(k0+kr)*sh.N])
	// NaN before every checked run: a reduction that runs before its GEMM, or reads a receive slot
	// before its flag, leaves NaN in C.
	nan := c.prec.NaN(lab.NaNBits32)
	c.dP = lab.PrepSharedScratch[T](pp, "P (partial product)", sh.M*sh.N, nan)
	c.dOut = lab.PrepSharedOutput[T](pp, "C (this rank's rows)", rows*sh.N, nan)
	if slotElems > 0 {
		c.slots = lab.PrepSharedScratch[T](pp, "receive slots", slotElems, nan)
		c.flags = lab.PrepUploadShared(pp, "arrival counters", make([]uint32, c.N*WgmmaRSTiles(Shape{M: rows, N: sh.N}, 1, true)))
	}
	c.prepSplitK(pp)
	c.events = pp.Events(2) // chunked: the reduction's start and end
	if pp.Signals(); pp.Err == nil {
		c.a, c.out, c.mine = c.dCols.DevicePtr(), c.dP.Mine.DevicePtr(), c.dOut.Mine.DevicePtr()
	}
	return lab.Done(pp, c)
}

// launchReduce pulls this rank's rows of every rank's P_r and sums them into its C.
func (c *ovCase[T]) launchReduce(v *lab.Variant, s gpu.Stream) error {
	return c.copyLaunch(v, c.prec.Entry(EntryReduceRows), c.rows()*c.sh.N, s, c.dP.Table, c.dOut.Mine, int32(c.sh.N), int32(c.N), int32(c.row0()), int32(c.rows()))
}

// barrierThenReduce: a device barrier (every P_r is complete), then the reduction.
func (c *ovCase[T]) barrierThenReduce(v *lab.Variant) error {
	if err := c.Env.DeviceBarrier(c.Env.Stream); err != nil {
		return err
	}
	return c.launchReduce(v, c.Env.Stream)
}

func (c *ovCase[T]) rsSequential(v *lab.Variant) error {
	if err := c.launchRows(v, c.a, 0, c.sh.M, c.Env.Stream); err != nil {
		return fmt.Errorf("GEMM: %w", err)
	}
	return c.barrierThenReduce(v)
}

// rsChunked: the GEMM by destination blocks in rank order, a device barrier after each; the
// owner's reduction of its block then runs on the side stream beside the GEMMs that follow.
func (c *ovCase[T]) rsChunked(v *lab.Variant) error {
	st := c.Env.Stream
	var side gpu.Stream
	for d := range c.N {
		row0 := Row0Of(d, c.sh.M, c.N)
		if err := c.launchRows(v, c.at(c.a, row0*c.k), row0, RowsOf(d, c.sh.M, c.N), st); err != nil {
			return fmt.Errorf("GEMM of rank %d's rows: %w", d, err)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if d != c.Rank {
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

// rsFused: this rank's rows of C zeroed, a device barrier, then the fused GEMM whose epilogue
// adds each tile into its owner's rows through the table of outputs.
func (c *ovCase[T]) rsFused(v *lab.Variant) error {
	if v.Entry == EntryWgmmaRS {
		return c.rsWgmma(v)
	}
	st := c.Env.Stream
	if err := c.dOut.Mine.FillBytes(0, st); err != nil {
		return fmt.Errorf("zeroing its rows of C: %w", err)
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	k, err := c.Env.Kernel(v)
	if err != nil {
		return err
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D1(Tiles(c.sh, c.N)), Block: gpu.D1(GemmThread), Stream: st}
	return gpu.Launch(k, cfg, c.withBias(c.dims(c.dCols, c.dB, c.dOut.Table))...)
}

// rsWgmma launches kernel 07, a persistent grid of at most one block an SM. Without push its
// tiles go into P, reduced after a device barrier as in sequential; with push: 1 each tile goes
// into its owner's receive slot for this rank, with a flag, and the owner reduces its tiles into C
// as they arrive. Every rank checks every rank's K_r for TMA, so all skip alike.
func (c *ovCase[T]) rsWgmma(v *lab.Variant) error {
	if c.slots == nil {
		return fmt.Errorf("variant %s: kernel 07 is bf16 only (suite bf16_%s)", v.Name, SuiteGemmRS)
	}
	for s := range c.N {
		if kr := ColsOf(s, c.sh.K, c.N); kr%8 != 0 || c.sh.N%8 != 0 {
			return lab.Skip("the wgmma kernel moves tiles with TMA, whose row strides must be multiples of 16 bytes: every rank's K/%d columns and N must be multiples of 8 (this problem has K=%d, rank %d holds %d columns, N=%d)", c.N, c.sh.K, s, kr, c.sh.N)
		}
	}
	k, err := c.Env.Kernel(v)
	if err != nil {
		return err
	}
	push := v.Params[ParamPush] != 0
	out, outRows := c.out, c.sh.M // the partial product, or (push) this rank's rows of C
	if push {
		out, outRows = c.mine, c.rows()
	}
	cfg, tail, err := c.wgmmaLaunch(v, k, WgmmaRSTiles(c.sh, c.N, push), c.Env.Device.Info().SMs, WgmmaTileM, "A_r, B_r or the output", out, outRows)
	if err != nil {
		return err
	}
	slots, flags, pushArg := any(gpu.Ptr(0)), any(gpu.Ptr(0)), int32(0)
	if push {
		c.epoch++
		slots, flags, pushArg = c.slots.Table, c.flags.Table, 1
	}
	if err := gpu.Launch(k, cfg, append(c.dims(slots, flags, c.epoch, pushArg), tail...)...); err != nil || push {
		return err
	}
	return c.barrierThenReduce(v)
}

// Check compares this rank's C (ag_gemm) or rows of C (gemm_rs) with the float64 product. bf16
// roundings on an element's path, ag_gemm: C's and (the library baseline) the bias add's. gemm_rs:
// the partial product and the sum (sequential, chunked, kernel 07, whose pushed partials are
// bf16, summed in fp32); each add of the fused epilogues (n); the partial, the bias add and
// NCCL's n−1 ring hops (library). Every rank adds the bias, as the challenge's reference does.
func (c *ovCase[T]) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	if !c.rs {
		return c.checkRows(out, c.dC, 0, c.sh.M, "every rank's C", 2, 1)
	}
	rounds := 2
	if v.Library != "" || v.Entry == c.prec.Entry(EntryGemmRSFused) {
		rounds = c.N + 1
	}
	return c.checkRows(out, c.dOut.Mine, c.row0(), c.rows(), "every rank's rows of C", rounds, c.N)
}

func (c *ovCase[T]) Work() lab.Work {
	if c.rs {
		return RSWorkOf(c.sh)
	}
	return WorkOf(c.sh, c.N)
}

// PeerRankProblem describes a problem for the PyTorch peer (peers/torch_nccl.py): the layer, the
// sizes, this rank's rows and columns, and the work of the lab's own variants, so that the rates
// compare exactly. torch's NCCL collectives take equal blocks, as the nccl_cublas baseline.
func (Lab) PeerRankProblem(s *lab.Suite, p lab.Problem, w ranks.World) (map[string]any, lab.Work, error) {
	sh, err := ShapeOf(p)
	op, work := "all-gather", WorkOf(sh, w.Size)
	if err == nil && s.Name == SuiteGemmRS {
		op, work, err = "reduce-scatter", RSWorkOf(sh), splitK(sh, w.Size)
	}
	if err == nil {
		err = equalBlocks(op, sh, w.Size)
	}
	if err != nil {
		return nil, lab.Work{}, err
	}
	return map[string]any{"layer": s.Name, "m": sh.M, "n": sh.N, "k": sh.K,
		"row0": Row0Of(w.Rank, sh.M, w.Size), "rows": RowsOf(w.Rank, sh.M, w.Size),
		"col0": Col0Of(w.Rank, sh.K, w.Size), "cols": ColsOf(w.Rank, sh.K, w.Size)}, work, nil
}
