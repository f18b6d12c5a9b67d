// Package gemm is lab 02, "GEMM from naive to cuBLAS-class": C = alpha·A·B + beta·C with
// row-major A (M×K), B (K×N) and C (M×N), in fp32 on the CUDA cores and with bf16 inputs and fp32
// accumulation on the tensor cores, every variant checked and timed against cuBLAS in the same run.
//
// Like every lab it supplies only what differs (lab.Driver): the problem on the device, one call
// per variant, the check and the work counts; the engine builds, checks, times and records.
//
// Conventions of the lab:
//   - Suites whose name starts with "bf16" have bf16 inputs (A, B); the others are all fp32. In
//     bf16 suites C is fp32, except for the variants that write a bf16 C (cuBLASLt, and kernels
//     with cbf16: 1): they get a bf16 copy of the same C, and the check allows for the rounding
//     of the output to bf16. The initial C of a bf16 suite is rounded to bf16 for every variant,
//     so that both kinds start from the same values.
//   - alpha = 1.25 and beta = -0.5, with a random initial C, unless the problem sets beta0: 1
//     (then beta = 0 and C is poisoned with NaN: a kernel that reads C when beta is 0 fails).
//     cuBLAS gets the same alpha and beta. With beta ≠ 0, C is an input: Poison restores the
//     pristine random C0 before the checked run (a stale or unwritten element then holds a value
//     that no correct kernel leaves there), and the timed runs accumulate into C, which stays
//     bounded since |beta| < 1 and costs every variant, the baseline included, the same read of C.
//   - Problems up to M·N·K = 2^30 are checked element by element against a float64 CPU product;
//     larger ones with Freivalds' check (float64, on the CPU) and 64 exactly computed samples.
//   - Variations of the interface, set by a variant's params (see Layout): A stored
//     column-major, B stored transposed (N×K, a linear layer's weight), and a bias + ReLU
//     epilogue. A case holds what the variants of its suite need (copies of A or B in the other
//     layout, a bias vector), so every variant of a suite runs on one case and is checked against
//     the same float64 product.
package gemm

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/matref"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
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

// suiteWritesBF16 says whether any variant of s writes a bf16 C (the case then allocates one).
func suiteWritesBF16(s *lab.Suite) bool {
	for _, v := range s.Variants {
		if WritesBF16(v) {
			return true
		}
	}
	return false
}

// The scalars of every problem (both are exact in binary, so the reference has no rounding in them).
const (
	Alpha = 1.25
	Beta  = -0.5
)

// FullCheckLimit is the largest M·N·K checked against a complete float64 CPU product; larger
// problems use Freivalds' check plus sampled elements.
const FullCheckLimit = 1 << 30

// Freivalds' check: random vectors and exactly computed elements.
const (
	FreivaldsVectors = 2
	SampledElements  = 64
)

// nanBits is the float32 NaN that outputs are poisoned with.
const nanBits = 0x7FC00000

// Lab is the driver of lab 02.
type Lab struct{}

func init() { lab.RegisterDriver(LabDir, Lab{}) }

var _ lab.Driver = Lab{}

// Precision of a suite's inputs.
type Precision int

const (
	FP32 Precision = iota // fp32 A, B, C
	BF16                  // bf16 A, B; fp32 C and accumulation
)

func (p Precision) String() string {
	if p == BF16 {
		return "bf16"
	}
	return "fp32"
}

// PrecisionOf says what a suite's inputs are: suites named bf16... are bf16, the others fp32.
func PrecisionOf(s *lab.Suite) Precision {
	if strings.HasPrefix(s.Name, "bf16") {
		return BF16
	}
	return FP32
}

// Shape is one problem: the sizes and whether beta is 0.
type Shape struct {
	M, N, K int
	Beta0   bool
}

// ShapeOf reads a problem's m, n, k (n and k default to m) and beta0.
func ShapeOf(p lab.Problem) (Shape, error) {
	m := p.Int("m", 0)
	s := Shape{M: int(m), N: int(p.Int("n", m)), K: int(p.Int("k", m)), Beta0: p.Int("beta0", 0) != 0}
	if s.M < 1 || s.N < 1 || s.K < 1 {
		return s, fmt.Errorf("problem %q: m, n and k must be at least 1 (got %d×%d×%d)", p.Name, s.M, s.N, s.K)
	}
	// The kernels index with 32-bit ints.
	for _, e := range [][2]int{{s.M, s.K}, {s.K, s.N}, {s.M, s.N}} {
		if int64(e[0])*int64(e[1]) >= 1<<31 {
			return s, fmt.Errorf("problem %q: a %d×%d matrix has 2^31 elements or more, beyond the kernels' 32-bit indices", p.Name, e[0], e[1])
		}
	}
	return s, nil
}

