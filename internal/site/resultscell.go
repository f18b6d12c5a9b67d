package site

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The kl-results cell: a suite's results table on each device that has them.

type resultsSpec struct {
	Suite    string   `yaml:"suite" json:"suite"`
	Problems []string `yaml:"problems" json:"problems,omitempty"`
	Variants []string `yaml:"variants" json:"variants,omitempty"`
	Device   string   `yaml:"device" json:"device,omitempty"`
}

// check: a results table names its suite.
func (s *resultsSpec) check(d *notesDoc, c *cell) error {
	if s.Suite == "" {
		return d.errAt(c.Line, "kl-results needs suite:")
	}
	return nil
}

var _ = defineTemplates(`
{{- define "kl-results"}}<figure class="cell cell-results" data-suite="{{.Suite}}">
{{- with .Title}}<figcaption>{{.}}</figcaption>{{end}}
{{- with .Empty}}{{template "empty" .}}{{end}}
{{- range .Devices}}<div class="device-block">{{template "devicehead" .Head}}
{{- with .Compact}}{{template "compact" .}}{{end}}
{{- with .Skips}}{{template "skips" .}}{{end -}}
<details class="cell-details"><summary>{{$.Details}}</summary>{{template "fulltable" .Full}}</details></div>
{{end}}</figure>
{{end}}
{{- define "varhead"}}{{if .Code}}<code>{{.Name}}</code>{{else}}{{.Name}}{{end}}{{with .Baseline}} <small class="muted">{{.}}</small>{{end}}{{end}}
{{- define "figcell"}}<td class="num{{if .Muted}} muted{{end}}">
{{- if .Status}}<span class="{{.Status}}" title="{{.Title}}">{{.Text}}</span>
{{- else if .Strong}}<strong>{{.Text}}</strong>{{else}}{{.Text}}{{end}}</td>{{end}}
{{- define "compact"}}<div class="table-scroll compact-scroll"><table class="results compact"><thead><tr><th class="sticky">{{.Corner}}</th>
{{- range .Cols}}<th class="num">{{template "varhead" .}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr{{if .Baseline}} class="baseline"{{end}}><th scope="row" class="sticky">{{template "varhead" .Head}}</th>
{{- range .Cells}}{{template "figcell" .}}{{end}}</tr>
{{end}}</tbody></table></div>
<p class="cell-note">{{.Note}}</p>
{{end}}
{{- define "skips"}}<p class="cell-note skipped">{{.Lead}} {{range $i, $r := .Reasons}}{{if $i}}{{$.Join}}{{end}}
{{- range $j, $v := .Variants}}{{if $j}}, {{end}}<code>{{$v}}</code>{{end}}{{$.Sep}}{{.Reason}}{{end}}</p>
{{end}}
{{- define "fulltable"}}<div class="table-scroll"><table class="results"><thead><tr>
{{- range .Cols}}<th{{if .Num}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
{{range .Groups}}<tbody>
{{range .}}<tr{{if .Baseline}} class="baseline"{{end}}>
{{- if .Span}}<th scope="rowgroup" rowspan="{{.Span}}" class="problem">{{.Problem}}</th>{{end -}}
<td><code>{{.Variant}}</code>{{with .VariantTitle}}<br><small class="muted">{{.}}</small>{{end}}</td>
{{- /**/ -}}
<td><span class="{{.StatusClass}}">{{.Status}}</span>{{with .Err}}<span class="err">{{.}}</span>{{end}}{{with .Peer}}<br><small class="muted">{{.}}</small>{{end}}</td>
{{- if .Emu}}<td class="num">{{.Check}}</td><td class="num emulated" title="{{.TimeTitle}}">{{.Time}}</td>
{{- else}}<td class="num">{{.Time}}{{with .Range}} <small class="muted">({{.}})</small>{{end}}{{with .Clock}}<br><small class="muted">{{.}}</small>{{end}}</td><td class="num">{{.Rate}}</td><td class="num">{{.Vs}}</td>{{end}}</tr>
{{end}}</tbody>
{{end}}</table></div>
{{end}}`)

// resultsView is what a results cell shows (the "kl-results" template).
type resultsView struct {
	Suite, Title, Details string
	Empty                 emptyMsg
	Devices               []resultsDevice
}

