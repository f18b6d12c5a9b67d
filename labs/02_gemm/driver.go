// Package gemm is lab 02, "GEMM from naive to cuBLAS-class": C = alpha·A·B + beta·C with
// row-major A (M×K), B (K×N) and C (M×N), in fp32 on the CUDA cores and with bf16 inputs and fp32
// accumulation on the tensor cores, every variant checked and timed against cuBLAS in the same run.
//
// Conventions of the lab:
//   - Suites named "bf16…" have bf16 A and B and an fp32 C. Variants that write a bf16 C
//     (cuBLASLt, cbf16: 1) get a bf16 copy of the same initial C (rounded to bf16 for every
//     variant, so both kinds start alike), and the check allows for the output's rounding.
//   - alpha = 1.25 and beta = -0.5 with a random initial C, which the engine restores before the
//     checked run (a stale element then holds a value no correct kernel leaves); the timed runs
//     accumulate into C, bounded since |beta| < 1. With beta0: 1, beta = 0 and C is poisoned with
//     NaN, so a kernel that reads C when beta is 0 fails. cuBLAS gets the same alpha and beta.
//   - Up to M·N·K = 2^30 every element is checked against a float64 CPU product; above, Freivalds'
//     check and 64 exact samples.
//   - A variant's params may take A column-major, B transposed (N×K, a linear layer's weight) or
//     add a bias + ReLU epilogue (Layout). A case holds the copies its suite's variants need, so
//     all of them are checked against one float64 product.
package gemm

import (
	"fmt"
	"math"

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

// PeerProblem describes a problem for the lab's peer scripts (peers/*.py): the sizes, the
// kernels' alpha and beta, the precision of A and B, and the lab's own work, so the rates compare
// exactly. The peers write C in the precision of A and B (torch's bf16 matmul returns bf16).
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
	return Layout{AColMajor: params[ParamAColMajor] != 0, BTransposed: params[ParamBTransposed] != 0,
		BiasReLU: params[ParamBiasReLU] != 0}
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
	// With beta ≠ 0, C is an input too, restored from a pristine C0 before every checked run;
	// else it is poisoned with NaN.
	c0, poison, poison16 := sh.Beta != 0, lab.PoisonNaN32, lab.PoisonNaN
	var c0bits []uint16
	mk, kn, mn, pb := int64(m)*int64(k), int64(k)*int64(n), int64(m)*int64(n), int64(prec.Bytes())
	// The case's device buffers, in the order they are made, each when the suite needs it.
	bufs := []struct {
		on    bool
		bytes int64
		make  func()
	}{
		// A bf16 suite's A and B are rounded in place: the reference multiplies what the device has.
		{true, pb * mk, func() { c.a = a.UploadAs("A", prec, c.prod.A) }},
		{true, pb * kn, func() { c.b = a.UploadAs("B", prec, c.prod.B) }},
		{c0, 4 * mn, func() { poison = lab.RestoreFrom(lab.PrepUpload(a, "the initial C", c.prod.C0)) }},
		{c0 && bf16Out, 2 * mn, func() { poison16 = lab.RestoreFrom(lab.PrepUpload(a, "the initial bf16 C", c0bits)) }},
		{true, 4 * mn, func() { c.dC = lab.PrepOutput[float32](a, "C", m*n, poison) }},
		{bf16Out, 2 * mn, func() { c.dC16 = lab.PrepOutput[uint16](a, "the bf16 C", m*n, poison16) }},
		{need.AColMajor, pb * mk, func() { c.aT = a.UploadAs("A (column-major)", prec, matref.Transpose(c.prod.A, m, k)) }},
		// The same B stored N×K: the product is still A·B, checked against the same reference.
		{need.BTransposed, pb * kn, func() { c.bT = a.UploadAs("B (transposed)", prec, matref.Transpose(c.prod.B, k, n)) }},
		{need.BiasReLU, 4 * int64(n), func() {
			// From the case's seed, not env.RNG, so that adding the epilogue to a suite leaves
			// the inputs of its other variants as they were.
			c.bias = make([]float32, n)
			matref.FillUniform(c.bias, c.seed^0x62696173) // "bias"
			c.dBias = a.UploadAs("the bias", lab.FP32, c.bias)
		}},
	}
	var bytes int64
	for _, b := range bufs {
		if b.on {
			bytes += b.bytes
		}
	}
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
	for _, b := range bufs {
		if b.on {
			b.make()
		}
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
	m, n, kk := int32(c.sh.M), int32(c.sh.N), int32(c.sh.K)
	alpha, beta := c.prod.Alpha, c.prod.Beta
	// A column-major A, a transposed B and the bias + ReLU epilogue are for kernels that take
	// pointers and write an fp32 C.
	lay := LayoutOf(v.Params)
	switch {
	case lay != (Layout{}) && ls.CBF16:
		return fmt.Errorf("variant %s: a bf16 C and %s/%s/%s do not go together (params in lab.yaml)",
			v.Name, ParamAColMajor, ParamBTransposed, ParamBiasReLU)
	case lay != (Layout{}) && ls.TMA:
		return fmt.Errorf("variant %s: %s, %s and %s are for kernels that take pointers, not TMA tensor maps (params in lab.yaml)",
			v.Name, ParamAColMajor, ParamBTransposed, ParamBiasReLU)
	}
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
		return gpu.Launch(k, cfg, args...)
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
		lt, ok := blas.(gpu.LtBLAS)
		if !ok {
			return fmt.Errorf("variant %s: this device's BLAS has no cuBLASLt matmul", v.Name)
		}
		// A bf16 suite with this variant has a bf16 C (suiteNeeds).
		g.C, g.OutType = c.dC16.DevicePtr(), gpu.BF16
		return lt.LtMatmul(c.env.Stream, g)
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

// BiasReLU applies the fused epilogue in place to float64 references of elements of alpha·A·B +
// beta·C0 (M×N, row-major): ref[s] = max(0, ref[s] + bias[j]), j the column of the element at
// index at[s] (s itself when at is nil: the whole product). The error scale of each element grows
// by |bias[j]|; an element the ReLU clamps keeps its scale, so a kernel that clamps a value that
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
		r := matref.CheckFull(out, ref, scale, tol)
		r.Method += ", after bias and ReLU"
		return r
	}
	samples := matref.SampleEntries(m, n, EpilogueSamples, c.seed)
	at := make([]int, len(samples))
	ref := make([]float64, len(samples))
	scale := make([]float64, len(samples))
	matref.ParallelFor(len(samples), func(lo, hi int) {
		for s := lo; s < hi; s++ {
			i, j := samples[s][0], samples[s][1]
			at[s] = i*n + j
			ref[s], scale[s] = c.prod.Entry(i, j)
		}
	})
	BiasReLU(ref, scale, c.bias, at, n)
	r := matref.CheckAt(out, at, ref, scale, tol)
	r.Method = fmt.Sprintf("%d sampled elements against float64, after bias and ReLU; every element for NaN", len(samples))
	if nan := matref.NonFinite(out); nan > 0 {
		r.OK = false
		r.Unwritten = nan
		r.Note = fmt.Sprintf("%d of %d outputs are NaN or Inf (never written, or computed from a NaN poison)", nan, len(out))
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
	return sh.MNK.Work(prec.Bytes(), cBytes, sh.Beta != 0)
}
