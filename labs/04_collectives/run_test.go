package collectives_test

// The lab through the real engine on the CPU emulator with two emulated devices, exactly as
// `labrun 04 --backend emu` runs it: kernels built, every rank's output checked, timed. Skipped
// when g++ or Boost.Context is missing, or with -short.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
	collectives "github.com/kernel-labs/kernellabs/labs/04_collectives"
)

func TestMain(m *testing.M) { labtest.Main(m) }

func runOnEmulator(t *testing.T, set string, devices int) *lab.Outcome {
	return labtest.RunOnEmulator(t, collectives.LabDir, set, devices)
}

// checkAllOK is labtest.CheckAllOK, except that kernel 06 refuses the uneven all-to-all's
// problems whose blocks differ in size, and kernel 13 the uneven reduce-scatter's whose shards
// do (and only those): their entries there are skipped, with the driver's reason; and the kernels on NCCL's device API (07, 08) are skipped on the emulator,
// which has no form of that API. The rest of the outcome is checked as usual.
func checkAllOK(t *testing.T, out *lab.Outcome, set string) {
	t.Helper()
	kept := *out
	res := *out.Results
	res.Entries = nil
	for _, e := range out.Results.Entries {
		if v := out.Manifest.Suite(e.Suite).Variant(e.Variant); v != nil && collectives.OnNCCLDevice(v) {
			assert.Equal(t, results.StatusSkipped, e.Status, "%s/%s %s: NCCL's device API on the emulator", e.Suite, e.Variant, e.Problem)
			assert.Contains(t, e.Error, "no emulator form", "%s/%s %s", e.Suite, e.Variant, e.Problem)
			res.Entries = append(res.Entries, okEntry(e))
			continue
		}
		op := collectives.OpOf(out.Manifest.Suite(e.Suite))
		if e.Status == results.StatusSkipped && (op == collectives.AllToAllV && e.Variant == "a2a_pull" ||
			op == collectives.ReduceScatterV && e.Variant == "direct_bf16") {
			assert.Regexp(t, "takes (blocks|shards) of equal size", e.Error, "%s: kernels 06 and 13 refuse only unequal sizes", e.Problem)
			p := problemOf(t, out, e.Suite, set, e.Problem)
			assert.True(t, p.Int(collectives.ParamUneven, 0) != 0 || p.Int(collectives.ParamEmptyPct, 0) != 0,
				"%s has equal sizes, which the kernel must run", e.Problem)
			res.Entries = append(res.Entries, okEntry(e))
			continue
		}
		res.Entries = append(res.Entries, e)
	}
	kept.Results = &res
	labtest.CheckAllOK(t, &kept, set)
}

// okEntry stands for a refusal that checkAllOK has checked, so that CheckAllOK still counts one
// entry per kernel variant × problem.
func okEntry(e results.Entry) results.Entry {
	e.Status, e.Error = results.StatusOK, ""
	return e
}

func problemOf(t *testing.T, out *lab.Outcome, suite, set, name string) lab.Problem {
	t.Helper()
	ps, err := out.Manifest.Suite(suite).ProblemsFor(set)
	require.NoError(t, err)
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	require.Failf(t, "no such problem", "%s in %s/%s", name, suite, set)
	return lab.Problem{}
}

// Two, three and four rank processes started by labrun: at three ranks the two-shot and ring
// chunks no longer divide the 1001 or 3 elements evenly, and with one element two of the three
// ring chunks are empty.
func TestEmulatorRanks(t *testing.T) {
	for _, tc := range []struct {
		ranks int
		set   string
	}{{2, "emu"}, {3, "grade"}, {4, "emu"}} {
		t.Run(fmt.Sprintf("%d ranks, %s", tc.ranks, tc.set), func(t *testing.T) {
			out := runOnEmulator(t, tc.set, tc.ranks)
			checkAllOK(t, out, tc.set)
			suites := map[string]bool{}
			for _, e := range out.Results.Entries {
				suites[e.Suite] = true
				if e.Status == results.StatusOK {
					assert.EqualValues(t, tc.ranks, e.Data["ranks"], "%s/%s ran on every rank", e.Variant, e.Problem)
				}
			}
			for _, s := range []string{"allreduce", "allgather", "reduce_scatter", "all_to_all", "all_to_allv",
				"bf16_allreduce", "bf16_allgather", "bf16_reduce_scatter", "bf16_reduce_scatter_v", "bf16_all_to_all", "moe_dispatch", "moe_combine"} {
				assert.True(t, suites[s], "suite %s ran", s)
			}
		})
	}
}

// The ranks as a launcher starts them: separate labrun processes that read their rank from
// torchrun's or Open MPI's variables and meet at the rendezvous (TCP, or a folder).
func TestEmulatorStartedByLaunchers(t *testing.T) {
	for _, tc := range []struct {
		launcher string
		ranks    int
	}{{labtest.Torchrun, 3}, {labtest.OpenMPI, 2}} {
		t.Run(tc.launcher, func(t *testing.T) {
			es := labtest.RunAsRanks(t, collectives.LabDir, "emu", tc.ranks, tc.launcher)
			checkAllOK(t, labtest.OutcomeOf(t, collectives.LabDir, es), "emu")
		})
	}
}
