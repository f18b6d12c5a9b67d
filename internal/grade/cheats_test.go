package grade

import (
	"context"
	"fmt"
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
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/solution"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
	_ "github.com/kernel-labs/kernellabs/labs/02_gemm"
	_ "github.com/kernel-labs/kernellabs/labs/04_collectives"
	_ "github.com/kernel-labs/kernellabs/labs/05_overlap"
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
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	return root
}

// needSolutions skips in the student edition (marked by solution.EditionFile), where the
// exercise files hold stubs and the cheat fixtures are left out.
func needSolutions(t *testing.T) {
	t.Helper()
	if solution.IsStudentEdition(courseRoot(t)) {
		t.Skip("student edition: the exercise files hold the student's code, not the reference solutions the grader is checked against, and the cheat fixtures stay with the instructor")
	}
}

// cheatFixtures is the folder of the cheat fixtures; it skips where they cannot run (no emulator,
// or the student edition).
func cheatFixtures(t *testing.T) string {
	t.Helper()
	emutest.Need(t)
	needSolutions(t)
	return filepath.Join(courseRoot(t), "internal", "grade", "testdata", "cheats")
}

// The fixtures' problems: a partial edge tile with β ≠ 0 (C is an input too), and one with β = 0
// (C poisoned with NaN); K is not a multiple of 32 in both.
var fixtureProblems = []string{"17×33×65", "129×130×131 β=0"}

// gradeFixture grades a copy of file, made outside the course tree (a submission inside the
// course tree it is graded from is refused).
func gradeFixture(t *testing.T, file string, o Options) *Report {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	file = filepath.Join(t.TempDir(), filepath.Base(file))
	require.NoError(t, os.WriteFile(file, b, 0o644))
	return gradeSubmission(t, file, o)
}

// deviceCheck says whether the device-code check can run here (clang); grades without it
// otherwise, and says so.
func deviceCheck(t *testing.T, o *Options) bool {
	if err := toolchain.CheckDeviceCompiler(); err != nil {
		t.Logf("grading without the device-code check: %v", err)
		o.NoDeviceCheck = true
		return false
	}
	return true
}

