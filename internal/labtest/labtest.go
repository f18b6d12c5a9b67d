// Package labtest holds what the labs' own tests share: running a lab through the real engine on
// the CPU emulator, and reading the outline (headings and cells) of a chapter's notes. Only test
// files import it.
package labtest

import (
	"context"
	"github.com/kernel-labs/kernellabs/internal/selfexec"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/grade"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/solution"
)

// workerEnv marks a test binary started by the engine as its worker.
const workerEnv = "KL_LABTEST_WORKER"

// Main is a test package's TestMain: the engine re-executes the test binary as its worker,
// through Worker, or as labrun starts its workers (lab.WorkerArg, in the CLI's tests).
func Main(m *testing.M) {
	if code, ok := selfexec.Dispatch(); ok {
		os.Exit(code)
	}
	if os.Getenv(workerEnv) == "1" || len(os.Args) > 1 && os.Args[1] == lab.WorkerArg {
		os.Exit(lab.RunWorkerFromEnv())
	}
	if spec := os.Getenv(runEnv); spec != "" {
		os.Exit(runRank(spec)) // one labrun of a job of ranks (ranks.go)
	}
	os.Exit(m.Run())
}

// Worker starts the test binary as the engine's worker (lab.Options.Worker); the test package
// must use Main.
func Worker(t *testing.T) func() *exec.Cmd {
	exe, err := os.Executable()
	require.NoError(t, err)
	return func() *exec.Cmd {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		return cmd
	}
}

// RunOnEmulator runs a lab's problem set through the engine on the CPU emulator with the given
// number of devices (of rank processes, for a lab of ranks), as `labrun NN --backend emu` does, without saving results. It skips with
// -short or where the emulator cannot build kernels. The test package must use Main.
func RunOnEmulator(t *testing.T, labDir, set string, devices int) *lab.Outcome {
	t.Helper()
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	return RunOnEmulatorAt(t, root, labDir, set, devices)
}

// RunOnEmulatorAt is RunOnEmulator on the course folder root (a test's own course, such as the
// fixture chapter of vector_add_test.go).
func RunOnEmulatorAt(t *testing.T, root, labDir, set string, devices int) *lab.Outcome {
	t.Helper()
	return RunOnEmulatorWith(t, root, labDir, set, devices, nil)
}

// RunOnEmulatorWith is RunOnEmulatorAt with the options changed by adjust (the lab's seed, the
// variants it runs) before the run.
func RunOnEmulatorWith(t *testing.T, root, labDir, set string, devices int, adjust func(*lab.Options)) *lab.Outcome {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the emulator run builds and runs the kernels")
	}
	emutest.Need(t)
	t.Setenv("LABRUN_EMU_SMS", "4")
	t.Setenv("LABRUN_EMU_DEVICES", strconv.Itoa(devices))
	worker := Worker(t)
	o := lab.Options{Root: root, Lab: labDir, Backend: "emu", Set: set, Seed: 5, SeedSet: true, NoSave: true,
		Worker: worker, Timeout: 60 * time.Second}
	if m, err := lab.Load(root, labDir); err == nil && m.HasRanks() {
		o.Ranks = devices // a lab of ranks: that many rank processes, each with its own emulated device
		t.Setenv("LABRUN_EMU_DEVICES", "1")
	}
	if solution.IsStudentEdition(root) {
		m, err := lab.Load(root, labDir)
		require.NoError(t, err)
		for _, s := range m.Suites {
			for _, v := range s.Variants {
				if !LeftOut(t, m, v) {
					o.Variants = append(o.Variants, v.Name)
				}
			}
		}
	}
	if adjust != nil {
		adjust(&o)
	}
	if testing.Verbose() {
		o.Progress = os.Stdout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := lab.Run(ctx, o)
	if err != nil && strings.Contains(err.Error(), "cgo") {
		t.Skipf("the emulator backend is not available: %v", err)
	}
	require.NoError(t, err)
	return out
}

// CheckAllOK asserts that every kernel variant ran every problem of the set correctly and that
// the library baselines (GPU only) did not pass for a result (they are skipped on the emulator).
func CheckAllOK(t *testing.T, out *lab.Outcome, set string) {
	t.Helper()
	kernels := 0
	for _, e := range out.Results.Entries {
		if v := out.Manifest.Suite(e.Suite).Variant(e.Variant); v != nil && !v.IsKernel() {
			assert.NotEqual(t, results.StatusOK, e.Status, "%s runs on GPUs only", e.Variant)
			continue
		}
		kernels++
		assert.Equal(t, results.StatusOK, e.Status, "%s/%s %s: %s", e.Suite, e.Variant, e.Problem, e.Error)
	}
	want := 0
	for _, s := range out.Manifest.Suites {
		ps, err := s.ProblemsFor(set)
		require.NoError(t, err)
		for _, v := range s.Variants {
			if v.IsKernel() && !(studentEdition(out.Manifest) && IsExercise(out.Manifest, v)) {
				want += len(ps)
			}
		}
	}
	assert.Equal(t, want, kernels, "one entry per kernel variant × problem")
	assert.Zero(t, out.Failures)
}

// NeedsSolutions skips a test of the exercises' reference solutions in the student edition
// (labrun export), where the exercise files hold the student's code.
func NeedsSolutions(t testing.TB) {
	t.Helper()
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	if solution.IsStudentEdition(root) {
		t.Skip(studentEditionSkip)
	}
}

const studentEditionSkip = "student edition: the exercise files hold your code (stubs as handed out), " +
	"not the reference solutions this test checks; `labrun grade NN` checks your work"

// IsExercise says whether variant v of lab m is an exercise (grade.IsExercise).
func IsExercise(m *lab.Manifest, v *lab.Variant) bool { return grade.IsExercise(m, v) }

// LeftOut reports whether a run of the lab's variants leaves v out: in the student edition the
// exercises are the student's stubs, which fail until solved (it logs that they are left out).
func LeftOut(t testing.TB, m *lab.Manifest, v *lab.Variant) bool {
	t.Helper()
	if !IsExercise(m, v) || !studentEdition(m) {
		return false
	}
	t.Logf("%s/%s left out: %s", v.Suite.Name, v.Name, studentEditionSkip)
	return true
}

func studentEdition(m *lab.Manifest) bool {
	root, err := lab.FindRoot(m.Dir)
	return err == nil && solution.IsStudentEdition(root)
}

// Manifest loads the lab.yaml of the lab whose tests run (the current folder).
func Manifest(t testing.TB) *lab.Manifest {
	t.Helper()
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	return m
}

// EachProblem calls check with every problem of every suite of m, by set ("gpu", "emu",
// "grade"), and fails a set that names one problem twice.
func EachProblem(t *testing.T, m *lab.Manifest, check func(s *lab.Suite, set string, p lab.Problem)) {
	t.Helper()
	for _, s := range m.Suites {
		for set, ps := range map[string][]lab.Problem{"gpu": s.Problems.GPU, "emu": s.Problems.Emu, "grade": s.Problems.Grade} {
			seen := map[string]bool{}
			for _, p := range ps {
				assert.False(t, seen[p.Name], "%s/%s: problem %q twice", s.Name, set, p.Name)
				seen[p.Name] = true
				check(s, set, p)
			}
		}
	}
}
