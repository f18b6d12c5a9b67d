package overlap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/ranks"
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
