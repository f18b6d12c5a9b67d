package site

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/plot"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/solution"
)

// The cells, each a fenced block with a YAML body:
//
//	```kl-source            the source of a kernel file of the lab, or of one function in it
//	file: kernels/01_copy.cu
//	function: copy_f4       (optional)
//	```
//
// kl-source also takes `variant: NAME` (the variant's file and entry; `suite:` when the name is
// ambiguous), `lines: 10-40` and `numbers: false`.
//
//	kl-results   suite: NAME, optional problems: [..], variants: [..], device: SLUG
//	kl-plot      kind: speedup|throughput|roofline|timeline, suite: NAME, optional device, problems,
//	             variants, x: PARAM (throughput's x axis), roofs: [hbm_gbps, fp32_tflops, ...];
//	             timeline draws the per-SM timelines that entries keep in data (lab 03): one
//	             problem, the first of problems: (else of the suite's) that has timelines on the
//	             device, one panel per variant
//	kl-properties  optional device: SLUG, show: [properties, nvml, attributes]
//	kl-ceilings    optional device: SLUG

type sourceSpec struct {
	File     string `yaml:"file" json:"file,omitempty"`
	Function string `yaml:"function" json:"function,omitempty"`
	Variant  string `yaml:"variant" json:"variant,omitempty"`
	Suite    string `yaml:"suite" json:"suite,omitempty"`
	Lines    string `yaml:"lines" json:"lines,omitempty"`
	Numbers  *bool  `yaml:"numbers" json:"numbers,omitempty"`
}

type resultsSpec struct {
	Suite    string   `yaml:"suite" json:"suite"`
	Problems []string `yaml:"problems" json:"problems,omitempty"`
	Variants []string `yaml:"variants" json:"variants,omitempty"`
	Device   string   `yaml:"device" json:"device,omitempty"`
}

type plotSpec struct {
	Kind     string   `yaml:"kind" json:"kind"`
	Suite    string   `yaml:"suite" json:"suite"`
	Device   string   `yaml:"device" json:"device,omitempty"`
	Problems []string `yaml:"problems" json:"problems,omitempty"`
	Variants []string `yaml:"variants" json:"variants,omitempty"`
	X        string   `yaml:"x" json:"x,omitempty"`
	Roofs    []string `yaml:"roofs" json:"roofs,omitempty"`
}

type propertiesSpec struct {
	Device string   `yaml:"device" json:"device,omitempty"`
	Show   []string `yaml:"show" json:"show,omitempty"`
}

type ceilingsSpec struct {
	Device string `yaml:"device" json:"device,omitempty"`
}

// CellKinds are the info strings of the cells the renderer knows.
var CellKinds = []string{"kl-source", "kl-results", "kl-plot", "kl-properties", "kl-ceilings"}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// parseCell decodes a cell's body strictly (unknown keys are errors) and checks the keys every
// kind needs.
func parseCell(d *notesDoc, c *cell) error {
	var spec any
	switch c.Kind {
	case "kl-source":
		spec = &sourceSpec{}
	case "kl-results":
		spec = &resultsSpec{}
	case "kl-plot":
		spec = &plotSpec{}
	case "kl-properties":
		spec = &propertiesSpec{}
	case "kl-ceilings":
		spec = &ceilingsSpec{}
	default:
		k, ok := extraCells[c.Kind]
		if !ok {
			return d.errAt(c.Line, "unknown cell %s (cells are %s)", c.Kind, strings.Join(CellKinds, ", "))
		}
		spec = k.newSpec()
	}
	if strings.TrimSpace(c.Body) != "" {
		dec := yaml.NewDecoder(bytes.NewReader([]byte(c.Body)))
		dec.KnownFields(true)
		if err := dec.Decode(spec); err != nil {
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
			line := c.Line
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				line = c.Line + n
				msg = strings.TrimSpace(yamlLine.ReplaceAllString(msg, ""))
				msg = strings.TrimPrefix(msg, ": ")
			}
			return d.errAt(line, "%s: %s", c.Kind, strings.TrimSpace(msg))
		}
	}
	switch s := spec.(type) {
	case *sourceSpec:
		if s.File == "" && s.Variant == "" {
			return d.errAt(c.Line, "kl-source needs file: (a kernel file of the lab) or variant:")
		}
	case *resultsSpec:
		if s.Suite == "" {
			return d.errAt(c.Line, "kl-results needs suite:")
		}
	case *plotSpec:
		if s.Suite == "" {
			return d.errAt(c.Line, "kl-plot needs suite:")
		}
		switch s.Kind {
		case "speedup", "throughput", "roofline", "timeline":
		default:
			return d.errAt(c.Line, "kl-plot: kind %q must be speedup, throughput, roofline or timeline", s.Kind)
		}
	case *propertiesSpec:
		for _, w := range s.Show {
			if !contains(propertyParts, w) {
				return d.errAt(c.Line, "kl-properties: show: %q is not one of %s", w, strings.Join(propertyParts, ", "))
			}
		}
	default:
		if k, ok := extraCells[c.Kind]; ok {
			if err := k.check(d, c, spec); err != nil {
				return err
			}
		}
	}
	canon, _ := json.Marshal(spec)
	c.spec = spec
	c.Canon = c.Kind + " " + string(canon)
	return nil
}

