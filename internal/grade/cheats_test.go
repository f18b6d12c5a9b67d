package grade

import (
	"context"
	"github.com/kernel-labs/kernellabs/internal/selfexec"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
	_ "github.com/kernel-labs/kernellabs/labs/02_gemm"
)

// The test binary doubles as the engine's worker.
func TestMain(m *testing.M) {
	if code, ok := selfexec.Dispatch(); ok {
		os.Exit(code)
	}
	if os.Getenv("LABRUN_GRADE_TEST_WORKER") == "1" {
		os.Exit(lab.RunWorkerFromEnv())
	}
	os.Exit(m.Run())
}

func testWorker() *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LABRUN_GRADE_TEST_WORKER=1")
	return cmd
}

// courseRoot is the repository's course folder.
func courseRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := lab.FindRoot(wd)
	require.NoError(t, err)
	return root
}

// needEmulator skips when the emulator's compiler or Boost.Context is missing.
func needEmulator(t *testing.T) {
	t.Helper()
	if err := toolchain.CheckEmu(); err != nil {
		t.Skipf("the CPU emulator cannot build kernels here (%v): grading tests need g++ and libboost-context-dev", err)
	}
}

// needSolutions skips in the student edition, where the exercise files hold stubs and the cheat
// fixtures are left out.
func needSolutions(t *testing.T) {
	t.Helper()
	root := courseRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "labs", "02_gemm", "exercises", "ex1_smem_tiling.cu"))
	if err != nil || !HasSolution(b) {
		t.Skip("the exercise files hold no solutions (the student edition): nothing to check the grader against")
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "grade", "testdata", "cheats")); err != nil {
		t.Skip("the cheat fixtures are not here (the student edition)")
	}
}

// The fixtures' problems: a partial edge tile with β ≠ 0 (C is an input too), and one with β = 0
// (C poisoned with NaN); K is not a multiple of 32 in both.
var fixtureProblems = []string{"17×33×65", "129×130×131 β=0"}

func gradeFixture(t *testing.T, file string, o Options) *Report {
	t.Helper()
	o.Root = courseRoot(t)
	o.Lab = "02"
	o.Backend = "emu"
	o.Submission = file
	o.Exercises = []string{"ex1_smem_tiling"}
	if o.Problems == nil {
		o.Problems = fixtureProblems
	}
	if o.Rounds == 0 {
		o.Rounds = 2
	}
	o.Worker = testWorker
	rep, err := Grade(context.Background(), o)
	require.NoError(t, err)
	return rep
}

