package check

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAgainst(t *testing.T) {
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
			r := Against(tc.out, ref, tc.tol)
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

func TestAgainstRelativeError(t *testing.T) {
	r := Against([]float64{3, 4.5}, []float64{3, 4}, 1)
	// ‖out − ref‖ / ‖ref‖ = 0.5 / 5
	assert.InDelta(t, 0.1, r.RelErr, 1e-12)
	assert.InDelta(t, 0.5, r.MaxAbsErr, 1e-12)
	assert.Equal(t, 1, r.MaxErrAt)
	assert.False(t, Against([]float32{1}, []float64{1, 2}, 1).OK, "a length mismatch fails")
	assert.True(t, Against([]float32{0, 0}, []float64{0, 0}, 0).OK, "a zero reference needs zero output")
	assert.False(t, Against([]float32{0, 1e-9}, []float64{0, 0}, 0.1).OK)
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
	assert.Equal(t, "the output could not be read", r.String())
}

// A failure says once what was wrong, with the error figures where there are finite outputs,
// and lists the first wrong elements; an expected NaN is not a wrong element.
func TestFailureText(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		out     []float32
		ref     []float64
		want    []string
		wantNot []string
		ok      bool
	}{
		{"wrong values", []float32{1, 2, 30}, []float64{1, 2, 3}, []string{
			"relative error above the tolerance; rel_err 7.22e+00 (tol 1e-05), max_abs_err 2.70e+01 at [2]",
			"first wrong elements (index: got, want):\n    [2]: 30, 3"}, []string{"WRONG"}, false},
		{"every output NaN", []float32{float32(nan)}, []float64{1}, []string{"1 of 1 outputs are NaN or Inf"},
			[]string{"rel_err", "WRONG"}, false},
		{"some outputs NaN", []float32{float32(nan), 2}, []float64{1, 2}, []string{
			"1 of 2 outputs are NaN or Inf (never written, or computed from bad data); rel_err 0.00e+00 (tol 1e-05), max_abs_err 0.00e+00 at [1] over the 1 finite outputs",
			"[0]: NaN, 1"}, nil, false},
		{"an expected NaN", []float32{float32(nan), 2}, []float64{nan, 2}, []string{"ok: rel_err 0.00e+00"}, []string{"[0]"}, true},
		{"a number where NaN is expected", []float32{5, 2}, []float64{nan, 2}, []string{"1 of 2 outputs are numbers where the reference is NaN", "[0]: 5, NaN"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Against(tc.out, tc.ref, 1e-5)
			assert.Equal(t, tc.ok, r.OK)
			d := r.Detail()
			for _, w := range tc.want {
				assert.Contains(t, d, w)
			}
			for _, w := range tc.wantNot {
				assert.NotContains(t, d, w)
			}
			assert.NotContains(t, d, "NaN, NaN", "an expected NaN is never listed as wrong")
		})
	}
	// Figures leave the headline to the caller.
	r := Against([]float32{1, 2, 30}, []float64{1, 2, 3}, 1e-5)
	assert.True(t, strings.HasPrefix(r.Figures(), "rel_err 7.22e+00"))
}

func TestAllShowsTheWorstOfItsChecks(t *testing.T) {
	ok := Report{OK: true, Method: "rows", Checked: 8, RelErr: 1e-7, MaxAbsErr: 1e-6, MaxErrAt: 3, Tolerance: 1e-5}
	bad := Report{OK: false, Method: "samples", Checked: 4, RelErr: 0.5, MaxAbsErr: 2, MaxErrAt: 9, Tolerance: 1e-5,
		Unwritten: 1, Note: "broken", Mismatches: []Mismatch{{Index: 9, Got: 2, Want: 0}}}
	r := All(ok, bad)
	assert.False(t, r.OK)
	assert.Equal(t, 0.5, r.RelErr)
	assert.Equal(t, 9, r.MaxErrAt)
	assert.Equal(t, 2.0, r.MaxAbsErr)
	assert.Equal(t, 12, r.Checked)
	assert.Equal(t, 1, r.Unwritten)
	assert.Equal(t, "rows; and samples", r.Method)
	assert.Equal(t, "broken", r.Note)
	assert.Len(t, r.Mismatches, 1)
	assert.True(t, All(ok, ok).OK)
}

func TestRelErr(t *testing.T) {
	assert.Equal(t, 0.0, RelErr(0, 0))
	assert.True(t, math.IsInf(RelErr(1, 0), 1))
	assert.Equal(t, 0.5, RelErr(1, 4))
}
