package site

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gomarkdown/markdown"
	"github.com/gomarkdown/markdown/ast"
	mdhtml "github.com/gomarkdown/markdown/html"
	"github.com/gomarkdown/markdown/parser"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/solution"
)

// A notes file is markdown with notebook cells: fenced blocks whose info string starts with
// "kl-" and whose body is a little YAML. The renderer replaces each cell with live content.

// heading is a section heading of a notes file.
type heading struct {
	Level    int
	Text     string
	ID       string
	Explicit bool // written as {#id}
	Line     int  // 0 when unknown (setext headings)
	node     *ast.Heading
}

// cell is one notebook cell of a notes file.
type cell struct {
	Kind  string // "kl-source", ...
	Line  int    // line of the opening fence
	Body  string
	Canon string // the parsed body, canonical, for comparing languages
	spec  any
	node  *ast.CodeBlock
	HTML  string
}

// notesDoc is a parsed notes file.
type notesDoc struct {
	Path     string // absolute
	Rel      string // relative to the course root, for messages
	Lang     string
	lines    []string
	doc      ast.Node
	Headings []*heading
	Cells    []*cell
	HasH1    bool // the notes open with a level-1 heading: the page title
	links    []linkRef
}

type linkRef struct {
	dest  *[]byte
	image bool
}

func (d *notesDoc) errAt(line int, format string, args ...any) error {
	return &lab.FileError{File: d.Rel, Line: line, Msg: fmt.Sprintf(format, args...)}
}

const extensions = (parser.CommonExtensions | parser.Footnotes) &^ parser.MathJax

// parseNotes reads and parses a notes file. Cells are found, not yet rendered.
func parseNotes(absPath, rel, lang string) (*notesDoc, error) {
	src, err := os.ReadFile(absPath)
	if err != nil {
		return nil, err
	}
	// A solution region in the notes (an answer) is published as the student edition has it.
	if solution.Has(src) {
		if src, _, err = solution.Strip(rel, src); err != nil {
			return nil, err
		}
	}
	return parseNotesBytes(absPath, rel, lang, src)
}

func parseNotesBytes(absPath, rel, lang string, src []byte) (*notesDoc, error) {
	src = bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))
	d := &notesDoc{Path: absPath, Rel: rel, Lang: lang}
	d.lines = strings.Split(string(src), "\n")
	p := parser.NewWithExtensions(extensions)
	d.doc = markdown.Parse(src, p)

	var errs []error
	if kids := d.doc.GetChildren(); len(kids) > 0 {
		if h, ok := kids[0].(*ast.Heading); ok && h.Level == 1 {
			d.HasH1 = true
		}
	}
	ast.WalkFunc(d.doc, func(n ast.Node, entering bool) ast.WalkStatus {
		if !entering {
			return ast.GoToNext
		}
		switch n := n.(type) {
		case *ast.Heading:
			h := &heading{Level: n.Level, Text: plainText(n), Explicit: n.HeadingID != "", ID: n.HeadingID, node: n}
			d.Headings = append(d.Headings, h)
		case *ast.CodeBlock:
			info := string(n.Info)
			kind := "" // an indented block or a bare fence has no info string
			if f := strings.Fields(info); len(f) > 0 {
				kind = f[0]
			}
			if strings.HasPrefix(kind, "kl-") {
				d.Cells = append(d.Cells, &cell{Kind: kind, Body: string(n.Literal), node: n})
			}
		case *ast.Link:
			d.links = append(d.links, linkRef{dest: &n.Destination})
		case *ast.Image:
			d.links = append(d.links, linkRef{dest: &n.Destination, image: true})
		}
		return ast.GoToNext
	})
	if lang == "zh" {
		cjkEmphasis(d.doc)
		joinCJKLines(d.doc)
	}
	d.locate()
	for _, c := range d.Cells {
		if c.Line == 0 {
			errs = append(errs, d.errAt(0, "cell %s: could not locate it in the file (is its fence indented inside another block?)", c.Kind))
		}
	}
	if len(errs) > 0 {
		return d, joinErrs(errs)
	}
	return d, nil
}