// Every cheat fixture fails every test, for its reason.
func TestCheatFixturesFailForTheirReason(t *testing.T) {
	needEmulator(t)
	needSolutions(t)
	dir := filepath.Join(courseRoot(t), "internal", "grade", "testdata", "cheats")
	fixtures := []struct {
		file, reason, text string
		problems           []string
	}{
		{"zeros.cu", lab.ReasonWrong, "every output is 0", nil},
		{"partial.cu", lab.ReasonUnwritten, "did not write", nil},
		{"previous_answer.cu", lab.ReasonStale, "previous run's answer", nil},
		{"read_past.cu", lab.ReasonReadOutside, "computed NaN", nil},
		{"forever.cu", lab.ReasonTimeout, "timed out", []string{"17×33×65"}},
		{"crash.cu", lab.ReasonIllegalAddress, "EMU_ILLEGAL_ADDRESS", nil},
		{"abort.cu", lab.ReasonCrash, "signal", nil},
		// A race: threads read tiles others have not stored yet, which hold the last step's values
		// (wrong) or, at the first step, shared memory's NaN (read_outside), by the schedule.
		{"missing_barrier.cu", lab.ReasonWrong + "|" + lab.ReasonReadOutside, "", nil},
		{"early_return.cu", lab.ReasonBarrier, "EMU_BARRIER_DIVERGENCE", nil},
		{"oob_write.cu", lab.ReasonOutOfBounds, "past the end of", nil},
		{"corrupt_input.cu", lab.ReasonInputCorrupted, "changed its input", nil},
		{"no_compile.cu", lab.ReasonCompile, "compile", nil},
		// Escapes from the sandbox: each computes the answer only if its escape worked.
		{"forged_events.cu", lab.ReasonCrash, "died", nil},
		{"daemon.cu", lab.ReasonWrong, "same value (1)", nil},          // EPERM: no new processes
		{"replace_grader.cu", lab.ReasonWrong, "same value (13)", nil}, // EACCES: read-only
		{"read_secret.cu", lab.ReasonWrong, "same value (13)", nil},    // EACCES: no /proc
		// K < 32: the first (and only) tile step reads what it never stored.
		{"stale_shared.cu", lab.ReasonReadOutside, "computed NaN", []string{"1×300×7", "300×1×5"}},
	}
	// The secret in the initial environment of a process of the same user, as in a CI step's
	// shell: read_secret.cu looks for it there.
	holder := exec.Command("sleep", "120")
	holder.Env = append(os.Environ(), lab.SecretSeedEnv+"=fixture-secret")
	require.NoError(t, holder.Start())
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			t.Parallel()
			started := time.Now()
			limit := 30 * time.Second
			if f.reason == lab.ReasonTimeout {
				limit = 1500 * time.Millisecond
			}
			rep := gradeFixture(t, filepath.Join(dir, f.file), Options{Problems: f.problems, TimeLimit: limit})
			require.NotEmpty(t, rep.Tests)
			assert.False(t, rep.Passed)
			assert.Zero(t, rep.Score)
			for _, tr := range rep.Tests {
				if tr.Kind == KindSpeed {
					assert.Equal(t, StatusNotGraded, tr.Status, "speed is not graded on the emulator")
					continue
				}
				assert.Equal(t, StatusFailed, tr.Status, tr.Name)
				assert.Contains(t, strings.Split(f.reason, "|"), tr.Reason, "%s: %s", tr.Name, tr.Output)
				if !tr.Hidden {
					assert.Contains(t, tr.Output, f.text, tr.Name)
				} else {
					assert.Contains(t, tr.Output, "details of hidden tests are not shown")
					assert.Equal(t, "after_published", tr.Visibility)
				}
			}
			t.Logf("%s: %s in %.1fs", f.file, ReasonText(f.reason), time.Since(started).Seconds())
		})
	}
}

// On the emulator read_past.cu fails without the grader's red zones too: the emulator's own NaN
// slack and faulting fences around every buffer catch it, in grade as in labrun run.
func TestReadPastFailsWithoutRedZones(t *testing.T) {
	needEmulator(t)
	needSolutions(t)
	file := filepath.Join(courseRoot(t), "internal", "grade", "testdata", "cheats", "read_past.cu")
	rep := gradeFixture(t, file, Options{redZone: -1})
	for _, tr := range rep.Tests {
		if tr.Kind == KindCorrectness {
			assert.Equal(t, StatusFailed, tr.Status, "%s: %s", tr.Name, tr.Output)
			assert.Contains(t, []string{lab.ReasonReadOutside, lab.ReasonIllegalAddress}, tr.Reason, tr.Output)
		}
	}
}

