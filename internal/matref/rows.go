package matref

// Freivalds' test per row with exactly recomputed entries: the check of a bf16 product that lab
// 01 uses for its tensor-core rate, where a wrong row must be named.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kernel-labs/kernellabs/internal/check"
)

// RowFreivaldsVector returns a random vector for Freivalds' test: random signs, magnitudes in
// [1, 2), so that an error in any column of C moves C·r by at least its own size.
func RowFreivaldsVector(rng *rand.Rand, n int) []float64 {
	r := make([]float64, n)
	for i := range r {
		v := 1 + rng.Float64()
		if rng.IntN(2) == 0 {
			v = -v
		}
		r[i] = v
	}
	return r
}

// RowFreivalds holds what the test needs from A and B: u = A·(B·r) for a random r, and the scale
// of each row for the tolerance. Computing it costs two matrix-vector products (O(mk + kn)) instead
// of the O(mnk) product itself, so it scales to any size a GPU can multiply.
type RowFreivalds struct {
	M, N int
	R    []float64 // the random vector (length N)
	U    []float64 // A·(B·r) in float64 (length M)
}

// NewRowFreivalds prepares the test for C = A·B with row-major A (m×k) and B (k×n) that hold bf16
// values: their products are exact in float64, so U is accurate to float64 rounding.
func NewRowFreivalds(a, b []float32, m, n, k int, r []float64) (*RowFreivalds, error) {
	if len(a) != m*k || len(b) != k*n || len(r) != n {
		return nil, fmt.Errorf("freivalds: A has %d elements (want %d×%d), B %d (want %d×%d), r %d (want %d)",
			len(a), m, k, len(b), k, n, len(r), n)
	}
	return &RowFreivalds{M: m, N: n, R: r, U: matVec(a, m, k, matVec(b, k, n, r))}, nil // A·(B·r)
}

// matVec is M·x in float64 for a row-major matrix M of rows×cols.
func matVec(mat []float32, rows, cols int, x []float64) []float64 {
	y := make([]float64, rows)
	ParallelFor(rows, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var s float64
			for j, v := range mat[i*cols : (i+1)*cols] {
				s += float64(v) * x[j]
			}
			y[i] = s
		}
	})
	return y
}

// Check compares C·r (C row-major m×n, computed in float64) with A·(B·r), row by row. Row i fails
// when |(C·r)ᵢ − uᵢ| > tol · Σⱼ|Cᵢⱼ·rⱼ|: the scale is the size of the terms that make up (C·r)ᵢ,
// so rounding noise in C (which grows like √n) stays far below it, while a single entry wrong by
// δ moves (C·r)ᵢ by at least |δ| (|rⱼ| ≥ 1). A NaN or Inf anywhere in C fails the test.
// The report's RelErr is the largest of these row ratios.
func (f *RowFreivalds) Check(c []float32, tol float64) check.Report {
	rep := check.Report{Method: "Freivalds: C·r against A·(B·r) in float64, per row", Tolerance: tol, MaxErrAt: -1}
	if len(c) != f.M*f.N {
		rep.Note = fmt.Sprintf("output has %d elements, want %d×%d", len(c), f.M, f.N)
		return rep
	}
	type rowRes struct {
		ratio, diff, got float64
		nan              int
	}
	res := make([]rowRes, f.M)
	ParallelFor(f.M, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := c[i*f.N : (i+1)*f.N]
			var v, scale float64
			nan := 0
			for j, x := range row {
				xv := float64(x)
				if math.IsNaN(xv) || math.IsInf(xv, 0) {
					nan++
					continue
				}
				term := xv * f.R[j]
				v += term
				scale += math.Abs(term)
			}
			d := math.Abs(v - f.U[i])
			ratio := d / (scale + 1e-300)
			if scale == 0 && d == 0 {
				ratio = 0
			}
			res[i] = rowRes{ratio: ratio, diff: d, got: v, nan: nan}
		}
	})
	rep.Checked = f.M
	for i, r := range res {
		rep.Unwritten += r.nan
		if r.ratio > rep.RelErr || rep.MaxErrAt < 0 {
			rep.RelErr, rep.MaxErrAt = r.ratio, i
		}
		rep.MaxAbsErr = math.Max(rep.MaxAbsErr, r.diff)
		if (r.ratio > tol || r.nan > 0) && len(rep.Mismatches) < check.MaxMismatches {
			rep.Mismatches = append(rep.Mismatches, check.Mismatch{Index: i, Got: r.got, Want: f.U[i]})
		}
	}
	rep.OK = rep.Unwritten == 0 && rep.RelErr <= tol
	switch {
	case rep.Unwritten > 0:
		rep.Note = fmt.Sprintf("%d outputs are NaN or Inf (never written, or computed from bad data)", rep.Unwritten)
	case !rep.OK:
		rep.Note = fmt.Sprintf("row %d: (C·r) differs from A·(B·r) by %.3g of the row's scale", rep.MaxErrAt, rep.RelErr)
	}
	return rep
}

// ExactSample is one output entry recomputed exactly: C[i][j] = Σₖ A[i][k]·B[k][j].
type ExactSample struct {
	I, J  int
	Want  float64 // the exact dot product (to float64 rounding)
	Scale float64 // Σₖ |A[i][k]·B[k][j]|, the scale of the rounding error
}

// ExactSamples recomputes the entries (i, j) listed in at.
func ExactSamples(p *Product, at [][2]int) []ExactSample {
	out := make([]ExactSample, len(at))
	for s, ij := range at {
		out[s].I, out[s].J = ij[0], ij[1]
		out[s].Want, out[s].Scale = p.Entry(ij[0], ij[1])
	}
	return out
}

// CheckExactSamples compares the sampled entries with C (row-major, n columns): each must be
// within tol · Scale of the exact value.
func CheckExactSamples(samples []ExactSample, c []float32, n int, tol float64) check.Report {
	rep := check.Report{Method: "sampled entries recomputed exactly in float64", Tolerance: tol, MaxErrAt: -1}
	rep.Checked = len(samples)
	wrong := 0
	for _, sm := range samples {
		idx := sm.I*n + sm.J
		if idx < 0 || idx >= len(c) {
			rep.Note = fmt.Sprintf("sample (%d, %d) is outside the output", sm.I, sm.J)
			return rep
		}
		got := float64(c[idx])
		d := math.Abs(got - sm.Want)
		if math.IsNaN(got) || math.IsInf(got, 0) {
			rep.Unwritten++
			d = math.Inf(1)
		}
		rel := d / (sm.Scale + 1e-300)
		if rel > rep.RelErr || rep.MaxErrAt < 0 {
			rep.RelErr, rep.MaxErrAt = rel, idx
		}
		if !math.IsInf(d, 0) {
			rep.MaxAbsErr = math.Max(rep.MaxAbsErr, d)
		}
		if rel > tol {
			wrong++
			if len(rep.Mismatches) < check.MaxMismatches {
				rep.Mismatches = append(rep.Mismatches, check.Mismatch{Index: idx, Got: got, Want: sm.Want})
			}
		}
	}
	rep.OK = wrong == 0
	if wrong > 0 {
		rep.Note = fmt.Sprintf("%d of %d sampled entries are off by more than %.0e of their scale", wrong, len(samples), tol)
	}
	return rep
}
