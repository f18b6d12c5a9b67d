package grouped

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
)

// A peer gets the groups exactly as the lab's kernels do (a MoE problem's sizes come from its
// seed, which the Python side cannot reproduce), and its rates come from the lab's own work.
func TestPeerProblemCarriesTheGroups(t *testing.T) {
	m := labtest.Manifest(t)
	s := m.Suite("bf16_moe")
	require.NotNil(t, s)
	p := lab.Problem{Name: "moe", Params: map[string]int64{"experts": 8, "tokens": 300, "dist": 1, "empty": 2, "n": 72, "k": 40}}
	params, work, err := Lab{}.PeerProblem(s, p)
	require.NoError(t, err)
	shapes, err := GroupsOf(p)
	require.NoError(t, err)

	raw, err := json.Marshal(params) // what the script reads
	require.NoError(t, err)
	var got struct {
		Groups   [][3]int `json:"groups"`
		SharedNK bool     `json:"shared_nk"`
		Data     string   `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Len(t, got.Groups, len(shapes))
	for i, g := range shapes {
		assert.Equal(t, [3]int{g.M, g.N, g.K}, got.Groups[i])
	}
	assert.True(t, got.SharedNK)
	assert.Equal(t, "bf16", got.Data)
	assert.Equal(t, totalFLOPs(shapes), work.FLOPs)

	_, _, err = Lab{}.PeerProblem(s, lab.Problem{Name: "bad", Params: map[string]int64{"g": 1}})
	assert.ErrorContains(t, err, "group 0 has no m0")
}
