package collectives_test

// The lab through the real engine on the CPU emulator with two emulated devices, exactly as
// `labrun 04 --backend emu` runs it: kernels built, every rank's output checked, timed. Skipped
// when g++ or Boost.Context is missing, or with -short.

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
	collectives "github.com/kernel-labs/kernellabs/labs/04_collectives"
)

const workerEnv = "KL_COLLECTIVES_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		os.Exit(lab.RunWorkerFromEnv())
	}
	os.Exit(m.Run())
}

func runOnEmulator(t *testing.T, set string, devices string) *lab.Outcome {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the emulator run builds and runs the kernels")
	}
	if err := toolchain.CheckEmu(); err != nil {
		t.Skipf("the CPU emulator cannot build kernels here: %v", err)
	}
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	t.Setenv("LABRUN_EMU_SMS", "4")
	t.Setenv("LABRUN_EMU_DEVICES", devices)
	exe, err := os.Executable()
	require.NoError(t, err)
	worker := func() *exec.Cmd {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		return cmd
	}
	o := lab.Options{Root: root, Lab: collectives.LabDir, Backend: "emu", Set: set, Seed: 5, SeedSet: true, NoSave: true,
		Worker: worker, Timeout: 60 * time.Second}
	if testing.Verbose() {
		o.Progress = os.Stdout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := lab.Run(ctx, o)
	if err != nil && strings.Contains(err.Error(), "cgo") {
		t.Skipf("the emulator backend is not available: %v", err)
	}
	require.NoError(t, err)
	return out
}

// checkAllOK asserts that every kernel variant ran every problem of the set correctly and the
// NCCL baselines were skipped (not failed).
func checkAllOK(t *testing.T, out *lab.Outcome, set string) {
	t.Helper()
	kernels := 0
	for _, e := range out.Results.Entries {
		if strings.HasPrefix(e.Variant, "nccl_") {
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
			if v.IsKernel() {
				want += len(ps)
			}
		}
	}
	assert.Equal(t, want, kernels, "one entry per kernel variant × problem")
	assert.Zero(t, out.Failures)
}

func TestEmulatorRunTwoDevices(t *testing.T) {
	out := runOnEmulator(t, "emu", "2")
	checkAllOK(t, out, "emu")
	suites := map[string]bool{}
	for _, e := range out.Results.Entries {
		suites[e.Suite] = true
	}
	for _, s := range []string{"allreduce", "allgather", "reduce_scatter", "all_to_all"} {
		assert.True(t, suites[s], "suite %s ran", s)
	}
}

// Three ranks: the two-shot and ring chunks no longer divide the 1001 or 3 elements evenly, and
// with one element two of the three ring chunks are empty.
func TestEmulatorGradeThreeDevices(t *testing.T) {
	out := runOnEmulator(t, "grade", "3")
	checkAllOK(t, out, "grade")
}