type resultsDevice struct {
	Head    deviceHeadView
	Compact *compactView
	Skips   *skipLine
	Full    fullView
}

func (b *builder) resultsCell(pc *pageCtx, c *cell, s *resultsSpec) (string, error) {
	sel, err := b.selectResults(pc, c, s.Suite, s.Variants, s.Problems, s.Device)
	if err != nil {
		return "", err
	}
	L := pc.lang
	v := resultsView{Suite: sel.suite.Name, Title: pick(L, sel.suite.Title), Details: tr(L, "alldetails")}
	if len(sel.devices) == 0 {
		v.Empty = emptyCell(tr(L, "noresults", pc.ch.Num))
	}
	for _, dr := range b.shownDevices(sel, s.Device) {
		emu := b.c.bySlug[dr.Slug].Emulated
		entries := sel.entries(dr)
		compact, skips := b.compactTable(L, sel.suite, entries, emu)
		v.Devices = append(v.Devices, resultsDevice{Head: b.deviceHead(pc, dr), Compact: compact, Skips: skips,
			Full: b.fullTable(L, sel.suite, entries, emu)})
	}
	return execCell("kl-results", v)
}

// shownDevices are the device blocks a results cell shows: the GPUs' results, and the
// emulator's only where no GPU has any (or the cell names the emulator): its times are not
// performance figures, and beside a GPU's they only lengthen the page.
func (b *builder) shownDevices(sel *selection, named string) []*devResults {
	if named != "" {
		return sel.devices
	}
	var gpus []*devResults
	for _, dr := range sel.devices {
		if !b.c.bySlug[dr.Slug].Emulated {
			gpus = append(gpus, dr)
		}
	}
	if len(gpus) > 0 {
		return gpus
	}
	return sel.devices
}

// compactView is a results cell's one table (the "compact" template).
type compactView struct {
	Corner string
	Cols   []varHead
	Rows   []compactRow
	Note   string
}

// varHead heads a row or column: a variant's name (as code) or a problem's, and "baseline" by
// the baseline.
type varHead struct {
	Name     string
	Code     bool
	Baseline string
}

type compactRow struct {
	Head     varHead
	Baseline bool
	Cells    []figCell
}

// figCell is one figure of the compact table (the "figcell" template).
type figCell struct {
	Text   string
	Muted  bool   // no entry
	Strong bool   // a speedup
	Status string // the status class, for a run that did not pass
	Title  string // its error
}

