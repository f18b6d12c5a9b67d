// Package gemm is lab 02, "GEMM from naive to cuBLAS-class": C = alpha·A·B + beta·C with
// row-major A (M×K), B (K×N) and C (M×N), fp32 on the CUDA cores and bf16 inputs with fp32
// accumulation on the tensor cores, every variant checked and timed against cuBLAS in one run.
//
// C starts random and is restored before the checked run (a stale element then holds a value no
// correct kernel leaves); the timed runs accumulate into it, bounded since |beta| < 1. With
// beta0: 1, beta = 0 and C is poisoned with NaN, so a kernel that reads C then fails. "bf16…"
// suites have bf16 A and B and an fp32 C, plus a bf16 copy of it for the variants that write one
// (cuBLASLt, cbf16: 1), checked with the output's rounding allowed. A case holds the operand
// layouts its suite's variants take (Layout), so all of them are checked against one product.
package gemm

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// LabDir is the lab's directory name, under which the driver registers.
const LabDir = "02_gemm"

// Library calls that variants name in lab.yaml (library: ...).
const (
	LibSgemm  = "cublas_sgemm"  // cublasSgemm, default math mode: true FP32, no TF32
	LibGemmEx = "cublas_gemmex" // cublasGemmEx, bf16 inputs, fp32 output and accumulation
	LibLt     = "cublaslt_bf16" // cublasLtMatmul, heuristic algorithm: bf16 inputs and output, fp32 accumulation
)

// Launch parameters a variant may set in lab.yaml (params:), with their defaults.
const (
	ParamBM, ParamBN = "bm", "bn"     // the tile of C one block computes (32, 32)
	ParamThreads     = "threads"      // a 1-D block of this many threads; else bx × by
	ParamBX, ParamBY = "bx", "by"     // the block's x and y when threads is not set (32 × 1)
	ParamSmem        = "smem"         // dynamic shared memory in bytes (0); above 48 KiB the kernel is opted in
	ParamTMA         = "tma"          // 1: the kernel takes TMA tensor maps of A and B (tmA, tmB) instead of pointers
	ParamBK          = "bk"           // the K step of the tensor maps' boxes (64)
	ParamCBF16       = "cbf16"        // 1: the kernel writes a bf16 C (bf16 suites only)
	ParamTMAC        = "tmac"         // 1: and takes a tensor map of it (tmC, after tmA and tmB), for TMA stores
	ParamCBoxM       = "cbox_m"       // the rows of the C map's boxes (64)
	ParamCBoxN       = "cbox_n"       // their columns (64)
	ParamPersistent  = "persistent"   // 1: a 1-D grid of whole clusters, no more than the SMs hold; the kernel loops over tiles
	ParamCTAsPerSM   = "ctas_per_sm"  // blocks per SM of a persistent grid (1)
	ParamCluster     = "cluster"      // blocks per cluster along x (1), as the kernel's __cluster_dims__
	ParamMaxBlocks   = "max_blocks"   // the most blocks of a persistent grid (0: SMs × ctas_per_sm)
	ParamSplitK      = "split_k"      // blocks that share a tile of C, each summing a slice of K (1), consecutive in x
	ParamMaxGFLOP    = "max_gflop"    // skip problems above this many GFLOP, too slow to time (0: no limit)
	ParamAColMajor   = "a_col_major"  // 1: A stored column-major (Layout)
	ParamBTransposed = "b_transposed" // 1: B stored as Bᵀ, N×K, as PyTorch stores a linear layer's weight
	ParamBiasReLU    = "bias_relu"    // 1: the bias + ReLU epilogue (Layout)
	// S > 0: lab 03's stream-K decode schedule (kernel 19): a persistent grid of every slot, and the
	// kernel also takes fp32 partial sums of C for S blocks, a counter per bm × bn item, and S.
	ParamStreamK = "stream_k"
)

// BF16OutputRounding is what the check adds to a suite's tolerance for a variant that writes a
// bf16 C: rounding an element to bf16 moves it by at most 2^-9 of itself, and an element is never
// larger than its error scale (|alpha|·Σ|a·b| + |beta·c|), so 2^-8 leaves a margin of 2× on every
// element and more on the norm, while a dropped k16 step (≈ √(16/K) ≥ 4e-2) still fails.
const BF16OutputRounding = 1.0 / 256