// pageCtx is what a cell needs to know about the page it is on.
type pageCtx struct {
	ch      *chapter
	lang    string
	doc     *notesDoc
	pageDir string // site-relative folder of the page, e.g. "en/labs"
}

func (b *builder) renderCell(pc *pageCtx, c *cell) error {
	var (
		html string
		err  error
	)
	switch s := c.spec.(type) {
	case *sourceSpec:
		html, err = b.sourceCell(pc, c, s)
	case *resultsSpec:
		html, err = b.resultsCell(pc, c, s)
	case *plotSpec:
		html, err = b.plotCell(pc, c, s)
	case *propertiesSpec:
		html, err = b.propertiesCell(pc, c, s)
	case *ceilingsSpec:
		html, err = b.ceilingsCell(pc, c, s)
	default:
		if k, ok := extraCells[c.Kind]; ok {
			html, err = k.render(b, pc, c, s)
		}
	}
	c.HTML = html
	return err
}

// ---- kl-source

func (b *builder) sourceCell(pc *pageCtx, c *cell, s *sourceSpec) (string, error) {
	d, m := pc.doc, pc.ch.Manifest
	file, fn := s.File, s.Function
	if s.Variant != "" {
		v, err := findVariant(m, s.Suite, s.Variant)
		if err != nil {
			return "", d.errAt(c.Line, "kl-source: %v", err)
		}
		if !v.IsKernel() {
			return "", d.errAt(c.Line, "kl-source: variant %s is a library call (%s); it has no source", v.Name, v.Library)
		}
		if file == "" {
			file = v.File
		}
		if fn == "" {
			fn = v.Entry
		}
	}
	rel := path.Clean(path.Join("labs", pc.ch.Name, filepath.ToSlash(file)))
	if strings.HasPrefix(rel, "..") || path.IsAbs(file) {
		return "", d.errAt(c.Line, "kl-source: file %s is outside the course folder", file)
	}
	abs := filepath.Join(b.c.root, filepath.FromSlash(rel))
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", d.errAt(c.Line, "kl-source: file %s does not exist in %s (kernel files there: %s)", file,
			path.Join("labs", pc.ch.Name), strings.Join(kernelFiles(filepath.Join(b.c.root, "labs", pc.ch.Name)), ", "))
	}
	// An exercise file is shown as the student edition has it: solution regions become their
	// TODO stubs, on the page and in the copy under files/.
	if solution.Has(data) {
		if data, _, err = solution.Strip(rel, data); err != nil {
			return "", d.errAt(c.Line, "kl-source: %v", err)
		}
	}
	src := strings.ReplaceAll(string(data), "\r\n", "\n")
	lang := langOfFile(file)
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	first, last := 1, len(lines)
	if fn != "" {
		sp, defined, ok := findFunction(lang, src, fn)
		if !ok {
			list := "none found"
			if len(defined) > 0 {
				list = strings.Join(defined, ", ")
			}
			return "", d.errAt(c.Line, "kl-source: function %s is not defined in %s (functions there: %s)", fn, file, list)
		}
		first, last = sp.first, sp.last
	}
	if s.Lines != "" {
		a, z, ok := parseRange(s.Lines)
		if !ok || a < 1 || z > len(lines) || a > z {
			return "", d.errAt(c.Line, "kl-source: lines %q must be FIRST-LAST within 1-%d", s.Lines, len(lines))
		}
		first, last = a, z
	}
	excerpt := strings.Join(lines[first-1:last], "\n")
	b.writeFile(path.Join("files", rel), data)
	href := b.rel(pc.pageDir, path.Join("files", rel))
	caption := fmt.Sprintf(`<a href="%s">%s</a>`, esc(href), esc(path.Join(pc.ch.Name, filepath.ToSlash(file))))
	if fn != "" {
		caption += " · <code>" + esc(fn) + "</code>"
	}
	if first != 1 || last != len(lines) {
		caption += fmt.Sprintf(" · %d–%d", first, last)
	}
	start := first
	if s.Numbers != nil && !*s.Numbers {
		start = 0
	}
	return fmt.Sprintf(`<figure class="cell cell-source"><figcaption>%s</figcaption>%s</figure>`+"\n",
		caption, codeBlock(lang, excerpt, start)), nil
}

