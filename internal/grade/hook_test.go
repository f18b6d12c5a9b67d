package grade

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/fake"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest/scalelab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The grader's job hook on the engine's test lab (internal/labtest/scalelab: y = 2x on the fake
// backend, registered as 99_test): every cheat a kernel can try, and the reason the worker gives.
// (The cheat fixtures of cheats_test.go do the same with real kernels on the emulator.)

// gradeManifest is the engine's test lab with a grading section. (Read by the tests, not at init:
// the test binary also runs as the engine's worker, elsewhere.)
func gradeManifest(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("..", "lab", "testdata", "grade_lab.yaml"))
	require.NoError(t, err)
	return string(b)
}

var (
	staleMu    sync.Mutex
	staleCache = map[int][]float32{}
)

func init() {
	sig := []string{"const float*", "float*", "int"}
	both := func(args [][]byte) ([]float32, []float32, int) {
		n := int(args[2][0]) | int(args[2][1])<<8
		return fake.Float32s(fake.PtrArg(args[0]), n), fake.Float32s(fake.PtrArg(args[1]), n), n
	}
	fake.RegisterKernel("g_zeros", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		_, ys, _ := both(args)
		for i := range ys {
			ys[i] = 0
		}
		return nil
	})
	fake.RegisterKernel("g_partial", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		xs, ys, _ := both(args)
		for i := 0; i < (len(ys)+1)/2; i++ {
			ys[i] = 2 * xs[i]
		}
		return nil
	})
	fake.RegisterKernel("g_stale", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		xs, ys, n := both(args)
		staleMu.Lock()
		defer staleMu.Unlock()
		if c, ok := staleCache[n]; ok {
			copy(ys, c)
			return nil
		}
		for i := range xs {
			ys[i] = 2 * xs[i]
		}
		staleCache[n] = append([]float32(nil), ys...)
		return nil
	})
	fake.RegisterKernel("g_readpast", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		_, ys, n := both(args)
		xs := fake.Float32s(fake.PtrArg(args[0]), n+1) // one past the end
		for i := range ys {
			ys[i] = 2*xs[i] + 0*xs[i+1]
		}
		return nil
	})
	fake.RegisterKernel("g_oob", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		xs, _, n := both(args)
		ys := fake.Float32s(fake.PtrArg(args[1]), n+1)
		for i := range xs {
			ys[i] = 2 * xs[i]
		}
		ys[n] = 7
		return nil
	})
	fake.RegisterKernel("g_corrupt", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		xs, ys, _ := both(args)
		for i := range xs {
			ys[i] = 2 * xs[i]
		}
		xs[0] = 42
		return nil
	})
	fake.RegisterKernel("g_secret", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		xs, ys, _ := both(args)
		for i := range xs {
			ys[i] = 2 * xs[i]
		}
		if os.Getenv(lab.SecretSeedEnv) != "" {
			ys[0] = 1e9 // the code under test could read the secret
		}
		return nil
	})
}

func gradePlan(variants ...string) []lab.Job {
	var plan []lab.Job
	for _, v := range variants {
		plan = append(plan, lab.Job{Suite: "scale", Variant: v, Problem: "odd", Set: "grade", Mode: lab.GradeCheck})
	}
	return plan
}

func TestGradeModeCatchesEveryCheat(t *testing.T) {
	root := scalelab.Course(t, gradeManifest(t))
	t.Setenv(lab.SecretSeedEnv, "not for the worker")
	variants := []string{"good", "zeros", "partial", "stale", "readpast", "oob", "corrupt", "secret", "crash", "sticky", "good", "hopper"}
	out, err := lab.Run(context.Background(), lab.Options{Root: root, Lab: "99", Backend: "fake", Seed: 3, SeedSet: true, NoSave: true,
		Worker: testWorker, Plan: gradePlan(variants...),
		Grade: &lab.GradeSpec{Rounds: 3, RedZone: 4096, ReadOnly: map[string][]bool{"scale/corrupt": {true, false, false}}}})
	require.NoError(t, err)
	require.Len(t, out.Planned, len(variants))
	want := []struct{ status, reason, text string }{
		{results.StatusOK, "", ""},
		{results.StatusWrong, ReasonWrong, "every output is 0"},
		{results.StatusWrong, ReasonUnwritten, "did not write 18 of 37 outputs"},
		{results.StatusWrong, ReasonStale, "run 2 of 3"},
		{results.StatusWrong, ReasonReadOutside, "computed NaN in 1 of 37 outputs"},
		{results.StatusFailed, ReasonOutOfBounds, "past the end of buffer #2"},
		{results.StatusFailed, ReasonInputCorrupted, "the input passed as kernel argument 0"},
		{results.StatusOK, "", ""}, // the secret never reaches the worker
		{results.StatusCrashed, "", "signal"},
		{results.StatusFailed, ReasonIllegalAddress, "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{results.StatusOK, "", ""}, // the worker was replaced after the sticky error
		{results.StatusSkipped, "", "needs sm_99"},
	}
	for i, w := range want {
		e := out.Planned[i]
		assert.Equal(t, variants[i], e.Variant)
		assert.Equal(t, w.status, e.Status, "%s: %s", variants[i], e.Error)
		if w.reason != "" {
			assert.Equal(t, w.reason, e.Data["reason"], "%s: %s", variants[i], e.Error)
		}
		assert.Contains(t, e.Error, w.text, variants[i])
		if e.Status == results.StatusOK {
			assert.Equal(t, 3.0, e.Data["runs"])
			require.NotNil(t, e.Check)
			assert.True(t, e.Check.OK)
		}
	}
}

func TestGradeModeWithoutReadOnlyInputsAreNotChecked(t *testing.T) {
	// Without the course's signature (ReadOnly), a write through a pointer argument is the
	// kernel's business: the same kernel passes.
	root := scalelab.Course(t, gradeManifest(t))
	out, err := lab.Run(context.Background(), lab.Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Worker: testWorker,
		Plan: gradePlan("corrupt"), Grade: &lab.GradeSpec{Rounds: 1}})
	require.NoError(t, err)
	assert.Equal(t, results.StatusOK, out.Planned[0].Status, out.Planned[0].Error)
}

