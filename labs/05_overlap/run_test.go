package overlap_test

// The lab through the real engine on the CPU emulator with two and three emulated devices, as
// `labrun 05 --backend emu` runs it: both suites (AllGather+GEMM and GEMM+ReduceScatter) and the
// exercise's reference solution, kernels built, every rank's output checked, timed. Skipped when
// g++ or Boost.Context is missing, or with -short.

import (
	"testing"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	overlap "github.com/kernel-labs/kernellabs/labs/05_overlap"
)

func TestMain(m *testing.M) { labtest.Main(m) }

func runOnEmulator(t *testing.T, set string, devices int) *lab.Outcome {
	return labtest.RunOnEmulator(t, overlap.LabDir, set, devices)
}

func checkAllOK(t *testing.T, out *lab.Outcome, set string) { labtest.CheckAllOK(t, out, set) }

func TestEmulatorRunTwoDevices(t *testing.T) {
	out := runOnEmulator(t, "emu", 2)
	checkAllOK(t, out, "emu")
}

// Three ranks: 100, 129 and 130 rows split unevenly, the 3-row problem one row per rank, and the
// fused_signal consumers wait on two peers' flags; in gemm_rs, K = 50, 17 and 7 split unevenly
// over the ranks too, every reduction pulls from two peers, and the fused epilogues of three
// ranks add into the same outputs.
func TestEmulatorThreeDevices(t *testing.T) {
	for _, set := range []string{"emu", "grade"} {
		out := runOnEmulator(t, set, 3)
		checkAllOK(t, out, set)
	}
}

// Two ranks on the grade set: the edge cases (3×5×7, tiles cut at every edge).
func TestEmulatorGradeTwoDevices(t *testing.T) {
	out := runOnEmulator(t, "grade", 2)
	checkAllOK(t, out, "grade")
}
