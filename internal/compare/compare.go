// Package compare sets two results files side by side, the way benchstat reads Go benchmarks:
// per variant and problem, the ratio of the median times, and whether the change is larger
// than the spread of the measurements.
package compare

import (
	"fmt"
	"sort"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// Verdict of one row.
const (
	Faster   = "faster"
	Slower   = "slower"
	Noise    = "~"           // the min–max ranges overlap: no change that the runs can show
	OnlyOld  = "only in old" // not in the new results
	OnlyNew  = "only in new"
	NotTimed = "not comparable" // one side has no time (failed, wrong, skipped)
	// Emulated: one side ran on the CPU emulator, whose times are not performance figures, so
	// no change in them is a speed-up or a regression.
	Emulated = "emulated"
)

// Row compares one variant on one problem.
type Row struct {
	Suite   string       `json:"suite"`
	Variant string       `json:"variant"`
	Problem string       `json:"problem"`
	Old     *bench.Stats `json:"old,omitempty"`
	New     *bench.Stats `json:"new,omitempty"`
	// Speedup is old median / new median: above 1 the new run is faster.
	Speedup float64 `json:"speedup,omitempty"`
	// Change is the change of the median time in percent (negative: faster).
	Change  float64 `json:"change_pct,omitempty"`
	Verdict string  `json:"verdict"`
	Note    string  `json:"note,omitempty"`
}

// Files sets the entries of two results files of the same lab side by side, one row per variant
// and problem.
func Files(old, new *results.File) []Row {
	key := func(e results.Entry) string { return e.Suite + "\x00" + e.Variant + "\x00" + e.Problem }
	newBy := map[string]results.Entry{}
	for _, e := range new.Entries {
		newBy[key(e)] = e
	}
	seen := map[string]bool{}
	var rows []Row
	for _, o := range old.Entries {
		k := key(o)
		seen[k] = true
		n, ok := newBy[k]
		r := Row{Suite: o.Suite, Variant: o.Variant, Problem: o.Problem, Old: o.Time}
		switch {
		case !ok:
			r.Verdict = OnlyOld
		case !o.OK() || !n.OK() || o.Time == nil || n.Time == nil:
			r.New = n.Time
			r.Verdict = NotTimed
			r.Note = fmt.Sprintf("old %s, new %s", o.Status, n.Status)
		case o.Emulated || n.Emulated || old.Device.Emulated || new.Device.Emulated:
			r.New = n.Time
			r.Verdict = Emulated
			r.Note = "times are not performance figures"
		default:
			r.New = n.Time
			r.Speedup = o.Time.MedianMs / n.Time.MedianMs
			r.Change = (n.Time.MedianMs/o.Time.MedianMs - 1) * 100
			r.Verdict = verdict(o.Time, n.Time)
		}
		rows = append(rows, r)
	}
	for _, n := range new.Entries {
		if !seen[key(n)] {
			rows = append(rows, Row{Suite: n.Suite, Variant: n.Variant, Problem: n.Problem, New: n.Time, Verdict: OnlyNew})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Suite < rows[j].Suite })
	return rows
}

// verdict calls a change real only when the two runs' min–max ranges do not overlap.
func verdict(o, n *bench.Stats) string {
	if n.MinMs > o.MaxMs {
		return Slower
	}
	if n.MaxMs < o.MinMs {
		return Faster
	}
	return Noise
}

// Regressions returns the rows that are slower by more than pct percent and outside the noise.
func Regressions(rows []Row, pct float64) []Row {
	var out []Row
	for _, r := range rows {
		if r.Verdict == Slower && r.Change > pct {
			out = append(out, r)
		}
	}
	return out
}