// compactTable is a results cell's one table: a row per problem and a column per variant when
// the cell compares a few variants (as the notes' cells do), else a row per variant and a column
// per problem. Each cell holds the key figure: on a GPU the speedup over the suite's baseline
// (the baseline's own column shows its rate), or the rate where the suite has no baseline; on
// the emulator the check's relative error. A run that did not pass shows its status instead.
// Variants skipped on every problem leave the table for one line under it.
func (b *builder) compactTable(L string, s *lab.Suite, entries []*results.Entry, emu bool) (*compactView, *skipLine) {
	var variants, problems []string
	byKey := map[string]*results.Entry{}
	skipped := map[string]int{}
	for _, e := range entries {
		if !contains(variants, e.Variant) {
			variants = append(variants, e.Variant)
		}
		if !contains(problems, e.Problem) {
			problems = append(problems, e.Problem)
		}
		byKey[e.Variant+"\x00"+e.Problem] = e
		if e.Status == results.StatusSkipped {
			skipped[e.Variant]++
		}
	}
	problems = orderProblems(s, problems)
	skips := &skipLine{Lead: tr(L, "skippedhere"), Sep: tr(L, "skipsep"), Join: tr(L, "skipjoin")}
	var shown []string
	for _, v := range variants {
		if skipped[v] > 0 && skipped[v] == countVariant(entries, v) {
			for _, e := range entries {
				if e.Variant == v {
					skips.add(v, runtimeText(L, e.Error))
					break
				}
			}
			continue
		}
		shown = append(shown, v)
	}
	if len(skips.Reasons) == 0 {
		skips = nil
	}
	if len(shown) == 0 {
		return nil, skips
	}
	cell := func(v, p string) figCell {
		e := byKey[v+"\x00"+p]
		if e == nil {
			return figCell{Text: "–", Muted: true}
		}
		return b.keyFigure(L, s, e, emu)
	}
	variantHead := func(v string) varHead {
		h := varHead{Name: v, Code: true}
		if v == s.Baseline && !emu {
			h.Baseline = tr(L, "baseline")
		}
		return h
	}
	layout := func(byProblem bool, problems []string) *compactView {
		t := &compactView{Note: b.figureNote(L, s, emu)}
		if byProblem {
			// Rows: problems; columns: the variants the cell compares.
			t.Corner = tr(L, "problem")
			for _, v := range shown {
				t.Cols = append(t.Cols, variantHead(v))
			}
			for _, p := range problems {
				row := compactRow{Head: varHead{Name: problemLabel(L, s, p)}}
				for _, v := range shown {
					row.Cells = append(row.Cells, cell(v, p))
				}
				t.Rows = append(t.Rows, row)
			}
			return t
		}
		t.Corner = tr(L, "variant")
		for _, p := range problems {
			t.Cols = append(t.Cols, varHead{Name: problemLabel(L, s, p)})
		}
		for _, v := range shown {
			row := compactRow{Head: variantHead(v), Baseline: v == s.Baseline && !emu}
			for _, p := range problems {
				row.Cells = append(row.Cells, cell(v, p))
			}
			t.Rows = append(t.Rows, row)
		}
		return t
	}
	byProblem := len(shown) <= 4 || len(shown) <= len(problems)/2
	t := layout(byProblem, problems)
	if t.width() <= compactBudget {
		return t, skips
	}
	if other := layout(!byProblem, problems); other.width() <= compactBudget {
		return other, skips
	}
	// Neither way fits the column: a row per variant, and the heaviest problems that fit (the
	// details below list every problem).
	heavy := heaviestFirst(s, entries, problems)
	for k := len(heavy) - 1; k >= 1; k-- {
		keep := orderProblems(s, heavy[:k])
		if t = layout(false, keep); t.width() <= compactBudget || k == 1 {
			t.Note += tr(L, "someproblems", k, len(problems))
			return t, skips
		}
	}
	return t, skips
}

// compactBudget is the width a compact table may take: the text column (52rem at 16 px) less a
// margin for the reader's fonts. Wider, it would scroll at 1280 px, hiding figures.
const compactBudget = 760

// width estimates how wide the table is drawn (CSS pixels, style.css's compact table): each
// column as wide as its widest text, at least 4.5rem; the row headings wrap at 14rem.
func (t *compactView) width() float64 {
	const pad = 20 // .6rem each side
	textW := func(s string, code bool) float64 {
		w := 0.0
		for _, r := range s {
			switch {
			case isWideRune(r):
				w += 14.4
			case code:
				w += 7.4 // the monospace font at .85em of the table's .9rem
			default:
				w += 7.9
			}
		}
		return w
	}
	// Column headings are bold: a tenth wider than the same text in a cell (measured: a heading
	// of five shapes such as "16×8192×28672" overflowed by 22 px at 7.9 px a character).
	headW := func(s string) float64 { return textW(s, false) * 1.12 }
	head := textW(t.Corner, false)
	for _, r := range t.Rows {
		head = max(head, textW(r.Head.Name, r.Head.Code))
	}
	total := min(max(head, 96), 224) + pad
	for i, c := range t.Cols {
		w := 72.0
		// A heading wraps at spaces, except its code.
		if c.Code {
			w = max(w, textW(c.Name, true))
		} else {
			for _, word := range strings.Fields(c.Name) {
				w = max(w, headW(word))
			}
		}
		for _, r := range t.Rows {
			w = max(w, textW(r.Cells[i].Text, false))
		}
		total += w + pad
	}
	return total
}

func isWideRune(r rune) bool { return r >= 0x2e80 && r <= 0xffef }

// heaviestFirst orders problems by how long the suite's baseline (or, without one, its slowest
// variant) took on them, longest first: the large problems, where kernels are judged.
func heaviestFirst(s *lab.Suite, entries []*results.Entry, problems []string) []string {
	cost := map[string]float64{}
	for _, e := range entries {
		if e.Time == nil || !e.OK() {
			continue
		}
		if e.Variant == s.Baseline {
			cost[e.Problem] = e.Time.MedianMs + 1e12 // the baseline's time ranks before any other
		} else if cost[e.Problem] < 1e12 {
			cost[e.Problem] = max(cost[e.Problem], e.Time.MedianMs)
		}
	}
	out := append([]string(nil), problems...)
	sort.SliceStable(out, func(i, j int) bool { return cost[out[i]] > cost[out[j]] })
	return out
}