// WritesBF16 says whether variant v writes a bf16 C.
func WritesBF16(v *lab.Variant) bool { return v.Library == LibLt || v.Params[ParamCBF16] != 0 }

// The scalars of every problem, both exact in binary: the reference has no rounding in them.
const Alpha, Beta = 1.25, -0.5

// Lab is the driver of lab 02.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

// Shape is one problem: its sizes and its beta (0 for a beta0 problem).
type Shape struct {
	lab.MNK
	Beta float32
}

// ShapeOf reads a problem's m, n, k (n and k default to m) and beta0.
func ShapeOf(p lab.Problem) (Shape, error) {
	s, err := lab.MNKOf(p, true)
	if p.Int("beta0", 0) != 0 {
		return Shape{s, 0}, err
	}
	return Shape{s, Beta}, err
}

// CheckProblem refuses a custom problem the kernels cannot take, before anything runs.
func (Lab) CheckProblem(s *lab.Suite, p lab.Problem) error {
	_, err := ShapeOf(p)
	return err
}

// Derive records the weight-read floor of the skinny products of the bf16 suites (M ≤ 128, a B
// larger than L2): no run can be faster than reading B's 2·K·N bytes once (lab.DeriveReadFloors).
func (Lab) Derive(info gpu.DeviceInfo, entries []lab.EntryView) (map[string]any, error) {
	return lab.DeriveReadFloors(info, entries, func(e lab.EntryView) (float64, int, bool) {
		sh, err := ShapeOf(lab.Problem{Name: e.Problem, Params: e.Params})
		bytes := float64(lab.BF16.Bytes()) * float64(sh.K) * float64(sh.N)
		return bytes, 1, err == nil && strings.HasPrefix(e.Suite, "bf16") && sh.M <= 128 && bytes > float64(info.L2Bytes)
	})
}

// PeerProblem is a problem for the peer scripts (peers/*.py), with the kernels' alpha and beta and
// the lab's own work, so the rates compare exactly; peers write C in the inputs' precision (torch).
func (Lab) PeerProblem(s *lab.Suite, p lab.Problem) (map[string]any, lab.Work, error) {
	sh, err := ShapeOf(p)
	if err != nil {
		return nil, lab.Work{}, err
	}
	prec := lab.PrecisionOf(s)
	return map[string]any{"m": sh.M, "n": sh.N, "k": sh.K, "alpha": Alpha, "beta": float64(sh.Beta), "inputs": prec.String()},
		WorkOf(prec, sh, prec.Bytes()), nil
}

// Layout is how a kernel variant takes its operands, beyond the lab's row-major default.
type Layout struct {
	AColMajor   bool // A is stored column-major: element (i, k) at A[k·M + i]
	BTransposed bool // B is stored as Bᵀ (N×K row-major): element (k, j) at B[j·K + k]
	BiasReLU    bool // a bias of N floats follows C; C = max(0, alpha·A·B + beta·C + bias[j])
}

// LayoutOf reads a variant's layout from its params (a_col_major, b_transposed, bias_relu).
func LayoutOf(params map[string]int64) Layout {
	return Layout{params[ParamAColMajor] != 0, params[ParamBTransposed] != 0, params[ParamBiasReLU] != 0}
}

// suiteNeeds is what the variants of a suite need beyond A, B and an fp32 C: a case prepares the
// other layouts, the bias or a bf16 C (bf16 suites) only when one of them asks for it.
func suiteNeeds(s *lab.Suite) (need Layout, bf16Out bool) {
	for _, v := range s.Variants {
		l := LayoutOf(v.Params)
		need = Layout{need.AColMajor || l.AColMajor, need.BTransposed || l.BTransposed, need.BiasReLU || l.BiasReLU}
		bf16Out = bf16Out || WritesBF16(v)
	}
	return need, bf16Out && lab.PrecisionOf(s) == lab.BF16
}

