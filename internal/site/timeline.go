package site

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/plot"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The per-SM timeline of kl-plot kind: timeline. Kernels that log their tiles keep, in each
// entry's data, what they recorded for every tile (results.Timeline):
//
//	"timeline": {"sms": 132, "launches": 4, "tiles": [[sm, start_ns, end_ns, group], ...]}
//
// The cell draws one Gantt chart per variant (rows: SMs, bars: tiles coloured by group) on one
// shared time axis, for one problem. A timeline whose records have kinds ("kinds": ["compute",
// "copy", "wait"], lab 05's) is coloured by kind instead, with the kinds' names (timelinekind:…)
// in the legend.

// timelineData is the decoded timeline of one entry.
type timelineData struct {
	SMs, Launches int
	Spans         []plot.Span
	EndUs         float64
	Kinds         []string
}

// decodeTimeline reads an entry's timeline (results.Timeline) as spans in µs.
func decodeTimeline(e *results.Entry) (*timelineData, bool) {
	tl, ok := results.TimelineOf(e)
	if !ok {
		return nil, false
	}
	t := &timelineData{SMs: tl.SMs, Launches: tl.Launches, Kinds: tl.Kinds}
	for _, r := range tl.Tiles {
		sp := plot.Span{Row: int(r[0]), Start: float64(r[1]) / 1e3, End: float64(r[2]) / 1e3, Color: int(r[3])}
		t.Spans = append(t.Spans, sp)
		t.EndUs = max(t.EndUs, sp.End)
	}
	return t, len(t.Spans) > 0
}

// timelinePlot draws the timelines of one problem, a panel per variant: the first problem of the
// cell's problems (or of the suite's, in manifest order) that has timelines on this device. A
// cell can so name a GPU problem and an emulator problem, and each device shows its own.
func (b *builder) timelinePlot(L string, sel *selection, entries []*results.Entry, candidates []string) ([]byte, error) {
	if len(candidates) == 0 {
		candidates = problemNames(sel.suite)
	}
	problem := ""
	for _, p := range candidates {
		for _, e := range entries {
			if _, ok := decodeTimeline(e); ok && e.Problem == p && e.OK() && problem == "" {
				problem = p
			}
		}
	}
	if problem == "" {
		labels := make([]string, len(candidates))
		for i, p := range candidates {
			labels[i] = problemLabel(L, sel.suite, p)
		}
		return nil, errors.New(tr(L, "notimeline", strings.Join(labels, tr(L, "listcomma"))))
	}
	t := &plot.Timeline{Title: tr(L, "timelinetitle", problemLabel(L, sel.suite, problem)), XLabel: tr(L, "timelinex"), YLabel: tr(L, "timeliney")}
	groups := 0
	var kinds []string // of the first panel; every panel's must be the same
	for _, e := range entries {
		if e.Problem != problem || !e.OK() {
			continue
		}
		td, ok := decodeTimeline(e)
		if !ok {
			continue
		}
		if len(t.Panels) == 0 {
			kinds = td.Kinds
		} else if !slices.Equal(kinds, td.Kinds) {
			return nil, fmt.Errorf("timeline of %s: variant %s's records have kinds %v, the others' %v (one figure, one colour key)", problem, e.Variant, td.Kinds, kinds)
		}
		for _, s := range td.Spans {
			groups = max(groups, s.Color+1)
		}
		panel := "timelinepanel"
		if len(kinds) > 0 {
			panel = "timelinekindpanel"
		}
		t.Panels = append(t.Panels, plot.TimelinePanel{
			Name:  tr(L, panel, e.Variant, fmtTime(td.EndUs/1e3), td.Launches, len(td.Spans)),
			Rows:  td.SMs,
			Spans: td.Spans,
		})
	}
	if len(kinds) > 0 {
		t.Title, t.XLabel = tr(L, "timelinekindtitle", problemLabel(L, sel.suite, problem)), tr(L, "timelinekindx")
		for _, k := range kinds {
			name, ok := ui[L]["timelinekind:"+k]
			if !ok {
				return nil, fmt.Errorf("timeline of %s: the site has no %s name for the records' kind %q (add timelinekind:%s to internal/site/i18n.go)", problem, L, k, k)
			}
			t.ColorNames = append(t.ColorNames, name)
		}
	} else if groups <= 8 {
		for g := 0; g < groups; g++ {
			t.ColorNames = append(t.ColorNames, tr(L, "timelinegroup", g))
		}
	}
	svg, err := t.SVG()
	if err != nil {
		return nil, fmt.Errorf("timeline of %s: %w", problem, err)
	}
	return svg, nil
}
