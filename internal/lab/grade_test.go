package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/fake"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Grading mode of the engine on the fake backend: every cheat a kernel can try on y = 2x, and
// the reason the worker gives.

const gradeManifest = `id: "99"
title: {en: Engine test, zh: 引擎测试}
timeout: 3s
suites:
  - name: scale
    title: {en: Scale, zh: 缩放}
    metric: gbps
    tolerance: 1e-6
    variants:
      - {name: lib, library: fake_copy}
      - {name: good, file: k.cu, entry: scale_good}
      - {name: zeros, file: k.cu, entry: g_zeros}
      - {name: partial, file: k.cu, entry: g_partial}
      - {name: stale, file: k.cu, entry: g_stale}
      - {name: readpast, file: k.cu, entry: g_readpast}
      - {name: oob, file: k.cu, entry: g_oob}
      - {name: corrupt, file: k.cu, entry: g_corrupt}
      - {name: secret, file: k.cu, entry: g_secret}
      - {name: hang, file: k.cu, entry: scale_hang}
      - {name: crash, file: k.cu, entry: scale_crash}
      - {name: sticky, file: k.cu, entry: scale_sticky}
      - {name: hopper, file: k.cu, entry: scale_good, needs: [nvidia, sm_99]}
    problems:
      gpu: [{name: small, n: 1000}]
      grade: [{name: one, n: 1}, {name: odd, n: 37}]
grading:
  pass_mark: 0.5
  exercises:
    - variant: good
      reference: lib
      tests:
        - {problems: [one, odd], points: 2}
        - {problem: odd, points: 1, hidden: true}
      speed: {points: 1, problems: [small]}
`

var (
	staleMu    sync.Mutex
	staleCache = map[int][]float32{}
)

func init() {
	sig := []string{"const float*", "float*", "int"}
	both := func(args [][]byte) ([]float32, []float32, int) {
		n := int(args[2][0]) | int(args[2][1])<<8
		return fake.Float32s(ptrArg(args[0]), n), fake.Float32s(ptrArg(args[1]), n), n
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
		xs := fake.Float32s(ptrArg(args[0]), n+1) // one past the end
		for i := range ys {
			ys[i] = 2*xs[i] + 0*xs[i+1]
		}
		return nil
	})
	fake.RegisterKernel("g_oob", sig, func(_ gpu.LaunchConfig, args [][]byte) error {
		xs, _, n := both(args)
		ys := fake.Float32s(ptrArg(args[1]), n+1)
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
		if os.Getenv(SecretSeedEnv) != "" {
			ys[0] = 1e9 // the code under test could read the secret
		}
		return nil
	})
}

func gradePlan(variants ...string) []Job {
	var plan []Job
	for _, v := range variants {
		plan = append(plan, Job{Suite: "scale", Variant: v, Problem: "odd", Set: "grade", Mode: GradeCheck})
	}
	return plan
}

func TestGradeModeCatchesEveryCheat(t *testing.T) {
	root := newCourse(t, gradeManifest)
	t.Setenv(SecretSeedEnv, "not for the worker")
	variants := []string{"good", "zeros", "partial", "stale", "readpast", "oob", "corrupt", "secret", "crash", "sticky", "good", "hopper"}
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Seed: 3, SeedSet: true, NoSave: true,
		Worker: testWorker, Plan: gradePlan(variants...),
		Grade: &GradeSpec{Rounds: 3, RedZone: 4096, ReadOnly: map[string][]bool{"scale/corrupt": {true, false, false}}}})
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
	root := newCourse(t, gradeManifest)
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Worker: testWorker,
		Plan: gradePlan("corrupt"), Grade: &GradeSpec{Rounds: 1}})
	require.NoError(t, err)
	assert.Equal(t, results.StatusOK, out.Planned[0].Status, out.Planned[0].Error)
}

func TestGradeModeSpeedJobsCheckEveryTimedRun(t *testing.T) {
	root := newCourse(t, gradeManifest)
	plan := []Job{
		{Suite: "scale", Variant: "lib", Problem: "small", Set: "gpu", Mode: GradeSpeed, Reps: 4},
		{Suite: "scale", Variant: "good", Problem: "small", Set: "gpu", Mode: GradeSpeed, Reps: 4},
		{Suite: "scale", Variant: "stale", Problem: "small", Set: "gpu", Mode: GradeSpeed, Reps: 4},
	}
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Worker: testWorker,
		Plan: plan, Grade: &GradeSpec{Warmup: 1}})
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
	root := newCourse(t, gradeManifest)
	started := time.Now()
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Worker: testWorker,
		Plan: gradePlan("good", "hang", "good"), Grade: &GradeSpec{Rounds: 1}, TotalTimeout: 1500 * time.Millisecond})
	require.NoError(t, err)
	assert.Less(t, time.Since(started), 3*time.Second, "the total limit (1.5s) comes before the per-job limit (3s)")
	assert.Equal(t, results.StatusOK, out.Planned[0].Status)
	assert.Equal(t, results.StatusTimeout, out.Planned[1].Status)
	assert.Contains(t, out.Planned[1].Error, "total time limit of 1.5s")
	assert.Equal(t, results.StatusTimeout, out.Planned[2].Status)
	assert.Contains(t, out.Planned[2].Error, "not run: the total time limit")
}

