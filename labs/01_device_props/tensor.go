package devprops

import (
	"cmp"
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
	a, b      gpu.Ptr // bf16
	c         *gpu.Buffer[float32]
	freivalds *matref.RowFreivalds
	samples   []matref.ExactSample
}

// defaultTensorTol is used when the suite sets no tolerance. The inputs are the same bf16 values
// on both sides and both accumulate in at least float32, so only float32 rounding separates them.
const defaultTensorTol = 1e-5

func prepareTensor(env *lab.Env, _ *lab.Suite, p lab.Problem) (lab.Case, error) {
	m, n, k := int(p.Int("m", 0)), int(p.Int("n", 0)), int(p.Int("k", 0))
	if m < 1 || n < 1 || k < 1 {
		return nil, fmt.Errorf("m, n, k = %d, %d, %d: all three must be at least 1", m, n, k)
	}
	if err := lab.NeedMemory(env, int64(m*k+k*n)*2+int64(m*n)*4); err != nil {
		return nil, err
	}
	blas, err := env.BLAS()
	if err != nil {
		return nil, fmt.Errorf("this suite needs the vendor BLAS: %w", err)
	}
	c := &tensorCase{env: env, blas: blas, m: m, n: n, k: k}
	// A and B are uniform in [-1, 1), rounded to bf16 in place by lab.UploadAs: the host keeps
	// exactly the values the device multiplies.
	a, b := make([]float32, m*k), make([]float32, k*n)
	matref.FillUniform(a, env.RNG.Uint64())
	matref.FillUniform(b, env.RNG.Uint64())
	bufs := lab.NewPrep(env)
	c.a, c.b = bufs.UploadAs("A", lab.BF16, a), bufs.UploadAs("B", lab.BF16, b)
	c.c = lab.PrepOutput[float32](bufs, "C", m*n, lab.PoisonNaN32)
	if bufs.Err != nil {
		return nil, bufs.Err
	}
	if c.freivalds, err = matref.NewRowFreivalds(a, b, m, n, k, matref.RowFreivaldsVector(env.RNG, n)); err != nil {
		return nil, err
	}
	prod := matref.Product{M: m, N: n, K: k, Alpha: 1, A: a, B: b}
	c.samples = matref.ExactSamples(&prod, matref.SampleEntries(m, n, 16, env.RNG.Uint64()))
	return c, nil
}

func (c *tensorCase) Run(v *lab.Variant) error {
	if v.Library != LibCublasGemmEx {
		return fmt.Errorf("variant %s: %s only knows the library call %q", v.Name, SuiteTensor, LibCublasGemmEx)
	}
	d := gpu.RowMajorGemm(c.m, c.n, c.k, c.a, c.b, c.c.DevicePtr(), gpu.BF16, gpu.F32)
	return c.blas.GemmEx(c.env.Stream, d)
}

func (c *tensorCase) Check(_ *lab.Variant, outs *lab.Outputs) (check.Report, error) {
	out, err := outs.Float32(c.c)
	if err != nil {
		return check.Report{}, err
	}
	tol := cmp.Or(outs.Tolerance(), defaultTensorTol)
	return check.All(c.freivalds.Check(out, tol), matref.CheckExactSamples(c.samples, out, c.n, tol)), nil
}

func (c *tensorCase) Work() lab.Work {
	m, n, k := float64(c.m), float64(c.n), float64(c.k)
	return lab.Work{FLOPs: 2 * m * n * k, Bytes: 2*(m*k+k*n) + 4*m*n}
}
