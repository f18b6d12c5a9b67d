package check

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompare(t *testing.T) {
	ref := []float64{1, -2, 3, 4}
	nan := float32(math.NaN())
	tests := []struct {
		name      string
		out       []float32
		tol       float64
		ok        bool
		unwritten int
		mismatch  int // first mismatching index, -1 for none
	}{
		{"exact", []float32{1, -2, 3, 4}, 1e-6, true, 0, -1},
		{"within tolerance", []float32{1, -2, 3, 4.000001}, 1e-5, true, 0, -1},
		{"one wrong", []float32{1, -2, 3.5, 4}, 1e-5, false, 0, 2},
		{"unwritten (poison left)", []float32{1, nan, 3, 4}, 1e-2, false, 1, 1},
		{"all zeros never pass", []float32{0, 0, 0, 0}, 0.5, false, 0, 2}, // listed: off by more than tol·max|ref|
		{"infinity", []float32{1, -2, float32(math.Inf(1)), 4}, 1e-2, false, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Compare(tc.out, ref, tc.tol)
			assert.Equal(t, tc.ok, r.OK, r.String())
			assert.Equal(t, tc.unwritten, r.Unwritten)
			assert.Equal(t, 4, r.Checked)
			if tc.mismatch < 0 {
				assert.Empty(t, r.Mismatches)
			} else {
				assert.NotEmpty(t, r.Mismatches)
				assert.Equal(t, tc.mismatch, r.Mismatches[0].Index)
				assert.Contains(t, r.Detail(), "first wrong elements")
			}
		})
	}
}

func TestCompareRelativeError(t *testing.T) {
	r := Compare([]float64{3, 4.5}, []float64{3, 4}, 1)
	// ‖out − ref‖ / ‖ref‖ = 0.5 / 5
	assert.InDelta(t, 0.1, r.RelErr, 1e-12)
	assert.InDelta(t, 0.5, r.MaxAbsErr, 1e-12)
	assert.Equal(t, 1, r.MaxErrAt)
	assert.False(t, Compare([]float32{1}, []float64{1, 2}, 1).OK, "a length mismatch fails")
	assert.True(t, Compare([]float32{0, 0}, []float64{0, 0}, 0).OK, "a zero reference needs zero output")
	assert.False(t, Compare([]float32{0, 1e-9}, []float64{0, 0}, 0.1).OK)
}

func TestExact(t *testing.T) {
	assert.True(t, Exact([]uint32{1, 2, 3}, []uint32{1, 2, 3}).OK)
	r := Exact([]uint32{1, 9, 3, 8}, []uint32{1, 2, 3, 4})
	assert.False(t, r.OK)
	assert.Equal(t, 1, r.MaxErrAt)
	assert.Equal(t, "2 of 4 elements differ", r.Note)
	assert.Equal(t, Mismatch{Index: 1, Got: 9, Want: 2}, r.Mismatches[0])
	assert.False(t, Exact([]uint32{1}, []uint32{1, 2}).OK)
}

func TestFail(t *testing.T) {
	r := Fail("freivalds", "the output could not be read")
	assert.False(t, r.OK)
	assert.Contains(t, r.String(), "WRONG")
	assert.Contains(t, r.String(), "could not be read")
}