// joinCJKLines removes the soft line breaks of Chinese paragraphs that a browser would show as a
// space, which Chinese text does not have, as CommonMark renderers with a CJK extension do (and
// a space typed between two Chinese characters, which shows the same). It
// works on the parsed text: a break is judged by the characters on either side of it, which may
// sit in the neighbouring inline node ("**重点**\n继续", "`GPU`\n内核"). A break stays a space
// between Chinese and Latin text ("GPU 内核") and between two Latin words.
func joinCJKLines(doc ast.Node) {
	for _, run := range inlineRuns(doc) {
		for i, leaf := range run {
			t, ok := leaf.(*ast.Text)
			if !ok || !bytes.ContainsAny(t.Literal, " \t\n") {
				continue
			}
			before := func() rune { // the last character of the leaves before this one
				for k := i - 1; k >= 0; k-- {
					if l := leafText(run[k]); len(l) > 0 {
						r, _ := utf8.DecodeLastRune(l)
						return r
					}
				}
				return 0
			}
			after := func() rune {
				for k := i + 1; k < len(run); k++ {
					if l := leafText(run[k]); len(l) > 0 {
						r, _ := utf8.DecodeRune(l)
						return r
					}
				}
				return 0
			}
			t.Literal = joinBreaks(t.Literal, before, after)
		}
	}
}

// joinBreaks drops each run of blanks of text (a line break, or a space the author typed, which
// shows the same) that has Chinese on both sides; before and after give the characters beyond
// text's ends.
func joinBreaks(text []byte, before, after func() rune) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		if text[i] != ' ' && text[i] != '\t' && text[i] != '\n' {
			r, n := utf8.DecodeRune(text[i:])
			out = utf8.AppendRune(out, r)
			i += n
			continue
		}
		j := i
		for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n') {
			j++
		}
		a, b := before(), after()
		if len(out) > 0 {
			a, _ = utf8.DecodeLastRune(out)
		}
		if j < len(text) {
			b, _ = utf8.DecodeRune(text[j:])
		}
		if a == 0 || b == 0 || !joins(a, b) {
			out = append(out, text[i:j]...)
		}
		i = j
	}
	return out
}

// cjkEmphasisRE is an emphasis the parser left as text: gomarkdown takes "*动态*调度器" for
// asterisks inside a word (its rule that keeps snake_case whole), but Chinese has no spaces
// between words and CommonMark reads it as emphasis. No space may follow the opening marker or
// precede the closing one, so "2 * 3 * 4" stays text.
var cjkEmphasisRE = regexp.MustCompile(`(\*\*?)([^*\s](?:[^*]*[^*\s])?)(\*\*?)`)

// cjkEmphasis turns those asterisks of a Chinese page into emphasis (one) or strong (two).
func cjkEmphasis(doc ast.Node) {
	var texts []*ast.Text
	ast.WalkFunc(doc, func(n ast.Node, entering bool) ast.WalkStatus {
		if t, ok := n.(*ast.Text); ok && entering && bytes.Contains(t.Literal, []byte("*")) {
			texts = append(texts, t)
		}
		return ast.GoToNext
	})
	for _, t := range texts {
		src := t.Literal
		var nodes []ast.Node
		last := 0
		for _, m := range cjkEmphasisRE.FindAllSubmatchIndex(src, -1) {
			open, close := src[m[2]:m[3]], src[m[6]:m[7]]
			if len(open) != len(close) {
				continue
			}
			if m[0] > last {
				nodes = append(nodes, &ast.Text{Leaf: ast.Leaf{Literal: src[last:m[0]]}})
			}
			var wrap ast.Node = &ast.Emph{}
			if len(open) == 2 {
				wrap = &ast.Strong{}
			}
			ast.AppendChild(wrap, &ast.Text{Leaf: ast.Leaf{Literal: src[m[4]:m[5]]}})
			nodes = append(nodes, wrap)
			last = m[1]
		}
		if len(nodes) == 0 {
			continue
		}
		if last < len(src) {
			nodes = append(nodes, &ast.Text{Leaf: ast.Leaf{Literal: src[last:]}})
		}
		parent := t.GetParent()
		kids := parent.GetChildren()
		var out []ast.Node
		for _, k := range kids {
			if k == ast.Node(t) {
				out = append(out, nodes...)
				continue
			}
			out = append(out, k)
		}
		for _, k := range out {
			k.SetParent(parent)
		}
		parent.SetChildren(out)
	}
}

// inlineRuns lists, for every block of the document, its text leaves in reading order; a leaf
// that is not text (a line break, inline HTML, an image) ends a run.
func inlineRuns(doc ast.Node) [][]ast.Node {
	var runs [][]ast.Node
	var cur []ast.Node
	end := func() {
		if len(cur) > 0 {
			runs = append(runs, cur)
			cur = nil
		}
	}
	ast.WalkFunc(doc, func(n ast.Node, entering bool) ast.WalkStatus {
		switch n.(type) {
		case *ast.Text, *ast.Code:
			if entering {
				cur = append(cur, n)
			}
		case *ast.Emph, *ast.Strong, *ast.Del, *ast.Link:
			// inline containers: their text reads on from the text around them
		default:
			end()
		}
		return ast.GoToNext
	})
	end()
	return runs
}

