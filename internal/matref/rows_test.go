package matref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rowTol is lab 01's tolerance for its bf16 product: the same bf16 inputs on both sides, both
// accumulating in at least float32.
const rowTol = 1e-5

// freivaldsCase builds a random product of bf16 values and its float32 result.
func freivaldsCase(m, n, k int, seed uint64) (p *Product, c []float32, f *RowFreivalds) {
	rng := rand.New(rand.NewPCG(seed, 9))
	p = &Product{M: m, N: n, K: k, Alpha: 1, A: make([]float32, m*k), B: make([]float32, k*n)}
	FillUniform(p.A, seed)
	FillUniform(p.B, seed+1)
	RoundBF16(p.A)
	RoundBF16(p.B)
	c = make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float32 // float32 accumulation, like the GPU
			for l := 0; l < k; l++ {
				s += p.A[i*k+l] * p.B[l*n+j]
			}
			c[i*n+j] = s
		}
	}
	f, err := NewRowFreivalds(p.A, p.B, m, n, k, RowFreivaldsVector(rng, n))
	if err != nil {
		panic(err)
	}
	return p, c, f
}

func TestFreivaldsAcceptsACorrectProduct(t *testing.T) {
	for _, sz := range [][3]int{{1, 1, 1}, {17, 33, 65}, {64, 48, 512}} {
		_, c, f := freivaldsCase(sz[0], sz[1], sz[2], 1)
		rep := f.Check(c, rowTol)
		assert.True(t, rep.OK, "%v: %s", sz, rep.Detail())
		assert.Less(t, rep.RelErr, rowTol/10, "%v: the noise should be far below the tolerance", sz)
	}
}

func TestFreivaldsDetectsASingleWrongEntry(t *testing.T) {
	const m, n, k = 40, 56, 128
	_, c, f := freivaldsCase(m, n, k, 2)
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 50; trial++ {
		idx := rng.IntN(m * n)
		bad := append([]float32(nil), c...)
		// Wrong by a small fraction of a typical entry (|C| ≈ √k/3 ≈ 4 here).
		bad[idx] += 0.05
		rep := f.Check(bad, rowTol)
		require.False(t, rep.OK, "entry %d", idx)
		assert.Equal(t, idx/n, rep.MaxErrAt, "the report names the wrong row")
	}
	bad := append([]float32(nil), c...)
	bad[7] = float32(math.NaN())
	rep := f.Check(bad, rowTol)
	assert.False(t, rep.OK)
	assert.Equal(t, 1, rep.Unwritten)
	// A transposed result is caught too.
	tr := make([]float32, len(c))
	for i := 0; i < m; i++ {
		for j := 0; j < n && j < m; j++ {
			if i < n {
				tr[i*n+j] = c[j*n+i]
			}
		}
	}
	assert.False(t, f.Check(tr, rowTol).OK)
}

func TestSampledEntries(t *testing.T) {
	const m, n, k = 9, 7, 33
	p, c, _ := freivaldsCase(m, n, k, 3)
	at := SampleEntries(m, n, 9, 1)
	assert.Contains(t, at, [2]int{m - 1, n - 1})
	s := ExactSamples(p, at)
	assert.True(t, CheckExactSamples(s, c, n, rowTol).OK)
	c[(m-1)*n+n-1] += 0.01
	rep := CheckExactSamples(s, c, n, rowTol)
	assert.False(t, rep.OK)
	assert.Equal(t, (m-1)*n+n-1, rep.MaxErrAt)
}