// gemmCase is one prepared problem on the device (its buffers belong to the engine).
type gemmCase struct {
	env  *lab.Env
	prec lab.Precision
	sh   Shape
	prod matref.Product
	seed uint64 // for the check's random vectors and samples

	a, b   gpu.Ptr              // the inputs, in the suite's precision
	dC     *gpu.Buffer[float32] // the output
	dC16   *gpu.Buffer[uint16]  // the bf16 C, for variants that write one (nil otherwise)
	aT, bT gpu.Ptr              // A stored column-major, B stored transposed (N×K)
	bias   []float32            // the bias of the bias + ReLU epilogue (N values)
	dBias  gpu.Ptr
	split  *lab.SplitSums // the stream-K variants' partial sums
}

// Prepare allocates the problem p of suite s and fills it with fresh random inputs.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	sh, err := ShapeOf(p)
	if err != nil {
		return nil, err
	}
	where := func(err error) error { return fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err) }
	prec, m, n, k := lab.PrecisionOf(s), sh.M, sh.N, sh.K
	need, bf16Out := suiteNeeds(s)
	c := &gemmCase{env: env, prec: prec, sh: sh}
	a := lab.NewPrep(env)
	// With beta ≠ 0, C is an input, restored from a pristine C0 (else poisoned with NaN).
	c0, poison, poison16 := sh.Beta != 0, lab.PoisonNaN32, lab.PoisonNaN
	var c0bits []uint16
	// The case's device buffers, each when the suite needs it: counted now, made once the inputs are drawn.
	var bufs []func()
	var bytes int64
	buf := func(on bool, n int64, alloc func()) {
		if on {
			bufs, bytes = append(bufs, alloc), bytes+n
		}
	}
	mk, kn, mn, pb := int64(m)*int64(k), int64(k)*int64(n), int64(m)*int64(n), int64(prec.Bytes())
	// A bf16 suite's A and B are rounded in place: the reference multiplies what the device has.
	buf(true, pb*mk, func() { c.a = a.UploadAs("A", prec, c.prod.A) })
	buf(true, pb*kn, func() { c.b = a.UploadAs("B", prec, c.prod.B) })
	buf(c0, 4*mn, func() { poison = lab.RestoreFrom(lab.PrepUpload(a, "the initial C", c.prod.C0)) })
	buf(c0 && bf16Out, 2*mn, func() { poison16 = lab.RestoreFrom(lab.PrepUpload(a, "the initial bf16 C", c0bits)) })
	buf(true, 4*mn, func() { c.dC = lab.PrepOutput[float32](a, "C", m*n, poison) })
	buf(bf16Out, 2*mn, func() { c.dC16 = lab.PrepOutput[uint16](a, "the bf16 C", m*n, poison16) })
	buf(need.AColMajor, pb*mk, func() { c.aT = a.UploadAs("A (column-major)", prec, matref.Transpose(c.prod.A, m, k)) })
	// The same B stored N×K: the product is still A·B, checked against the same reference.
	buf(need.BTransposed, pb*kn, func() { c.bT = a.UploadAs("B (transposed)", prec, matref.Transpose(c.prod.B, k, n)) })
	buf(need.BiasReLU, 4*int64(n), func() {
		// From the case's seed, not env.RNG, so that adding the epilogue to a suite leaves the
		// inputs of its other variants as they were.
		c.bias = make([]float32, n)
		matref.FillUniform(c.bias, c.seed^0x62696173) // "bias"
		c.dBias = a.UploadAs("the bias", lab.FP32, c.bias)
	})
	// The stream-K partial sums, a counter per item of the smallest tile of the suite.
	slots, items := int(s.MaxParam(ParamStreamK)), lab.CeilDiv(m, int(s.MinParam(ParamBM, 32)))*lab.CeilDiv(n, int(s.MinParam(ParamBN, 32)))
	buf(slots > 0, lab.SplitSumsBytes(slots, m*n, items), func() { c.split = lab.PrepSplitSums(a, slots, m*n, items) })
	if a.Need(bytes); a.Err != nil {
		return nil, where(a.Err)
	}

	c.seed = env.RNG.Uint64()
	c.prod = matref.Product{M: m, N: n, K: k, Alpha: Alpha, Beta: sh.Beta, A: make([]float32, m*k), B: make([]float32, k*n)}
	matref.FillUniform(c.prod.A, env.RNG.Uint64())
	matref.FillUniform(c.prod.B, env.RNG.Uint64())
	if c0 {
		c.prod.C0 = make([]float32, m*n)
		matref.FillUniform(c.prod.C0, env.RNG.Uint64())
		if prec == lab.BF16 {
			c0bits = matref.RoundBF16(c.prod.C0) // so that a bf16 C starts from exactly the same values
		}
	}
	for _, alloc := range bufs {
		alloc()
	}
	if a.Err != nil {
		return nil, where(a.Err)
	}
	return c, nil
}