func gradeSubmission(t *testing.T, file string, o Options) *Report {
	t.Helper()
	deviceCheck(t, &o)
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
	dir := cheatFixtures(t)
	fixtures := []struct {
		file, reason, text string
		problems           []string
	}{
		{"zeros.cu", ReasonWrong, "every output is 0", nil},
		{"partial.cu", ReasonUnwritten, "did not write", nil},
		{"previous_answer.cu", ReasonStale, "previous run's answer", nil},
		// M = 17: the off-by-one column of the column-major A is 68 bytes, within the slack.
		{"read_past.cu", ReasonReadOutside, "computed NaN", []string{"17×33×65"}},
		{"forever.cu", ReasonTimeout, "timed out", []string{"17×33×65"}},
		{"crash.cu", ReasonIllegalAddress, "EMU_ILLEGAL_ADDRESS", nil},
		{"abort.cu", ReasonCrash, "signal", nil},
		// A race: threads read tiles others have not stored yet, which hold the last step's values
		// (wrong) or, at the first step, shared memory's NaN (read_outside), by the schedule.
		{"missing_barrier.cu", ReasonWrong + "|" + ReasonReadOutside, "", nil},
		{"early_return.cu", ReasonBarrier, "EMU_BARRIER_DIVERGENCE", nil},
		{"oob_write.cu", ReasonOutOfBounds, "past the end of", nil},
		{"corrupt_input.cu", ReasonInputCorrupted, "changed its input", nil},
		{"no_compile.cu", ReasonCompile, "compile", nil},
		// Reaching the reference solution from the build (hermetic builds).
		{"include_relative.cu", ReasonCompile, "include_relative.cu:4: error:", nil},
		{"include_dotdot.cu", ReasonCompile, "include_dotdot.cu:4: error: refused include", nil},
		{"include_absolute.cu", ReasonCompile, "include_absolute.cu:3: error: refused include", nil},
		{"include_cross_lab.cu", ReasonCompile, "include_cross_lab.cu:4: error: refused include", nil},
		{"include_macro.cu", ReasonCompile, "02_gemm/exercises/ex1_smem_tiling.cu", nil},
		// Host-only C++ that nvcc would reject (the device-code check).
		{"host_only.cu", ReasonCompile, "host_only.cu:15: error:", nil},
		// Escapes from the sandbox: each computes the answer only if its escape worked.
		{"forged_events.cu", ReasonCrash, "died", nil},
		{"daemon.cu", ReasonWrong, "same value (1)", nil},          // EPERM: no new processes
		{"replace_grader.cu", ReasonWrong, "same value (13)", nil}, // EACCES: read-only
		{"read_secret.cu", ReasonWrong, "same value (13)", nil},    // EACCES: no /proc
		// K < 32: the first (and only) tile step reads what it never stored.
		{"stale_shared.cu", ReasonReadOutside, "computed NaN", []string{"1×300×7", "300×1×5"}},
	}
	// The secret in the initial environment of a process of the same user, as in a CI step's
	// shell: read_secret.cu looks for it there.
	holder := exec.Command("sleep", "120")
	holder.Env = append(os.Environ(), lab.SecretSeedEnv+"=fixture-secret")
	require.NoError(t, holder.Start())
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	// Two fixtures at a time: each grades in a worker and a sandboxed launcher, and on a small
	// runner more at once only make every one of them slower.
	slots := make(chan struct{}, 2)
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			if f.file == "host_only.cu" && !deviceCheck(t, &Options{}) {
				t.Skip("host_only.cu is caught by the device-code check, which needs clang (apt-get install clang)")
			}
			started := time.Now()
			limit := 30 * time.Second
			if f.reason == ReasonTimeout {
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
	file := filepath.Join(cheatFixtures(t), "read_past.cu")
	rep := gradeFixture(t, file, Options{redZone: -1, Problems: []string{"17×33×65"}})
	for _, tr := range rep.Tests {
		if tr.Kind == KindCorrectness {
			assert.Equal(t, StatusFailed, tr.Status, "%s: %s", tr.Name, tr.Output)
			assert.Contains(t, []string{ReasonReadOutside, ReasonIllegalAddress}, tr.Reason, tr.Output)
		}
	}
}

// The reference solutions of lab 02 score full marks, and the student edition's stubs compile
// and score zero. (cmd/labrun's tests do the same for every lab through the CLI.)
func TestLab02ReferenceFullMarksStubsZero(t *testing.T) {
	emutest.Need(t)
	needSolutions(t)
	root := courseRoot(t)
	started := time.Now()
	o := Options{Root: root, Lab: "02", Backend: "emu", Worker: testWorker}
	deviceCheck(t, &o)
	rep, err := Grade(context.Background(), o)
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
	o.Submission = student
	rep, err = Grade(context.Background(), o)
	require.NoError(t, err)
	assert.False(t, rep.Passed)
	assert.Zero(t, rep.Score, "the stubs must score zero")
	for _, tr := range rep.Tests {
		if tr.Kind == KindCorrectness {
			assert.Equal(t, StatusFailed, tr.Status, tr.Name)
			assert.NotEqual(t, ReasonCompile, tr.Reason, "the stubs compile: %s", tr.Output)
		}
	}
	t.Logf("stubs: %s/%s in %.1fs (%d CPUs)", pts(rep.Score), pts(rep.MaxScore), time.Since(started).Seconds(), runtime.NumCPU())
}

// A submission that is a symbolic link to the reference (or reached through one) is refused
// unbuilt, and so is a hard link to it; a submission inside the course tree is a usage error.
func TestLinkedSubmissionsAreRefused(t *testing.T) {
	emutest.Need(t)
	needSolutions(t)
	root := courseRoot(t)
	ref := filepath.Join(root, "labs", "02_gemm", "exercises", "ex1_smem_tiling.cu")
	dir := t.TempDir()

	link := filepath.Join(dir, "ex1_smem_tiling.cu")
	require.NoError(t, os.Symlink(ref, link))
	linkedDir := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(linkedDir, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(root, "labs", "02_gemm", "exercises"), filepath.Join(linkedDir, "exercises")))
	hard := filepath.Join(t.TempDir(), "ex1_smem_tiling.cu")
	hardOK := os.Link(ref, hard) == nil // only where the temporary folder shares the course's file system

	for _, tc := range []struct {
		name, sub, text string
		skip            bool
	}{
		{"symlink to the reference", link, "is a symbolic link", false},
		{"folder reached through a symlink", linkedDir, "is a symbolic link", false},
		{"hard link to the reference", hard, "a hard link", !hardOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("the temporary folder is on another file system: no hard link to the course's files can be made")
			}
			rep := gradeSubmission(t, tc.sub, Options{})
			assert.False(t, rep.Passed)
			assert.Zero(t, rep.Score)
			for _, tr := range rep.Tests {
				if tr.Kind == KindSpeed {
					continue
				}
				assert.Equal(t, StatusFailed, tr.Status, tr.Name)
				assert.Equal(t, ReasonRefused, tr.Reason, "%s: %s", tr.Name, tr.Output)
				assert.Contains(t, tr.Output, tc.text)
			}
		})
	}

	_, err := Grade(context.Background(), Options{Root: root, Lab: "02", Backend: "emu", Submission: ref, NoDeviceCheck: true, Worker: testWorker})
	var ue *lab.UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "inside (or holds) the course tree")
	_, err = Grade(context.Background(), Options{Root: root, Lab: "02", Backend: "emu", Submission: root, NoDeviceCheck: true, Worker: testWorker})
	require.ErrorAs(t, err, &ue)
}

