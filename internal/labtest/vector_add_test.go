package labtest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The vector-add chapter in testdata/01_vector_add is the smallest lab there is: its lab.yaml,
// this driver and one kernel. TestVectorAddPlugsIn runs it through the engine on the emulator, as
// `labrun 01 --backend emu` would run a chapter of the course; labs/README.md points here as the
// template of a new lab.

func TestMain(m *testing.M) { labtest.Main(m) }

func init() { lab.RegisterDriver("01_vector_add", addDriver{}) }

// addDriver prepares c = a + b on n elements. The engine frees the buffers, poisons c before the
// checked run and hands it to Check.
type addDriver struct{}

type addCase struct {
	env     *lab.Env
	n       int
	a, b, c *gpu.Buffer[float32]
	ref     []float64
}

func (addDriver) Prepare(env *lab.Env, s *lab.Suite, p lab.Problem) (lab.Case, error) {
	n := int(p.Int("n", 0))
	if n < 1 {
		return nil, lab.Skip("problem %s: n=%d, want at least 1 element (n: in lab.yaml)", p.Name, n)
	}
	a, b := make([]float32, n), make([]float32, n)
	c := &addCase{env: env, n: n, ref: make([]float64, n)}
	for i := range a {
		a[i], b[i] = env.RNG.Float32()+0.5, env.RNG.Float32()-1.5 // never zero, never cancelling
		c.ref[i] = float64(a[i]) + float64(b[i])
	}
	var err error
	if c.a, err = lab.Upload(env, "a", a); err != nil {
		return nil, err
	}
	if c.b, err = lab.Upload(env, "b", b); err != nil {
		return nil, err
	}
	c.c, err = lab.Output[float32](env, "c", n, lab.PoisonNaN32)
	return c, err
}

func (c *addCase) Run(v *lab.Variant) error {
	k, err := c.env.Kernel(v)
	if err != nil {
		return err
	}
	threads := int(v.Params["threads"])
	if threads < 1 {
		return lab.Skip("variant %s: params.threads must be at least 1 (lab.yaml)", v.Name)
	}
	cfg := gpu.LaunchConfig{Grid: gpu.D1(lab.CeilDiv(c.n, threads)), Block: gpu.D1(threads), Stream: c.env.Stream}
	return gpu.Launch(k, cfg, c.a, c.b, c.c, int32(c.n))
}

func (c *addCase) Check(v *lab.Variant, out *lab.Outputs) (check.Report, error) {
	return out.Check(c.c, c.ref)
}

// Work: two loads and one store of 4 bytes per element, one FLOP.
func (c *addCase) Work() lab.Work { return lab.Work{Bytes: float64(12 * c.n), FLOPs: float64(c.n)} }

// fixtureCourse is a course folder holding only the vector-add chapter, with the real course's
// portability header (labs/common) and emulator runtime.
func fixtureCourse(t *testing.T) string {
	t.Helper()
	real, err := lab.FindRoot(".")
	require.NoError(t, err)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "labs"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(real, "labs", "common"), filepath.Join(root, "labs", "common")))
	require.NoError(t, os.CopyFS(filepath.Join(root, "labs", "01_vector_add"), os.DirFS(filepath.Join("testdata", "01_vector_add"))))
	t.Setenv("LABRUN_EMU_DIR", filepath.Join(real, "emu"))
	return root
}

func TestVectorAddPlugsIn(t *testing.T) {
	root := fixtureCourse(t)
	out := labtest.RunOnEmulatorAt(t, root, "01_vector_add", "emu", 1)
	labtest.CheckAllOK(t, out, "emu")
	require.Len(t, out.Results.Entries, 3, "one entry per emulator problem")
	for _, e := range out.Results.Entries {
		assert.Equal(t, results.StatusOK, e.Status, "%s: %s", e.Problem, e.Error)
	}
}
