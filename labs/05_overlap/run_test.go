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

// The timeline suite on the emulator at two and three ranks: rank 0's records of every schedule,
// checked by what each schedule must show whatever the emulator's clock resolution (its timer is
// the host's steady clock, so only orderings with ≤ are relied on): every GEMM tile leaves one
// compute record, the launches are counted, and no GEMM tile starts before the copy of the rows
// it needs ended — all of them in sequential (one stream), the last peer's block in chunked (after
// the last copy's event) — and no fused wait ends before the producers' copies of one block
// (a producer takes its record before it raises the flag).
func TestEmulatorTimelines(t *testing.T) {
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d ranks", n), func(t *testing.T) {
			out := labtest.RunOnEmulatorWith(t, root, overlap.LabDir, "emu", n, func(o *lab.Options) {
				o.Suites = []string{"timeline"}
			})
			assert.Zero(t, out.Failures)
			problems, err := out.Manifest.Suite("timeline").ProblemsFor("emu")
			require.NoError(t, err)
			shapes := map[string]overlap.Shape{}
			for _, p := range problems {
				shapes[p.Name], err = overlap.ShapeOf(p)
				require.NoError(t, err)
			}
			seen := 0
			for _, e := range out.Results.Entries {
				require.Equal(t, results.StatusOK, e.Status, "%s %s: %s", e.Variant, e.Problem, e.Error)
				tl, ok := results.TimelineOf(&e)
				require.True(t, ok, "%s %s has a timeline", e.Variant, e.Problem)
				seen++
				name := e.Variant + " " + e.Problem
				assert.Equal(t, overlap.TimelineKinds, tl.Kinds)
				assert.Zero(t, tl.Missing, "%s: no record lost", name)
				byKind := map[int64][][4]int64{}
				lastCopy := int64(-1)
				for _, r := range tl.Tiles {
					assert.True(t, r[0] >= 0 && r[0] < int64(tl.SMs), "%s: SM %d of %d", name, r[0], tl.SMs)
					assert.LessOrEqual(t, r[1], r[2], "%s: a record ends after it starts", name)
					byKind[r[3]] = append(byKind[r[3]], r)
					if r[3] == 1 {
						lastCopy = max(lastCopy, r[2])
					}
				}
				compute, copies := byKind[0], byKind[1]
				require.NotEmpty(t, copies, "%s: the peers' rows are copied", name)
				afterCopies := 0
				for _, r := range compute {
					if r[1] >= lastCopy {
						afterCopies++
					}
				}
				sh := shapes[e.Problem]
				switch e.Variant {
				case overlap.VarSequential:
					assert.Equal(t, 2, tl.Launches)
					assert.Len(t, compute, overlap.Tiles(sh, 1), "%s: a record per tile of the GEMM over A_full", name)
					assert.Equal(t, len(compute), afterCopies, "%s: the GEMM starts after the all-gather", name)
				case overlap.VarChunked:
					assert.Equal(t, 2*n-1, tl.Launches)
					assert.Len(t, compute, overlap.Tiles(sh, n), name)
					last := overlap.Tiles(overlap.Shape{M: overlap.RowsOf(n-1, sh.M, n), N: sh.N, K: sh.K}, 1)
					assert.GreaterOrEqual(t, afterCopies, last, "%s: the last peer's tiles start after every copy", name)
				case overlap.VarFusedSignal:
					assert.Equal(t, 1, tl.Launches)
					assert.Len(t, compute, overlap.Tiles(sh, n), name)
					perBlock := len(copies) / (n - 1) // every producer copies its share of every peer's block
					for _, w := range byKind[2] {
						done := 0
						for _, c := range copies {
							if c[2] <= w[2] {
								done++
							}
						}
						assert.GreaterOrEqual(t, done, perBlock, "%s: a wait ends after a block's copies", name)
					}
				default:
					t.Errorf("unexpected variant %s in the timeline suite", e.Variant)
				}
			}
			assert.Equal(t, 3*len(problems), seen, "three schedules × the emulator problems")
		})
	}
}