func leafText(n ast.Node) []byte {
	switch n := n.(type) {
	case *ast.Text:
		return n.Literal
	case *ast.Code:
		return n.Literal
	}
	return nil
}

// joins reports whether a line break between a and b is no space: between two Chinese
// characters, or next to full-width punctuation (which carries its own space). Between Chinese
// and Latin text it stays a space, as Chinese typesetting puts one there ("GPU 内核").
func joins(a, b rune) bool {
	han := func(r rune) bool { return unicode.Is(unicode.Han, r) }
	return (han(a) && han(b)) || cjkPunct(a) || cjkPunct(b)
}

func cjkPunct(r rune) bool {
	return (r >= 0x3000 && r <= 0x303f) || (r >= 0xff00 && r <= 0xffef) || r == '—' || r == '…' ||
		r == '“' || r == '”' || r == '‘' || r == '’'
}

// joinCJKText removes the blanks between Chinese characters of a text that is not markdown (a
// title or summary of lab.yaml, where YAML's folding turned each line break into a space).
func joinCJKText(s string) string {
	none := func() rune { return 0 }
	return string(joinBreaks([]byte(s), none, none))
}

// locate finds the source line of every heading and fenced block, in one pass over the lines in
// document order: the parser does not keep positions, and a cell's errors name its line. Each
// fenced block is found by its own fence and info string and skipped whole, so a fence shown
// inside another block's text is never taken for a cell.
func (d *notesDoc) locate() {
	cells := map[*ast.CodeBlock]*cell{}
	for _, c := range d.Cells {
		cells[c.node] = c
	}
	headings := map[*ast.Heading]*heading{}
	for _, h := range d.Headings {
		headings[h.node] = h
	}
	next := 0 // the first line not yet passed, 0-based
	find := func(match func(t string) bool) int {
		for i := next; i < len(d.lines); i++ {
			if match(strings.TrimLeft(d.lines[i], " \t>")) {
				return i
			}
		}
		return -1
	}
	ast.WalkFunc(d.doc, func(n ast.Node, entering bool) ast.WalkStatus {
		if !entering {
			return ast.GoToNext
		}
		switch n := n.(type) {
		case *ast.CodeBlock:
			if !n.IsFenced {
				return ast.GoToNext
			}
			fence := strings.Repeat(string(n.FenceChar), n.FenceLength)
			info := strings.TrimSpace(string(n.Info))
			i := find(func(t string) bool {
				rest, ok := strings.CutPrefix(t, fence)
				return ok && !strings.HasPrefix(rest, string(n.FenceChar)) && strings.TrimSpace(rest) == info
			})
			if i < 0 {
				return ast.GoToNext
			}
			if c := cells[n]; c != nil {
				c.Line = i + 1
			}
			next = i + 1 + bytes.Count(n.Literal, []byte("\n")) // past the body; the closing fence follows
		case *ast.Heading:
			h := headings[n]
			if h == nil {
				return ast.GoToNext
			}
			marks := strings.Repeat("#", n.Level)
			words := headingStart(h.Text)
			i := find(func(t string) bool {
				rest, ok := strings.CutPrefix(t, marks)
				return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') && strings.Contains(headingStart(rest), words)
			})
			if i >= 0 { // else a setext heading (text, then a line of = or -): left without a line
				h.Line = i + 1
				next = i + 1
			}
		}
		return ast.GoToNext
	})
}

// headingStart is the first characters of a heading's text without markdown's marks, to match a
// parsed heading with its source line.
func headingStart(s string) string {
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune("`*_[]#", r) || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 6 {
		return string(r[:6])
	}
	return s
}

// plainText is the text of a node's descendants.
func plainText(n ast.Node) string {
	var b strings.Builder
	ast.WalkFunc(n, func(c ast.Node, entering bool) ast.WalkStatus {
		if !entering {
			return ast.GoToNext
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Literal)
		case *ast.Code:
			b.Write(c.Literal)
		}
		return ast.GoToNext
	})
	return strings.TrimSpace(b.String())
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

