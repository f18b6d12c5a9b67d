package site

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/site/theme"
)

// GlossaryPath is the course's glossary, relative to the course root.
const GlossaryPath = "labs/glossary.yaml"

// glossaryTerm fixes the Chinese word for one concept.
type glossaryTerm struct {
	EN    string   `yaml:"en"`
	ZH    string   `yaml:"zh"`
	Note  string   `yaml:"note"`
	Avoid []string `yaml:"avoid"`
	res   []*regexp.Regexp
}

// loadGlossary reads the course's glossary; a course without one has nothing to check.
func loadGlossary(root string) ([]glossaryTerm, error) {
	data, err := os.ReadFile(filepath.Join(root, GlossaryPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Terms []glossaryTerm `yaml:"terms"`
	}
	if err := decodeYAML(GlossaryPath, data, &doc); err != nil {
		return nil, err
	}
	for i := range doc.Terms {
		t := &doc.Terms[i]
		if t.EN == "" || t.ZH == "" {
			return nil, fmt.Errorf("%s: term %d needs en and zh", GlossaryPath, i+1)
		}
		for _, a := range t.Avoid {
			re, err := regexp.Compile(a)
			if err != nil {
				return nil, fmt.Errorf("%s: term %q: avoid %q: %w", GlossaryPath, t.EN, a, err)
			}
			t.res = append(t.res, re)
		}
	}
	return doc.Terms, nil
}

// glossaryFinding is one place that uses a word the glossary avoids.
type glossaryFinding struct {
	File string // relative to the course root, or theme/... for the site's own pages
	Line int
	Word string
	Term *glossaryTerm
}

func (f glossaryFinding) String() string {
	return fmt.Sprintf("%s:%d: %q: the glossary (%s) says %s for %s", f.File, f.Line, f.Word, GlossaryPath, f.Term.ZH, f.Term.EN)
}

// checkGlossary finds the avoided words in the Chinese text of the course: every chapter's
// notes.zh.md (outside code blocks and inline code), the zh: lines of each lab.yaml, and the
// site's Chinese pages and course.yaml.
func checkGlossary(root string, terms []glossaryTerm) ([]glossaryFinding, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	var out []glossaryFinding
	scan := func(name string, data []byte, markdown, zhLinesOnly bool) {
		inFence := false
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if markdown && strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence || (zhLinesOnly && !strings.Contains(line, "zh:")) {
				continue
			}
			if markdown {
				line = inlineCodeRE.ReplaceAllString(line, "")
			}
			for i := range terms {
				for _, re := range terms[i].res {
					for _, w := range re.FindAllString(line, -1) {
						out = append(out, glossaryFinding{File: name, Line: n, Word: strings.TrimSpace(w), Term: &terms[i]})
					}
				}
			}
		}
	}
	notes, _ := filepath.Glob(filepath.Join(root, "labs", "*", "notes.zh.md"))
	yamls, _ := filepath.Glob(filepath.Join(root, "labs", "*", "lab.yaml"))
	sort.Strings(notes)
	sort.Strings(yamls)
	for _, group := range []struct {
		paths    []string
		markdown bool
	}{{notes, true}, {yamls, false}} {
		for _, p := range group.paths {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, p)
			scan(filepath.ToSlash(rel), data, group.markdown, !group.markdown)
		}
	}
	pages, _ := fs.Glob(theme.FS, "pages/*.zh.md")
	for _, p := range append(pages, "course.yaml") {
		data, err := theme.FS.ReadFile(p)
		if err != nil {
			return nil, err
		}
		md := strings.HasSuffix(p, ".md")
		scan("site/theme/"+p, data, md, !md)
	}
	return out, nil
}

var inlineCodeRE = regexp.MustCompile("`[^`]*`")
