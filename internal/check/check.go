// Package check compares kernel outputs with references, the way the course teaches: relative
// error of the whole output against a higher-precision reference, the largest elementwise error,
// and a count of outputs the kernel never wrote (they still hold the NaN poison).
package check

import (
	"fmt"
	"math"
	"strings"
)

// Mismatch is one output element that is wrong.
type Mismatch struct {
	Index int     `json:"index"`
	Got   float64 `json:"got"`
	Want  float64 `json:"want"`
}

// Report is the outcome of a check.
type Report struct {
	OK         bool       `json:"ok"`
	Method     string     `json:"method"`              // how the output was checked
	Checked    int        `json:"checked"`             // elements compared
	RelErr     float64    `json:"rel_err"`             // ‖out − ref‖₂ / ‖ref‖₂
	MaxAbsErr  float64    `json:"max_abs_err"`         // max |out − ref|
	MaxErrAt   int        `json:"max_err_at"`          // index of the largest error
	Unwritten  int        `json:"unwritten,omitempty"` // NaN outputs: never written, or NaN produced
	Tolerance  float64    `json:"tolerance"`
	Mismatches []Mismatch `json:"mismatches,omitempty"` // the first few wrong elements
	Note       string     `json:"note,omitempty"`
}

// MaxMismatches is how many wrong elements a report lists.
const MaxMismatches = 8

// Float is an output element type that Compare accepts.
type Float interface{ ~float32 | ~float64 }

// Compare checks out against ref with relative tolerance tol on ‖out − ref‖/‖ref‖.
// A NaN or Inf output fails the check whatever the tolerance (poisoned outputs are NaN).
// Elements are listed as mismatches when |out−ref| > tol·(‖ref‖∞ + tiny): large against the
// scale of the output, not of that one element, since cancellation makes single entries noisy.
func Compare[T Float](out []T, ref []float64, tol float64) Report {
	r := Report{Method: "elementwise against a float64 reference", Tolerance: tol, MaxErrAt: -1}
	if len(out) != len(ref) {
		r.Note = fmt.Sprintf("output has %d elements, reference %d", len(out), len(ref))
		return r
	}
	r.Checked = len(out)
	var num, den, refMax float64
	for _, v := range ref {
		refMax = math.Max(refMax, math.Abs(v))
	}
	elemTol := tol * (refMax + 1e-30)
	for i, o := range out {
		g, w := float64(o), ref[i]
		if math.IsNaN(g) || math.IsInf(g, 0) {
			r.Unwritten++
			r.addMismatch(i, g, w)
			continue
		}
		d := g - w
		num += d * d
		den += w * w
		if ad := math.Abs(d); ad > r.MaxAbsErr || r.MaxErrAt < 0 {
			r.MaxAbsErr, r.MaxErrAt = ad, i
		}
		if math.Abs(d) > elemTol {
			r.addMismatch(i, g, w)
		}
	}
	r.RelErr = relative(num, den)
	r.OK = r.Unwritten == 0 && r.RelErr <= tol
	if r.Unwritten > 0 {
		r.Note = fmt.Sprintf("%d of %d outputs are NaN or Inf (never written, or computed from bad data)", r.Unwritten, len(out))
	}
	return r
}

// relative is √num/√den, with the convention that a zero reference needs a zero difference.
func relative(num, den float64) float64 {
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(num / den)
}

// Exact checks that out equals ref bit for bit (copies, integer outputs).
func Exact[T comparable](out, ref []T) Report {
	r := Report{Method: "exact", Checked: len(out), MaxErrAt: -1}
	if len(out) != len(ref) {
		r.Note = fmt.Sprintf("output has %d elements, reference %d", len(out), len(ref))
		return r
	}
	wrong := 0
	for i := range out {
		if out[i] != ref[i] {
			if wrong == 0 {
				r.MaxErrAt = i
			}
			wrong++
			if len(r.Mismatches) < MaxMismatches {
				r.Mismatches = append(r.Mismatches, Mismatch{Index: i, Got: toFloat(out[i]), Want: toFloat(ref[i])})
			}
		}
	}
	r.OK = wrong == 0
	if wrong > 0 {
		r.RelErr = float64(wrong) / float64(len(out))
		r.Note = fmt.Sprintf("%d of %d elements differ", wrong, len(out))
	}
	return r
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	case int32:
		return float64(x)
	case uint32:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case uint16:
		return float64(x)
	case uint8:
		return float64(x)
	}
	return math.NaN()
}

func (r *Report) addMismatch(i int, got, want float64) {
	if len(r.Mismatches) < MaxMismatches {
		r.Mismatches = append(r.Mismatches, Mismatch{Index: i, Got: got, Want: want})
	}
}

// Fail builds a failed report with a reason (a check that could not run).
func Fail(method, reason string) Report {
	return Report{Method: method, Note: reason, MaxErrAt: -1}
}

// String is a one-line summary: "ok rel 3.1e-07 max 2.4e-06 (elementwise…)" or the failure.
func (r Report) String() string {
	var b strings.Builder
	if r.OK {
		b.WriteString("ok")
	} else {
		b.WriteString("WRONG")
	}
	fmt.Fprintf(&b, " rel_err %.2e (tol %.0e) max_abs_err %.2e", r.RelErr, r.Tolerance, r.MaxAbsErr)
	if r.Note != "" {
		b.WriteString(": " + r.Note)
	}
	return b.String()
}

// Detail lists the first mismatching elements, for a student looking for the bug.
func (r Report) Detail() string {
	if len(r.Mismatches) == 0 {
		return r.String()
	}
	var b strings.Builder
	b.WriteString(r.String())
	b.WriteString("\n  first wrong elements (index: got, want):")
	for _, m := range r.Mismatches {
		fmt.Fprintf(&b, "\n    [%d]: %g, %g", m.Index, m.Got, m.Want)
	}
	return b.String()
}
