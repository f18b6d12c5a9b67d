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

	"github.com/gomarkdown/markdown"
	"github.com/gomarkdown/markdown/ast"
	mdhtml "github.com/gomarkdown/markdown/html"
	"github.com/gomarkdown/markdown/parser"

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

// lineError is an error located in a notes file.
type lineError struct {
	File string
	Line int
	Msg  string
}

func (e *lineError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (d *notesDoc) errAt(line int, format string, args ...any) error {
	return &lineError{File: d.Rel, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var (
	fenceOpenRE = regexp.MustCompile("^(`{3,}|~{3,})\\s*(.*)$")
	atxRE       = regexp.MustCompile(`^(#{1,6})(\s|$)`)
	cellLineRE  = regexp.MustCompile(`\bkl-line=(\d+)`)
)

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
	marked, atxLines := markCells(d.lines)
	p := parser.NewWithExtensions(extensions)
	d.doc = markdown.Parse([]byte(strings.Join(marked, "\n")), p)

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
				line := 0
				if m := cellLineRE.FindStringSubmatch(info); m != nil {
					line, _ = strconv.Atoi(m[1])
				}
				d.Cells = append(d.Cells, &cell{Kind: kind, Line: line, Body: string(n.Literal), node: n})
			}
		case *ast.Link:
			d.links = append(d.links, linkRef{dest: &n.Destination})
		case *ast.Image:
			d.links = append(d.links, linkRef{dest: &n.Destination, image: true})
		}
		return ast.GoToNext
	})
	if lang == "zh" {
		joinCJKLines(d.doc)
	}
	// ATX headings found by the scan line up with the parsed ones when there are no setext ones.
	if len(atxLines) == len(d.Headings) {
		for i, h := range d.Headings {
			h.Line = atxLines[i]
		}
	}
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

// joinCJKLines removes the line breaks of the source inside Chinese paragraphs: a browser shows
// a line break as a space, which Chinese text does not have. A break stays where both sides are
// Latin (between two English words).
func joinCJKLines(doc ast.Node) {
	ast.WalkFunc(doc, func(n ast.Node, entering bool) ast.WalkStatus {
		t, ok := n.(*ast.Text)
		if !entering || !ok || !bytes.Contains(t.Literal, []byte("\n")) {
			return ast.GoToNext
		}
		r := []rune(string(t.Literal))
		out := make([]rune, 0, len(r))
		for i, c := range r {
			if c == '\n' && i > 0 && i+1 < len(r) && joins(r[i-1], r[i+1]) {
				continue
			}
			out = append(out, c)
		}
		t.Literal = []byte(string(out))
		return ast.GoToNext
	})
}

// joins reports whether a line break between a and b is no space: between two Chinese
// characters, or next to full-width punctuation. Between Chinese and Latin text it stays a space,
// as Chinese typesetting puts one there ("GPU 内核").
func joins(a, b rune) bool {
	han := func(r rune) bool { return unicode.Is(unicode.Han, r) }
	return (han(a) && han(b)) || cjkPunct(a) || cjkPunct(b)
}

func cjkPunct(r rune) bool {
	return (r >= 0x3000 && r <= 0x303f) || (r >= 0xff00 && r <= 0xffef) || r == '—' || r == '…' ||
		r == '“' || r == '”' || r == '‘' || r == '’'
}

// markCells appends "kl-line=N" to the info string of every cell fence so that parsed cells
// know their line, and returns the lines of ATX headings outside fences.
func markCells(lines []string) ([]string, []int) {
	out := make([]string, len(lines))
	copy(out, lines)
	var atx []int
	inFence := false
	var fenceChar byte
	fenceLen := 0
	for i, line := range lines {
		t := strings.TrimLeft(line, " \t>")
		if inFence {
			if len(t) >= fenceLen && t[0] == fenceChar && strings.Trim(t, string(fenceChar)+" \t") == "" &&
				len(strings.TrimRight(t, " \t")) >= fenceLen {
				inFence = false
			}
			continue
		}
		if m := fenceOpenRE.FindStringSubmatch(t); m != nil {
			if m[1][0] == '`' && strings.Contains(m[2], "`") {
				continue // not a fence: an inline code span
			}
			inFence, fenceChar, fenceLen = true, m[1][0], len(m[1])
			if strings.HasPrefix(strings.TrimSpace(m[2]), "kl-") {
				out[i] = line + " kl-line=" + strconv.Itoa(i+1)
			}
			continue
		}
		if strings.HasPrefix(line, "#") && atxRE.MatchString(line) {
			atx = append(atx, i+1)
		}
	}
	return out, atx
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

// render writes the notes as HTML, with cells replaced by their HTML.
func (d *notesDoc) render() string {
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
			io.WriteString(w, codeBlock(lang, string(n.Literal), 0))
			io.WriteString(w, "\n")
			return ast.GoToNext, true
		case *ast.Heading:
			if !entering && n.Level > 1 && n.HeadingID != "" {
				fmt.Fprintf(w, `<a class="anchor" href="#%s" aria-hidden="true">#</a>`, n.HeadingID)
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
	return string(markdown.Render(d.doc, r))
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

// cjkGapRE finds white space between two Chinese characters (or full-width punctuation),
// across any tags between them: a source line break the markdown renderer kept, or a line of
// folded YAML. The browser would show it as a space, which Chinese text does not have.
var cjkGapRE = regexp.MustCompile(`([\p{Han}\x{3000}-\x{303f}\x{ff00}-\x{ffef}])((?:<[^<>]*>)*)[ \t\n]+((?:<[^<>]*>)*)([\p{Han}\x{3000}-\x{303f}\x{ff00}-\x{ffef}])`)

var preRE = regexp.MustCompile(`(?s)<pre[\s>].*?</pre>`)

// joinCJKSpaces removes those spaces from a Chinese page, leaving code listings as they are.
func joinCJKSpaces(page string) string {
	var out strings.Builder
	last := 0
	for _, loc := range preRE.FindAllStringIndex(page, -1) {
		out.WriteString(joinGaps(page[last:loc[0]]))
		out.WriteString(page[loc[0]:loc[1]])
		last = loc[1]
	}
	out.WriteString(joinGaps(page[last:]))
	return out.String()
}

func joinGaps(s string) string {
	// Twice: a match consumes the character after the gap, which may start the next gap.
	for range 2 {
		s = cjkGapRE.ReplaceAllString(s, "$1$2$3$4")
	}
	return s
}
