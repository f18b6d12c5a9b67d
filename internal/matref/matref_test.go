package matref

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBF16Rounding(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{1 + 1.0/256, 0x3f80}, // a tie: rounds to even (down)
		{math.Float32frombits(0x3f818000), 0x3f82}, // a tie: rounds to even (up)
		{math.Float32frombits(0x3f808001), 0x3f81}, // above the tie: up
		{math.MaxFloat32, 0x7f80},                  // beyond bf16's range: infinity
		{float32(math.Inf(-1)), 0xff80},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, BF16FromFloat32(tc.in), "%g", tc.in)
	}
	nan := BF16FromFloat32(float32(math.NaN()))
	assert.True(t, math.IsNaN(float64(Float32FromBF16(nan))))
	assert.Equal(t, float32(1.5), Float32FromBF16(BF16FromFloat32(1.5)))
}

func TestProductReferenceAndEntry(t *testing.T) {
	// C = 2·A·B + 0.5·C0 for a 2×3 times 3×2 product, worked by hand.
	p := &Product{M: 2, N: 2, K: 3, Alpha: 2, Beta: 0.5,
		A:  []float32{1, 2, 3, 4, 5, 6},
		B:  []float32{1, -1, 0, 2, -1, 1},
		C0: []float32{4, 4, -2, 0}}
	ref, scale := p.Reference()
	// A·B = [[1-3, -1+4+3], [4-6, -4+10+6]] = [[-2, 6], [-2, 12]]
	assert.Equal(t, []float64{-4 + 2, 12 + 2, -4 - 1, 24}, ref)
	assert.Equal(t, 2*(1+0+3)+2.0, scale[0])
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			w, s := p.Entry(i, j)
			assert.Equal(t, ref[i*2+j], w)
			assert.Equal(t, scale[i*2+j], s)
		}
	}
	assert.True(t, ElementOK(-2+1e-9, -2, 1, 1e-6))
	assert.False(t, ElementOK(-2.1, -2, 1, 1e-6))
}

func TestSampleEntries(t *testing.T) {
	s := SampleEntries(100, 50, 20, 1)
	require.Len(t, s, 20)
	assert.Equal(t, [2]int{0, 0}, s[0])
	assert.Contains(t, s, [2]int{99, 49})
	seen := map[[2]int]bool{}
	for _, e := range s {
		assert.False(t, seen[e], "no element twice")
		seen[e] = true
		assert.True(t, e[0] < 100 && e[1] < 50)
	}
	assert.Equal(t, s, SampleEntries(100, 50, 20, 1), "deterministic in the seed")
	assert.Empty(t, SampleEntries(0, 5, 3, 1))
	assert.Len(t, SampleEntries(1, 1, 8, 1), 1)
}

func TestParallelForCoversEveryIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 1000} {
		hits := make([]int32, n)
		ParallelFor(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				hits[i]++
			}
		})
		for i, h := range hits {
			assert.Equal(t, int32(1), h, "n=%d i=%d", n, i)
		}
	}
}

func TestSplitMix64MatchesTheReferenceGenerator(t *testing.T) {
	// The first outputs of SplitMix64 seeded with 0 (the reference C implementation).
	want := []uint64{0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F}
	for i, w := range want {
		assert.Equal(t, w, SplitMix64(0, uint64(i)), "output %d", i)
	}
}

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
		if tc.freivalds {
			assert.Contains(t, rep.Method, "Freivalds", "%d×%d×%d", tc.m, tc.n, tc.k)
		} else {
			assert.NotContains(t, rep.Method, "Freivalds", "%d×%d×%d: every element", tc.m, tc.n, tc.k)
			ref, _ := p.Reference()
			out := make([]float32, len(ref))
			for i, r := range ref {
				out[i] = float32(r)
			}
			assert.True(t, CheckProduct(p, out, 3, 1e-5).OK, "a correct product passes")
		}
	}
}

// TestCheckFullForgivesCancellationNotErrors: a 1×1×1 product whose two terms nearly cancel,
// computed correctly in fp32, passes (its error is the rounding of terms 400 times larger than the
// result); the same output off by 1e-4 of the terms still fails, through the norm and the element.
func TestCheckFullForgivesCancellationNotErrors(t *testing.T) {
	p := Product{M: 1, N: 1, K: 1, Alpha: 1, Beta: 1, A: []float32{0.7131}, B: []float32{0.9}, C0: []float32{-0.64}}
	ref, scale := p.Reference()
	require.InDelta(t, 0.00179, ref[0], 1e-6)
	fp32 := []float32{float32(float64(float32(0.7131*0.9)) - 0.64)}
	rep := CheckFull(fp32, ref, scale, p.Terms(), 1e-5)
	assert.True(t, rep.OK, rep.Detail())

	// Against ‖ref‖ alone this correct output would be 1.7e-5 off: more than the tolerance.
	assert.Greater(t, math.Abs(float64(fp32[0])-ref[0])/math.Abs(ref[0]), 1e-5)

	wrong := []float32{float32(ref[0] + 1e-4)}
	rep = CheckFull(wrong, ref, scale, p.Terms(), 1e-5)
	assert.False(t, rep.OK)
	assert.NotEmpty(t, rep.Mismatches)
}
