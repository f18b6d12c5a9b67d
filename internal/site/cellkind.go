package site

import (
	"fmt"
	"html/template"
	"strings"
)

// cellKind is one kind of cell: how to read its body, check it, and render it. cells.go parses
// and renders every cell through it; each kind's spec (its body's struct), check and render are
// in its own file (sourcecell.go, resultscell.go, plotcell.go, ...).
type cellKind struct {
	newSpec func() any                                                       // the body's struct, decoded strictly
	check   func(d *notesDoc, c *cell, spec any) error                       // keys it needs, values it allows (optional)
	render  func(b *builder, pc *pageCtx, c *cell, spec any) (string, error) // the cell's HTML
}

var cellKinds = map[string]cellKind{}

// The cells the renderer knows, in the order an unknown cell's error lists them.
func init() {
	registerCell("kl-ceilings", nil, (*builder).ceilingsCell)
	registerCell("kl-figure", (*figureSpec).check, (*builder).figureCell)
	registerCell("kl-plot", (*plotSpec).check, (*builder).plotCell)
	registerCell("kl-profile", (*profileSpec).check, (*builder).profileCell)
	registerCell("kl-properties", (*propertiesSpec).check, (*builder).propertiesCell)
	registerCell("kl-results", (*resultsSpec).check, (*builder).resultsCell)
	registerCell("kl-source", (*sourceSpec).check, (*builder).sourceCell)
}

// registerCell adds a kind of cell whose body decodes into an S: check (nil when any body that
// decodes will do) and render take the decoded body.
func registerCell[S any](kind string, check func(s *S, d *notesDoc, c *cell) error,
	render func(b *builder, pc *pageCtx, c *cell, s *S) (string, error)) {
	k := cellKind{
		newSpec: func() any { return new(S) },
		render: func(b *builder, pc *pageCtx, c *cell, spec any) (string, error) {
			return render(b, pc, c, spec.(*S))
		},
	}
	if check != nil {
		k.check = func(d *notesDoc, c *cell, spec any) error { return check(spec.(*S), d, c) }
	}
	cellKinds[kind] = k
	CellKinds = append(CellKinds, kind)
}

// cellTemplates are the cells' HTML, parsed once: each cell file defines its templates beside
// its code (defineTemplates), the pieces they share are defined here. A cell builds a typed
// view of what it shows and executes its template on it; html/template escapes every text.
var cellTemplates = template.New("cells")

// defineTemplates adds a cell file's templates; it runs while the package initialises.
func defineTemplates(src string) bool {
	template.Must(cellTemplates.Parse(src))
	return true
}

// execTemplate renders one of the cells' templates.
func execTemplate(name string, data any) (template.HTML, error) {
	var sb strings.Builder
	if err := cellTemplates.ExecuteTemplate(&sb, name, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return template.HTML(sb.String()), nil
}

// execCell renders a cell's template, as a cell's render returns it.
func execCell(name string, data any) (string, error) {
	h, err := execTemplate(name, data)
	return string(h), err
}

var _ = defineTemplates(`
{{- define "empty"}}<div class="cell cell-empty">{{range .}}{{if .Code}}<code>{{.Text}}</code>{{else}}{{.Text}}{{end}}{{end}}</div>
{{end}}
{{- define "devicehead"}}<p class="device-head"><a href="{{.Href}}">{{.Name}}</a> <span class="meta">{{.Meta}}</span></p>
{{- with .Note}}<p class="emulated-note">{{.}}</p>{{end}}{{end}}
{{- define "code"}}<code>{{.}}</code>{{end}}`)

// textPart is a piece of a message: plain text, or `code`.
type textPart struct {
	Text string
	Code bool
}

// emptyMsg is why a cell has nothing to show (the "empty" template): `text` in it becomes code.
type emptyMsg []textPart

func emptyCell(msg string) emptyMsg {
	var out emptyMsg
	for i, p := range strings.Split(msg, "`") {
		if p != "" {
			out = append(out, textPart{Text: p, Code: i%2 == 1})
		}
	}
	return out
}

// deviceHeadView is the heading of a device's block in a cell (the "devicehead" template).
type deviceHeadView struct {
	Href, Name, Meta string
	Note             string // the emulator's note, on an emulated device
}
