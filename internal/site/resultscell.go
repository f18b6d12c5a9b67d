package site

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The kl-results cell: a suite's results table on each device that has them.

func init() {
	registerCell("kl-results", cellKind{
		newSpec: func() any { return &resultsSpec{} },
		check: func(d *notesDoc, c *cell, spec any) error {
			if spec.(*resultsSpec).Suite == "" {
				return d.errAt(c.Line, "kl-results needs suite:")
			}
			return nil
		},
		render: func(b *builder, pc *pageCtx, c *cell, spec any) (string, error) {
			return b.resultsCell(pc, c, spec.(*resultsSpec))
		},
	})
}

type resultsSpec struct {
	Suite    string   `yaml:"suite" json:"suite"`
	Problems []string `yaml:"problems" json:"problems,omitempty"`
	Variants []string `yaml:"variants" json:"variants,omitempty"`
	Device   string   `yaml:"device" json:"device,omitempty"`
}

func (b *builder) resultsCell(pc *pageCtx, c *cell, s *resultsSpec) (string, error) {
	sel, err := b.selectResults(pc, c, s.Suite, s.Variants, s.Problems, s.Device)
	if err != nil {
		return "", err
	}
	L := pc.lang
	title := pick(L, sel.suite.Title)
	var out strings.Builder
	fmt.Fprintf(&out, `<figure class="cell cell-results" data-suite="%s">`, esc(sel.suite.Name))
	if title != "" {
		fmt.Fprintf(&out, `<figcaption>%s</figcaption>`, esc(title))
	}
	if len(sel.devices) == 0 {
		out.WriteString(b.emptyCell(tr(L, "noresults", pc.ch.Num)))
	}
	for _, dr := range b.shownDevices(sel, s.Device) {
		emu := b.c.bySlug[dr.Slug].Emulated
		entries := sel.entries(dr)
		out.WriteString(`<div class="device-block">`)
		out.WriteString(b.deviceHead(pc, dr))
		out.WriteString(b.compactTable(L, sel.suite, entries, emu))
		fmt.Fprintf(&out, `<details class="cell-details"><summary>%s</summary>`, esc(tr(L, "alldetails")))
		out.WriteString(b.fullTable(L, sel.suite, entries, emu))
		out.WriteString("</details></div>\n")
	}
	out.WriteString("</figure>\n")
	return out.String(), nil
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

// compactTable is a results cell's one table: a row per problem and a column per variant when
// the cell compares a few variants (as the notes' cells do), else a row per variant and a column
// per problem. Each cell holds the key figure: on a GPU the speedup over the suite's baseline
// (the baseline's own column shows its rate), or the rate where the suite has no baseline; on
// the emulator the check's relative error. A run that did not pass shows its status instead.
// Variants skipped on every problem leave the table for one line under it.
func (b *builder) compactTable(L string, s *lab.Suite, entries []*results.Entry, emu bool) string {
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
	var skips skipLine
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
	var out strings.Builder
	if len(shown) > 0 {
		cell := func(v, p string) string {
			e := byKey[v+"\x00"+p]
			if e == nil {
				return `<td class="num muted">–</td>`
			}
			return b.keyFigure(L, s, e, emu)
		}
		head := func(v string) string {
			h := `<code>` + esc(v) + `</code>`
			if v == s.Baseline && !emu {
				h += ` <small class="muted">` + esc(tr(L, "baseline")) + `</small>`
			}
			return h
		}
		out.WriteString(`<div class="table-scroll compact-scroll"><table class="results compact">`)
		if len(shown) <= 4 || len(shown) <= len(problems)/2 {
			// Rows: problems; columns: the variants the cell compares.
			out.WriteString(`<thead><tr><th class="sticky">` + esc(tr(L, "problem")) + `</th>`)
			for _, v := range shown {
				out.WriteString(`<th class="num">` + head(v) + `</th>`)
			}
			out.WriteString("</tr></thead><tbody>\n")
			for _, p := range problems {
				out.WriteString(`<tr><th scope="row" class="sticky">` + esc(p) + `</th>`)
				for _, v := range shown {
					out.WriteString(cell(v, p))
				}
				out.WriteString("</tr>\n")
			}
		} else {
			out.WriteString(`<thead><tr><th class="sticky">` + esc(tr(L, "variant")) + `</th>`)
			for _, p := range problems {
				out.WriteString(`<th class="num">` + esc(p) + `</th>`)
			}
			out.WriteString("</tr></thead><tbody>\n")
			for _, v := range shown {
				rowClass := ""
				if v == s.Baseline && !emu {
					rowClass = ` class="baseline"`
				}
				out.WriteString(`<tr` + rowClass + `><th scope="row" class="sticky">` + head(v) + `</th>`)
				for _, p := range problems {
					out.WriteString(cell(v, p))
				}
				out.WriteString("</tr>\n")
			}
		}
		out.WriteString("</tbody></table></div>\n")
		out.WriteString(`<p class="cell-note">` + esc(b.figureNote(L, s, emu)) + "</p>\n")
	}
	if line := skips.html(L); line != "" {
		out.WriteString(line)
	}
	return out.String()
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
func (b *builder) keyFigure(L string, s *lab.Suite, e *results.Entry, emu bool) string {
	if !e.OK() {
		return fmt.Sprintf(`<td class="num"><span class="%s" title="%s">%s</span></td>`, statusClass(e.Status),
			esc(firstLine(runtimeText(L, e.Error), 200)), esc(statusWord(L, e.Status)))
	}
	if emu {
		if e.Check == nil {
			return `<td class="num">` + esc(tr(L, "statusok")) + `</td>`
		}
		return fmt.Sprintf(`<td class="num">%.1e</td>`, e.Check.RelErr)
	}
	if e.Speedup > 0 && e.Variant != s.Baseline {
		return fmt.Sprintf(`<td class="num"><strong>%.2f×</strong></td>`, e.Speedup)
	}
	return `<td class="num">` + esc(keyRate(e, s.Metric)) + `</td>`
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

// skipLine collects the variants skipped on every problem, by reason.
type skipLine struct {
	reasons []string
	by      map[string][]string
}

func (s *skipLine) add(variant, reason string) {
	if s.by == nil {
		s.by = map[string][]string{}
	}
	if _, ok := s.by[reason]; !ok {
		s.reasons = append(s.reasons, reason)
	}
	s.by[reason] = append(s.by[reason], variant)
}

func (s *skipLine) html(L string) string {
	if len(s.reasons) == 0 {
		return ""
	}
	var parts []string
	for _, r := range s.reasons {
		var vs []string
		for _, v := range s.by[r] {
			vs = append(vs, "<code>"+esc(v)+"</code>")
		}
		parts = append(parts, strings.Join(vs, ", ")+tr(L, "skipsep")+esc(r))
	}
	return `<p class="cell-note skipped">` + esc(tr(L, "skippedhere")) + " " + strings.Join(parts, tr(L, "skipjoin")) + "</p>\n"
}

// fullTable is every figure of a device's entries (median with min–max, every rate, the
// speedup, each error in full), folded under the compact table.
func (b *builder) fullTable(L string, s *lab.Suite, entries []*results.Entry, emu bool) string {
	var out strings.Builder
	out.WriteString(`<div class="table-scroll"><table class="results"><thead><tr>`)
	cols := []string{tr(L, "problem"), tr(L, "variant"), tr(L, "status")}
	if emu {
		cols = append(cols, tr(L, "check"), tr(L, "time"))
	} else {
		cols = append(cols, tr(L, "median"), tr(L, "rate"), tr(L, "vsbaseline"))
	}
	for i, h := range cols {
		class := ""
		if i >= 3 {
			class = ` class="num"`
		}
		fmt.Fprintf(&out, `<th%s>%s</th>`, class, esc(h))
	}
	out.WriteString("</tr></thead>\n")
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
		out.WriteString("<tbody>\n")
		for k := i; k < j; k++ {
			e := entries[k]
			rowClass := ""
			if e.Variant == s.Baseline {
				rowClass = ` class="baseline"`
			}
			fmt.Fprintf(&out, `<tr%s>`, rowClass)
			if k == i {
				fmt.Fprintf(&out, `<th scope="rowgroup" rowspan="%d" class="problem">%s</th>`, j-i, esc(e.Problem))
			}
			out.WriteString(b.resultRow(L, s, e, emu))
			out.WriteString("</tr>\n")
		}
		out.WriteString("</tbody>\n")
		i = j
	}
	out.WriteString("</table></div>\n")
	return out.String()
}

// resultRow is the cells of one entry after the problem: variant, status, then figures.
func (b *builder) resultRow(L string, s *lab.Suite, e *results.Entry, emu bool) string {
	var out strings.Builder
	vt := ""
	if v := s.Variant(e.Variant); v != nil {
		if t := pick(L, v.Title); t != "" {
			vt = `<br><small class="muted">` + esc(t) + `</small>`
		}
	}
	fmt.Fprintf(&out, `<td><code>%s</code>%s</td>`, esc(e.Variant), vt)
	status := e.Status
	if status == results.StatusOK {
		status = tr(L, "statusok")
	}
	errText := ""
	if e.Error != "" {
		errText = `<span class="err">` + esc(firstLine(runtimeText(L, e.Error), 160)) + `</span>`
	}
	if e.Check != nil && strings.HasPrefix(e.Check.Method, lab.PeerMethodPrefix) {
		// A peer's output was checked by its own PyTorch reference, not by the lab's.
		errText += `<br><small class="muted">` + esc(tr(L, "peercheck")) + `</small>`
	}
	fmt.Fprintf(&out, `<td><span class="%s">%s</span>%s</td>`, statusClass(e.Status), esc(status), errText)
	if emu {
		chk := "–"
		if e.Check != nil {
			chk = fmt.Sprintf("%.1e", e.Check.RelErr)
		}
		t := "–"
		if e.Time != nil {
			t = fmtTime(e.Time.MedianMs)
		}
		fmt.Fprintf(&out, `<td class="num">%s</td><td class="num emulated" title="%s">%s</td>`, esc(chk), esc(tr(L, "emulatedlong")), esc(t))
		return out.String()
	}
	t := "–"
	if e.Time != nil {
		// A run of several operations (a launch-rate suite) is quoted per operation, as labrun does.
		per, unit := 1.0, ""
		if e.Ops > 1 {
			per, unit = float64(e.Ops), "/op"
		}
		t = esc(fmtTime(e.Time.MedianMs/per) + unit)
		if e.Time.MinMs > 0 {
			t += fmt.Sprintf(` <small class="muted">(%s–%s)</small>`, esc(fmtTime(e.Time.MinMs/per)), esc(fmtTime(e.Time.MaxMs/per)))
		}
	}
	rate := "–"
	if e.OK() {
		rate = esc(fmtRate(e, s.Metric))
	}
	fmt.Fprintf(&out, `<td class="num">%s</td><td class="num">%s</td><td class="num">%s</td>`, t, rate, esc(speedupText(L, s, e)))
	return out.String()
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
