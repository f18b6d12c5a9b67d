package collectives_test

// The lab through the real engine on the CPU emulator with two emulated devices, exactly as
// `labrun 04 --backend emu` runs it: kernels built, every rank's output checked, timed. Skipped
// when g++ or Boost.Context is missing, or with -short.

import (
	"testing"

	"github.com/stretchr/testify/assert"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	collectives "github.com/kernel-labs/kernellabs/labs/04_collectives"
)

func TestMain(m *testing.M) { labtest.Main(m) }

func runOnEmulator(t *testing.T, set string, devices int) *lab.Outcome {
	return labtest.RunOnEmulator(t, collectives.LabDir, set, devices)
}

func checkAllOK(t *testing.T, out *lab.Outcome, set string) { labtest.CheckAllOK(t, out, set) }

func TestEmulatorRunTwoDevices(t *testing.T) {
	out := runOnEmulator(t, "emu", 2)
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
	out := runOnEmulator(t, "grade", 3)
	checkAllOK(t, out, "grade")
}