func countVariant(entries []*results.Entry, v string) int {
	n := 0
	for _, e := range entries {
		if e.Variant == v {
			n++
		}
	}
	return n
}

// orderProblems puts problems in the suite's order (GPU set, emulator set, grading set), any
// others (custom problems) after them.
func orderProblems(s *lab.Suite, ps []string) []string {
	var out []string
	for _, p := range problemNames(s) {
		if contains(ps, p) && !contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range ps {
		if !contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// keyFigure is one cell of the compact table.
func (b *builder) keyFigure(L string, s *lab.Suite, e *results.Entry, emu bool) figCell {
	switch {
	case !e.OK():
		return figCell{Status: statusClass(e.Status), Title: firstLine(runtimeText(L, e.Error), 200), Text: statusWord(L, e.Status)}
	case emu && e.Check == nil:
		return figCell{Text: tr(L, "statusok")}
	case emu:
		return figCell{Text: fmt.Sprintf("%.1e", e.Check.RelErr)}
	case e.Speedup > 0 && e.Variant != s.Baseline:
		return figCell{Text: fmt.Sprintf("%.2f×", e.Speedup), Strong: true}
	}
	return figCell{Text: keyRate(e, s.Metric)}
}

// keyRate is an entry's rate in the suite's metric alone.
func keyRate(e *results.Entry, metric string) string {
	switch {
	case metric == "tflops" && e.TFLOPs > 0:
		return fmtSig(e.TFLOPs) + " TFLOP/s"
	case metric == "gbps" && e.GBps > 0:
		return fmtSig(e.GBps) + " GB/s"
	case metric == "us" && e.PerOpUs > 0:
		return fmtSig(e.PerOpUs) + " µs/op"
	}
	return fmtRate(e, metric)
}

// figureNote says what the compact table's figures are.
func (b *builder) figureNote(L string, s *lab.Suite, emu bool) string {
	switch {
	case emu:
		return tr(L, "keyemu")
	case s.Baseline != "":
		return tr(L, "keyspeedup", s.Baseline)
	}
	return tr(L, "keyrate")
}

func statusWord(L, status string) string {
	if w := tr(L, "status_"+status); w != "status_"+status {
		return w
	}
	return status
}

// skipLine collects the variants skipped on every problem, by reason (the "skips" template).
type skipLine struct {
	Lead, Sep, Join string // the line's words: "Skipped here:", between variants and reason, between reasons
	Reasons         []skipReason
}

type skipReason struct {
	Reason   string
	Variants []string
}

func (s *skipLine) add(variant, reason string) {
	for i := range s.Reasons {
		if s.Reasons[i].Reason == reason {
			s.Reasons[i].Variants = append(s.Reasons[i].Variants, variant)
			return
		}
	}
	s.Reasons = append(s.Reasons, skipReason{Reason: reason, Variants: []string{variant}})
}

// fullView is every figure of a device's entries (the "fulltable" template).
type fullView struct {
	Cols   []fullCol
	Groups [][]fullRow // a row group per problem
}

type fullCol struct {
	Text string
	Num  bool
}

type fullRow struct {
	Baseline               bool
	Span                   int // the problem's rows, on its first row
	Problem                string
	Variant, VariantTitle  string
	StatusClass, Status    string
	Err, Peer              string
	Emu                    bool
	Check, Time, TimeTitle string // the emulator's columns
	Range, Rate, Vs        string // a GPU's: the time's min–max, the rate, the speedup
	Clock                  string // the power cap's share of its timing and the SM clock, where recorded
}

// fullTable is every figure of a device's entries (median with min–max, every rate, the
// speedup, each error in full), folded under the compact table.
func (b *builder) fullTable(L string, s *lab.Suite, entries []*results.Entry, emu bool) fullView {
	var v fullView
	cols := []string{tr(L, "problem"), tr(L, "variant"), tr(L, "status")}
	if emu {
		cols = append(cols, tr(L, "check"), tr(L, "time"))
	} else {
		cols = append(cols, tr(L, "median"), tr(L, "rate"), tr(L, "vsbaseline"))
	}
	for i, h := range cols {
		v.Cols = append(v.Cols, fullCol{Text: h, Num: i >= 3})
	}
	// One row group per problem, the variants in manifest order within it.
	entries = append([]*results.Entry(nil), entries...)
	pRank := map[string]int{}
	for i, p := range problemNames(s) {
		pRank[p] = i + 1
	}
	sort.SliceStable(entries, func(i, j int) bool {
		ri, rj := pRank[entries[i].Problem], pRank[entries[j].Problem]
		if ri == 0 {
			ri = len(pRank) + 1
		}
		if rj == 0 {
			rj = len(pRank) + 1
		}
		return ri < rj
	})
	for i := 0; i < len(entries); {
		j := i
		for j < len(entries) && entries[j].Problem == entries[i].Problem {
			j++
		}
		var group []fullRow
		for k := i; k < j; k++ {
			row := b.resultRow(L, s, entries[k], emu)
			if k == i {
				row.Span, row.Problem = j-i, problemLabel(L, s, entries[k].Problem)
			}
			group = append(group, row)
		}
		v.Groups = append(v.Groups, group)
		i = j
	}
	return v
}

// resultRow is one entry's row after the problem: variant, status, then figures.
func (b *builder) resultRow(L string, s *lab.Suite, e *results.Entry, emu bool) fullRow {
	r := fullRow{Baseline: e.Variant == s.Baseline, Variant: e.Variant, StatusClass: statusClass(e.Status), Status: e.Status, Emu: emu}
	if v := s.Variant(e.Variant); v != nil {
		r.VariantTitle = pick(L, v.Title)
	}
	if r.Status == results.StatusOK {
		r.Status = tr(L, "statusok")
	}
	if e.Error != "" {
		r.Err = firstLine(runtimeText(L, e.Error), 160)
	}
	if e.Check != nil && strings.HasPrefix(e.Check.Method, lab.PeerMethodPrefix) {
		// A peer's output was checked by its own PyTorch reference, not by the lab's.
		r.Peer = tr(L, "peercheck")
	}
	r.Time = "–"
	if emu {
		r.Check = "–"
		if e.Check != nil {
			r.Check = fmt.Sprintf("%.1e", e.Check.RelErr)
		}
		if e.Time != nil {
			r.Time = fmtTime(e.Time.MedianMs)
		}
		r.TimeTitle = tr(L, "emulatedlong")
		return r
	}
	if e.Time != nil {
		// A run of several operations (a launch-rate suite) is quoted per operation, as labrun does.
		per, unit := 1.0, ""
		if e.Ops > 1 {
			per, unit = float64(e.Ops), "/op"
		}
		r.Time = fmtTime(e.Time.MedianMs/per) + unit
		if e.Time.MinMs > 0 {
			r.Range = fmtTime(e.Time.MinMs/per) + "–" + fmtTime(e.Time.MaxMs/per)
		}
	}
	r.Rate = "–"
	if e.OK() {
		r.Rate = fmtRate(e, s.Metric)
	}
	r.Vs = speedupText(L, s, e)
	r.Clock = clockText(L, e.Data)
	return r
}

// clockText says how much of an entry's timing ran under the power cap, and at what SM clock it
// ended ("" where the run did not record it: the emulator, an older run, a lab of ranks).
func clockText(L string, data map[string]any) string {
	capped, ok := data["power_capped"].(float64)
	if !ok {
		return ""
	}
	s := fmt.Sprintf(tr(L, "powercapped"), 100*capped)
	if mhz, ok := data["sm_clock_mhz"].(float64); ok && mhz > 0 {
		s += fmt.Sprintf(" · %.0f MHz", mhz)
	}
	return s
}

func speedupText(lang string, s *lab.Suite, e *results.Entry) string {
	if e.Variant == s.Baseline && e.OK() {
		return tr(lang, "baseline")
	}
	if e.Speedup > 0 {
		base := e.Baseline
		if base == "" {
			base = s.Baseline
		}
		return fmt.Sprintf("%.2f× %s", e.Speedup, base)
	}
	return "–"
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