// CheckProblem refuses a custom problem the kernels cannot take, before anything runs.
func (Lab) CheckProblem(s *lab.Suite, p lab.Problem) error {
	_, err := ShapeOf(p)
	return err
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

// suiteLayouts is what the variants of a suite need beyond the default: a case prepares a
// column-major copy of A, a transposed copy of B or a bias only when one of them asks for it.
func suiteLayouts(s *lab.Suite) Layout {
	var need Layout
	for _, v := range s.Variants {
		l := LayoutOf(v.Params)
		need.AColMajor = need.AColMajor || l.AColMajor
		need.BTransposed = need.BTransposed || l.BTransposed
		need.BiasReLU = need.BiasReLU || l.BiasReLU
	}
	return need
}

// Prepare allocates the problem p of suite s and fills it with fresh random inputs.
func (Lab) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	sh, err := ShapeOf(p)
	if err != nil {
		return nil, err
	}
	prec := PrecisionOf(s)
	bf16Out := prec == BF16 && suiteWritesBF16(s)
	c, err := prepare(env, prec, sh, bf16Out, suiteLayouts(s))
	if err != nil {
		return nil, fmt.Errorf("%s, problem %q: %w", s.Name, p.Name, err)
	}
	return c, nil
}

// gemmCase is one prepared problem on the device.
type gemmCase struct {
	env  *lab.Env
	prec Precision
	sh   Shape
	prod Product
	seed uint64 // for the check's random vectors and samples

	dA32, dB32  *gpu.Buffer[float32] // fp32 inputs
	dA16, dB16  *gpu.Buffer[uint16]  // bf16 inputs (bit patterns)
	dC, dC0     *gpu.Buffer[float32] // the output, and the pristine initial C (beta ≠ 0)
	dC16, dC016 *gpu.Buffer[uint16]  // the same two in bf16, for variants that write a bf16 C

	has   Layout               // what was prepared beyond the default
	dAT32 *gpu.Buffer[float32] // A stored column-major (fp32 suites)
	dAT16 *gpu.Buffer[uint16]  // A stored column-major (bf16 suites)
	dBT32 *gpu.Buffer[float32] // B stored transposed, N×K (fp32 suites)
	dBT16 *gpu.Buffer[uint16]  // B stored transposed, N×K (bf16 suites)
	bias  []float32            // the bias of the bias + ReLU epilogue (N values)
	dBias *gpu.Buffer[float32]

	maps map[string][3]gpu.RawArg // TMA tensor maps by variant: A, B and (tmac) C
}

