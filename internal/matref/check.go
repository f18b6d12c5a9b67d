package matref

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/kernel-labs/kernellabs/internal/check"
)

// CheckFull checks every element of out against the float64 reference: the relative error
// ‖out − ref‖₂/‖ref‖₂ must be within tol, no element may be NaN or Inf (the poison), and no element
// may be off by more than tol times its own error scale (which catches a single wrong element that
// the norm would hide). terms is how many products and addends each element sums (K, plus one for
// β·C, one for a bias): see CheckAt for what it bounds.
func CheckFull(out []float32, ref, scale []float64, terms int, tol float64) check.Report {
	return CheckAt(out, nil, ref, scale, terms, tol)
}

// CheckAt is CheckFull on the elements of out at the indices at (all of out when at is nil):
// ref and scale hold their references in the same order, and the report names elements by their
// index in out.
//
// The norm's denominator Σ ref² is floored at Σ scale²/terms, the size that a sum of that many
// terms of random signs is expected to have (and never more than it has on random inputs, as
// (E|t|)² ≤ E t²). Without the floor, an output whose few terms happen to cancel (a 1×1×1 product
// with α·a·b ≈ −β·c) fails by the rounding of terms far larger than itself, on a correct kernel;
// the test of every element against tol × its scale still applies.
func CheckAt(out []float32, at []int, ref, scale []float64, terms int, tol float64) check.Report {
	t := NewTally(tol)
	t.R.Method = "every element against a float64 CPU reference"
	floor := 0.0
	for k := range ref {
		i := k
		if at != nil {
			i = at[k]
		}
		g, w := float64(out[i]), ref[k]
		floor += scale[k] * scale[k]
		if math.IsNaN(g) || math.IsInf(g, 0) {
			t.R.Unwritten++
			t.Mismatch(i, g, w)
			continue
		}
		t.Element(i, g, w, scale[k])
	}
	r := t.R
	r.Checked = len(ref)
	r.RelErr = check.RelErr(t.Num, math.Max(t.Den, floor/float64(max(terms, 1))))
	r.OK = r.Unwritten == 0 && t.Bad == 0 && r.RelErr <= tol
	r.Note = notes(r.Unwritten, t.Bad, len(ref))
	return r
}

// Tally adds up an elementwise comparison over a whole output, pieces of one (lab 03's groups) or
// sampled elements: the sums of the relative error, the largest error and where, and the elements
// off by more than the tolerance times their error scale.
type Tally struct {
	R        check.Report // Tolerance, MaxAbsErr, MaxErrAt, Mismatches so far
	Num, Den float64      // Σ (got − want)², Σ want² of the elements added with Element
	Bad      int          // elements beyond the tolerance
}

// NewTally starts a tally under tolerance tol.
func NewTally(tol float64) *Tally { return &Tally{R: check.Report{Tolerance: tol, MaxErrAt: -1}} }

// Sample checks the element at index i of the output against want within tol × scale, without
// adding to the sums (Freivalds' check estimates those).
func (t *Tally) Sample(i int, got, want, scale float64) {
	if ad := math.Abs(got - want); ad > t.R.MaxAbsErr || t.R.MaxErrAt < 0 {
		t.R.MaxAbsErr, t.R.MaxErrAt = ad, i
	}
	if !ElementOK(got, want, scale, t.R.Tolerance) {
		t.Bad++
		t.Mismatch(i, got, want)
	}
}

// Element is Sample, and adds the element to the sums of the relative error.
func (t *Tally) Element(i int, got, want, scale float64) {
	d := got - want
	t.Num += d * d
	t.Den += want * want
	t.Sample(i, got, want, scale)
}

// Mismatch lists a wrong element (the first check.MaxMismatches are kept).
func (t *Tally) Mismatch(i int, got, want float64) { addMismatch(&t.R, i, got, want) }

