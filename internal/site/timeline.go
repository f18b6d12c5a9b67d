package site

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/plot"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The per-SM timeline of kl-plot kind: timeline. Lab 03's debug variants keep, in each entry's
// data, what the kernels recorded for every tile:
//
//	"timeline": {"sms": 132, "launches": 4, "tiles": [[sm, start_ns, end_ns, group], ...]}
//
// The cell draws one Gantt chart per variant (rows: SMs, bars: tiles coloured by group) on one
// shared time axis, for one problem.

// timelineData is the decoded timeline of one entry.
type timelineData struct {
	SMs, Launches int
	Spans         []plot.Span
	EndUs         float64
}

// decodeTimeline reads an entry's timeline, as JSON decoded it (numbers are float64).
func decodeTimeline(e *results.Entry) (*timelineData, bool) {
	raw, ok := e.Data["timeline"].(map[string]any)
	if !ok {
		return nil, false
	}
	num := func(v any) (float64, bool) {
		f, ok := v.(float64)
		return f, ok
	}
	t := &timelineData{}
	if v, ok := num(raw["sms"]); ok {
		t.SMs = int(v)
	}
	if v, ok := num(raw["launches"]); ok {
		t.Launches = int(v)
	}
	tiles, _ := raw["tiles"].([]any)
	for _, x := range tiles {
		r, ok := x.([]any)
		if !ok || len(r) < 4 {
			return nil, false
		}
		var v [4]float64
		for i := range v {
			if v[i], ok = num(r[i]); !ok {
				return nil, false
			}
		}
		sp := plot.Span{Row: int(v[0]), Start: v[1] / 1e3, End: v[2] / 1e3, Color: int(v[3])}
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
		return nil, errors.New(tr(L, "notimeline", strings.Join(candidates, ", ")))
	}
	t := &plot.Timeline{Title: tr(L, "timelinetitle", problem), XLabel: tr(L, "timelinex"), YLabel: tr(L, "timeliney")}
	groups := 0
	for _, e := range entries {
		if e.Problem != problem || !e.OK() {
			continue
		}
		td, ok := decodeTimeline(e)
		if !ok {
			continue
		}
		for _, s := range td.Spans {
			groups = max(groups, s.Color+1)
		}
		t.Panels = append(t.Panels, plot.TimelinePanel{
			Name:  tr(L, "timelinepanel", e.Variant, fmtTime(td.EndUs/1e3), td.Launches, len(td.Spans)),
			Rows:  td.SMs,
			Spans: td.Spans,
		})
	}
	if groups <= 8 {
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