func prepare(env *lab.Env, prec Precision, sh Shape, bf16Out bool, need Layout) (*gemmCase, error) {
	m, n, k := sh.M, sh.N, sh.K
	elem := int64(4)
	if prec == BF16 {
		elem = 2
	}
	cMats := int64(2)
	if sh.Beta0 {
		cMats = 1
	}
	aMats := int64(1)
	if need.AColMajor {
		aMats = 2
	}
	bMats := int64(1)
	if need.BTransposed {
		bMats = 2
	}
	bytes := elem*(aMats*int64(m)*int64(k)+bMats*int64(k)*int64(n)) + 4*cMats*int64(m)*int64(n)
	if bf16Out {
		bytes += 2 * cMats * int64(m) * int64(n)
	}
	if free, total, err := env.Device.MemInfo(); err == nil && total > 0 && bytes > free {
		return nil, fmt.Errorf("needs %s of device memory, %s of %s is free (use a smaller problem)",
			gpu.HumanBytes(bytes), gpu.HumanBytes(free), gpu.HumanBytes(total))
	}

	c := &gemmCase{env: env, prec: prec, sh: sh, has: need, maps: map[string][3]gpu.RawArg{}}
	c.prod = Product{M: m, N: n, K: k, Alpha: Alpha, Beta: Beta}
	if sh.Beta0 {
		c.prod.Beta = 0
	}
	c.seed = env.RNG.Uint64()
	c.prod.A = make([]float32, m*k)
	c.prod.B = make([]float32, k*n)
	fillUniform(c.prod.A, env.RNG.Uint64())
	fillUniform(c.prod.B, env.RNG.Uint64())
	if !sh.Beta0 {
		c.prod.C0 = make([]float32, m*n)
		fillUniform(c.prod.C0, env.RNG.Uint64())
		if prec == BF16 {
			// Representable in bf16, so that a bf16 C starts from exactly the same values.
			for i, v := range roundToBF16(c.prod.C0) {
				c.prod.C0[i] = matref.Float32FromBF16(v)
			}
		}
	}

	ok := false
	defer func() {
		if !ok {
			c.Release()
		}
	}()
	var err error
	if prec == BF16 {
		if c.dA16, err = gpu.Upload(env.Device, roundToBF16(c.prod.A)); err != nil {
			return nil, fmt.Errorf("uploading A: %w", err)
		}
		if c.dB16, err = gpu.Upload(env.Device, roundToBF16(c.prod.B)); err != nil {
			return nil, fmt.Errorf("uploading B: %w", err)
		}
	} else {
		if c.dA32, err = gpu.Upload(env.Device, c.prod.A); err != nil {
			return nil, fmt.Errorf("uploading A: %w", err)
		}
		if c.dB32, err = gpu.Upload(env.Device, c.prod.B); err != nil {
			return nil, fmt.Errorf("uploading B: %w", err)
		}
	}
	if c.dC, err = gpu.Alloc[float32](env.Device, m*n); err != nil {
		return nil, fmt.Errorf("allocating C: %w", err)
	}
	if !sh.Beta0 {
		if c.dC0, err = gpu.Upload(env.Device, c.prod.C0); err != nil {
			return nil, fmt.Errorf("uploading C: %w", err)
		}
	}
	if bf16Out {
		if c.dC16, err = gpu.Alloc[uint16](env.Device, m*n); err != nil {
			return nil, fmt.Errorf("allocating the bf16 C: %w", err)
		}
		if !sh.Beta0 {
			if c.dC016, err = gpu.Upload(env.Device, roundToBF16(c.prod.C0)); err != nil {
				return nil, fmt.Errorf("uploading the bf16 C: %w", err)
			}
		}
	}
	if need.AColMajor {
		// c.prod.A already holds the bf16-rounded values in a bf16 suite: rounding again is exact.
		at := transpose(c.prod.A, m, k)
		if prec == BF16 {
			c.dAT16, err = gpu.Upload(env.Device, roundToBF16(at))
		} else {
			c.dAT32, err = gpu.Upload(env.Device, at)
		}
		if err != nil {
			return nil, fmt.Errorf("uploading A (column-major): %w", err)
		}
	}
	if need.BTransposed {
		// The same B (bf16-rounded in a bf16 suite), stored N×K: the kernel's product is still
		// A·B, so it is checked against the same float64 reference.
		bt := transpose(c.prod.B, k, n)
		if prec == BF16 {
			c.dBT16, err = gpu.Upload(env.Device, roundToBF16(bt))
		} else {
			c.dBT32, err = gpu.Upload(env.Device, bt)
		}
		if err != nil {
			return nil, fmt.Errorf("uploading B (transposed): %w", err)
		}
	}
	if need.BiasReLU {
		// Drawn from the case's seed, not from env.RNG, so that adding the epilogue to a suite
		// leaves the inputs of its other variants as they were.
		c.bias = make([]float32, n)
		fillUniform(c.bias, c.seed^0x62696173) // "bias"
		if c.dBias, err = gpu.Upload(env.Device, c.bias); err != nil {
			return nil, fmt.Errorf("uploading the bias: %w", err)
		}
	}
	ok = true
	return c, nil
}

// transpose returns the rows×cols row-major matrix x stored column-major (cols×rows row-major).
func transpose(x []float32, rows, cols int) []float32 {
	t := make([]float32, len(x))
	matref.ParallelFor(cols, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			for i := 0; i < rows; i++ {
				t[j*rows+i] = x[i*cols+j]
			}
		}
	})
	return t
}

// Poison makes sure the checked run starts from a known C: NaN when beta is 0, the pristine C0
// otherwise.
func (c *gemmCase) Poison() error {
	if c.sh.Beta0 {
		if err := c.dC.Fill32(nanBits, c.env.Stream); err != nil {
			return err
		}
		if c.dC16 != nil {
			return c.dC16.FillBytes(0xFF, c.env.Stream) // 0xFFFF: a bf16 NaN
		}
		return nil
	}
	if err := c.dC.CopyFrom(c.dC0, c.env.Stream); err != nil {
		return err
	}
	if c.dC16 != nil {
		return c.dC16.CopyFrom(c.dC016, c.env.Stream)
	}
	return nil
}

