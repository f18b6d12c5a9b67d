package overlap_test

// The lab through the real engine on the CPU emulator with two and three emulated devices, as
// `labrun 05 --backend emu` runs it: both suites (AllGather+GEMM and GEMM+ReduceScatter) and the
// exercise's reference solution, kernels built, every rank's output checked, timed. Skipped when
// g++ or Boost.Context is missing, or with -short.

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
	overlap "github.com/kernel-labs/kernellabs/labs/05_overlap"
)

const workerEnv = "KL_OVERLAP_WORKER"

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
	o := lab.Options{Root: root, Lab: overlap.LabDir, Backend: "emu", Set: set, Seed: 5, SeedSet: true, NoSave: true,
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
// NCCL + cuBLAS baseline was skipped (not failed).
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
}

// Three ranks: 100, 129 and 130 rows split unevenly, the 3-row problem one row per rank, and the
// fused_signal consumers wait on two peers' flags; in gemm_rs, K = 50, 17 and 7 split unevenly
// over the ranks too, every reduction pulls from two peers, and the fused epilogues of three
// ranks add into the same outputs.
func TestEmulatorThreeDevices(t *testing.T) {
	for _, set := range []string{"emu", "grade"} {
		out := runOnEmulator(t, set, "3")
		checkAllOK(t, out, set)
	}
}

// Two ranks on the grade set: the edge cases (3×5×7, tiles cut at every edge).
func TestEmulatorGradeTwoDevices(t *testing.T) {
	out := runOnEmulator(t, "grade", "2")
	checkAllOK(t, out, "grade")
}