func TestPlanErrors(t *testing.T) {
	root := newCourse(t, gradeManifest)
	for _, j := range []Job{
		{Suite: "nope", Variant: "good", Problem: "odd", Set: "grade"},
		{Suite: "scale", Variant: "nope", Problem: "odd", Set: "grade"},
		{Suite: "scale", Variant: "good", Problem: "nope", Set: "grade"},
		{Suite: "scale", Variant: "good", Problem: "odd", Set: "grade", Mode: "fast"},
	} {
		_, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", NoSave: true, Plan: []Job{j}})
		var ue *UsageError
		assert.ErrorAs(t, err, &ue, "%+v", j)
	}
}

func TestFilesReplaceKernelSources(t *testing.T) {
	root := newCourse(t, gradeManifest)
	man, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.NoError(t, err)
	be, _, err := gpu.Open("fake")
	require.NoError(t, err)
	info, err := be.Describe(0)
	require.NoError(t, err)
	sub := filepath.Join(t.TempDir(), "mine.cu")
	r := &runner{o: Options{Root: root, Files: map[string]string{"k.cu": sub}, Variants: []string{"good"}, Progress: io.Discard},
		man: man, be: be, info: info, set: "grade", compileErr: map[*Variant]string{}}
	images, failed, _ := r.build(context.Background())
	assert.Empty(t, failed)
	// The fake toolchain's image is its source: the submission was built, not the lab's k.cu.
	assert.Equal(t, sub, images[imageKey("k.cu", "scale_good", nil)])
}

func TestGradingSection(t *testing.T) {
	root := newCourse(t, gradeManifest)
	m, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.NoError(t, err)
	g := m.Grading
	require.NotNil(t, g)
	assert.Equal(t, 0.5, g.PassMark)
	assert.Equal(t, DefaultGradeRounds, g.Rounds)
	assert.Equal(t, 3*time.Second, g.TimeLimit) // the lab's timeout
	ex := g.Exercises[0]
	assert.Equal(t, "good", ex.V.Name)
	assert.Equal(t, "lib", ex.Ref.Name)
	assert.Equal(t, []string{"one", "odd"}, ex.Tests[0].TestProblems())
	assert.True(t, ex.Tests[1].Hidden)
	assert.Equal(t, DefaultFullWithin, ex.Speed.FullWithin)
	assert.Equal(t, DefaultSpeedReps, ex.Speed.Reps)
}

func TestGradingSectionErrorsCarryLines(t *testing.T) {
	base := strings.SplitN(gradeManifest, "grading:", 2)[0]
	baseLines := strings.Count(base, "\n")
	tests := []struct {
		name, grading, want string
		line                int // within the grading section (1 = "grading:")
	}{
		{"unknown variant", "grading:\n  exercises:\n    - variant: nope\n", `exercise nope: no variant "nope"`, 3},
		{"library exercise", "grading:\n  exercises:\n    - variant: lib\n", "is a library call", 3},
		{"unknown problem", "grading:\n  exercises:\n    - variant: good\n      tests:\n        - {problem: huge}\n",
			`problem "huge" is not in problems.grade`, 5},
		{"speed without reference", "grading:\n  exercises:\n    - variant: good\n      speed: {points: 1, problems: [small]}\n",
			"speed needs a reference", 4},
		{"speed problem not in gpu set", "grading:\n  exercises:\n    - variant: good\n      reference: lib\n      speed: {points: 1, problems: [one]}\n",
			`speed problem "one" is not in problems.gpu`, 5},
		{"full_within below 1", "grading:\n  exercises:\n    - variant: good\n      reference: lib\n      speed: {points: 1, full_within: 0.5, problems: [small]}\n",
			"full_within 0.5", 5},
		{"reference is itself", "grading:\n  exercises:\n    - variant: good\n      reference: good\n", "must be another variant", 3},
		{"pass mark", "grading:\n  pass_mark: 60\n  exercises:\n    - variant: good\n", "pass_mark 60", 1},
		{"no exercises", "grading:\n  rounds: 2\n", "no exercises", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newCourse(t, base+tc.grading)
			_, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("lab.yaml:%d: ", baseLines+tc.line))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// A graded suite's tolerance must fail an all-zeros output.
	loose := strings.Replace(gradeManifest, "tolerance: 1e-6", "tolerance: 1.5", 1)
	root := newCourse(t, loose)
	_, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an all-zeros output (relative error 1) could pass")
}

func TestJSONSafeEntry(t *testing.T) {
	e := jsonSafeEntry(results.Entry{Suite: "s"})
	assert.Nil(t, e.Check)
}

func TestImagesAreKeyedByFlags(t *testing.T) {
	// A debug build (-DKL_TIMELINE) of a file and entry is another image than the plain build.
	assert.NotEqual(t, imageKey("k.cu", "e", nil), imageKey("k.cu", "e", []string{"-DKL_TIMELINE"}))
	assert.Equal(t, imageKey("k.cu", "e", []string{"-DA", "-DB"}), imageKey("k.cu", "e", []string{"-DA", "-DB"}))
}
