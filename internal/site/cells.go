package site

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/strictyaml"
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
//	             timeline draws the per-SM timelines that entries keep in data (results.Timeline): one
//	             problem, the first of problems: (else of the suite's) that has timelines on the
//	             device, one panel per variant
//	kl-properties  optional device: SLUG, show: [properties, nvml, attributes]
//	kl-ceilings    optional device: SLUG

// CellKinds are the info strings of the cells the renderer knows, in the order they were
// registered (each kind registers itself from its file: sourcecell.go, resultscell.go, ...).
var CellKinds []string

// parseCell decodes a cell's body strictly (unknown keys are errors) and checks the keys every
// kind needs.
func parseCell(d *notesDoc, c *cell) error {
	k, ok := cellKinds[c.Kind]
	if !ok {
		return d.errAt(c.Line, "unknown cell %s (cells are %s)", c.Kind, strings.Join(CellKinds, ", "))
	}
	spec := k.newSpec()
	if strings.TrimSpace(c.Body) != "" {
		if errs := strictyaml.Unmarshal([]byte(c.Body), spec); len(errs) > 0 {
			line := c.Line
			if errs[0].Line > 0 {
				line += errs[0].Line
			}
			return d.errAt(line, "%s: %s", c.Kind, errs[0].Msg)
		}
	}
	if k.check != nil {
		if err := k.check(d, c, spec); err != nil {
			return err
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
	html, err := cellKinds[c.Kind].render(b, pc, c, c.spec)
	c.HTML = html
	return err
}

// ---- what the cells share: finding variants and problems, selecting results

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
	for _, p := range s.Problems.All() {
		if !seen[p.Name] {
			seen[p.Name] = true
			out = append(out, p.Name)
		}
	}
	return out
}

func problemParams(s *lab.Suite, name string) map[string]int64 {
	for _, p := range s.Problems.All() {
		if p.Name == name {
			return p.Params
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

// deviceHead is the heading of a device's block: its page, its architecture, compiler and date.
func (b *builder) deviceHead(pc *pageCtx, dr *devResults) deviceHeadView {
	d := b.c.bySlug[dr.Slug]
	f := dr.File
	meta := []string{}
	if f.Device.ComputeMajor > 0 && !d.Emulated {
		meta = append(meta, f.Device.Arch())
	}
	if n := results.WorldSize(f, dr.Slug); n > 1 { // a 2-GPU and an 8-GPU run of one device read apart
		meta = append(meta, tr(pc.lang, "ranksmeta", n))
	}
	if f.Toolchain.Compiler != "" {
		meta = append(meta, strings.TrimSpace(f.Toolchain.Compiler+" "+f.Toolchain.Version))
	}
	if !f.Time.IsZero() {
		meta = append(meta, f.Time.UTC().Format("2006-01-02"))
	}
	v := deviceHeadView{Href: b.rel(pc.pageDir, path.Join(pc.lang, "devices", dr.Slug+".html")), Name: d.Name,
		Meta: strings.Join(meta, " · ")}
	if d.Emulated {
		v.Note = tr(pc.lang, "emulatednote")
	}
	return v
}

// problemLabel is how a page names a suite's problem: its title in the page's language where
// lab.yaml gives one (a name in words), else its name (a shape or a size reads the same in both).
func problemLabel(L string, s *lab.Suite, name string) string {
	for _, p := range s.Problems.All() {
		if p.Name == name {
			if t := pick(L, p.Title); t != "" {
				return t
			}
			return name
		}
	}
	return name
}

// problemLabelIn is problemLabel for a problem named without its suite (a ceiling's): the
// first suite of the lab that has it.
func problemLabelIn(L string, m *lab.Manifest, name string) string {
	if m != nil {
		for _, s := range m.Suites {
			if contains(problemNames(s), name) {
				return problemLabel(L, s, name)
			}
		}
	}
	return name
}

// englishWord finds a word of English in a problem's name: a lower-case word of two letters or
// more ("experts", "per"); units, shapes and proper names ("MiB", "4096³", "Zipf") are not.
var englishWord = regexp.MustCompile(`(^|[^A-Za-z])[a-z]{2,}`)

// checkProblemTitles warns (strictly) where a Chinese page would show a problem's English name:
// every problem a run records (the GPU and emulator sets) whose name is words needs a title.
func (c *course) checkProblemTitles(ch *chapter) {
	for _, s := range ch.Manifest.Suites {
		seen := map[string]bool{}
		for _, set := range [][]lab.Problem{s.Problems.GPU, s.Problems.Emu} {
			for _, p := range set {
				if p.Title.ZH == "" && englishWord.MatchString(p.Name) && !seen[p.Name] {
					seen[p.Name] = true
					c.warn(true, "labs/%s/lab.yaml: suite %s: problem %q is named in English words, which Chinese pages would show as they are: give it a title: {zh: ...}",
						ch.Name, s.Name, p.Name)
				}
			}
		}
	}
}
