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

	wantNaN int // finite outputs where the reference is NaN
}

// MaxMismatches is how many wrong elements a report lists.
const MaxMismatches = 8

// Float is an output element type that Against accepts.
type Float interface{ ~float32 | ~float64 }

// Against checks out against ref with relative tolerance tol on ‖out − ref‖/‖ref‖.
// A NaN or Inf output fails the check whatever the tolerance (poisoned outputs are NaN).
// Elements are listed as mismatches when |out−ref| > tol·(‖ref‖∞ + tiny): large against the
// scale of the output, not of that one element, since cancellation makes single entries noisy.
func Against[T Float](out []T, ref []float64, tol float64) Report {
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
		if math.IsNaN(w) && math.IsNaN(g) {
			continue // the reference is NaN here too: the expected value, not a wrong one
		}
		if math.IsNaN(g) || math.IsInf(g, 0) {
			r.Unwritten++
			r.addMismatch(i, g, w)
			continue
		}
		if math.IsNaN(w) {
			r.wantNaN++
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
	r.RelErr = RelErr(num, den)
	r.OK = r.Unwritten == 0 && r.wantNaN == 0 && r.RelErr <= tol
	var notes []string
	if r.Unwritten > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d outputs are NaN or Inf (never written, or computed from bad data)", r.Unwritten, len(out)))
	}
	if r.wantNaN > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d outputs are numbers where the reference is NaN", r.wantNaN, len(out)))
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

// RelErr is √num/√den, with the convention that a zero reference needs a zero difference.
func RelErr(num, den float64) float64 {
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(num / den)
}

// Number is an element type that Exact compares: the integers and floats kernels write.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint | ~float32 | ~float64
}

// Exact checks that out equals ref bit for bit (copies, integer outputs).
func Exact[T Number](out, ref []T) Report {
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
				r.Mismatches = append(r.Mismatches, Mismatch{Index: i, Got: float64(out[i]), Want: float64(ref[i])})
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

func (r *Report) addMismatch(i int, got, want float64) {
	if len(r.Mismatches) < MaxMismatches {
		r.Mismatches = append(r.Mismatches, Mismatch{Index: i, Got: got, Want: want})
	}
}

// Fail builds a failed report with a reason (a check that could not run).
func Fail(method, reason string) Report {
	return Report{Method: method, Note: reason, MaxErrAt: -1}
}

// String is a one-line summary that says once what is wrong: "ok: rel_err 3.1e-07 (tol 1e-05),
// max_abs_err 2.4e-06", or the failure ("2 of 4 outputs are NaN or Inf …; rel_err … over the 2
// finite outputs") with the error figures where there are finite outputs to measure.
func (r Report) String() string {
	if r.OK {
		return "ok: " + r.errorFigures()
	}
	what := r.Note
	if what == "" {
		if r.RelErr > r.Tolerance {
			what = "relative error above the tolerance"
		} else {
			what = fmt.Sprintf("%d element(s) off by more than the tolerance", len(r.Mismatches))
		}
	}
	if f := r.errorFigures(); f != "" {
		what += "; " + f
	}
	return what
}

// errorFigures are the relative and largest errors, over the finite outputs, or "" when there
// are none to measure (every output NaN, or a check that could not compute them).
func (r Report) errorFigures() string {
	if r.Checked == 0 || r.Unwritten >= r.Checked || math.IsInf(r.RelErr, 0) || math.IsNaN(r.RelErr) {
		return ""
	}
	s := fmt.Sprintf("rel_err %.2e (tol %.0e), max_abs_err %.2e", r.RelErr, r.Tolerance, r.MaxAbsErr)
	if r.MaxErrAt >= 0 && !r.OK {
		s += fmt.Sprintf(" at [%d]", r.MaxErrAt)
	}
	if r.Unwritten > 0 {
		s += fmt.Sprintf(" over the %d finite outputs", r.Checked-r.Unwritten)
	}
	return s
}

// Figures are the error figures and the first wrong elements, without the headline: what follows
// a failure's reason when the reason is said elsewhere (the grader's explanation).
func (r Report) Figures() string {
	var lines []string
	if f := r.errorFigures(); f != "" {
		lines = append(lines, f)
	}
	if m := r.wrongElements(); m != "" {
		lines = append(lines, m)
	}
	return strings.Join(lines, "\n")
}

// Detail is String and the first wrong elements, for a student looking for the bug.
func (r Report) Detail() string {
	if m := r.wrongElements(); m != "" {
		return r.String() + "\n" + m
	}
	return r.String()
}

// wrongElements lists the first mismatches: "[i]: got, want", or "[i]: got" where no value is
// known (a check that does not compute every element, such as Freivalds').
func (r Report) wrongElements() string {
	if len(r.Mismatches) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("  first wrong elements (index: got, want):")
	for _, m := range r.Mismatches {
		if math.IsNaN(m.Want) && math.IsNaN(m.Got) {
			fmt.Fprintf(&b, "\n    [%d]: %g (never written, or computed from NaN)", m.Index, m.Got)
			continue
		}
		fmt.Fprintf(&b, "\n    [%d]: %.7g, %.7g", m.Index, m.Got, m.Want)
	}
	return b.String()
}

// All combines the reports of independent checks of one output (a cheap test of every element
// and exact values of a few, say): it is OK when every one is, and it shows the worst figures of
// any.
func All(reps ...Report) Report {
	out := Report{OK: true, MaxErrAt: -1}
	var methods, notes []string
	for i, r := range reps {
		methods = append(methods, r.Method)
		if r.Note != "" {
			notes = append(notes, r.Note)
		}
		out.OK = out.OK && r.OK
		out.Checked += r.Checked
		out.Unwritten = max(out.Unwritten, r.Unwritten)
		out.MaxAbsErr = max(out.MaxAbsErr, r.MaxAbsErr)
		if i == 0 || r.RelErr > out.RelErr {
			out.RelErr, out.MaxErrAt = r.RelErr, r.MaxErrAt
		}
		if i == 0 || r.Tolerance > out.Tolerance {
			out.Tolerance = r.Tolerance
		}
		for _, m := range r.Mismatches {
			if len(out.Mismatches) < MaxMismatches {
				out.Mismatches = append(out.Mismatches, m)
			}
		}
	}
	out.Method = strings.Join(methods, "; and ")
	out.Note = strings.Join(notes, "; ")
	return out
}