// Run launches variant v once on the lab's stream.
func (c *gemmCase) Run(v *lab.Variant) error {
	if v.Library != "" {
		return c.runLibrary(v)
	}
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	info := c.env.Device.Info()
	ls, err := shapeFor(v, c.sh.M, c.sh.N, c.sh.K, info.SMs, info.MaxThreadsPerBlock)
	if err != nil {
		return err
	}
	if err := lab.OptInShared(k, ls.Shared); err != nil {
		return fmt.Errorf("variant %s: %w", v.Name, err)
	}
	cfg := gpu.LaunchConfig{Grid: ls.Grid, Block: ls.Block, SharedBytes: ls.Shared, Stream: c.env.Stream}
	m, n, kk, alpha, beta := int32(c.sh.M), int32(c.sh.N), int32(c.sh.K), c.prod.Alpha, c.prod.Beta
	lay := LayoutOf(v.Params)
	var out any = c.dC
	if ls.CBF16 {
		if c.dC16 == nil {
			return fmt.Errorf("variant %s writes a bf16 C, which suite %s (%s inputs) does not have: bf16 outputs need a bf16 suite",
				v.Name, v.Suite.Name, c.prec)
		}
		out = c.dC16
	}
	if !ls.TMA { // (M, N, K, alpha, A, B, beta, C[, bias]), A and B in the layouts the variant asks for
		a, b := c.a, c.b
		if lay.AColMajor {
			a = c.aT
		}
		if lay.BTransposed {
			b = c.bT
		}
		args := []any{m, n, kk, alpha, a, b, beta, out}
		if lay.BiasReLU {
			args = append(args, c.dBias)
		}
		split, err := c.split.Args(v.Name, ls.StreamK) // none for a variant that is not stream-K
		if err != nil {
			return err
		}
		return gpu.Launch(k, cfg, append(args, split...)...)
	}
	if c.prec != lab.BF16 {
		return fmt.Errorf("variant %s: TMA kernels take bf16 inputs; suite %s is %s", v.Name, v.Suite.Name, c.prec)
	}
	// The maps the wgmma kernels expect (kernels/12_wgmma_tma.cu): A in boxes of bk × bm (K
	// innermost), B of 64 × bk (N innermost, 64 bf16 = the swizzle span), a bf16 C (tmac: 1, so
	// out is the suite's bf16 C) of cbox_m × cbox_n.
	descs := []gpu.TensorMapDesc{lab.BF16Tiles(c.a, c.sh.M, c.sh.K, ls.BM, ls.BK), lab.BF16Tiles(c.b, c.sh.K, c.sh.N, ls.BK, 64)}
	if ls.TMAC {
		descs = append(descs, lab.BF16Tiles(c.dC16.DevicePtr(), c.sh.M, c.sh.N, ls.CBox[0], ls.CBox[1]))
	}
	args := []any{m, n, kk, alpha, beta, out}
	for i, d := range descs {
		tm, err := lab.TensorMap(c.env, "ABC"[i:i+1], d)
		if err != nil {
			return err
		}
		args = append(args, tm)
	}
	return gpu.Launch(k, cfg, args...)
}

