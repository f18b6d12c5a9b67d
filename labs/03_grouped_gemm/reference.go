package grouped

import (
	"fmt"
	"math"

	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/matref"
)

// Check limits: a group of up to FullCheckLimit multiply-adds is compared element by element with
// its float64 product; a larger one with Freivalds' check (FreivaldsVectors random ±1 vectors)
// plus SamplesPerGroup exactly computed elements.
const (
	FullCheckLimit   = 1 << 26
	FreivaldsVectors = 2
	SamplesPerGroup  = 24
)

// groupCheck accumulates the comparison of several groups into one report.
type groupCheck struct {
	*matref.Tally
	freivalds int     // groups checked with Freivalds' method
	full      int     // groups checked element by element
	worst     string  // the group of the largest relative error
	worstRel  float64 // and that error
	firstNaN  string  // the first group with NaN or Inf outputs
}

func newGroupCheck(tol float64) *groupCheck { return &groupCheck{Tally: matref.NewTally(tol)} }

// group checks one group's output out (M×N, row-major, contiguous) against p; base is the index
// of its first element in the C arena (for the mismatch list), label names it in messages.
func (gc *groupCheck) group(p *matref.Product, out []float32, base int, label string, seed uint64) {
	gc.R.Checked += len(out)
	// NaN or Inf anywhere: never written (the poison), or computed from garbage.
	nans := 0
	for i, v := range out {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			if nans == 0 && gc.R.Unwritten == 0 {
				gc.firstNaN = label
			}
			nans++
			gc.Mismatch(base+i, f, math.NaN())
		}
	}
	if nans > 0 {
		gc.R.Unwritten += nans
		return
	}
	// The group's own sums first, then added to the others' (its share of the relative error).
	num0, den0 := gc.Num, gc.Den
	gc.Num, gc.Den = 0, 0
	if int64(p.M)*int64(p.N)*int64(p.K) <= FullCheckLimit {
		gc.full++
		ref, scale := p.Reference()
		for i, o := range out {
			gc.Element(base+i, float64(o), ref[i], scale[i])
		}
	} else {
		gc.freivalds++
		gc.Num, gc.Den = matref.FreivaldsSums(p, out, FreivaldsVectors, seed)
		for _, s := range matref.SampleEntries(p.M, p.N, SamplesPerGroup, seed) {
			i, j := s[0], s[1]
			want, scale := p.Entry(i, j)
			gc.Sample(base+i*p.N+j, float64(out[i*p.N+j]), want, scale)
		}
	}
	if rel := check.RelErr(gc.Num, gc.Den); rel > gc.worstRel || gc.worst == "" {
		gc.worstRel, gc.worst = rel, label
	}
	gc.Num, gc.Den = num0+gc.Num, den0+gc.Den
}

// canaries checks that the C arena outside every group (the spans) still holds the poison bits.
func (gc *groupCheck) canaries(out []float32, spans [][2]int64, poison uint32) {
	written, first := 0, int64(0)
	for _, r := range spans {
		for i := r[0]; i < r[1]; i++ {
			if math.Float32bits(out[i]) != poison {
				if written == 0 {
					first = i
					gc.Mismatch(int(i), float64(out[i]), math.NaN())
				}
				written++
			}
		}
	}
	if written > 0 {
		gc.Bad += written
		gc.R.Note = joinNote(gc.R.Note, fmt.Sprintf("%d element(s) outside every group were written (first at C arena element %d): "+
			"a tile of an empty group, or rows or columns past the end of a group", written, first))
	}
}

// report finishes the check.
func (gc *groupCheck) report() check.Report {
	r := gc.R
	switch {
	case gc.full > 0 && gc.freivalds > 0:
		r.Method = fmt.Sprintf("every group against float64: %d element by element, %d by Freivalds' check (%d ±1 vectors) and %d sampled elements each",
			gc.full, gc.freivalds, FreivaldsVectors, SamplesPerGroup)
	case gc.freivalds > 0:
		r.Method = fmt.Sprintf("every group by Freivalds' check in float64 (%d ±1 vectors) and %d exactly computed elements each",
			FreivaldsVectors, SamplesPerGroup)
	default:
		r.Method = "every element of every group against a float64 CPU reference"
	}
	r.Method += "; the output outside the groups must keep its NaN poison"
	if r.Unwritten > 0 {
		r.RelErr = math.Inf(1)
		r.Note = joinNote(fmt.Sprintf("%d outputs are NaN or Inf (never written?), first in %s", r.Unwritten, gc.firstNaN), r.Note)
	} else {
		r.RelErr = check.RelErr(gc.Num, gc.Den)
		if gc.Bad > 0 && r.Note == "" {
			r.Note = fmt.Sprintf("%d element(s) off by more than tolerance × their error scale; worst group: %s", gc.Bad, gc.worst)
		} else if r.RelErr > r.Tolerance {
			r.Note = joinNote(r.Note, fmt.Sprintf("worst group: %s (relative error %.2e)", gc.worst, gc.worstRel))
		}
	}
	r.OK = r.Unwritten == 0 && gc.Bad == 0 && r.RelErr <= r.Tolerance
	return r
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
