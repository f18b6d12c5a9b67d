// Package site renders the course site: a course index, every lab's notes in English and
// Chinese with their notebook cells (kernel source, results tables, plots, device tables), a page
// per device with results, and a how-to-run page, into a self-contained folder of static files
// that works from file:// and from any sub-path.
//
// Build is the entry point; labrun site and labrun run call it.
package site

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/site/theme"
)

// Options adjust a build.
type Options struct {
	// Strict makes problems that still leave a usable site fail the build: the two languages of a
	// lab out of step (different sections or cells), a lab with notes in one language only, a
	// results file that cannot be read. Tests and CI build strictly.
	Strict bool
	// Log receives one line per chapter and a summary; nil is quiet.
	Log io.Writer
}

// Report says what a build wrote.
type Report struct {
	OutDir   string          `json:"out_dir"`
	Pages    []string        `json:"pages"` // site-relative paths of the HTML pages, sorted
	Plots    int             `json:"plots"` // SVG figures written (one per language)
	Chapters []ChapterStatus `json:"chapters"`
	Devices  []string        `json:"devices"` // device slugs with results
	Warnings []string        `json:"warnings,omitempty"`
	Elapsed  time.Duration   `json:"elapsed_ns"`
}

// ChapterStatus is one chapter of the course in the build.
type ChapterStatus struct {
	Name    string   `json:"name"`    // the folder's name, NN_name
	Ready   bool     `json:"ready"`   // it has pages; otherwise it is listed as in preparation
	Devices []string `json:"devices"` // devices with results for it
}

// DefaultOutDir is where labrun writes the site: site/public under the course root.
func DefaultOutDir(root string) string { return filepath.Join(root, "site", "public") }

// marker marks a folder as a site build, so that a rebuild may replace it.
const marker = ".kernellabs-site"

// Build renders the site of the course at root into outDir. The new site replaces outDir only
// when the whole build succeeded; outDir must be absent, empty or an earlier build. Errors in
// notes are reported as notes-file:line, all of them at once.
func Build(root, outDir string, opts Options) (*Report, error) {
	start := time.Now()
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	outDir, err = filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	if err := checkOutDir(outDir); err != nil {
		return nil, err
	}
	c, err := loadCourse(root)
	if err != nil {
		return nil, err
	}
	// The Chinese text follows the course's glossary (a warning; an error with --strict).
	terms, err := loadGlossary(root)
	if err != nil {
		return nil, err
	}
	found, err := checkGlossary(root, terms)
	if err != nil {
		return nil, err
	}
	for _, f := range found {
		c.warn(true, "%s", f)
	}
	b := &builder{c: c, opts: opts, files: map[string][]byte{}, copies: map[string]string{}}
	if cf, err := readCourseFile(); err == nil {
		b.repo = cf.Repository
	}
	if err := b.loadTemplates(); err != nil {
		return nil, err
	}
	errs := append([]error{}, c.errs...)
	if len(errs) == 0 {
		errs = append(errs, b.build()...)
	}
	if opts.Strict {
		errs = append(errs, c.strictE...)
	}
	rep := &Report{OutDir: outDir, Plots: b.plots, Warnings: c.warnings}
	for _, ch := range c.chapters {
		st := ChapterStatus{Name: ch.Name, Ready: ch.Ready}
		for _, dr := range ch.Results {
			st.Devices = append(st.Devices, dr.Slug)
		}
		rep.Chapters = append(rep.Chapters, st)
	}
	for _, d := range c.devices {
		rep.Devices = append(rep.Devices, d.Slug)
	}
	if len(errs) > 0 {
		return rep, joinErrs(errs)
	}
	for p := range b.files {
		if strings.HasSuffix(p, ".html") {
			rep.Pages = append(rep.Pages, p)
		}
	}
	sort.Strings(rep.Pages)
	if err := b.write(outDir); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(start)
	if opts.Log != nil {
		for _, w := range rep.Warnings {
			fmt.Fprintf(opts.Log, "site: warning: %s\n", w)
		}
	}
	return rep, nil
}

// joinErrs joins errors one per line.
func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &BuildError{Errs: errs}
}

// BuildError lists every problem a build found.
type BuildError struct{ Errs []error }

