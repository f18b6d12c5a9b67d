package site

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/solution"
)

// The kl-source cell: the source of a kernel file of the lab, or of one function in it.

type sourceSpec struct {
	File     string `yaml:"file" json:"file,omitempty"`
	Function string `yaml:"function" json:"function,omitempty"`
	Variant  string `yaml:"variant" json:"variant,omitempty"`
	Suite    string `yaml:"suite" json:"suite,omitempty"`
	Lines    string `yaml:"lines" json:"lines,omitempty"`
	Numbers  *bool  `yaml:"numbers" json:"numbers,omitempty"`
}

// check: a source cell names a kernel file or a variant (whose file it shows).
func (s *sourceSpec) check(d *notesDoc, c *cell) error {
	if s.File == "" && s.Variant == "" {
		return d.errAt(c.Line, "kl-source needs file: (a kernel file of the lab) or variant:")
	}
	return nil
}

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
	v := sourceView{Href: href, Path: path.Join(pc.ch.Name, filepath.ToSlash(file)), Function: fn}
	if first != 1 || last != len(lines) {
		v.Lines = fmt.Sprintf("%d–%d", first, last)
	}
	start := first
	if s.Numbers != nil && !*s.Numbers {
		start = 0
	}
	v.Code = codeBlock(lang, excerpt, start)
	return execCell("kl-source", v)
}

var _ = defineTemplates(`
{{- define "kl-source"}}<figure class="cell cell-source"><figcaption><a href="{{.Href}}">{{.Path}}</a>
{{- with .Function}} · <code>{{.}}</code>{{end}}{{with .Lines}} · {{.}}{{end}}</figcaption>{{template "codeblock" .Code}}</figure>
{{end}}`)

type sourceView struct {
	Href, Path, Function, Lines string
	Code                        codeView
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
