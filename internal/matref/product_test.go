package matref

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// CheckProduct compares every element of a product up to FullCheckLimit multiply-adds, and uses
// Freivalds' check and sampled elements above it; either way a C left unwritten fails.
func TestCheckProductPicksTheCheckBySize(t *testing.T) {
	for _, tc := range []struct {
		m, n, k   int
		freivalds bool
	}{{37, 29, 61, false}, {1024, 1024, FullCheckLimit/(1024*1024) + 1, true}} {
		p := &Product{M: tc.m, N: tc.n, K: tc.k, Alpha: 1, A: make([]float32, tc.m*tc.k), B: make([]float32, tc.k*tc.n)}
		FillUniform(p.A, 1)
		FillUniform(p.B, 2)
		unwritten := make([]float32, tc.m*tc.n)
		for i := range unwritten {
			unwritten[i] = float32(math.NaN())
		}
		rep := CheckProduct(p, unwritten, 3, 1e-5)
		assert.False(t, rep.OK, "%d×%d×%d", tc.m, tc.n, tc.k)
		assert.Equal(t, tc.m*tc.n, rep.Unwritten)
		assert.Equal(t, tc.freivalds, strings.Contains(rep.Method, "Freivalds"), "%d×%d×%d: %s", tc.m, tc.n, tc.k, rep.Method)
		if !tc.freivalds {
			ref, _ := p.Reference()
			out := make([]float32, len(ref))
			for i, r := range ref {
				out[i] = float32(r)
			}
			assert.True(t, CheckProduct(p, out, 3, 1e-5).OK, "a correct product passes")
		}
	}
}
