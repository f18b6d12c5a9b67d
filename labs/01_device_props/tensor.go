package devprops

import (
	"errors"
	"fmt"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// tensorCase is one problem of tensor_bf16: C = A·B with row-major bf16 A (m×k) and B (k×n) and
// a float32 C (m×n), through the vendor BLAS. It measures what the tensor cores deliver on a
// large, well-shaped product: the ceiling lab 02's GEMM kernels are compared with.
//
// A full CPU reference of an 8192³ product would take minutes, so the check scales instead:
// Freivalds' test on every row, plus a few entries recomputed exactly.
type tensorCase struct {
	env       *lab.Env
	blas      gpu.BLAS
	m, n, k   int
	tol       float64
	a, b      *gpu.Buffer[uint16]
	c         *gpu.Buffer[float32]
	freivalds *Freivalds
	samples   []SampleBF16
}

// defaultTensorTol is used when the suite sets no tolerance. The inputs are the same bf16 values
// on both sides and both accumulate in at least float32, so only float32 rounding separates them.
const defaultTensorTol = 1e-5

func prepareTensor(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	m, n, k := int(p.Int("m", 0)), int(p.Int("n", 0)), int(p.Int("k", 0))
	if m < 1 || n < 1 || k < 1 {
		return nil, fmt.Errorf("m, n, k = %d, %d, %d: all three must be at least 1", m, n, k)
	}
	if err := checkFits(env, int64(m*k+k*n)*2+int64(m*n)*4); err != nil {
		return nil, err
	}
	blas, err := env.BLAS()
	if err != nil {
		return nil, fmt.Errorf("this suite needs the vendor BLAS: %w", err)
	}
	c := &tensorCase{env: env, blas: blas, m: m, n: n, k: k, tol: s.Tolerance}
	if c.tol == 0 {
		c.tol = defaultTensorTol
	}
	ha := RandomBF16(env.RNG, m*k)
	hb := RandomBF16(env.RNG, k*n)
	if c.a, err = gpu.Upload(env.Device, ha); err != nil {
		return nil, err
	}
	if c.b, err = gpu.Upload(env.Device, hb); err != nil {
		c.Release()
		return nil, err
	}
	if c.c, err = gpu.Alloc[float32](env.Device, m*n); err != nil {
		c.Release()
		return nil, err
	}
	r := FreivaldsVector(env.RNG, n)
	if c.freivalds, err = NewFreivaldsBF16(ha, hb, m, n, k, r); err != nil {
		c.Release()
		return nil, err
	}
	c.samples = SampleEntriesBF16(ha, hb, n, k, matref.SampleEntries(m, n, 16, env.RNG.Uint64()))
	if err := syncStream(env); err != nil { // the uploads finish before ha and hb can go
		c.Release()
		return nil, err
	}
	return c, nil
}

// GemmRowMajor describes the row-major product C = A·B (A m×k, B k×n, C m×n, all contiguous) in
// the column-major convention of cuBLAS. A row-major matrix is its transpose in column-major
// order, so the call computes Cᵀ = Bᵀ·Aᵀ: B is passed first, and m and n swap places.
func GemmRowMajor(m, n, k int, a, b, c gpu.Ptr, in, out gpu.DataType) gpu.GemmDesc {
	return gpu.GemmDesc{
		M: n, N: m, K: k,
		Alpha: 1, Beta: 0,
		A: b, LDA: n,
		B: a, LDB: k,
		C: c, LDC: n,
		InType: in, OutType: out,
	}
}

func (c *tensorCase) Poison() error { return c.c.Fill32(nanBits, c.env.Stream) }

func (c *tensorCase) Run(v *lab.Variant) error {
	if v.Library != LibCublasGemmEx {
		return fmt.Errorf("variant %s: %s only knows the library call %q", v.Name, SuiteTensor, LibCublasGemmEx)
	}
	d := GemmRowMajor(c.m, c.n, c.k, c.a.DevicePtr(), c.b.DevicePtr(), c.c.DevicePtr(), gpu.BF16, gpu.F32)
	return c.blas.GemmEx(c.env.Stream, d)
}

func (c *tensorCase) Check(v *lab.Variant) (check.Report, error) {
	out, err := c.c.Download()
	if err != nil {
		return check.Report{}, err
	}
	fr := c.freivalds.Check(out, c.tol)
	sm := CheckSamples(c.samples, out, c.n, c.tol)
	return check.All(fr, sm), nil
}

func (c *tensorCase) Work() lab.Work {
	m, n, k := float64(c.m), float64(c.n), float64(c.k)
	return lab.Work{FLOPs: 2 * m * n * k, Bytes: 2*(m*k+k*n) + 4*m*n}
}

func (c *tensorCase) Release() error {
	return errors.Join(c.a.Free(), c.b.Free(), c.c.Free())
}
