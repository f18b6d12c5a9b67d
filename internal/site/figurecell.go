package site

import (
	"html/template"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// The kl-figure cell: a conceptual figure drawn as SVG and kept as source beside the notes
// (labs/NN_name/figures/*.svg), with its labels in both languages. Text meant for one language is
// marked with the lang attribute — <tspan lang="en">Block tile</tspan><tspan lang="zh">线程块分块</tspan>
// — and each page keeps its own language's text. The SVG is inlined, so the page stays
// self-contained.
//
//	```kl-figure
//	file: figures/tiling.svg
//	caption: {en: "Block, warp and thread tiles", zh: "线程块、warp 与线程三级分块"}
//	```

type figureSpec struct {
	File    string            `yaml:"file" json:"file"`
	Caption map[string]string `yaml:"caption" json:"caption,omitempty"`
}

// check: a figure is an SVG file inside the lab's folder, its caption in both languages.
func (s *figureSpec) check(d *notesDoc, c *cell) error {
	switch {
	case s.File == "":
		return d.errAt(c.Line, "kl-figure needs file: (an SVG in the lab's folder, e.g. figures/tiling.svg)")
	case !strings.HasSuffix(s.File, ".svg"):
		return d.errAt(c.Line, "kl-figure: %s is not an SVG file", s.File)
	case path.IsAbs(s.File) || strings.Contains(path.Clean(s.File), ".."):
		return d.errAt(c.Line, "kl-figure: %s must be inside the lab's folder", s.File)
	}
	for _, l := range Langs {
		if s.Caption != nil && s.Caption[l] == "" {
			return d.errAt(c.Line, "kl-figure: caption needs both languages (caption: {en: ..., zh: ...})")
		}
	}
	return nil
}

var (
	langElemRE = regexp.MustCompile(`(?s)<(tspan|text|g|title)\s+lang="([a-z]+)"[^>]*>.*?</(tspan|text|g|title)>`)
	titleRE    = regexp.MustCompile(`(?s)<title>.*?</title>`)
	xmlDeclRE  = regexp.MustCompile(`(?s)^\s*<\?xml[^>]*\?>\s*`)
	scriptRE   = regexp.MustCompile(`(?is)<script|\son[a-z]+\s*=`)
	svgOpenRE  = regexp.MustCompile(`(?s)<svg\b[^>]*>`)
	sizeAttrRE = regexp.MustCompile(`\s(width|height)="[^"]*"`)
)

// svgFor keeps the text of one language: elements marked lang="other" are dropped.
func svgFor(svg, lang string) string {
	out := langElemRE.ReplaceAllStringFunc(svg, func(m string) string {
		g := langElemRE.FindStringSubmatch(m)
		if g[1] != g[3] || g[2] == lang {
			return m
		}
		return ""
	})
	out = xmlDeclRE.ReplaceAllString(out, "")
	// The page sets the size: the figure shrinks with a narrow screen instead of scrolling it.
	return svgOpenRE.ReplaceAllStringFunc(out, func(tag string) string {
		tag = sizeAttrRE.ReplaceAllString(tag, "")
		return strings.Replace(tag, "<svg", `<svg style="width:100%;max-width:720px;height:auto"`, 1)
	})
}

func (b *builder) figureCell(pc *pageCtx, c *cell, s *figureSpec) (string, error) {
	d := pc.doc
	p := filepath.Join(b.c.root, "labs", pc.ch.Name, filepath.FromSlash(s.File))
	data, err := os.ReadFile(p)
	if err != nil {
		return "", d.errAt(c.Line, "kl-figure: %s does not exist in labs/%s", s.File, pc.ch.Name)
	}
	svg := string(data)
	if !strings.Contains(svg, "<svg") {
		return "", d.errAt(c.Line, "kl-figure: %s holds no <svg> element", s.File)
	}
	if scriptRE.MatchString(svg) {
		return "", d.errAt(c.Line, "kl-figure: %s has scripts or event handlers; a figure is drawing only", s.File)
	}
	for _, l := range Langs {
		if !strings.Contains(svg, `lang="`+l+`"`) {
			b.c.warn(true, "%s:%d: kl-figure: %s has no text marked lang=%q: label it in both languages", d.Rel, c.Line, s.File, l)
		}
	}
	caption := s.Caption[pc.lang]
	if pc.lang == "zh" {
		caption = joinCJKText(caption)
	}
	// The drawing's <title> (what a screen reader says, and the tooltip) is in the page's
	// language: the caption, where the cell has one; else the figure must mark its titles.
	if caption != "" {
		h, err := execTemplate("svgtitle", caption)
		if err != nil {
			return "", err
		}
		svg = titleRE.ReplaceAllLiteralString(svg, string(h))
	} else if titleRE.MatchString(svg) {
		b.c.warn(true, "%s:%d: kl-figure: %s has a <title> in one language: give the cell a caption: {en, zh}, or the figure <title lang=\"en\"> and <title lang=\"zh\">", d.Rel, c.Line, s.File)
	}
	// The SVG is the lab's own drawing, checked above to hold no script.
	return execCell("kl-figure", figureView{File: s.File, SVG: template.HTML(svgFor(svg, pc.lang)), Caption: caption})
}

var _ = defineTemplates(`
{{- define "svgtitle"}}<title>{{.}}</title>{{end}}
{{- define "kl-figure"}}<figure class="cell cell-figure" data-file="{{.File}}">{{.SVG}}{{with .Caption}}<figcaption>{{.}}</figcaption>{{end}}</figure>
{{end}}`)

type figureView struct {
	File    string
	SVG     template.HTML
	Caption string
}