// launchShape is how a kernel variant is launched on one problem.
type launchShape struct {
	Grid, Block gpu.Dim3
	Shared      int
	BM, BN, BK  int
	TMA, TMAC   bool   // tensor maps of A and B; and of C
	CBF16       bool   // C is bf16
	Persistent  bool   // a 1-D grid whose blocks loop over the tiles
	CBox        [2]int // the C map's box: rows (cbox_m), columns (cbox_n)
	Cluster     int    // blocks per cluster (the grid's x is a multiple of it)
	StreamK     int    // the most blocks that share an item (ParamStreamK), 0: not stream-K
}

// shapeFor computes the launch of kernel variant v (params from lab.yaml) on an M×N×K problem,
// or refuses it. sms is the device's multiprocessor count, maxThreads its block-size limit.
func shapeFor(v *lab.Variant, m, n, k, sms, maxThreads int) (launchShape, error) {
	name, get := v.Name, v.Int
	var ls launchShape
	var splitK int
	ls.BM, ls.BN, ls.BK = int(get(ParamBM, 32)), int(get(ParamBN, 32)), int(get(ParamBK, 64))
	if ls.BM < 1 || ls.BN < 1 || ls.BK < 1 {
		return ls, fmt.Errorf("variant %s: tile bm=%d bn=%d bk=%d must be positive (params in lab.yaml)", name, ls.BM, ls.BN, ls.BK)
	}
	ls.Block = gpu.D2(int(get(ParamBX, 32)), int(get(ParamBY, 1)))
	if t := get(ParamThreads, 0); t > 0 {
		ls.Block = gpu.D1(int(t))
	}
	maxThreads = cmp.Or(max(maxThreads, 0), 1024)
	if c := ls.Block.Count(); c < 1 || c > int64(maxThreads) {
		return ls, fmt.Errorf("variant %s: block %v has %d threads, the device allows 1..%d", name, ls.Block, c, maxThreads)
	}
	if ls.Shared = int(get(ParamSmem, 0)); ls.Shared < 0 {
		return ls, fmt.Errorf("variant %s: negative smem %d", name, ls.Shared)
	}
	if limit, gf := get(ParamMaxGFLOP, 0), 2*float64(m)*float64(n)*float64(k)/1e9; limit > 0 && gf > float64(limit) {
		return ls, lab.Skip("too slow for this size: %s would run %.0f GFLOP per call, above its limit of %d (params.max_gflop in lab.yaml)",
			name, gf, limit)
	}
	if ls.TMA = get(ParamTMA, 0) != 0; ls.TMA && (k%8 != 0 || n%8 != 0) {
		return ls, lab.Skip("%s loads tiles with TMA, whose row strides must be multiples of 16 bytes: K and N must be multiples of 8 (this problem has K=%d, N=%d)",
			name, k, n)
	}
	ls.CBF16, ls.TMAC, ls.StreamK = get(ParamCBF16, 0) != 0, get(ParamTMAC, 0) != 0, int(get(ParamStreamK, 0))
	ls.CBox = [2]int{int(get(ParamCBoxM, 64)), int(get(ParamCBoxN, 64))}
	// A column-major A, a transposed B and the bias + ReLU epilogue are for kernels that take
	// pointers and write an fp32 C.
	switch box, lay := ls.CBox, LayoutOf(v.Params); {
	case lay != (Layout{}) && ls.CBF16:
		return ls, fmt.Errorf("variant %s: a bf16 C and %s/%s/%s do not go together (params in lab.yaml)",
			name, ParamAColMajor, ParamBTransposed, ParamBiasReLU)
	case lay != (Layout{}) && ls.TMA:
		return ls, fmt.Errorf("variant %s: %s, %s and %s are for kernels that take pointers, not TMA tensor maps (params in lab.yaml)",
			name, ParamAColMajor, ParamBTransposed, ParamBiasReLU)
	case ls.StreamK > 0 && (!ls.CBF16 || ls.TMA):
		return ls, fmt.Errorf("variant %s: stream_k kernels write a bf16 C from pointers (cbf16: 1, no tma; params in lab.yaml)", name)
	case ls.TMAC && (!ls.TMA || !ls.CBF16):
		return ls, fmt.Errorf("variant %s: tmac (a tensor map of C) needs tma: 1 and cbf16: 1 (params in lab.yaml)", name)
	case ls.TMAC && (box[0] < 1 || box[0] > 256 || box[1] < 1 || box[1]*2 > 128):
		return ls, fmt.Errorf("variant %s: C box %d×%d: rows must be 1..256 and a row at most 128 bytes (64 bf16, the swizzle span)",
			name, box[0], box[1])
	}
	ls.Cluster, splitK = int(get(ParamCluster, 1)), int(get(ParamSplitK, 1))
	if ls.Cluster < 1 || ls.Cluster > 16 || splitK < 1 {
		return ls, fmt.Errorf("variant %s: cluster=%d must be 1..16 and split_k=%d positive (params in lab.yaml)", name, ls.Cluster, splitK)
	}
	tilesM, tilesN := lab.CeilDiv(m, ls.BM), lab.CeilDiv(n, ls.BN)
	slots := max(sms, 1) * max(int(get(ParamCTAsPerSM, 1)), 1)
	if ls.StreamK > 0 {
		if k%8 != 0 || n%8 != 0 {
			return ls, lab.Skip("%s copies rows of A and B in chunks of 8 elements: N and K must be multiples of 8 (this problem has N=%d, K=%d)", name, n, k)
		}
		ls.Persistent, ls.Grid = true, gpu.D1(slots) // every block streams a share, whatever the tiles
		return ls, nil
	}
	if get(ParamPersistent, 0) != 0 {
		if splitK != 1 {
			return ls, fmt.Errorf("variant %s: split_k and persistent do not go together (params in lab.yaml)", name)
		}
		// Whole clusters: as many as the tiles need (the last may hold a block with no tile), as
		// many as the SMs hold. A device may hold fewer clusters than SMs / cluster (a GPC with an
		// odd number of free SMs leaves one idle), hence max_blocks: blocks beyond what it holds
		// would wait for a second round.
		ls.Persistent = true
		if mb := int(get(ParamMaxBlocks, 0)); mb > 0 {
			slots = min(slots, mb)
		}
		ls.Grid = gpu.D1(min(lab.CeilDiv(tilesM*tilesN, ls.Cluster), max(slots/ls.Cluster, 1)) * ls.Cluster)
		return ls, nil
	}
	gx := lab.CeilDiv(tilesN*splitK, ls.Cluster) * ls.Cluster
	if gx > 1<<31-1 || tilesM > 65535 {
		return ls, fmt.Errorf("variant %s: grid (%d, %d) is beyond the device's limits (y ≤ 65535)", name, gx, tilesM)
	}
	ls.Grid = gpu.D2(gx, tilesM)
	return ls, nil
}