func (e *BuildError) Error() string {
	var lines []string
	for _, err := range e.Errs {
		var be *BuildError
		if errors.As(err, &be) {
			lines = append(lines, be.Error())
			continue
		}
		lines = append(lines, err.Error())
	}
	return strings.Join(lines, "\n")
}

func (e *BuildError) Unwrap() []error { return e.Errs }

func checkOutDir(outDir string) error {
	entries, err := os.ReadDir(outDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) == 0 || fileExists(filepath.Join(outDir, marker)) {
		return nil
	}
	return fmt.Errorf("%s is not empty and is not an earlier site build (no %s): choose another --out folder", outDir, marker)
}

// builder holds a build in memory until it is complete.
type builder struct {
	c      *course
	opts   Options
	files  map[string][]byte // site-relative path → content
	copies map[string]string // site-relative path → source file
	plots  int
	tmpl   map[string]*template.Template
	repo   string // the course's repository (course.yaml)
}

func (b *builder) writeFile(rel string, data []byte) { b.files[rel] = data }

func (b *builder) copyFile(rel, src string) { b.copies[rel] = src }

// rel is the link from a page in folder fromDir (site-relative, "" for the top) to the
// site-relative path to: "../../files/x.cu" from "en/labs", "NN_name.html" within "en/labs".
func (b *builder) rel(fromDir, to string) string {
	return relLink(fromDir, to)
}

func relLink(fromDir, to string) string {
	var from []string
	if fromDir != "" && fromDir != "." {
		from = strings.Split(fromDir, "/")
	}
	parts := strings.Split(to, "/")
	i := 0
	for i < len(from) && i < len(parts)-1 && from[i] == parts[i] {
		i++
	}
	return strings.Repeat("../", len(from)-i) + strings.Join(parts[i:], "/")
}

func (b *builder) log(format string, args ...any) {
	if b.opts.Log != nil {
		fmt.Fprintf(b.opts.Log, format+"\n", args...)
	}
}