// The reference solutions of lab 02 score full marks, and the student edition's stubs compile
// and score zero. (cmd/labrun's tests do the same for every lab through the CLI.)
func TestLab02ReferenceFullMarksStubsZero(t *testing.T) {
	needEmulator(t)
	needSolutions(t)
	root := courseRoot(t)
	started := time.Now()
	rep, err := Grade(context.Background(), Options{Root: root, Lab: "02", Backend: "emu", Worker: testWorker})
	require.NoError(t, err)
	assert.True(t, rep.Passed)
	assert.Greater(t, rep.MaxScore, 0.0)
	assert.Equal(t, rep.MaxScore, rep.Score, "the reference solutions must score full marks")
	for _, tr := range rep.Tests {
		if tr.Kind == KindSpeed {
			assert.Equal(t, StatusNotGraded, tr.Status)
		} else {
			assert.Equal(t, StatusPassed, tr.Status, "%s: %s", tr.Name, tr.Output)
		}
	}
	t.Logf("reference: %s/%s in %.1fs", pts(rep.Score), pts(rep.MaxScore), time.Since(started).Seconds())

	started = time.Now()
	student := t.TempDir()
	ex, err := Export(context.Background(), root, student, ExportOptions{})
	require.NoError(t, err)
	assert.Contains(t, ex.Stubbed, "labs/02_gemm/exercises/ex1_smem_tiling.cu")
	assert.Contains(t, ex.Compiled, "labs/02_gemm/exercises/ex1_smem_tiling.cu", "the stubs compile")
	rep, err = Grade(context.Background(), Options{Root: root, Lab: "02", Backend: "emu", Submission: student, Worker: testWorker})
	require.NoError(t, err)
	assert.False(t, rep.Passed)
	assert.Zero(t, rep.Score, "the stubs must score zero")
	for _, tr := range rep.Tests {
		if tr.Kind == KindCorrectness {
			assert.Equal(t, StatusFailed, tr.Status, tr.Name)
			assert.NotEqual(t, lab.ReasonCompile, tr.Reason, "the stubs compile: %s", tr.Output)
		}
	}
	t.Logf("stubs: %s/%s in %.1fs (%d CPUs)", pts(rep.Score), pts(rep.MaxScore), time.Since(started).Seconds(), runtime.NumCPU())
}

// The escape fixtures are real: without the sandbox (and with the event checks only) each of
// them escapes, and those that compute after escaping pass. The sandbox is what fails them.
func TestEscapeFixturesEscapeWithoutTheSandbox(t *testing.T) {
	needEmulator(t)
	needSolutions(t)
	if testing.Short() {
		t.Skip("-short")
	}
	dir := filepath.Join(courseRoot(t), "internal", "grade", "testdata", "cheats")
	holder := exec.Command("sleep", "120")
	holder.Env = append(os.Environ(), lab.SecretSeedEnv+"=fixture-secret")
	require.NoError(t, holder.Start())
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	for _, f := range []string{"daemon.cu", "replace_grader.cu", "read_secret.cu"} {
		t.Run(f, func(t *testing.T) {
			rep := gradeFixture(t, filepath.Join(dir, f), Options{UnsafeNoSandbox: true, TimeLimit: 20 * time.Second})
			assert.Equal(t, rep.MaxScore, rep.Score, "unconfined, %s escapes and computes: %+v", f, rep.Tests)
			assert.Contains(t, strings.Join(rep.Notes, "\n"), "UNSAFE")
		})
	}
	// Forged events fail on the event checks alone.
	rep := gradeFixture(t, filepath.Join(dir, "forged_events.cu"), Options{UnsafeNoSandbox: true, TimeLimit: 20 * time.Second})
	assert.Zero(t, rep.Score)
}

// The runner's CPUs and LABRUN_EMU_SMS change nothing in a grade: the emulated machine comes from
// lab.yaml's grading section.
func TestGradeDoesNotDependOnTheRunner(t *testing.T) {
	needEmulator(t)
	needSolutions(t)
	dir := filepath.Join(courseRoot(t), "internal", "grade", "testdata", "cheats")
	var reasons [][]string
	for _, sms := range []string{"1", "16"} {
		t.Setenv("LABRUN_EMU_SMS", sms)
		var got []string
		for _, f := range []string{"oob_write.cu", "missing_barrier.cu"} {
			rep := gradeFixture(t, filepath.Join(dir, f), Options{Seed: 42, SeedSet: true})
			assert.Contains(t, strings.Join(rep.Notes, "\n"), "4 SMs per device")
			for _, tr := range rep.Tests {
				got = append(got, tr.Reason+" "+tr.Status)
			}
		}
		reasons = append(reasons, got)
	}
	assert.Equal(t, reasons[0], reasons[1], "the same submission and seed get the same grade with LABRUN_EMU_SMS=1 and 16")
}
