// Package scalelab is the engine's test lab: one suite, scale (y = 2x), on the fake GPU backend,
// run by the tests of the engine (internal/lab) and of the grader's job hook (internal/grade).
// Its kernels are the fake backend's scale kernels (fake.RegisterScaleKernels); its library
// variant scales on the host side of the fake device. Importing it registers the kernels and
// the driver under Dir. Only test files import it.
package scalelab

import (
	"testing"
	"time"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/fake"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
)

// Dir is the test lab's folder name, under which Driver is registered.
const Dir = "99_test"

func init() {
	lab.RegisterDriver(Dir, Driver{})
	fake.RegisterScaleKernels()
}

// Course writes a course root whose lab Dir has the given lab.yaml and a k.cu (the fake
// toolchain builds any source), and returns the root.
func Course(t testing.TB, manifest string) string {
	t.Helper()
	return coursedir.Write(t, Dir, map[string]string{"lab.yaml": manifest, "k.cu": "// fake kernels\n"})
}

// Driver computes y = 2x on a problem's n elements; it refuses n over 2^20 (a Skip), so a test
// lab can show a skipped problem.
type Driver struct{}

type scaleCase struct {
	env  *lab.Env
	n    int
	x, y *gpu.Buffer[float32]
	ref  []float64
}

func (Driver) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	n := int(p.Int("n", 1))
	if n > 1<<20 {
		return nil, lab.Skip("n=%d is too large for this test device", n)
	}
	host := make([]float32, n)
	ref := make([]float64, n)
	for i := range host {
		host[i] = env.RNG.Float32() + 0.5
		ref[i] = 2 * float64(host[i])
	}
	x, err := lab.Upload(env, "x", host)
	if err != nil {
		return nil, err
	}
	y, err := lab.Output[float32](env, "y", n, lab.PoisonNaN32)
	if err != nil {
		return nil, err
	}
	return &scaleCase{env: env, n: n, x: x, y: y, ref: ref}, nil
}

// PeerProblem describes a problem to a peer variant: its n, and the bytes y = 2x moves.
func (Driver) PeerProblem(s *lab.Suite, p lab.Problem) (map[string]any, lab.Work, error) {
	return map[string]any{"n": p.Int("n", 0)}, lab.Work{Bytes: float64(8 * p.Int("n", 0))}, nil
}

func (c *scaleCase) Run(v *lab.Variant) error {
	if !v.IsKernel() {
		// the "library": scale on the host side of the fake device
		xs, ys := fake.Float32s(c.x.DevicePtr(), c.n), fake.Float32s(c.y.DevicePtr(), c.n)
		for i := range xs {
			ys[i] = 2 * xs[i]
		}
		time.Sleep(20 * time.Microsecond)
		return nil
	}
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	return gpu.Launch(k, gpu.LaunchConfig{Grid: gpu.D1(1), Block: gpu.D1(1), Stream: c.env.Stream}, c.x, c.y, int32(c.n))
}

func (c *scaleCase) Check(v *lab.Variant, o *lab.Outputs) (check.Report, error) {
	out, err := o.Float32(c.y)
	if err != nil {
		return check.Report{}, err
	}
	return check.Against(out, c.ref, 1e-6), nil
}

func (c *scaleCase) Work() lab.Work { return lab.Work{Bytes: float64(8 * c.n)} }

// Record puts the problem's n in the entry's data (the engine's tests check it crosses from the
// worker).
func (c *scaleCase) Record(v *lab.Variant) (map[string]any, error) {
	return map[string]any{"n": c.n}, nil
}
