package overlap

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/ranks"
	"github.com/kernel-labs/kernellabs/internal/results"
)

func TestPeerVariants(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	for _, suite := range []string{SuiteAGGemm, SuiteGemmRS} {
		v := m.Suite(suite).Variant("torch_nccl")
		require.NotNil(t, v, suite)
		assert.True(t, v.IsPeer(), suite)
		assert.Equal(t, "peers/torch_nccl.py", v.Peer)
	}
}

// The peer's problem is the lab's: this rank's blocks as RowsOf and ColsOf split them, the work
// of the lab's own variants, and the nccl_cublas baseline's skip for blocks NCCL cannot take.
func TestPeerRankProblem(t *testing.T) {
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	ag, rs := m.Suite(SuiteAGGemm), m.Suite(SuiteGemmRS)
	p := lab.Problem{Name: "x", Params: map[string]int64{"m": 8, "n": 3, "k": 10}}

	params, work, err := Lab{}.PeerRankProblem(ag, p, ranks.World{Rank: 1, Size: 4})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"layer": SuiteAGGemm, "m": 8, "n": 3, "k": 10, "row0": 2, "rows": 2, "col0": 3, "cols": 3}, params)
	assert.Equal(t, WorkOf(Shape{M: 8, N: 3, K: 10}, 4), work)

	params, work, err = Lab{}.PeerRankProblem(rs, p, ranks.World{Rank: 3, Size: 4})
	require.NoError(t, err)
	assert.Equal(t, SuiteGemmRS, params["layer"])
	assert.Equal(t, []any{6, 2, 8, 2}, []any{params["row0"], params["rows"], params["col0"], params["cols"]}, "10 columns over 4 ranks: 3, 3, 2, 2")
	assert.Equal(t, RSWorkOf(Shape{M: 8, N: 3, K: 10}), work)

	_, _, err = Lab{}.PeerRankProblem(ag, p, ranks.World{Rank: 0, Size: 3})
	why, skipped := lab.SkipReason(err)
	require.True(t, skipped, "%v", err)
	assert.Contains(t, why, "M = 8 is not a multiple of 3 ranks")

	_, _, err = Lab{}.PeerRankProblem(rs, lab.Problem{Name: "y", Params: map[string]int64{"m": 4, "n": 3, "k": 1}}, ranks.World{Size: 2})
	_, skipped = lab.SkipReason(err)
	assert.True(t, skipped, "K = 1 over 2 ranks: %v", err)

	_, _, err = Lab{}.PeerRankProblem(ag, lab.Problem{Name: "z"}, ranks.World{Size: 1})
	assert.Error(t, err)
}

// TestTorchPeerUnderAFakeTorch runs peers/torch_nccl.py as labrun starts one rank of it, under the
// engine's fake torch (internal/lab/testdata/faketorch: a world of one, small tensors in Python,
// matmul advancing the events' clock by 0.25 ms): the script's own logic — the blocks, the layer,
// the poison, the check before and after timing — on both suites, where torch is not installed.
func TestTorchPeerUnderAFakeTorch(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed here: the peer's Python side cannot be tested")
	}
	fake, err := filepath.Abs("../../internal/lab/testdata/faketorch")
	require.NoError(t, err)
	helper, err := filepath.Abs("../common/peers")
	require.NoError(t, err)
	m, err := lab.LoadManifest(".")
	require.NoError(t, err)
	run := func(t *testing.T, req lab.PeerRequest) lab.PeerReply {
		in, err := json.Marshal(req)
		require.NoError(t, err)
		cmd := exec.Command("python3", "peers/torch_nccl.py")
		cmd.Env = append(os.Environ(), "PYTHONPATH="+fake+string(os.PathListSeparator)+helper, "PYTHONDONTWRITEBYTECODE=1")
		cmd.Stdin = strings.NewReader(string(in))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, stderr.String())
		r, err := lab.ParsePeerReply(out)
		require.NoError(t, err, string(out))
		return r
	}
	p := lab.Problem{Name: "4×3×5", Params: map[string]int64{"m": 4, "n": 3, "k": 5}}
	world := ranks.World{Rank: 0, Size: 1, LocalSize: 1}
	rk := &lab.PeerRanks{Size: 1, LocalSize: 1, InitMethod: "tcp://127.0.0.1:1", TimeoutS: 10, BatchTargetMs: 2, MaxBatch: 1000}
	for _, suite := range []string{SuiteAGGemm, SuiteGemmRS} {
		t.Run(suite, func(t *testing.T) {
			params, _, err := Lab{}.PeerRankProblem(m.Suite(suite), p, world)
			require.NoError(t, err)
			// JSON numbers, as the script reads them from labrun.
			b, _ := json.Marshal(params)
			require.NoError(t, json.Unmarshal(b, &params))
			r := run(t, lab.PeerRequest{Suite: suite, Params: params, Seed: 3, Tolerance: 1e-5, Bench: lab.PeerBench{Warmup: 1, MinReps: 3, MaxReps: 5}, Ranks: rk})
			require.Equal(t, results.StatusOK, r.Status, r.Error)
			assert.Contains(t, r.Check.Method, "the last timed batch's output")
			assert.Equal(t, 4*3, r.Check.Checked, "this rank's C, all of it on one rank")
			assert.Equal(t, 8, r.Batch, "2 ms batches of one 0.25 ms matmul")
			assert.Len(t, r.SamplesMs, 3, "min_reps, the budget being 0")
		})
	}
	t.Run("not in a lab of ranks", func(t *testing.T) {
		params, _, err := Lab{}.PeerRankProblem(m.Suite(SuiteAGGemm), p, world)
		require.NoError(t, err)
		r := run(t, lab.PeerRequest{Params: params, Seed: 3, Tolerance: 1e-5, Bench: lab.PeerBench{Warmup: 1, MinReps: 1, MaxReps: 1}})
		assert.Equal(t, results.StatusSkipped, r.Status)
		assert.Contains(t, r.Error, "one process per rank")
	})
}
