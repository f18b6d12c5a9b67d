package gemm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
)

// A peer computes the same product as the lab's kernels: the same alpha and beta (0 for beta0
// problems), the suite's precision, and the lab's own work for its rates.
func TestPeerProblemMatchesTheKernelsProblem(t *testing.T) {
	m := labtest.Manifest(t)
	tests := []struct {
		suite string
		p     lab.Problem
		beta  float64
		in    string
	}{
		{"fp32", lab.Problem{Name: "a", Params: map[string]int64{"m": 64, "n": 96, "k": 80}}, Beta, "fp32"},
		{"bf16", lab.Problem{Name: "b", Params: map[string]int64{"m": 129, "n": 130, "k": 131, "beta0": 1}}, 0, "bf16"},
	}
	for _, tc := range tests {
		s := m.Suite(tc.suite)
		require.NotNil(t, s)
		params, work, err := Lab{}.PeerProblem(s, tc.p)
		require.NoError(t, err)
		sh, err := ShapeOf(tc.p)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"m": sh.M, "n": sh.N, "k": sh.K, "alpha": Alpha, "beta": tc.beta, "inputs": tc.in}, params)
		prec := lab.PrecisionOf(s)
		assert.Equal(t, WorkOf(prec, sh, prec.Bytes()), work, "peers write C in the inputs' precision")
	}
	_, _, err := Lab{}.PeerProblem(m.Suite("fp32"), lab.Problem{Name: "empty", Params: map[string]int64{"m": 0}})
	assert.Error(t, err)
}