func slugify(s string) string {
	return strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// assignIDs gives every heading an id: its {#id}, the id of the same heading in the reference
// language (so that a link keeps its section across the language switch), or a slug of its text.
func assignIDs(d *notesDoc, ref *notesDoc) {
	used := map[string]bool{}
	for i, h := range d.Headings {
		id := h.ID
		if !h.Explicit {
			switch {
			case ref != nil && i < len(ref.Headings) && len(ref.Headings) == len(d.Headings):
				id = ref.Headings[i].ID
			default:
				id = slugify(h.Text)
			}
		}
		if id == "" {
			id = "section-" + strconv.Itoa(i+1)
		}
		base := id
		for k := 2; used[id]; k++ {
			id = base + "-" + strconv.Itoa(k)
		}
		used[id] = true
		h.ID = id
		h.node.HeadingID = id
	}
}

var _ = defineTemplates(`{{define "anchor"}}<a class="anchor" href="#{{.}}" aria-hidden="true">#</a>{{end}}`)

// render writes the notes as HTML, with cells replaced by their HTML.
func (d *notesDoc) render() (string, error) {
	var err error
	write := func(w io.Writer, name string, data any) {
		h, e := execTemplate(name, data)
		if e != nil && err == nil {
			err = e
		}
		io.WriteString(w, string(h))
	}
	cells := map[*ast.CodeBlock]*cell{}
	for _, c := range d.Cells {
		cells[c.node] = c
	}
	hook := func(w io.Writer, n ast.Node, entering bool) (ast.WalkStatus, bool) {
		switch n := n.(type) {
		case *ast.CodeBlock:
			if c := cells[n]; c != nil {
				io.WriteString(w, c.HTML)
				return ast.GoToNext, true
			}
			lang := ""
			if f := strings.Fields(string(n.Info)); len(f) > 0 {
				lang = langOf(f[0])
			}
			write(w, "codeblock", codeBlock(lang, string(n.Literal), 0))
			io.WriteString(w, "\n")
			return ast.GoToNext, true
		case *ast.Heading:
			if !entering && n.Level > 1 && n.HeadingID != "" {
				write(w, "anchor", n.HeadingID)
			}
		}
		return ast.GoToNext, false
	}
	// Smart punctuation suits English; in Chinese it turns the author's quotes the wrong way
	// round after CJK punctuation, so Chinese text is left as written.
	flags := mdhtml.CommonFlags
	if d.Lang == "zh" {
		flags = mdhtml.FlagsNone
	}
	r := mdhtml.NewRenderer(mdhtml.RendererOptions{Flags: flags, RenderNodeHook: hook})
	out := string(markdown.Render(d.doc, r))
	return out, err
}

// lineOfText is the first line of the notes that contains s (0 if none), to locate links.
func (d *notesDoc) lineOfText(s string) int {
	for i, l := range d.lines {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// rewriteLinks points the notes' relative links and images at the site: another chapter's
// notes become its page; any other file of the course is copied under files/. A link to a file
// that does not exist is an error.
func (d *notesDoc) rewriteLinks(s *builder, ch *chapter, pageDir string) []error {
	var errs []error
	labRel := path.Join("labs", ch.Name)
	for _, l := range d.links {
		dest := string(*l.dest)
		if dest == "" || strings.HasPrefix(dest, "#") || schemeRE.MatchString(dest) || strings.HasPrefix(dest, "//") {
			continue
		}
		line := d.lineOfText(dest)
		if strings.HasPrefix(dest, "/") {
			errs = append(errs, d.errAt(line, "link %q is absolute: use a path relative to the notes file", dest))
			continue
		}
		target, frag, _ := strings.Cut(dest, "#")
		rel := path.Clean(path.Join(labRel, target))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			errs = append(errs, d.errAt(line, "link %q leaves the course folder", dest))
			continue
		}
		var href string
		if m := notesLinkRE.FindStringSubmatch(rel); m != nil {
			other := s.c.chapter(m[1])
			if other == nil || !other.Ready {
				errs = append(errs, d.errAt(line, "link %q: chapter %s has no pages (it is in preparation)", dest, m[1]))
				continue
			}
			href = s.rel(pageDir, path.Join(m[2], "labs", m[1]+".html"))
		} else {
			abs := filepath.Join(s.c.root, filepath.FromSlash(rel))
			if !fileExists(abs) {
				what := "link"
				if l.image {
					what = "image"
				}
				errs = append(errs, d.errAt(line, "%s %q: %s does not exist", what, dest, rel))
				continue
			}
			s.copyFile(path.Join("files", rel), abs)
			href = s.rel(pageDir, path.Join("files", rel))
		}
		if frag != "" {
			href += "#" + frag
		}
		*l.dest = []byte(href)
	}
	return errs
}

var notesLinkRE = regexp.MustCompile(`^labs/(\d\d_[a-z0-9_]+)/notes\.(en|zh)\.md$`)