// Freivalds checks a large product without forming A·B: for random vectors x of ±1 it compares
// y = out·x with z = alpha·A·(B·x) + beta·C0·x, both in float64 on the CPU — O(MN + NK + MK) work
// instead of O(MNK). E‖(out − C)·x‖² = ‖out − C‖²_F for such x, so ‖y − z‖/‖z‖ estimates the same
// relative error as the full comparison, and a wrong element e anywhere adds e² to it whatever x
// is. It is combined with exact float64 values of the sampled elements (corners, edges of the last
// tiles, and random ones), each held to the elementwise criterion.
func Freivalds(p *Product, out []float32, vectors int, samples [][2]int, seed uint64, tol float64) check.Report {
	r := check.Report{Method: fmt.Sprintf("Freivalds (%d random ±1 vectors, float64 on the CPU) and %d sampled elements in float64",
		vectors, len(samples)), Tolerance: tol, MaxErrAt: -1, Checked: len(out)}
	// Poison and NaNs first: they would make every sum below NaN.
	var nanMu sync.Mutex
	ParallelFor(p.M, func(lo, hi int) {
		n := 0
		for _, v := range out[lo*p.N : hi*p.N] {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				n++
			}
		}
		nanMu.Lock()
		r.Unwritten += n
		nanMu.Unlock()
	})
	if r.Unwritten > 0 {
		for i, v := range out {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				addMismatch(&r, i, f, math.NaN())
				if len(r.Mismatches) >= check.MaxMismatches {
					break
				}
			}
		}
		r.RelErr = math.Inf(1)
		r.Note = notes(r.Unwritten, 0, len(out))
		return r
	}
	num, den := FreivaldsSums(p, out, vectors, seed)
	t := &Tally{R: r}
	for _, s := range samples {
		i, j := s[0], s[1]
		want, scale := p.Entry(i, j)
		t.Sample(i*p.N+j, float64(out[i*p.N+j]), want, scale)
	}
	r = t.R
	r.RelErr = check.RelErr(num, den)
	r.OK = t.Bad == 0 && r.RelErr <= tol
	if t.Bad > 0 {
		r.Note = fmt.Sprintf("%d of %d sampled elements are wrong", t.Bad, len(samples))
	}
	return r
}

// FreivaldsSums is the core of Freivalds' check: for vectors random ±1 vectors x (from seed) the
// summed ‖out·x − (alpha·A·(B·x) + beta·C0·x)‖² and ‖alpha·A·(B·x) + beta·C0·x‖², in float64.
// check.RelErr(num, den) estimates the relative error of the whole output; callers that check several
// products (lab 03's groups) add the sums up first.
func FreivaldsSums(p *Product, out []float32, vectors int, seed uint64) (num, den float64) {
	rng := rand.New(rand.NewPCG(seed, 0x46726569)) // "Frei"
	for v := 0; v < vectors; v++ {
		x := make([]float64, p.N)
		for j := range x {
			x[j] = float64(1 - 2*int(rng.IntN(2)))
		}
		bx := make([]float64, p.K) // B·x
		ParallelFor(p.K, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				s := 0.0
				for j, b := range p.B[k*p.N : (k+1)*p.N] {
					s += float64(b) * x[j]
				}
				bx[k] = s
			}
		})
		var mu sync.Mutex
		ParallelFor(p.M, func(lo, hi int) {
			var n2, d2 float64
			for i := lo; i < hi; i++ {
				z := 0.0
				for k, a := range p.A[i*p.K : (i+1)*p.K] {
					z += float64(a) * bx[k]
				}
				z *= float64(p.Alpha)
				y, c := 0.0, 0.0
				for j, o := range out[i*p.N : (i+1)*p.N] {
					y += float64(o) * x[j]
					if p.C0 != nil {
						c += float64(p.C0[i*p.N+j]) * x[j]
					}
				}
				if p.C0 != nil {
					z += float64(p.Beta) * c
				}
				n2 += (y - z) * (y - z)
				d2 += z * z
			}
			mu.Lock()
			num += n2
			den += d2
			mu.Unlock()
		})
	}
	return num, den
}

func addMismatch(r *check.Report, i int, got, want float64) {
	if len(r.Mismatches) < check.MaxMismatches {
		r.Mismatches = append(r.Mismatches, check.Mismatch{Index: i, Got: got, Want: want})
	}
}

func notes(unwritten, bad, total int) string {
	switch {
	case unwritten > 0 && bad > 0:
		return fmt.Sprintf("%d of %d outputs are NaN or Inf (never written?) and %d more are off by more than the tolerance", unwritten, total, bad)
	case unwritten > 0:
		return fmt.Sprintf("%d of %d outputs are NaN or Inf (never written, or computed from a NaN poison: an output read before it was written, or C read when beta is 0)", unwritten, total)
	case bad > 0:
		return fmt.Sprintf("%d of %d elements are off by more than tolerance × their error scale", bad, total)
	}
	return ""
}