// runLibrary calls cuBLAS, which is column-major: the row-major C = A·B is the column-major
// Cᵀ = Bᵀ·Aᵀ, the operands and the sizes swapped, "no transpose" kept (gpu.RowMajorGemm).
func (c *gemmCase) runLibrary(v *lab.Variant) error {
	blas, err := c.env.BLAS()
	if err != nil {
		return err
	}
	g := gpu.RowMajorGemm(c.sh.M, c.sh.N, c.sh.K, c.a, c.b, c.dC.DevicePtr(), c.prec.DataType(), gpu.F32)
	g.Alpha, g.Beta = c.prod.Alpha, c.prod.Beta
	switch {
	case v.Library == LibSgemm && c.prec == lab.FP32:
		return blas.Sgemm(c.env.Stream, g)
	case v.Library == LibGemmEx:
		return blas.GemmEx(c.env.Stream, g)
	case v.Library == LibLt && c.prec == lab.BF16:
		// A bf16 suite with this variant has a bf16 C (suiteNeeds).
		g.C, g.OutType = c.dC16.DevicePtr(), gpu.BF16
		return lab.LtMatmul(blas, v, c.env.Stream, g)
	}
	return fmt.Errorf("variant %s: library %q does not take %s inputs (lab 02 knows %s for fp32, %s and %s for bf16)",
		v.Name, v.Library, c.prec, LibSgemm, LibGemmEx, LibLt)
}