// The escape fixtures are real: without the sandbox (and with the event checks only) each of
// them escapes, and those that compute after escaping pass. The sandbox is what fails them.
func TestEscapeFixturesEscapeWithoutTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := cheatFixtures(t)
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
	dir := cheatFixtures(t)
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

// Fixtures of the multi-rank exercises (labs 04 and 05): code that is right only for two ranks,
// only in the plain schedule, or only on the first launch of a case fails the tests that run it
// otherwise, whatever the seed.
func TestRankAndScheduleFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := cheatFixtures(t)
	fixtures := []struct {
		lab, file string
		// exercise: the one exercise the fixture is a submission for, where the lab has several
		// (a single file is graded as the lab's only exercise, or as the one it is named like).
		exercise string
		// failing: the tests (by a part of their name) that must fail, and the reasons they may
		// fail for; every other test passes.
		failing []string
		reasons []string
		// race: the fixture's bug is a race between OS threads, which the adversarial schedule
		// exposes on most tests but cannot force on every small one: it must lose points, at
		// least one of the failing tests must fail, each failed test for one of the reasons,
		// and no other test may fail.
		race bool
	}{
		{"04", "two_ranks.cu", "ex1_all_to_allv", []string{"3 ranks", "4 ranks", "secret"}, []string{ReasonUnwritten, ReasonWrong}, false},
		{"04", "vectors_anywhere.cu", "ex2_reduce_scatter_v", []string{"uneven", "secret", "less than a vector"}, []string{ReasonIllegalAddress}, true},
		{"05", "missing_wait.cu", "", []string{""}, []string{ReasonReadOutside, ReasonUnwritten, ReasonWrong}, true},
		{"05", "missing_barrier_after_wait.cu", "", []string{""}, []string{ReasonReadOutside, ReasonUnwritten, ReasonWrong}, true},
		{"05", "wrong_count.cu", "", []string{"three launches"}, []string{ReasonReadOutside, ReasonUnwritten, ReasonWrong}, true},
	}
	for _, f := range fixtures {
		for _, seed := range []uint64{1, 2} {
			t.Run(fmt.Sprintf("%s/seed%d", f.file, seed), func(t *testing.T) {
				b, err := os.ReadFile(filepath.Join(dir, f.file))
				require.NoError(t, err)
				file := filepath.Join(t.TempDir(), f.file)
				require.NoError(t, os.WriteFile(file, b, 0o644))
				o := Options{Root: courseRoot(t), Lab: f.lab, Backend: "emu", Submission: file, Seed: seed, SeedSet: true,
					Rounds: 2, Worker: testWorker, NoSpeed: true}
				if f.exercise != "" {
					o.Exercises = []string{f.exercise}
				}
				deviceCheck(t, &o)
				rep, err := Grade(context.Background(), o)
				require.NoError(t, err)
				assert.Less(t, rep.Score, rep.MaxScore)
				failed := 0
				for _, tr := range rep.Tests {
					if tr.Kind != KindCorrectness {
						continue
					}
					must := false
					for _, part := range f.failing {
						must = must || strings.Contains(tr.Name, part)
					}
					switch {
					case must && tr.Status == StatusFailed:
						failed++
						assert.Contains(t, f.reasons, tr.Reason, "%s: %s", tr.Name, tr.Output)
					case must && !f.race:
						assert.Equal(t, StatusFailed, tr.Status, "%s: %s", tr.Name, tr.Output)
					case !must:
						assert.Equal(t, StatusPassed, tr.Status, "%s: %s", tr.Name, tr.Output)
					}
				}
				assert.Positive(t, failed, "the fixture must fail a test it is wrong for")
			})
		}
	}
}