// outBF16 is the bf16 C for variant v, or an error when the suite has none.
func (c *gemmCase) outBF16(v *lab.Variant) (*gpu.Buffer[uint16], error) {
	if c.dC16 == nil {
		return nil, fmt.Errorf("variant %s writes a bf16 C, which suite %s (%s inputs) does not have: bf16 outputs need a bf16 suite",
			v.Name, v.Suite.Name, c.prec)
	}
	return c.dC16, nil
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
	ls, err := shapeFor(v.Name, v.Params, c.sh.M, c.sh.N, c.sh.K, info.SMs, info.MaxThreadsPerBlock)
	if err != nil {
		return err
	}
	if ls.Shared > staticSharedLimit {
		if err := optIn(k, ls.Shared); err != nil {
			return fmt.Errorf("variant %s needs %s of shared memory: %w", v.Name, gpu.HumanBytes(int64(ls.Shared)), err)
		}
	}
	cfg := gpu.LaunchConfig{Grid: ls.Grid, Block: ls.Block, SharedBytes: ls.Shared, Stream: c.env.Stream}
	m, n, kk := int32(c.sh.M), int32(c.sh.N), int32(c.sh.K)
	alpha, beta := c.prod.Alpha, c.prod.Beta
	if lay := LayoutOf(v.Params); lay != (Layout{}) {
		if ls.CBF16 {
			return fmt.Errorf("variant %s: a bf16 C and %s/%s/%s do not go together (params in lab.yaml)",
				v.Name, ParamAColMajor, ParamBTransposed, ParamBiasReLU)
		}
		return c.runLayout(v, k, cfg, lay, ls.TMA)
	}
	var out any = c.dC
	if ls.CBF16 {
		c16, err := c.outBF16(v)
		if err != nil {
			return err
		}
		out = c16
	}
	if ls.TMA {
		if c.prec != BF16 {
			return fmt.Errorf("variant %s: TMA kernels take bf16 inputs; suite %s is %s", v.Name, v.Suite.Name, c.prec)
		}
		maps, err := c.tensorMaps(v.Name, ls)
		if err != nil {
			return err
		}
		if ls.TMAC {
			return gpu.Launch(k, cfg, m, n, kk, alpha, beta, out, maps[0], maps[1], maps[2])
		}
		return gpu.Launch(k, cfg, m, n, kk, alpha, beta, out, maps[0], maps[1])
	}
	if c.prec == BF16 {
		return gpu.Launch(k, cfg, m, n, kk, alpha, c.dA16, c.dB16, beta, out)
	}
	return gpu.Launch(k, cfg, m, n, kk, alpha, c.dA32, c.dB32, beta, c.dC)
}

// runLayout launches a kernel with a column-major A, a transposed B or the bias + ReLU epilogue:
// (M, N, K, alpha, A, B, beta, C[, bias]), A and B in the layouts the variant asks for.
func (c *gemmCase) runLayout(v *lab.Variant, k gpu.Kernel, cfg gpu.LaunchConfig, lay Layout, tma bool) error {
	if tma {
		return fmt.Errorf("variant %s: %s, %s and %s are for kernels that take pointers, not TMA tensor maps (params in lab.yaml)",
			v.Name, ParamAColMajor, ParamBTransposed, ParamBiasReLU)
	}
	if (lay.AColMajor && !c.has.AColMajor) || (lay.BTransposed && !c.has.BTransposed) || (lay.BiasReLU && !c.has.BiasReLU) {
		return fmt.Errorf("variant %s: the case of suite %s was prepared without its layout (internal error: Prepare reads the suite's variants)",
			v.Name, v.Suite.Name)
	}
	args := []any{int32(c.sh.M), int32(c.sh.N), int32(c.sh.K), c.prod.Alpha}
	if c.prec == BF16 {
		a, b := c.dA16, c.dB16
		if lay.AColMajor {
			a = c.dAT16
		}
		if lay.BTransposed {
			b = c.dBT16
		}
		args = append(args, a, b)
	} else {
		a, b := c.dA32, c.dB32
		if lay.AColMajor {
			a = c.dAT32
		}
		if lay.BTransposed {
			b = c.dBT32
		}
		args = append(args, a, b)
	}
	args = append(args, c.prod.Beta, c.dC)
	if lay.BiasReLU {
		args = append(args, c.dBias)
	}
	return gpu.Launch(k, cfg, args...)
}

