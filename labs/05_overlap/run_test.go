package overlap_test

// The lab through the real engine on the CPU emulator with two and three emulated devices, as
// `labrun 05 --backend emu` runs it: both suites (AllGather+GEMM and GEMM+ReduceScatter) and the
// exercise's reference solution, kernels built, every rank's output checked, timed. Skipped when
// g++ or Boost.Context is missing, or with -short.

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
	overlap "github.com/kernel-labs/kernellabs/labs/05_overlap"
)

func TestMain(m *testing.M) { labtest.Main(m) }

// checkAllOK is labtest.CheckAllOK, except that the wgmma kernels of the bf16 suites (kernels 06
// and 07, inline PTX for sm_90a) are skipped on the emulator, with its emu_skip reason; each of its
// entries is counted as checked. The rest of the outcome is checked as usual.
func checkAllOK(t *testing.T, out *lab.Outcome, set string) {
	t.Helper()
	kept, res := *out, *out.Results
	res.Entries = nil
	for _, e := range out.Results.Entries {
		if v := out.Manifest.Suite(e.Suite).Variant(e.Variant); v != nil && overlap.HopperOnly(v.Entry) {
			assert.Equal(t, results.StatusSkipped, e.Status, "%s/%s %s: a wgmma kernel on the emulator", e.Suite, e.Variant, e.Problem)
			assert.Contains(t, e.Error, v.EmuSkip, "%s/%s %s", e.Suite, e.Variant, e.Problem)
			e.Status = results.StatusOK
		}
		res.Entries = append(res.Entries, e)
	}
	kept.Results = &res
	labtest.CheckAllOK(t, &kept, set)
}

// Two, three and four rank processes started by labrun. At three ranks 100, 129 and 130 rows
// split unevenly, the 3-row problem has one row per rank, and the fused_signal consumers wait on
// two peers' flags; in gemm_rs, K = 50, 17 and 7 split unevenly too, every reduction pulls from
// two peers, and the fused epilogues of three ranks add into the same outputs. Two ranks on the
// grade set: the edge cases (3×5×7, tiles cut at every edge).
func TestEmulatorRanks(t *testing.T) {
	for _, tc := range []struct {
		ranks int
		set   string
	}{{2, "emu"}, {2, "grade"}, {3, "emu"}, {3, "grade"}, {4, "emu"}} {
		t.Run(fmt.Sprintf("%d ranks, %s", tc.ranks, tc.set), func(t *testing.T) {
			checkAllOK(t, labtest.RunOnEmulator(t, overlap.LabDir, tc.set, tc.ranks), tc.set)
		})
	}
}

// A world of one rank in labrun's own process (--in-process --ranks 1, as labrun profile runs a
// lab of ranks under ncu); more ranks than one process can hold are refused.
func TestEmulatorInProcessWorldOfOne(t *testing.T) {
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	out := labtest.RunOnEmulatorWith(t, root, overlap.LabDir, "emu", 1, func(o *lab.Options) { o.InProcess = true })
	checkAllOK(t, out, "emu")
	_, err = lab.Run(context.Background(), lab.Options{Root: root, Lab: overlap.LabDir, Backend: "emu", Set: "emu", NoSave: true,
		InProcess: true, Ranks: 2})
	var usage *lab.UsageError
	require.ErrorAs(t, err, &usage)
	assert.Contains(t, err.Error(), "add --ranks 1")
}

// The ranks as a launcher starts them: separate labrun processes that read their rank from
// torchrun's or Open MPI's variables and meet at the rendezvous (TCP, or a folder).
func TestEmulatorStartedByLaunchers(t *testing.T) {
	for _, tc := range []struct {
		launcher string
		ranks    int
	}{{labtest.Torchrun, 2}, {labtest.OpenMPI, 3}} {
		t.Run(tc.launcher, func(t *testing.T) {
			es := labtest.RunAsRanks(t, overlap.LabDir, "emu", tc.ranks, tc.launcher)
			checkAllOK(t, labtest.OutcomeOf(t, overlap.LabDir, es), "emu")
		})
	}
}
