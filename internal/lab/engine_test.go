package lab

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/selfexec"
)

// The test binary doubles as the worker: the engine re-executes it with this variable set.
func TestMain(m *testing.M) {
	if code, ok := selfexec.Dispatch(); ok {
		os.Exit(code)
	}
	if os.Getenv("LABRUN_TEST_WORKER") == "1" {
		os.Exit(RunWorkerFromEnv())
	}
	os.Exit(m.Run())
}

func testWorker() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LABRUN_TEST_WORKER=1")
	return cmd
}

// scaleSuite opens the test labs' suite, scale (y = 2x), up to its variants.
const scaleSuite = `suites:
  - name: scale
    title: {en: Scale, zh: 缩放}
    metric: gbps
    baseline: lib
    tolerance: 1e-6
    variants:
`

const testManifest = `id: "99"
title: {en: Engine test, zh: 引擎测试}
timeout: 2s
` + scaleSuite + `      - {name: lib, title: {en: library, zh: 库}, library: fake_copy}
      - {name: good, file: k.cu, entry: scale_good}
      - {name: wrong, file: k.cu, entry: scale_wrong}
      - {name: crash, file: k.cu, entry: scale_crash}
      - {name: hang, file: k.cu, entry: scale_hang}
      - {name: sticky, file: k.cu, entry: scale_sticky}
      - {name: after, file: k.cu, entry: scale_good}
      - {name: hopper, file: k.cu, entry: scale_good, needs: [nvidia, sm_90a]}
      - {name: gpuonly, file: k.cu, entry: scale_good, emu_skip: "uses inline PTX"}
    problems:
      gpu: [{name: small, n: 1000, quick: true}, {name: big, n: 4Ki}, {name: huge, n: 2Mi}]
      emu: [{name: tiny, n: 10}]
`

// newCourse writes a course root with the engine's test lab and the given manifest, and returns
// it. The lab's driver is internal/labtest/scalelab's (y = 2x), registered as 99_test when
// scalelab_test.go imports it.
func newCourse(t *testing.T, manifest string) string {
	t.Helper()
	return coursedir.Write(t, "99_test", map[string]string{"lab.yaml": manifest, "k.cu": "// fake kernels\n"})
}

// testDriver is the test lab's driver (scalelab.Driver), as registered.
func testDriver(t *testing.T) Driver {
	t.Helper()
	d, ok := DriverFor("99_test")
	require.True(t, ok, "importing internal/labtest/scalelab (scalelab_test.go) registers the test lab")
	return d
}

// byVariant indexes a run's entries by variant (runs of one problem).
func byVariant(es []results.Entry) map[string]results.Entry {
	m := map[string]results.Entry{}
	for _, e := range es {
		m[e.Variant] = e
	}
	return m
}

// fakeBackend opens the fake GPU backend (one device of compute capability 9.0) and describes
// its device.
func fakeBackend(t *testing.T) (gpu.Backend, gpu.DeviceInfo) {
	t.Helper()
	be, _, err := gpu.Open("fake")
	require.NoError(t, err)
	info, err := be.DeviceInfo(0)
	require.NoError(t, err)
	return be, info
}

// fakeEnv is an Env on the fake backend's device, with no case open.
func fakeEnv(t *testing.T) *Env {
	t.Helper()
	be, _ := fakeBackend(t)
	dev, err := be.Open(0)
	require.NoError(t, err)
	stream, err := dev.NewStream()
	require.NoError(t, err)
	return NewEnv(dev, stream, 1, nil, nil)
}

// caseEnv is an Env on the fake backend's device with a case open, closed (and checked to free
// everything cleanly) when the test ends.
func caseEnv(t *testing.T) *Env {
	t.Helper()
	env := fakeEnv(t)
	env.openCase()
	t.Cleanup(func() { require.NoError(t, env.closeCase()) })
	return env
}