// The opt-in to more than 48 KiB of shared memory is a property of the kernel: set it once per
// kernel and size, not in every timed run.
var (
	optMu   sync.Mutex
	optDone = map[gpu.Kernel]int{}
)

func optIn(k gpu.Kernel, bytes int) error {
	optMu.Lock()
	defer optMu.Unlock()
	if optDone[k] >= bytes {
		return nil
	}
	if err := k.SetMaxDynamicShared(bytes); err != nil {
		return err
	}
	optDone[k] = bytes
	return nil
}

// TensorMapDescs are the TMA descriptions of A and B that the wgmma kernels expect (see
// kernels/12_wgmma_tma.cu): bf16, 128-byte swizzle, A boxes of bk × bm (K innermost), B boxes of
// 64 × bk (N innermost, 64 columns = 128 bytes, the swizzle span).
func TensorMapDescs(a, b gpu.Ptr, m, n, k, bm, bk int) (gpu.TensorMapDesc, gpu.TensorMapDesc) {
	da := gpu.TensorMapDesc{DataType: gpu.BF16, Global: a, Dims: []uint64{uint64(k), uint64(m)},
		Strides: []uint64{uint64(k) * 2}, Box: []uint32{uint32(bk), uint32(bm)}, Swizzle: 128, L2Promotion: 256}
	db := gpu.TensorMapDesc{DataType: gpu.BF16, Global: b, Dims: []uint64{uint64(n), uint64(k)},
		Strides: []uint64{uint64(n) * 2}, Box: []uint32{64, uint32(bk)}, Swizzle: 128, L2Promotion: 256}
	return da, db
}

// CTensorMapDesc is the TMA description of a bf16 C (M×N, row-major) that kernels with tmac: 1
// store through: boxes of box[0] rows × box[1] columns, 128-byte swizzle (the layout the kernel
// writes its staging buffer in, which spreads a warp's rows over all 32 banks).
func CTensorMapDesc(c gpu.Ptr, m, n int, box [2]int) gpu.TensorMapDesc {
	return gpu.TensorMapDesc{DataType: gpu.BF16, Global: c, Dims: []uint64{uint64(n), uint64(m)},
		Strides: []uint64{uint64(n) * 2}, Box: []uint32{uint32(box[1]), uint32(box[0])}, Swizzle: 128, L2Promotion: 256}
}

func (c *gemmCase) tensorMaps(variant string, ls launchShape) ([3]gpu.RawArg, error) {
	if m, ok := c.maps[variant]; ok {
		return m, nil
	}
	var maps [3]gpu.RawArg
	da, db := TensorMapDescs(c.dA16.DevicePtr(), c.dB16.DevicePtr(), c.sh.M, c.sh.N, c.sh.K, ls.BM, ls.BK)
	var err error
	if maps[0], err = gpu.EncodeTensorMap(c.env.Device, da); err != nil {
		return maps, fmt.Errorf("tensor map of A: %w", err)
	}
	if maps[1], err = gpu.EncodeTensorMap(c.env.Device, db); err != nil {
		return maps, fmt.Errorf("tensor map of B: %w", err)
	}
	if ls.TMAC {
		if c.dC16 == nil {
			return maps, fmt.Errorf("variant %s: a tensor map of C needs the suite's bf16 C", variant)
		}
		if maps[2], err = gpu.EncodeTensorMap(c.env.Device, CTensorMapDesc(c.dC16.DevicePtr(), c.sh.M, c.sh.N, ls.CBox)); err != nil {
			return maps, fmt.Errorf("tensor map of C: %w", err)
		}
	}
	c.maps[variant] = maps
	return maps, nil
}