func TestGradeModeSpeedJobsCheckEveryTimedRun(t *testing.T) {
	root := scalelab.Course(t, gradeManifest(t))
	plan := []lab.Job{
		{Suite: "scale", Variant: "lib", Problem: "small", Set: "gpu", Mode: lab.GradeSpeed, Reps: 4},
		{Suite: "scale", Variant: "good", Problem: "small", Set: "gpu", Mode: lab.GradeSpeed, Reps: 4},
		{Suite: "scale", Variant: "stale", Problem: "small", Set: "gpu", Mode: lab.GradeSpeed, Reps: 4},
	}
	out, err := lab.Run(context.Background(), lab.Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Worker: testWorker,
		Plan: plan, Grade: &lab.GradeSpec{Warmup: 1}})
	require.NoError(t, err)
	for _, e := range out.Planned[:2] {
		require.Equal(t, results.StatusOK, e.Status, e.Error)
		require.NotNil(t, e.Time)
		assert.Equal(t, 4, e.Time.N)
		assert.Equal(t, 5.0, e.Data["runs"])
		assert.Greater(t, e.GBps, 0.0)
	}
	// A cached answer fails on the second run (the first timed one): no time is recorded.
	assert.Equal(t, ReasonStale, out.Planned[2].Data["reason"], out.Planned[2].Error)
	assert.Nil(t, out.Planned[2].Time)
}

func TestGradeModeTotalTimeLimit(t *testing.T) {
	root := scalelab.Course(t, gradeManifest(t))
	started := time.Now()
	out, err := lab.Run(context.Background(), lab.Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Worker: testWorker,
		Plan: gradePlan("good", "hang", "good"), Grade: &lab.GradeSpec{Rounds: 1}, TotalTimeout: 1500 * time.Millisecond})
	require.NoError(t, err)
	assert.Less(t, time.Since(started), 3*time.Second, "the total limit (1.5s) comes before the per-job limit (3s)")
	assert.Equal(t, results.StatusOK, out.Planned[0].Status)
	assert.Equal(t, results.StatusTimeout, out.Planned[1].Status)
	assert.Contains(t, out.Planned[1].Error, "total time limit of 1.5s")
	assert.Equal(t, results.StatusTimeout, out.Planned[2].Status)
	assert.Contains(t, out.Planned[2].Error, "not run: the total time limit")
}

// The parent refuses a passed grading result that lacks what the worker's RunJob always sends.
func TestGenuineResults(t *testing.T) {
	ok := &check.Report{OK: true}
	for _, tc := range []struct {
		name  string
		e     results.Entry
		valid bool
	}{
		{"passed with its check and runs", results.Entry{Status: results.StatusOK, Check: ok, Data: map[string]any{"runs": 3.0}}, true},
		{"passed without a check", results.Entry{Status: results.StatusOK, Data: map[string]any{"runs": 3.0}}, false},
		{"passed with a failed check", results.Entry{Status: results.StatusOK, Check: &check.Report{}, Data: map[string]any{"runs": 3.0}}, false},
		{"passed without runs", results.Entry{Status: results.StatusOK, Check: ok}, false},
		{"failed", results.Entry{Status: results.StatusWrong}, true},
	} {
		why := (&gradeHook{}).Genuine(lab.Job{Mode: lab.GradeCheck}, &tc.e)
		assert.Equal(t, tc.valid, why == "", "%s: %q", tc.name, why)
	}
}
