package site

import (
	"sort"
	"strings"
)

// The kl-properties cell: the device description a lab recorded (identity and limits, memory,
// peaks, NVML, attributes).

type propertiesSpec struct {
	Device string   `yaml:"device" json:"device,omitempty"`
	Show   []string `yaml:"show" json:"show,omitempty"`
}

// check: show names parts of the device description that exist.
func (s *propertiesSpec) check(d *notesDoc, c *cell) error {
	for _, w := range s.Show {
		if !contains(propertyParts, w) {
			return d.errAt(c.Line, "kl-properties: show: %q is not one of %s", w, strings.Join(propertyParts, ", "))
		}
	}
	return nil
}

// defaultParts are what kl-properties shows without show:.
var defaultParts = []string{"properties", "nvml", "attributes"}

// propertyParts are the parts of a recorded device description that kl-properties shows.
var propertyParts = []string{"properties", "memory", "peaks", "nvml", "attributes"}

// property finds a part of a device's description: "properties" is the lab's "properties" or,
// where a lab records it so, its "info" (the device identity and limits).
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

var _ = defineTemplates(`
{{- define "kl-properties"}}<figure class="cell cell-properties">{{with .Empty}}{{template "empty" .}}{{end}}
{{- range .Devices}}<div class="device-block">{{template "devicehead" .Head}}{{template "properties" .Parts}}</div>
{{end}}</figure>
{{end}}
{{- define "properties"}}{{range .}}
{{- if .Folded}}<details class="attributes"><summary>{{.Caption}} ({{.Count}})</summary>{{template "valuetable" .Table}}</details>
{{- else}}{{with .Caption}}<p class="cell-caption">{{.}}</p>{{end}}{{template "valuetable" .Table}}{{end}}
{{- end}}{{end}}
{{- define "valuetable"}}<div class="table-scroll">
{{- if .Object}}<table class="kv"><thead><tr><th>{{index .Head 0}}</th><th>{{index .Head 1}}</th></tr></thead><tbody>
{{- range .KV}}<tr><th scope="row">{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</tbody></table>
{{- else if .Cols}}<table class="results"><thead><tr>{{range .Cols}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{- range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody></table>
{{- else}}<p>{{.Text}}</p>{{end}}</div>{{end}}`)

type propertiesView struct {
	Empty   emptyMsg
	Devices []struct {
		Head  deviceHeadView
		Parts []propertyPart
	}
}

// propertyPart is one part of a device's description (the "properties" template): a table
// under a caption, or folded (the long list of attributes).
type propertyPart struct {
	Caption string
	Folded  bool
	Count   int
	Table   valueTableView
}

// valueTableView is lab-specific data as a table (the "valuetable" template): an object as
// key/value rows, a list of objects as a column per key, anything else as text.
type valueTableView struct {
	Object bool // key/value rows
	Head   []string
	KV     []keyValue
	Cols   []string
	Rows   [][]string
	Text   string
}

type keyValue struct{ Key, Value string }

func (b *builder) propertiesCell(pc *pageCtx, c *cell, s *propertiesSpec) (string, error) {
	show := s.Show
	if len(show) == 0 {
		show = defaultParts
	}
	devs, err := b.extraDevices(pc, c, s.Device, show...)
	if err != nil {
		return "", err
	}
	var v propertiesView
	if len(devs) == 0 {
		v.Empty = emptyCell(tr(pc.lang, "noprops"))
	}
	for _, d := range devs {
		v.Devices = append(v.Devices, struct {
			Head  deviceHeadView
			Parts []propertyPart
		}{b.deviceHead(pc, d.Files[firstLab(d)]), b.propertyParts(pc.lang, d, pc.ch.Name, show)})
	}
	return execCell("kl-properties", v)
}

func firstLab(d *device) string {
	names := make([]string, 0, len(d.Files))
	for n := range d.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names[0]
}

// propertyParts are a device's property tables: the identity and limits, memory, peaks and
// NVML in full, the list of every attribute folded.
func (b *builder) propertyParts(L string, d *device, preferLab string, show []string) []propertyPart {
	var out []propertyPart
	for _, part := range show {
		v := b.property(d.Slug, preferLab, part)
		if v == nil {
			continue
		}
		p := propertyPart{Table: valueTable(L, v)}
		switch part {
		case "attributes":
			p.Caption, p.Folded = tr(L, "attributes"), true
			switch x := v.(type) {
			case []any:
				p.Count = len(x)
			case map[string]any:
				p.Count = len(x)
			}
		case "properties":
		default:
			p.Caption = tr(L, "part_"+part)
		}
		out = append(out, p)
	}
	return out
}

// valueTable lays out lab-specific data: an object as a key/value table (a nested object's keys
// joined with " · ", two levels deep), a list of objects as a table with a column per key. Keys
// are in sorted order, as the results file has them.
func valueTable(L string, v any) valueTableView {
	switch x := v.(type) {
	case map[string]any:
		t := valueTableView{Object: true, Head: []string{tr(L, "property"), tr(L, "value")}}
		var rows func(prefix string, m map[string]any, depth int)
		rows = func(prefix string, m map[string]any, depth int) {
			for _, k := range sortedKeys(m) {
				val := m[k]
				if sub, ok := val.(map[string]any); ok {
					if isValueUnit(sub) {
						val = joinValueUnit(sub)
					} else if depth < 2 && len(sub) > 0 {
						rows(prefix+k+" · ", sub, depth+1)
						continue
					}
				}
				t.KV = append(t.KV, keyValue{prefix + k, firstLine(runtimeText(L, fmtValue(val)), 240)})
			}
		}
		rows("", x, 0)
		return t
	case []any:
		var t valueTableView
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				for _, k := range sortedKeys(m) {
					if !contains(t.Cols, k) {
						t.Cols = append(t.Cols, k)
					}
				}
			}
		}
		if len(t.Cols) == 0 {
			return valueTableView{Text: fmtValue(x)}
		}
		for _, e := range x {
			m, _ := e.(map[string]any)
			row := make([]string, len(t.Cols))
			for i, c := range t.Cols {
				row[i] = fmtValue(m[c])
			}
			t.Rows = append(t.Rows, row)
		}
		return t
	}
	return valueTableView{Text: fmtValue(v)}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isValueUnit(m map[string]any) bool {
	if _, ok := m["value"]; !ok {
		return false
	}
	for k := range m {
		if k != "value" && k != "unit" {
			return false
		}
	}
	return true
}

func joinValueUnit(m map[string]any) string {
	s := fmtValue(m["value"])
	if us, ok := m["unit"].(string); ok && us != "" {
		s += " " + us
	}
	return s
}