// runLibrary calls cuBLAS. cuBLAS is column-major: the row-major C = A·B is the column-major
// Cᵀ = Bᵀ·Aᵀ, and a row-major K×N matrix B read column-major with leading dimension N is exactly
// Bᵀ. So: swap the operands and the sizes (m ↔ n), keep "no transpose".
func (c *gemmCase) runLibrary(v *lab.Variant) error {
	blas, err := c.env.BLAS()
	if err != nil {
		return err
	}
	g := gpu.GemmDesc{M: c.sh.N, N: c.sh.M, K: c.sh.K, Alpha: c.prod.Alpha, Beta: c.prod.Beta,
		LDA: c.sh.N, LDB: c.sh.K, C: c.dC.DevicePtr(), LDC: c.sh.N, OutType: gpu.F32}
	switch {
	case v.Library == LibSgemm && c.prec == FP32:
		g.A, g.B, g.InType = c.dB32.DevicePtr(), c.dA32.DevicePtr(), gpu.F32
		return blas.Sgemm(c.env.Stream, g)
	case v.Library == LibGemmEx && c.prec == BF16:
		g.A, g.B, g.InType = c.dB16.DevicePtr(), c.dA16.DevicePtr(), gpu.BF16
		return blas.GemmEx(c.env.Stream, g)
	case v.Library == LibGemmEx && c.prec == FP32:
		g.A, g.B, g.InType = c.dB32.DevicePtr(), c.dA32.DevicePtr(), gpu.F32
		return blas.GemmEx(c.env.Stream, g)
	case v.Library == LibLt && c.prec == BF16:
		lt, ok := blas.(gpu.LtBLAS)
		if !ok {
			return fmt.Errorf("variant %s: this device's BLAS has no cuBLASLt matmul", v.Name)
		}
		c16, err := c.outBF16(v)
		if err != nil {
			return err
		}
		g.A, g.B, g.InType, g.C, g.OutType = c.dB16.DevicePtr(), c.dA16.DevicePtr(), gpu.BF16, c16.DevicePtr(), gpu.BF16
		return lt.LtMatmul(c.env.Stream, g)
	}
	return fmt.Errorf("variant %s: library %q does not take %s inputs (lab 02 knows %s for fp32, %s and %s for bf16)",
		v.Name, v.Library, c.prec, LibSgemm, LibGemmEx, LibLt)
}

// Check compares the output of the last Run with the CPU's float64 product.
func (c *gemmCase) Check(v *lab.Variant) (check.Report, error) {
	tol := v.Suite.Tolerance
	var out []float32
	if WritesBF16(v) {
		c16, err := c.outBF16(v)
		if err != nil {
			return check.Report{}, err
		}
		h, err := c16.Download()
		if err != nil {
			return check.Report{}, fmt.Errorf("reading the bf16 C back: %w", err)
		}
		out = make([]float32, len(h))
		for i, x := range h {
			out[i] = matref.Float32FromBF16(x)
		}
		tol += BF16OutputRounding
	} else {
		var err error
		if out, err = c.dC.Download(); err != nil {
			return check.Report{}, fmt.Errorf("reading C back: %w", err)
		}
	}
	if LayoutOf(v.Params).BiasReLU {
		return c.checkBiasReLU(out, tol), nil
	}
	if int64(c.sh.M)*int64(c.sh.N)*int64(c.sh.K) <= FullCheckLimit {
		ref, scale := c.prod.Reference()
		return matref.CompareFull(out, ref, scale, tol), nil
	}
	samples := matref.SampleEntries(c.sh.M, c.sh.N, SampledElements, c.seed)
	return matref.Freivalds(&c.prod, out, FreivaldsVectors, samples, c.seed, tol), nil
}

// Work is 2·M·N·K flops; the bytes are the least traffic possible: A and B read once, C written
// once (and read once when beta ≠ 0).
func (c *gemmCase) Work() lab.Work { return WorkOf(c.prec, c.sh) }

// WorkOf is the work of one product.
func WorkOf(prec Precision, sh Shape) lab.Work {
	m, n, k := float64(sh.M), float64(sh.N), float64(sh.K)
	elem := 4.0
	if prec == BF16 {
		elem = 2
	}
	cb := 4 * m * n
	if !sh.Beta0 {
		cb *= 2
	}
	return lab.Work{FLOPs: 2 * m * n * k, Bytes: elem*(m*k+k*n) + cb}
}

// ArithmeticIntensity is FLOPs per byte of the minimum traffic.
func ArithmeticIntensity(prec Precision, sh Shape) float64 {
	w := WorkOf(prec, sh)
	if w.Bytes == 0 {
		return math.Inf(1)
	}
	return w.FLOPs / w.Bytes
}

// Release frees the case's device memory.
func (c *gemmCase) Release() error {
	var first error
	for _, f := range []func() error{c.dA32.Free, c.dB32.Free, c.dA16.Free, c.dB16.Free, c.dC.Free, c.dC0.Free,
		c.dC16.Free, c.dC016.Free, c.dAT32.Free, c.dAT16.Free, c.dBT32.Free, c.dBT16.Free, c.dBias.Free} {
		if err := f(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