// write puts the build in a temporary folder beside outDir, then swaps it in.
func (b *builder) write(outDir string) error {
	parent := filepath.Dir(outDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(outDir)+".new-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	dirs := map[string]bool{}
	mk := func(rel string) error {
		d := filepath.Dir(filepath.Join(tmp, filepath.FromSlash(rel)))
		if dirs[d] {
			return nil
		}
		dirs[d] = true
		return os.MkdirAll(d, 0o755)
	}
	for rel, data := range b.files {
		if err := mk(rel); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, filepath.FromSlash(rel)), data, 0o644); err != nil {
			return err
		}
	}
	for rel, src := range b.copies {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := mk(rel); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, filepath.FromSlash(rel)), data, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, marker), []byte("built by labrun site; safe to delete\n"), 0o644); err != nil {
		return err
	}
	// Swap.
	old := ""
	if _, err := os.Stat(outDir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(outDir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, outDir); err != nil {
		if old != "" {
			os.Rename(old, outDir)
		}
		return err
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// ---- templates and pages

func (b *builder) loadTemplates() error {
	layout, err := template.ParseFS(theme.FS, "templates/layout.html")
	if err != nil {
		return err
	}
	b.tmpl = map[string]*template.Template{}
	// Page kinds and their content templates; the layout marks the current section by kind.
	for kind, file := range map[string]string{"index": "index", "lab": "lab", "device": "device",
		"devices": "devices", "about": "page"} {
		t, err := template.Must(layout.Clone()).ParseFS(theme.FS, "templates/"+file+".html")
		if err != nil {
			return err
		}
		b.tmpl[kind] = t
	}
	return nil
}

type navItem struct {
	Num, Title, Href string
	Current          bool
}

type tocItem struct{ ID, Text string }

type page struct {
	Lang, Other             string
	HTMLLang, OtherHTMLLang string
	Kind                    string
	Title                   string
	Root                    string
	Switch                  string
	T                       map[string]string
	Repo                    string // the course's repository, linked from the footer
	Nav                     []navItem
	TOC                     []tocItem
	Prev, Next              *navItem
	Data                    any
}

// newPage prepares the frame of the page at site-relative path rel (e.g. "en/labs/x.html").
func (b *builder) newPage(lang, kind, rel, title string, current string) *page {
	dir := path.Dir(rel)
	other := otherLang(lang)
	p := &page{
		Lang: lang, Other: other, HTMLLang: htmlLang(lang), OtherHTMLLang: htmlLang(other),
		Kind: kind, Title: title, Root: b.rel(dir, ""), T: ui[lang], Repo: b.repo,
		Switch: b.rel(dir, other+strings.TrimPrefix(rel, lang)),
	}
	for _, ch := range b.c.chapters {
		it := navItem{Num: ch.Num, Title: ch.Title[lang], Current: ch.Name == current}
		if ch.Ready {
			it.Href = b.rel(dir, path.Join(lang, "labs", ch.Name+".html"))
		}
		p.Nav = append(p.Nav, it)
	}
	return p
}

func (b *builder) renderPage(rel string, p *page) error {
	var sb strings.Builder
	if err := b.tmpl[p.Kind].ExecuteTemplate(&sb, "layout.html", p); err != nil {
		return fmt.Errorf("rendering %s: %w", rel, err)
	}
	b.writeFile(rel, []byte(sb.String()))
	return nil
}

// build renders everything into memory and returns every error found.
func (b *builder) build() []error {
	var errs []error
	css, err := theme.FS.ReadFile("assets/style.css")
	if err != nil {
		return []error{err}
	}
	b.writeFile("assets/style.css", css)
	chooser, err := theme.FS.ReadFile("templates/chooser.html")
	if err != nil {
		return []error{err}
	}
	b.writeFile("index.html", chooser)
	b.writeFile(".nojekyll", nil)

	bodies := map[string]map[string]*rendered{}
	for _, ch := range b.c.chapters {
		if !ch.Ready {
			continue
		}
		r, cerrs := b.renderChapter(ch)
		errs = append(errs, cerrs...)
		bodies[ch.Name] = r
	}
	if len(errs) > 0 {
		return errs
	}
	ready := []*chapter{}
	for _, ch := range b.c.chapters {
		if ch.Ready {
			ready = append(ready, ch)
		}
	}
	for _, lang := range Langs {
		for i, ch := range ready {
			r := bodies[ch.Name][lang]
			rel := path.Join(lang, "labs", ch.Name+".html")
			p := b.newPage(lang, "lab", rel, r.Title, ch.Name)
			p.TOC = r.TOC
			if i > 0 {
				p.Prev = &navItem{Num: ready[i-1].Num, Title: ready[i-1].Title[lang], Href: ready[i-1].Name + ".html"}
			}
			if i+1 < len(ready) {
				p.Next = &navItem{Num: ready[i+1].Num, Title: ready[i+1].Title[lang], Href: ready[i+1].Name + ".html"}
			}
			p.Data = map[string]any{"Num": ch.Num, "Body": template.HTML(r.Body), "HasH1": r.HasH1}
			if err := b.renderPage(rel, p); err != nil {
				errs = append(errs, err)
			}
		}
		errs = append(errs, b.indexPage(lang)...)
		errs = append(errs, b.aboutPage(lang)...)
		errs = append(errs, b.devicePages(lang)...)
	}
	for _, ch := range b.c.chapters {
		if ch.Ready {
			b.log("site: %s: pages in %s, results from %d device(s)", ch.Name, strings.Join(Langs, " and "), len(ch.Results))
		} else {
			b.log("site: %s: in preparation", ch.Name)
		}
	}
	return errs
}

// rendered is one language of a chapter.
type rendered struct {
	Title string
	Body  string
	TOC   []tocItem
	HasH1 bool
}

// renderChapter parses both languages of a chapter's notes, checks that they are in step,
// renders their cells and returns their HTML.
func (b *builder) renderChapter(ch *chapter) (map[string]*rendered, []error) {
	var errs []error
	docs := map[string]*notesDoc{}
	for _, lang := range Langs {
		d, err := parseNotes(ch.Notes[lang], b.c.rel(ch.Notes[lang]), lang)
		if err != nil {
			errs = append(errs, err)
		}
		if d == nil {
			return nil, errs
		}
		for _, c := range d.Cells {
			if err := parseCell(d, c); err != nil {
				errs = append(errs, err)
			}
		}
		docs[lang] = d
	}
	if len(errs) > 0 {
		return nil, errs
	}
	assignIDs(docs["en"], nil)
	assignIDs(docs["zh"], docs["en"])
	if perrs := append(parity(docs["en"], docs["zh"]), quoteParity(docs["en"], docs["zh"])...); len(perrs) > 0 {
		for _, e := range perrs {
			b.c.warn(true, "%v", e)
		}
	}
	out := map[string]*rendered{}
	for _, lang := range Langs {
		d := docs[lang]
		pc := &pageCtx{ch: ch, lang: lang, doc: d, pageDir: path.Join(lang, "labs")}
		for _, c := range d.Cells {
			if err := b.renderCell(pc, c); err != nil {
				errs = append(errs, err)
			}
		}
		errs = append(errs, b.renderQuotes(pc)...)
		errs = append(errs, d.rewriteLinks(b, ch, pc.pageDir)...)
		r := &rendered{Title: ch.Title[lang], HasH1: d.HasH1}
		if d.HasH1 {
			r.Title = d.Headings[0].Text
		}
		for _, h := range d.Headings {
			if h.Level == 2 {
				r.TOC = append(r.TOC, tocItem{ID: h.ID, Text: h.Text})
			}
		}
		if len(errs) == 0 {
			body, err := d.render()
			if err != nil {
				errs = append(errs, err)
			}
			r.Body = body
		}
		out[lang] = r
	}
	return out, errs
}

// parity checks that two languages of a chapter have the same sections and the same cells in
// the same order.
func parity(en, zh *notesDoc) []error {
	var errs []error
	at := func(d *notesDoc, line int) string {
		if line > 0 {
			return fmt.Sprintf("%s:%d", d.Rel, line)
		}
		return d.Rel
	}
	if len(en.Headings) != len(zh.Headings) {
		errs = append(errs, fmt.Errorf("%s has %d headings and %s has %d: both languages need the same sections",
			en.Rel, len(en.Headings), zh.Rel, len(zh.Headings)))
	}
	for i := 0; i < len(en.Headings) && i < len(zh.Headings); i++ {
		a, z := en.Headings[i], zh.Headings[i]
		if a.Level != z.Level || (a.Explicit && z.Explicit && a.ID != z.ID) {
			errs = append(errs, fmt.Errorf("section %d differs between languages: %s %q (level %d) and %s %q (level %d)",
				i+1, at(en, a.Line), a.Text, a.Level, at(zh, z.Line), z.Text, z.Level))
			break
		}
	}
	if len(en.Cells) != len(zh.Cells) {
		errs = append(errs, fmt.Errorf("%s has %d cells and %s has %d: both languages need the same cells in the same order",
			en.Rel, len(en.Cells), zh.Rel, len(zh.Cells)))
	}
	for i := 0; i < len(en.Cells) && i < len(zh.Cells); i++ {
		a, z := en.Cells[i], zh.Cells[i]
		if a.Canon != z.Canon {
			errs = append(errs, fmt.Errorf("cell %d differs between languages: %s %s and %s %s",
				i+1, at(en, a.Line), a.Canon, at(zh, z.Line), z.Canon))
		}
	}
	return errs
}

// renderMarkdownPage renders one of the theme's fixed pages (pages/NAME.LANG.md).
func (b *builder) renderMarkdownPage(name, lang string) (*notesDoc, string, error) {
	var ref *notesDoc
	for _, l := range []string{"en", lang} {
		src, err := theme.FS.ReadFile("pages/" + name + "." + l + ".md")
		if err != nil {
			return nil, "", err
		}
		d, err := parseNotesBytes("", "site/theme/pages/"+name+"."+l+".md", l, src)
		if err != nil {
			return nil, "", err
		}
		assignIDs(d, ref)
		if l == lang {
			body, err := d.render()
			return d, body, err
		}
		ref = d
	}
	return nil, "", nil
}

func (b *builder) aboutPage(lang string) []error {
	d, body, err := b.renderMarkdownPage("about", lang)
	if err != nil {
		return []error{err}
	}
	title := tr(lang, "howtorun")
	if d.HasH1 {
		title = d.Headings[0].Text
	}
	rel := path.Join(lang, "about.html")
	p := b.newPage(lang, "about", rel, title, "")
	p.Data = map[string]any{"Body": template.HTML(body)}
	if err := b.renderPage(rel, p); err != nil {
		return []error{err}
	}
	return nil
}