// Check compares the output of the last Run with the CPU's float64 product (matref.CheckProduct:
// every element up to M·N·K = 2^30, Freivalds' check and sampled elements above).
func (c *gemmCase) Check(v *lab.Variant, o *lab.Outputs) (check.Report, error) {
	tol := o.Tolerance()
	read := func() ([]float32, error) { return o.Float32(c.dC) }
	if WritesBF16(v) { // Run refused it where the suite has no bf16 C
		read, tol = func() ([]float32, error) { return o.BF16(c.dC16) }, tol+BF16OutputRounding
	}
	out, err := read()
	if err != nil {
		return check.Report{}, err
	}
	if LayoutOf(v.Params).BiasReLU {
		return c.checkBiasReLU(out, tol), nil
	}
	return matref.CheckProduct(&c.prod, out, c.seed, tol), nil
}

// EpilogueSamples is how many elements, computed exactly, check a bias + ReLU product above
// matref.FullCheckLimit: the ReLU is not linear, so Freivalds' check does not apply to its output.
const EpilogueSamples = 4096

// BiasReLU applies the epilogue in place to float64 references of elements of C (M×N): ref[s] =
// max(0, ref[s] + bias[j]), j the column of element at[s] (of s when at is nil). The error scale
// grows by |bias[j]| and a clamped element keeps its scale, so a kernel that clamps a value that
// should be slightly positive (or the reverse) within rounding still passes.
func BiasReLU(ref, scale []float64, bias []float32, at []int, n int) {
	for s := range ref {
		i := s
		if at != nil {
			i = at[s]
		}
		b := float64(bias[i%n])
		ref[s] = math.Max(0, ref[s]+b)
		scale[s] += math.Abs(b)
	}
}

// checkBiasReLU compares C with max(0, alpha·A·B + beta·C0 + bias): every element up to
// matref.FullCheckLimit, else every element for NaN and EpilogueSamples exactly computed ones.
func (c *gemmCase) checkBiasReLU(out []float32, tol float64) check.Report {
	m, n := c.sh.M, c.sh.N
	if int64(m)*int64(n)*int64(c.sh.K) <= matref.FullCheckLimit {
		ref, scale := c.prod.Reference()
		BiasReLU(ref, scale, c.bias, nil, n)
		r := matref.CheckFull(out, ref, scale, c.prod.Terms()+1, tol) // and the bias
		r.Method += ", after bias and ReLU"
		return r
	}
	samples := matref.SampleEntries(m, n, EpilogueSamples, c.seed)
	at, ref, scale := make([]int, len(samples)), make([]float64, len(samples)), make([]float64, len(samples))
	matref.ParallelFor(len(samples), func(lo, hi int) {
		for s := lo; s < hi; s++ {
			i, j := samples[s][0], samples[s][1]
			at[s] = i*n + j
			ref[s], scale[s] = c.prod.Entry(i, j)
		}
	})
	BiasReLU(ref, scale, c.bias, at, n)
	r := matref.CheckAt(out, at, ref, scale, c.prod.Terms()+1, tol)
	r.Method = fmt.Sprintf("%d sampled elements against float64, after bias and ReLU; every element for NaN", len(samples))
	if nan := matref.NonFinite(out); nan > 0 {
		r.OK, r.Unwritten, r.Note = false, nan, fmt.Sprintf("%d of %d outputs are NaN or Inf (never written, or computed from a NaN poison)", nan, len(out))
	}
	r.Checked = len(out)
	return r
}

// Work is the work of an fp32 C (WorkOf).
func (c *gemmCase) Work() lab.Work { return WorkOf(c.prec, c.sh, 4) }

// WorkFor is the work of variant v: a variant that writes a bf16 C moves half the bytes of C.
func (c *gemmCase) WorkFor(v *lab.Variant) lab.Work {
	if WritesBF16(v) {
		return WorkOf(c.prec, c.sh, 2)
	}
	return c.Work()
}

// WorkOf is the work of one product whose C elements are cBytes wide (lab.MNK.Work).
func WorkOf(prec lab.Precision, sh Shape, cBytes int) lab.Work {
	return sh.Work(prec.Bytes(), cBytes, sh.Beta != 0)
}