func TestRunIsolatesCrashesHangsAndStickyErrors(t *testing.T) {
	root := newCourse(t, testManifest)
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Seed: 7, SeedSet: true,
		Quick: true, Worker: testWorker})
	require.NoError(t, err)
	got := byVariant(out.Results.Entries)
	assert.Equal(t, results.StatusOK, got["lib"].Status)
	assert.Equal(t, results.StatusOK, got["good"].Status, got["good"].Error)
	assert.Greater(t, got["good"].Speedup, 0.0)
	assert.Equal(t, map[string]any{"n": 1000.0}, got["good"].Data) // through JSON from the worker
	assert.Equal(t, "lib", got["good"].Baseline)
	assert.Equal(t, results.StatusWrong, got["wrong"].Status)
	assert.Contains(t, got["wrong"].Error, "first wrong elements")
	assert.Equal(t, results.StatusCrashed, got["crash"].Status)
	assert.Contains(t, got["crash"].Error, "signal")
	assert.Equal(t, results.StatusTimeout, got["hang"].Status)
	assert.Contains(t, got["hang"].Error, "timed out after 2s")
	assert.Equal(t, results.StatusFailed, got["sticky"].Status)
	assert.Contains(t, got["sticky"].Error, "CUDA_ERROR_ILLEGAL_ADDRESS")
	// The run went on after every failure.
	assert.Equal(t, results.StatusOK, got["after"].Status, got["after"].Error)
	// Fake device is compute capability 9.0, so the sm_90a variant runs; gpuonly runs too (not an emulator).
	assert.Equal(t, results.StatusOK, got["hopper"].Status)
	assert.Equal(t, 4, out.Failures)
	assert.Len(t, out.Results.Entries, 9) // quick: one problem
	for _, e := range out.Results.Entries {
		assert.Equal(t, uint64(7), e.Seed)
		assert.Equal(t, "small", e.Problem)
	}

	// The results file was written, and a later run of one variant keeps the rest.
	saved, err := results.Load(out.Path)
	require.NoError(t, err)
	require.NotNil(t, saved)
	assert.Len(t, saved.Entries, 9)
	_, err = Run(context.Background(), Options{Root: root, Lab: "99_test", Backend: "fake", Variants: []string{"good"},
		Worker: testWorker})
	require.NoError(t, err)
	saved, err = results.Load(out.Path)
	require.NoError(t, err)
	assert.Len(t, saved.Entries, 11) // "big" and "huge" added for good, the rest kept
	huge := saved.Find("scale", "good", "huge")
	require.NotNil(t, huge)
	assert.Equal(t, results.StatusSkipped, huge.Status)
	assert.Contains(t, huge.Error, "too large")
}

func TestInterruptedRunSavesWhatItMeasured(t *testing.T) {
	root := newCourse(t, testManifest)
	first, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good", "after"},
		Quick: true, Worker: testWorker})
	require.NoError(t, err)
	before, err := results.Load(first.Path)
	require.NoError(t, err)
	require.Len(t, before.Entries, 2)

	// good finishes, hang is in flight when the interrupt comes, after never starts.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	out, err := Run(ctx, Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good", "hang", "after"},
		Quick: true, Seed: 11, SeedSet: true, Worker: testWorker})
	require.NoError(t, err)
	assert.Equal(t, 2, out.Unfinished)
	require.NoError(t, out.SaveError)
	assert.Equal(t, out.Path, out.SavedTo)
	saved, err := results.Load(out.Path)
	require.NoError(t, err)
	good := saved.Find("scale", "good", "small")
	require.NotNil(t, good)
	assert.Equal(t, uint64(11), good.Seed, "the finished job's new result replaces the old one")
	assert.Nil(t, saved.Find("scale", "hang", "small"), "a job killed by the interrupt is not a result")
	after := saved.Find("scale", "after", "small")
	require.NotNil(t, after)
	assert.Equal(t, results.StatusOK, after.Status, "a job not run keeps its earlier result")
}

func TestInProcessRunMeasuresWithoutWorkers(t *testing.T) {
	root := newCourse(t, testManifest)
	var started int
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"lib", "good", "wrong"},
		Quick: true, NoSave: true, InProcess: true, Worker: func() *exec.Cmd { started++; return testWorker() }})
	require.NoError(t, err)
	assert.Zero(t, started, "no worker process in process mode")
	require.Len(t, out.Results.Entries, 3)
	assert.Equal(t, results.StatusOK, out.Results.Find("scale", "good", "small").Status)
	assert.Equal(t, results.StatusWrong, out.Results.Find("scale", "wrong", "small").Status)
	assert.Equal(t, 1, out.Failures)

	_, err = Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", InProcess: true,
		Plan: []Job{{Suite: "scale", Variant: "good", Problem: "small", Set: "gpu"}}})
	var ue *UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "--in-process", "grading keeps the code under test out of labrun's process")
}

func TestRunKeepsCorruptResultsAndSavesAside(t *testing.T) {
	root := newCourse(t, testManifest)
	path := results.PathFor(root, gpu.DeviceInfo{Name: "Fake Device"}, "99_test")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("{broken"), 0o644))
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good"},
		Quick: true, Worker: testWorker})
	require.NoError(t, err)
	require.Error(t, out.SaveError)
	assert.Contains(t, out.SaveError.Error(), "corrupt")
	body, _ := os.ReadFile(path)
	assert.Equal(t, "{broken", string(body), "the corrupt file must not be overwritten")
	side, err := results.Load(out.SavedTo)
	require.NoError(t, err)
	assert.Len(t, side.Entries, 1)
}

func TestRunErrors(t *testing.T) {
	root := newCourse(t, testManifest)
	_, err := Run(context.Background(), Options{Root: root, Lab: "42", Backend: "fake"})
	var ul *UnknownLabError
	require.ErrorAs(t, err, &ul)
	assert.Contains(t, err.Error(), "99_test")

	_, err = Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"nope"}})
	var ue *UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "good")

	_, err = Run(context.Background(), Options{Root: root, Lab: "99", Backend: "nosuch"})
	var ee *EnvError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "--backend emu")

	_, err = Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Device: 3})
	require.ErrorAs(t, err, &ue)
}

