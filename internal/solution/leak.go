package solution

import (
	"errors"
	"fmt"
	"html"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// WindowLines is how many consecutive code lines of a region make a leak.
const WindowLines = 3

// A window of code lines counts as a solution's code when at least minDistinct of its lines are
// distinctive: at least minIdent identifier characters, and not an idiom of the course (a line
// found in IdiomFiles or more of its files, such as "__syncthreads();", "#pragma unroll" or a
// grid-stride loop's head). Braces, barriers and idioms are in every kernel and prove nothing.
const (
	minDistinct = 2
	minIdent    = 4
	// IdiomFiles is in how many files of the course a code line must be to be an idiom.
	IdiomFiles = 4
)

// Leak is the code of a solution region found in a file that must not hold it.
type Leak struct {
	File   string   // slash-separated, relative to the folder searched
	Line   int      // where the matching lines start in File (in its text, tags removed for HTML)
	Region string   // file:line of the region's BEGIN marker
	Code   []string // the matching lines, normalized
}

func (l Leak) String() string {
	return fmt.Sprintf("%s:%d holds the solution of %s:\n    %s", l.File, l.Line, l.Region, strings.Join(l.Code, "\n    "))
}

// Check checks the rule that no solution leaves the instructor's tree: no file under dir (a built
// site, a student edition) holds the code of a solution region of the course at root (Leaks: any
// three consecutive code lines of it). The error lists every file that does.
func Check(root, dir string) error {
	regions, err := CourseRegions(root)
	if err != nil {
		return err
	}
	idioms, err := Idioms(root)
	if err != nil {
		return err
	}
	leaks, err := Leaks(regions, idioms, dir)
	if err != nil || len(leaks) == 0 {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d file(s) in %s hold the code of a solution region:", len(leaks), dir)
	for _, l := range leaks {
		fmt.Fprintf(&b, "\n  %s", l)
	}
	b.WriteString("\n(no page of the site and no file of the student edition may hold an exercise's solution: " +
		"rewrite the exercise so that no shipped kernel or note solves it, or keep that file out)")
	return errors.New(b.String())
}

// CourseRegions returns the solution regions of every text file under root (the instructor's
// tree), leaving out .git and build outputs.
func CourseRegions(root string) ([]Region, error) {
	var out []Region
	err := walkCourse(root, func(rel string, b []byte) error {
		if !Has(b) {
			return nil
		}
		rs, err := Regions(rel, b)
		out = append(out, rs...)
		return err
	})
	return out, err
}

// Idioms are the code lines (normalized) found in IdiomFiles or more text files of the course at
// root, solution regions left out.
func Idioms(root string) (map[string]bool, error) {
	files := map[string]int{}
	err := walkCourse(root, func(rel string, b []byte) error {
		if Has(b) {
			var err error
			if b, _, err = Strip(rel, b); err != nil {
				return err
			}
		}
		seen := map[string]bool{}
		for _, l := range strings.Split(string(b), "\n") {
			if n := normalize(l); n != "" && !isComment(n) && !seen[n] {
				seen[n] = true
				files[n]++
			}
		}
		return nil
	})
	idioms := map[string]bool{}
	for l, n := range files {
		if n >= IdiomFiles {
			idioms[l] = true
		}
	}
	return idioms, err
}

// walkCourse calls fn with every text file under root but .git and build outputs.
func walkCourse(root string, fn func(rel string, data []byte) error) error {
	return walkText(root, func(rel, name string) bool {
		switch {
		case rel == "bin", rel == "site/public", rel == "grade-report":
			return true
		case rel != "." && strings.HasPrefix(name, "."):
			return true // .git, caches, a copy of the tree made for a GPU machine
		}
		return false
	}, fn)
}

// walkText calls fn with every regular text file under root (rel: its slash-separated path
// below root), passing over the folders that skip names.
func walkText(root string, skip func(rel, name string) bool, fn func(rel string, data []byte) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skip(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !IsText(b) {
			return nil
		}
		return fn(rel, b)
	})
}

// Leaks searches every text file under dir (a built site, a student edition) for the code of the
// regions: WindowLines consecutive code lines of a region (blank lines and comment lines left out
// on both sides, spaces normalized), in source files as they are and in HTML pages with their tags
// removed and entities decoded; windows with fewer than two distinctive lines (see minDistinct)
// do not count. It returns every file where one is found, sorted by file.
func Leaks(regions []Region, idioms map[string]bool, dir string) ([]Leak, error) {
	type origin struct {
		region string
		code   []string
	}
	windows := map[string]origin{}
	for _, r := range regions {
		code := codeLines(r.Lines)
		for i := 0; i+WindowLines <= len(code); i++ {
			w := code[i : i+WindowLines]
			distinct := 0
			for _, l := range w {
				if !idioms[l.text] && identChars(l.text) >= minIdent {
					distinct++
				}
			}
			if distinct < minDistinct {
				continue
			}
			key := strings.Join(textOf(w), "\n")
			if _, ok := windows[key]; !ok {
				windows[key] = origin{fmt.Sprintf("%s:%d", r.File, r.Line), textOf(w)}
			}
		}
	}
	var leaks []Leak
	if len(windows) == 0 {
		return nil, nil
	}
	isGit := func(_, name string) bool { return name == ".git" }
	err := walkText(dir, isGit, func(rel string, b []byte) error {
		text := string(b)
		if ext := strings.ToLower(path.Ext(rel)); ext == ".html" || ext == ".htm" || ext == ".svg" || ext == ".xml" {
			text = htmlText(text)
		}
		var code []numbered
		for i, l := range strings.Split(text, "\n") {
			if n := normalize(l); n != "" && !isComment(n) {
				code = append(code, numbered{i + 1, n})
			}
		}
		for i := 0; i+WindowLines <= len(code); i++ {
			if o, ok := windows[strings.Join(textOf(code[i:i+WindowLines]), "\n")]; ok {
				leaks = append(leaks, Leak{File: rel, Line: code[i].line, Region: o.region, Code: o.code})
				break // one per file is enough to say it leaks
			}
		}
		return nil
	})
	sort.Slice(leaks, func(i, j int) bool { return leaks[i].File < leaks[j].File })
	return leaks, err
}

type numbered struct {
	line int
	text string
}

// codeLines keeps the code lines of a region (normalized): not blank, not a comment (STUB lines
// are comments, and their code is in the stub by design).
func codeLines(lines []string) []numbered {
	var out []numbered
	for i, l := range lines {
		if n := normalize(l); n != "" && !isComment(n) {
			out = append(out, numbered{i + 1, n})
		}
	}
	return out
}

func textOf(ns []numbered) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.text
	}
	return out
}

func identChars(s string) int {
	k := 0
	for _, c := range s {
		if c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			k++
		}
	}
	return k
}

var spaces = regexp.MustCompile(`\s+`)

// normalize drops a line's trailing comment, trims it and collapses its runs of white space, so
// that re-indented or re-commented code matches.
func normalize(l string) string {
	l = spaces.ReplaceAllString(strings.TrimSpace(l), " ")
	if k := strings.Index(l, " //"); k >= 0 {
		l = strings.TrimSpace(l[:k])
	}
	return l
}

func isComment(n string) bool {
	for _, p := range []string{"//", "/*", "* ", "*/", "<!--", "-->"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return n == "*"
}

var tags = regexp.MustCompile(`<[^>]*>`)

// htmlText is a page's text: tags removed, entities decoded, line breaks kept.
func htmlText(s string) string {
	return html.UnescapeString(tags.ReplaceAllString(s, ""))
}