func parseRange(s string) (int, int, bool) {
	a, z, ok := strings.Cut(strings.ReplaceAll(s, " ", ""), "-")
	if !ok {
		return 0, 0, false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(z)
	return x, y, err1 == nil && err2 == nil
}

func kernelFiles(labDir string) []string {
	var out []string
	filepath.WalkDir(labDir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && langOfFile(p) == "cuda" {
			r, _ := filepath.Rel(labDir, p)
			out = append(out, filepath.ToSlash(r))
		}
		return nil
	})
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

func findVariant(m *lab.Manifest, suite, name string) (*lab.Variant, error) {
	if suite != "" {
		s := m.Suite(suite)
		if s == nil {
			return nil, fmt.Errorf("suite %s does not exist (suites: %s)", suite, suiteNames(m))
		}
		if v := s.Variant(name); v != nil {
			return v, nil
		}
		return nil, fmt.Errorf("variant %s is not in suite %s (variants: %s)", name, suite, variantNames(s))
	}
	var found *lab.Variant
	for _, s := range m.Suites {
		if v := s.Variant(name); v != nil {
			if found != nil && (found.File != v.File || found.Entry != v.Entry) {
				return nil, fmt.Errorf("variant %s is in suites %s and %s: add suite:", name, found.Suite.Name, s.Name)
			}
			found = v
		}
	}
	if found == nil {
		return nil, fmt.Errorf("variant %s does not exist in %s", name, m.Name)
	}
	return found, nil
}

func suiteNames(m *lab.Manifest) string {
	var n []string
	for _, s := range m.Suites {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

func variantNames(s *lab.Suite) string {
	var n []string
	for _, v := range s.Variants {
		n = append(n, v.Name)
	}
	return strings.Join(n, ", ")
}

// problemNames lists a suite's problems in order: GPU set, then emulator, then grading.
func problemNames(s *lab.Suite) []string {
	seen := map[string]bool{}
	var out []string
	for _, set := range [][]lab.Problem{s.Problems.GPU, s.Problems.Emu, s.Problems.Grade} {
		for _, p := range set {
			if !seen[p.Name] {
				seen[p.Name] = true
				out = append(out, p.Name)
			}
		}
	}
	return out
}

func problemParams(s *lab.Suite, name string) map[string]int64 {
	for _, set := range [][]lab.Problem{s.Problems.GPU, s.Problems.Emu, s.Problems.Grade} {
		for _, p := range set {
			if p.Name == name {
				return p.Params
			}
		}
	}
	return nil
}

// selection is a suite with the cell's filters, checked against the manifest and results.
type selection struct {
	suite    *lab.Suite
	variants map[string]bool // nil: all
	problems map[string]bool // nil: all
	devices  []*devResults   // devices whose results hold entries of the suite
}

func (b *builder) selectResults(pc *pageCtx, c *cell, suite string, variants, problems []string, device string) (*selection, error) {
	d, m := pc.doc, pc.ch.Manifest
	s := m.Suite(suite)
	if s == nil {
		return nil, d.errAt(c.Line, "%s: suite %s does not exist in %s (suites: %s)", c.Kind, suite, m.Name, suiteNames(m))
	}
	sel := &selection{suite: s}
	if len(variants) > 0 {
		sel.variants = map[string]bool{}
		for _, v := range variants {
			if s.Variant(v) == nil {
				return nil, d.errAt(c.Line, "%s: variant %s is not in suite %s (variants: %s)", c.Kind, v, suite, variantNames(s))
			}
			sel.variants[v] = true
		}
	}
	if len(problems) > 0 {
		known := problemNames(s)
		sel.problems = map[string]bool{}
		for _, p := range problems {
			if !contains(known, p) {
				return nil, d.errAt(c.Line, "%s: problem %q is not in suite %s (problems: %s)", c.Kind, p, suite, strings.Join(known, ", "))
			}
			sel.problems[p] = true
		}
	}
	if device != "" {
		var have []string
		for _, dr := range pc.ch.Results {
			have = append(have, dr.Slug)
			if dr.Slug == device {
				sel.devices = append(sel.devices, dr)
			}
		}
		if len(sel.devices) == 0 {
			if len(have) == 0 {
				have = []string{"none"}
			}
			return nil, d.errAt(c.Line, "%s: device %s has no results for %s (devices with results: %s)", c.Kind, device, pc.ch.Name, strings.Join(have, ", "))
		}
		if len(sel.entries(sel.devices[0])) == 0 {
			return nil, d.errAt(c.Line, "%s: device %s has no results for suite %s", c.Kind, device, suite)
		}
		return sel, nil
	}
	for _, dr := range pc.ch.Results {
		if len(sel.entries(dr)) > 0 {
			sel.devices = append(sel.devices, dr)
		}
	}
	return sel, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// entries are the device's entries of the suite that pass the filters, in manifest order.
func (sel *selection) entries(dr *devResults) []*results.Entry {
	vOrder := map[string]int{}
	for i, v := range sel.suite.Variants {
		vOrder[v.Name] = i
	}
	pOrder := map[string]int{}
	for i, p := range problemNames(sel.suite) {
		pOrder[p] = i
	}
	var out []*results.Entry
	for i := range dr.File.Entries {
		e := &dr.File.Entries[i]
		if e.Suite != sel.suite.Name {
			continue
		}
		if sel.variants != nil && !sel.variants[e.Variant] {
			continue
		}
		if sel.problems != nil && !sel.problems[e.Problem] {
			continue
		}
		out = append(out, e)
	}
	rank := func(m map[string]int, k string) int {
		if r, ok := m[k]; ok {
			return r
		}
		return len(m) + 1
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ra, rb := rank(vOrder, a.Variant), rank(vOrder, b.Variant); ra != rb {
			return ra < rb
		}
		if ra, rb := rank(pOrder, a.Problem), rank(pOrder, b.Problem); ra != rb {
			return ra < rb
		}
		return a.Variant+a.Problem < b.Variant+b.Problem
	})
	return out
}

// emptyCell says why a cell has nothing to show; `text` in msg becomes code.
func (b *builder) emptyCell(msg string) string {
	parts := strings.Split(esc(msg), "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = "<code>" + parts[i] + "</code>"
	}
	return `<div class="cell cell-empty">` + strings.Join(parts, "") + "</div>\n"
}

func (b *builder) deviceHead(pc *pageCtx, dr *devResults) string {
	d := b.c.bySlug[dr.Slug]
	f := dr.File
	href := b.rel(pc.pageDir, path.Join(pc.lang, "devices", dr.Slug+".html"))
	meta := []string{}
	if f.Device.ComputeMajor > 0 && !d.Emulated {
		meta = append(meta, f.Device.Arch())
	}
	if f.Toolchain.Compiler != "" {
		meta = append(meta, strings.TrimSpace(f.Toolchain.Compiler+" "+f.Toolchain.Version))
	}
	if !f.Time.IsZero() {
		meta = append(meta, f.Time.UTC().Format("2006-01-02"))
	}
	s := fmt.Sprintf(`<p class="device-head"><a href="%s">%s</a> <span class="meta">%s</span></p>`,
		esc(href), esc(d.Name), esc(strings.Join(meta, " · ")))
	if d.Emulated {
		s += `<p class="emulated-note">` + esc(tr(pc.lang, "emulatednote")) + "</p>"
	}
	return s
}

// ---- kl-results

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
		// A run of several operations (lab 01's launches) is quoted per operation, as labrun does.
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

// ---- kl-plot

func (b *builder) plotCell(pc *pageCtx, c *cell, s *plotSpec) (string, error) {
	sel, err := b.selectResults(pc, c, s.Suite, s.Variants, s.Problems, s.Device)
	if err != nil {
		return "", err
	}
	L := pc.lang
	devices := sel.devices
	if s.Device == "" {
		// Emulated timings are not performance figures: plot them only when no GPU has results.
		var real []*devResults
		for _, dr := range devices {
			if !b.c.bySlug[dr.Slug].Emulated {
				real = append(real, dr)
			}
		}
		if len(real) > 0 {
			devices = real
		}
	}
	var out strings.Builder
	if len(devices) == 0 {
		out.WriteString(`<figure class="cell plot plot-empty">`)
		out.WriteString(b.emptyCell(tr(L, "noresults", pc.ch.Num)))
		out.WriteString("</figure>\n")
		return out.String(), nil
	}
	suiteTitle := pick(L, sel.suite.Title)
	if suiteTitle == "" {
		suiteTitle = sel.suite.Name
	}
	hash := sha256.Sum256([]byte(c.Canon))
	for _, dr := range devices {
		dev := b.c.bySlug[dr.Slug]
		entries := sel.entries(dr)
		var svg []byte
		var perr error
		switch s.Kind {
		case "speedup":
			svg, perr = b.speedupPlot(L, sel, entries, suiteTitle)
		case "throughput":
			svg, perr = b.throughputPlot(L, sel, entries, suiteTitle, s.X, pc, c)
		case "roofline":
			svg, perr = b.rooflinePlot(L, sel, entries, suiteTitle, dr, s.Roofs, pc, c)
		case "timeline":
			svg, perr = b.timelinePlot(L, sel, entries, s.Problems)
		}
		var le *lineError
		if errors.As(perr, &le) {
			return "", perr
		}
		out.WriteString(`<figure class="cell plot">`)
		out.WriteString(b.deviceHead(pc, dr))
		if perr != nil {
			out.WriteString(b.emptyCell(perr.Error()))
			out.WriteString("</figure>\n")
			continue
		}
		if dev.Emulated {
			svg = markEmulated(svg, tr(L, "emulatedlong"))
		}
		name := fmt.Sprintf("%s-%s-%s-%s.%s.svg", sel.suite.Name, s.Kind, dr.Slug, hex.EncodeToString(hash[:3]), L)
		rel := path.Join("plots", pc.ch.Name, name)
		b.writeFile(rel, svg)
		b.plots++
		alt := tr(L, "plotalt", suiteTitle+" ("+s.Kind+")", dev.Name)
		fmt.Fprintf(&out, `<img class="plot-img" src="%s" alt="%s" width="640" loading="eager" data-kind="%s">`,
			esc(b.rel(pc.pageDir, rel)), esc(alt), esc(s.Kind))
		out.WriteString("</figure>\n")
	}
	return out.String(), nil
}

// markEmulated adds the emulator's label to the bottom of a figure.
func markEmulated(svg []byte, label string) []byte {
	i := bytes.LastIndex(svg, []byte("</svg>"))
	if i < 0 {
		return svg
	}
	txt := fmt.Sprintf(`<text x="99%%" y="99%%" text-anchor="end" style="font-family:%s;font-size:9px;fill:#9a6700">%s</text>`+"\n",
		plot.FontStack, esc(label))
	return append(append(append([]byte{}, svg[:i]...), txt...), svg[i:]...)
}

func (b *builder) speedupPlot(L string, sel *selection, entries []*results.Entry, title string) ([]byte, error) {
	var variants, problems []string
	okCount := map[string]int{}
	for _, e := range entries {
		if !contains(variants, e.Variant) {
			variants = append(variants, e.Variant)
		}
		if e.OK() {
			okCount[e.Problem]++
		}
	}
	for _, p := range problemNames(sel.suite) {
		if okCount[p] > 0 {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return nil, errors.New("no correct results to plot")
	}
	if sel.problems == nil && len(problems) > 3 {
		problems = problems[len(problems)-3:] // the largest ones
	}
	groups := make([]plot.BarGroup, len(problems))
	for gi, p := range problems {
		vals := make([]float64, len(variants))
		for vi, v := range variants {
			vals[vi] = math.NaN()
			for _, e := range entries {
				if e.Variant == v && e.Problem == p && e.OK() {
					switch {
					case e.Speedup > 0:
						vals[vi] = e.Speedup
					case v == sel.suite.Baseline:
						vals[vi] = 1
					}
				}
			}
		}
		groups[gi] = plot.BarGroup{Name: p, Values: vals}
	}
	base := sel.suite.Baseline
	bars := &plot.Bars{
		Title:          tr(L, "speeduptitle", title, base),
		XLabel:         tr(L, "speedupx", base),
		Categories:     variants,
		Groups:         groups,
		Reference:      1,
		ReferenceLabel: base,
	}
	return bars.SVG()
}

// sizeOf is the x value of a problem for throughput plots, and the axis name.
func sizeOf(params map[string]int64, x string) (float64, string) {
	if x != "" {
		return float64(params[x]), x
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if _, ok := params["bytes"]; ok {
		return float64(params["bytes"]), "bytes"
	}
	prod := 1.0
	for _, k := range keys {
		prod *= float64(params[k])
	}
	return prod, strings.Join(keys, "·")
}

func (b *builder) throughputPlot(L string, sel *selection, entries []*results.Entry, title, x string, pc *pageCtx, c *cell) ([]byte, error) {
	if x != "" {
		found := false
		for _, p := range problemNames(sel.suite) {
			if _, ok := problemParams(sel.suite, p)[x]; ok {
				found = true
			}
		}
		if !found {
			return nil, pc.doc.errAt(c.Line, "kl-plot: x: %s is not a parameter of suite %s's problems", x, sel.suite.Name)
		}
	}
	metric := sel.suite.Metric
	var series []plot.Series
	axis := ""
	for _, e := range entries {
		if !e.OK() {
			continue
		}
		params := e.Params
		if len(params) == 0 {
			params = problemParams(sel.suite, e.Problem)
		}
		xv, name := sizeOf(params, x)
		axis = name
		y, _ := metricValue(e, metric)
		if y <= 0 {
			continue
		}
		if len(series) == 0 || series[len(series)-1].Name != e.Variant {
			series = append(series, plot.Series{Name: e.Variant})
		}
		series[len(series)-1].Points = append(series[len(series)-1].Points, plot.Point{X: xv, Y: y})
	}
	if len(series) == 0 {
		return nil, errors.New("no correct results to plot")
	}
	for i := range series {
		sort.Slice(series[i].Points, func(a, b int) bool { return series[i].Points[a].X < series[i].Points[b].X })
	}
	ylabel := metricUnit(metric)
	if metric == "us" {
		ylabel = tr(L, "perop_us")
	}
	lines := &plot.Lines{
		Title:  tr(L, "throughput", title, metricUnit(metric)),
		XLabel: tr(L, "problemsize", axis),
		YLabel: ylabel,
		// Sizes and rates both span decades: on a linear axis every small problem sits at 0.
		LogX:   true,
		LogY:   true,
		Series: series,
	}
	return lines.SVG()
}

// ceilingValue reads one ceiling of lab 01: measured, else peak.
func ceilingValue(v any) (value float64, measured bool, ok bool) {
	if f, isNum := num(v); isNum {
		return f, true, f > 0
	}
	m, isMap := v.(*omap)
	if !isMap {
		return 0, false, false
	}
	if mv, has := m.Get("measured"); has {
		if f, isNum := num(mv); isNum && f > 0 {
			return f, true, true
		}
	}
	if pv, has := m.Get("peak"); has {
		if f, isNum := num(pv); isNum && f > 0 {
			return f, false, true
		}
	}
	return 0, false, false
}

func (b *builder) rooflinePlot(L string, sel *selection, entries []*results.Entry, title string, dr *devResults, roofs []string, pc *pageCtx, c *cell) ([]byte, error) {
	var series []plot.Series
	for _, e := range entries {
		if !e.OK() || e.TFLOPs <= 0 || e.GBps <= 0 {
			continue
		}
		ai := e.TFLOPs * 1000 / e.GBps
		if len(series) == 0 || series[len(series)-1].Name != e.Variant {
			series = append(series, plot.Series{Name: e.Variant})
		}
		series[len(series)-1].Points = append(series[len(series)-1].Points, plot.Point{X: ai, Y: e.TFLOPs})
	}
	hasRates := false
	for _, e := range entries {
		if e.OK() {
			hasRates = true
		}
	}
	if len(series) == 0 && hasRates {
		return nil, pc.doc.errAt(c.Line, "kl-plot: roofline needs results with both TFLOP/s and GB/s; suite %s records %s only",
			sel.suite.Name, metricUnit(sel.suite.Metric))
	}
	r := &plot.Roofline{
		Title:  tr(L, "roofline", title),
		XLabel: tr(L, "intensity"),
		YLabel: tr(L, "achieved"),
		Series: series,
	}
	cm, _ := b.ceilings(dr.Slug, "01_device_props")
	var available []string
	if cm != nil {
		available = cm.Keys
	}
	want := roofs
	if len(want) == 0 {
		for _, k := range available {
			if k == "h2d_gbps" || k == "d2h_gbps" {
				continue
			}
			if strings.HasSuffix(k, "_gbps") || strings.HasSuffix(k, "_tflops") {
				want = append(want, k)
			}
		}
	}
	for _, k := range want {
		v, ok := cm.Get(k)
		if !ok {
			if len(roofs) > 0 {
				list := strings.Join(available, ", ")
				if list == "" {
					list = "none: run lab 01 on this device"
				}
				return nil, pc.doc.errAt(c.Line, "kl-plot: roof %s is not among the device's ceilings (%s)", k, list)
			}
			continue
		}
		val, measured, ok := ceilingValue(v)
		if !ok {
			continue
		}
		how := tr(L, "peakroof")
		if measured {
			how = tr(L, "measuredroof")
		}
		switch {
		case strings.HasSuffix(k, "_gbps"):
			label := fmt.Sprintf("%s %s GB/s (%s)", ceilingName(L, k), fmtSig(val), how)
			r.Memory = append(r.Memory, plot.Roof{Name: label, Value: val})
		case strings.HasSuffix(k, "_tflops"):
			label := fmt.Sprintf("%s %s TFLOP/s (%s)", ceilingName(L, k), fmtSig(val), how)
			r.Compute = append(r.Compute, plot.Roof{Name: label, Value: val})
		default:
			if len(roofs) > 0 {
				return nil, pc.doc.errAt(c.Line, "kl-plot: roof %s is neither a bandwidth (_gbps) nor a compute rate (_tflops)", k)
			}
		}
	}
	if len(series) == 0 {
		return nil, errors.New("no correct results to plot")
	}
	return r.SVG()
}

// ---- kl-properties and kl-ceilings

// defaultParts are what kl-properties shows without show:.
var defaultParts = []string{"properties", "nvml", "attributes"}

// propertyParts are the parts of lab 01's device description that kl-properties shows.
var propertyParts = []string{"properties", "memory", "peaks", "nvml", "attributes"}

// property finds a part of a device's description: "properties" is the lab's "properties" or,
// as lab 01 records it, its "info" (the device identity and limits).
func (b *builder) property(slug, preferLab, part string) any {
	if v, _ := b.c.extraFor(slug, preferLab, part); v != nil {
		return v
	}
	if part == "properties" {
		v, _ := b.c.extraFor(slug, preferLab, "info")
		return v
	}
	return nil
}

// ceilingOrder is the order of the known ceilings in tables.
var ceilingOrder = []string{"hbm_gbps", "l2_gbps", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
	"launch_us", "launch_sync_us", "h2d_gbps", "d2h_gbps"}

// ceilings finds a device's measured ceilings: the "ceilings" object of its results, or, as lab
// 01 records them, the top-level entries shaped like a ceiling ({"unit", "measured", ...}).
func (b *builder) ceilings(slug, preferLab string) (*omap, *devResults) {
	if v, dr := b.c.extraFor(slug, preferLab, "ceilings"); v != nil {
		if m, ok := v.(*omap); ok {
			return m, dr
		}
	}
	d := b.c.bySlug[slug]
	if d == nil {
		return nil, nil
	}
	labs := []string{preferLab, "01_device_props"}
	for n := range d.Files {
		labs = append(labs, n)
	}
	sort.Strings(labs[2:])
	for _, n := range labs {
		dr := d.Files[n]
		if dr == nil || dr.Extra == nil {
			continue
		}
		out := &omap{Vals: map[string]any{}}
		for _, k := range dr.Extra.Keys {
			if m, ok := dr.Extra.Vals[k].(*omap); ok {
				_, hasUnit := m.Get("unit")
				_, hasMeasured := m.Get("measured")
				if hasUnit && hasMeasured {
					out.Vals[k] = m
				}
			}
		}
		if len(out.Vals) == 0 {
			continue
		}
		for _, k := range ceilingOrder {
			if _, ok := out.Vals[k]; ok {
				out.Keys = append(out.Keys, k)
			}
		}
		var rest []string
		for k := range out.Vals {
			if !contains(ceilingOrder, k) {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		out.Keys = append(out.Keys, rest...)
		return out, dr
	}
	return nil, nil
}

// extraDevices lists the devices that have one of the parts in their results, or the named one.
func (b *builder) extraDevices(pc *pageCtx, c *cell, slug string, parts ...string) ([]*device, error) {
	var out []*device
	var have []string
	for _, d := range b.c.devices {
		for _, part := range parts {
			var v any
			if part == "ceilings" {
				if m, _ := b.ceilings(d.Slug, pc.ch.Name); m != nil {
					v = m
				}
			} else {
				v = b.property(d.Slug, pc.ch.Name, part)
			}
			if v != nil {
				have = append(have, d.Slug)
				if slug == "" || slug == d.Slug {
					out = append(out, d)
				}
				break
			}
		}
	}
	if slug != "" && len(out) == 0 {
		if len(have) == 0 {
			have = []string{"none"}
		}
		return nil, pc.doc.errAt(c.Line, "%s: device %s has no %s in its results (devices that do: %s)", c.Kind, slug, strings.Join(parts, "/"), strings.Join(have, ", "))
	}
	return out, nil
}

func (b *builder) propertiesCell(pc *pageCtx, c *cell, s *propertiesSpec) (string, error) {
	show := s.Show
	if len(show) == 0 {
		show = defaultParts
	}
	devs, err := b.extraDevices(pc, c, s.Device, show...)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	out.WriteString(`<figure class="cell cell-properties">`)
	if len(devs) == 0 {
		out.WriteString(b.emptyCell(tr(pc.lang, "noprops")))
	}
	for _, d := range devs {
		out.WriteString(`<div class="device-block">`)
		out.WriteString(b.deviceHead(pc, d.Files[firstLab(d)]))
		out.WriteString(b.propertiesHTML(pc.lang, d, pc.ch.Name, show))
		out.WriteString("</div>\n")
	}
	out.WriteString("</figure>\n")
	return out.String(), nil
}

func firstLab(d *device) string {
	names := make([]string, 0, len(d.Files))
	for n := range d.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names[0]
}

// propertiesHTML renders a device's property tables: the identity and limits, memory, peaks and
// NVML in full, the list of every attribute folded.
func (b *builder) propertiesHTML(L string, d *device, preferLab string, show []string) string {
	var out strings.Builder
	for _, part := range show {
		v := b.property(d.Slug, preferLab, part)
		if v == nil {
			continue
		}
		table := valueTable(L, v)
		switch part {
		case "attributes":
			n := 0
			if a, ok := v.([]any); ok {
				n = len(a)
			} else if m, ok := v.(*omap); ok {
				n = len(m.Keys)
			}
			fmt.Fprintf(&out, `<details class="attributes"><summary>%s (%d)</summary>%s</details>`, esc(tr(L, "attributes")), n, table)
		case "properties":
			out.WriteString(table)
		default:
			fmt.Fprintf(&out, `<p class="cell-caption">%s</p>%s`, esc(tr(L, "part_"+part)), table)
		}
	}
	return out.String()
}

// valueTable renders lab-specific data: an object as a key/value table, a list of objects as a
// table with a column per key.
func valueTable(L string, v any) string {
	var out strings.Builder
	out.WriteString(`<div class="table-scroll">`)
	switch x := v.(type) {
	case *omap:
		fmt.Fprintf(&out, `<table class="kv"><thead><tr><th>%s</th><th>%s</th></tr></thead><tbody>`, esc(tr(L, "property")), esc(tr(L, "value")))
		var rows func(prefix string, m *omap, depth int)
		rows = func(prefix string, m *omap, depth int) {
			for _, k := range m.Keys {
				val := m.Vals[k]
				if sub, ok := val.(*omap); ok {
					if isValueUnit(sub) {
						val = joinValueUnit(sub)
					} else if depth < 2 && len(sub.Keys) > 0 {
						rows(prefix+k+" · ", sub, depth+1)
						continue
					}
				}
				fmt.Fprintf(&out, `<tr><th scope="row">%s</th><td>%s</td></tr>`, esc(prefix+k), esc(firstLine(fmtValue(val), 240)))
			}
		}
		rows("", x, 0)
		out.WriteString("</tbody></table>")
	case []any:
		var cols []string
		for _, e := range x {
			if m, ok := e.(*omap); ok {
				for _, k := range m.Keys {
					if !contains(cols, k) {
						cols = append(cols, k)
					}
				}
			}
		}
		if len(cols) == 0 {
			out.WriteString(`<p>` + esc(fmtValue(x)) + `</p>`)
			break
		}
		out.WriteString(`<table class="results"><thead><tr>`)
		for _, c := range cols {
			fmt.Fprintf(&out, `<th>%s</th>`, esc(c))
		}
		out.WriteString("</tr></thead><tbody>")
		for _, e := range x {
			m, _ := e.(*omap)
			out.WriteString("<tr>")
			for _, c := range cols {
				val, _ := m.Get(c)
				fmt.Fprintf(&out, `<td>%s</td>`, esc(fmtValue(val)))
			}
			out.WriteString("</tr>")
		}
		out.WriteString("</tbody></table>")
	default:
		out.WriteString(`<p>` + esc(fmtValue(v)) + `</p>`)
	}
	out.WriteString("</div>")
	return out.String()
}

func isValueUnit(m *omap) bool {
	_, hv := m.Get("value")
	if !hv {
		return false
	}
	for _, k := range m.Keys {
		if k != "value" && k != "unit" {
			return false
		}
	}
	return true
}

func joinValueUnit(m *omap) string {
	v, _ := m.Get("value")
	u, _ := m.Get("unit")
	s := fmtValue(v)
	if us, ok := u.(string); ok && us != "" {
		s += " " + us
	}
	return s
}

func (b *builder) ceilingsCell(pc *pageCtx, c *cell, s *ceilingsSpec) (string, error) {
	devs, err := b.extraDevices(pc, c, s.Device, "ceilings")
	if err != nil {
		return "", err
	}
	var out strings.Builder
	out.WriteString(`<figure class="cell cell-ceilings">`)
	if len(devs) == 0 {
		out.WriteString(b.emptyCell(tr(pc.lang, "noceilings")))
	}
	for _, d := range devs {
		m, dr := b.ceilings(d.Slug, pc.ch.Name)
		out.WriteString(`<div class="device-block">`)
		out.WriteString(b.deviceHead(pc, dr))
		out.WriteString(ceilingsTable(pc.lang, m))
		out.WriteString("</div>\n")
	}
	out.WriteString("</figure>\n")
	return out.String(), nil
}

func unitOf(key string, v any) string {
	if m, ok := v.(*omap); ok {
		if u, ok := first(m.Get("unit")).(string); ok && u != "" {
			if u == "us" {
				return "µs"
			}
			return u
		}
	}
	switch {
	case strings.HasSuffix(key, "_gbps"):
		return "GB/s"
	case strings.HasSuffix(key, "_tflops"):
		return "TFLOP/s"
	case strings.HasSuffix(key, "_us"):
		return "µs"
	case strings.HasSuffix(key, "_ms"):
		return "ms"
	}
	return ""
}

// ceilingsTable renders the measured ceilings: measured (and how), the peak it is compared with
// (and where that comes from), and the ratio.
func ceilingsTable(L string, m *omap) string {
	var out strings.Builder
	fmt.Fprintf(&out, `<div class="table-scroll"><table class="results ceilings"><thead><tr><th>%s</th><th class="num">%s</th><th class="num">%s</th><th class="num">%s</th><th>%s</th></tr></thead><tbody>`,
		esc(tr(L, "ceiling")), esc(tr(L, "measured")), esc(tr(L, "peak")), esc(tr(L, "ofpeak")), esc(tr(L, "source")))
	for _, k := range m.Keys {
		v := m.Vals[k]
		unit := unitOf(k, v)
		withUnit := func(f float64) string {
			if f <= 0 {
				return "–"
			}
			return strings.TrimSpace(fmtSig(f) + " " + unit)
		}
		var measured, peak, ratio float64
		var how []string
		switch x := v.(type) {
		case *omap:
			if f, ok := num(first(x.Get("measured"))); ok {
				measured = f
			}
			if f, ok := num(first(x.Get("peak"))); ok {
				peak = f
			}
			if f, ok := num(first(x.Get("ratio"))); ok {
				ratio = f
			}
			variant, _ := first(x.Get("variant")).(string)
			problem, _ := first(x.Get("problem")).(string)
			if variant != "" {
				w := variant
				if problem != "" {
					w += " @ " + problem
				}
				how = append(how, w)
			}
			if note, ok := first(x.Get("note")).(string); ok && note != "" {
				how = append(how, note)
			}
			if src, ok := first(x.Get("source")).(string); ok && src != "" {
				how = append(how, tr(L, "peak")+": "+src)
			}
		default:
			if f, ok := num(x); ok {
				measured = f
			}
		}
		if ratio == 0 && measured > 0 && peak > 0 {
			ratio = measured / peak
		}
		r := "–"
		if ratio > 0 {
			r = fmt.Sprintf("%.0f%%", ratio*100)
		}
		fmt.Fprintf(&out, `<tr><th scope="row">%s<br><small class="muted"><code>%s</code></small></th><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td><td><small>%s</small></td></tr>`,
			esc(ceilingName(L, k)), esc(k), esc(withUnit(measured)), esc(withUnit(peak)), esc(r), esc(strings.Join(how, "; ")))
	}
	out.WriteString("</tbody></table></div>")
	return out.String()
}

func first(v any, _ bool) any { return v }