// The engine asks the run's backend (here the fake GPU, compute capability 9.0) what it can run
// and for which target; the backends' own tests cover their rules.
func TestSkipReasonsAreTheBackends(t *testing.T) {
	be, info := fakeBackend(t)
	r := &runner{be: be, info: info, available: 1}
	assert.Contains(t, r.skipReason([]string{"nvidia", "sm_100a"}, ""), "needs sm_100a")
	assert.Empty(t, r.skipReason([]string{"nvidia", "sm_90a", "cublas"}, "inline PTX"))
	assert.Equal(t, "sm_90a", r.archFor([]string{"nvidia", "sm_90a"}))
	assert.Equal(t, "sm_90", r.archFor(nil))
}

func TestEmulatorRunsStayOutOfTheTrackedResults(t *testing.T) {
	root := t.TempDir()
	emu := gpu.DeviceInfo{Name: "Kernel Labs CPU emulator", Backend: "emu", Emulated: true}
	h200 := gpu.DeviceInfo{Name: "NVIDIA H200", Backend: "cuda"}
	for _, tc := range []struct {
		name   string
		info   gpu.DeviceInfo
		record bool
		want   string
		local  bool
	}{
		{"a student's emulator run", emu, false, "results/local/emulator/03_grouped_gemm.json", true},
		{"a recorded emulator run", emu, true, "results/emulator/03_grouped_gemm.json", false},
		{"a GPU run", h200, false, "results/nvidia-h200/03_grouped_gemm.json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, local := resultsPath(root, tc.info, "03_grouped_gemm", tc.record)
			assert.Equal(t, filepath.Join(root, tc.want), path)
			assert.Equal(t, tc.local, local)
		})
	}
	// The site reads results/<device>/<lab>.json only: a local run is one level deeper.
	local, _ := resultsPath(root, emu, "03_grouped_gemm", false)
	require.NoError(t, results.Save(local, &results.File{Lab: "03_grouped_gemm", Device: emu}))
	course, err := filepath.Glob(filepath.Join(root, "results", "*", "03_grouped_gemm.json"))
	require.NoError(t, err)
	assert.Empty(t, course, "local runs are not course results")
}

// Runs that meet a fault lose nothing they measured and say what happened.

// A results folder that cannot be written (here its path is taken by a file, which stops root
// too) does not lose the run: the results go to the user's cache, and the error says where.
func TestRunWithAnUnwritableResultsFolderSavesElsewhere(t *testing.T) {
	root := newCourse(t, testManifest)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path := results.PathFor(root, gpu.DeviceInfo{Name: "Fake Device"}, "99_test")
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Dir(path)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Dir(path), []byte("not a folder"), 0o644))
	out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good"},
		Quick: true, Worker: testWorker})
	require.NoError(t, err)
	require.Error(t, out.SaveError)
	require.NotEmpty(t, out.SavedTo)
	assert.NotEqual(t, out.Path, out.SavedTo)
	assert.Contains(t, out.SaveError.Error(), "this run's results were saved to "+out.SavedTo)
	saved, err := results.Load(out.SavedTo)
	require.NoError(t, err)
	require.NotNil(t, saved.Find("scale", "good", "small"))
}

// A custom problem the suite cannot take is refused before anything runs: no entry is written.
func TestBadCustomProblemIsRefusedBeforeAnyEntry(t *testing.T) {
	root := newCourse(t, testManifest+"custom_flags:\n  - {name: n, help: {en: the size}, sets: [n]}\n")
	for _, v := range []string{"0", "-3", "lots"} {
		out, err := Run(context.Background(), Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"good"},
			Custom: map[string]string{"n": v}, Worker: testWorker})
		var ue *UsageError
		require.ErrorAs(t, err, &ue, v)
		assert.Nil(t, out)
		_, statErr := os.Stat(results.PathFor(root, gpu.DeviceInfo{Name: "Fake Device"}, "99_test"))
		assert.True(t, os.IsNotExist(statErr), "--n %s: no results file is written", v)
	}
}

// The job in flight when a run is interrupted is reported as interrupted, not as a crash or a
// failure of its variant, and is not saved as a result.
func TestInterruptedJobIsNotACrash(t *testing.T) {
	root := newCourse(t, testManifest)
	run := func(noSave bool) *Outcome {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(700*time.Millisecond, cancel)
		out, err := Run(ctx, Options{Root: root, Lab: "99", Backend: "fake", Variants: []string{"hang"}, Quick: true,
			NoSave: noSave, Worker: testWorker})
		require.NoError(t, err)
		return out
	}
	assert.Equal(t, 1, run(true).Unfinished, "counted without saving too")
	out := run(false)
	e := out.Results.Find("scale", "hang", "small")
	require.NotNil(t, e)
	assert.NotEqual(t, results.StatusCrashed, e.Status)
	assert.Contains(t, e.Error, "interrupted")
	assert.Equal(t, 1, out.Unfinished)
	assert.False(t, out.Finished(e), "the CLI leaves it out of the tables")
	assert.Zero(t, out.Failures, "an interrupted job is no failure of its variant")
	saved, err := results.Load(out.Path)
	require.NoError(t, err)
	if saved != nil {
		assert.Nil(t, saved.Find("scale", "hang", "small"), "an interrupted job is not a result")
	}
}
