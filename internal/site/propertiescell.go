package site

import (
	"fmt"
	"sort"
	"strings"
)

// The kl-properties cell: the device description a lab recorded (identity and limits, memory,
// peaks, NVML, attributes).

func init() {
	registerCell("kl-properties", cellKind{
		newSpec: func() any { return &propertiesSpec{} },
		check: func(d *notesDoc, c *cell, spec any) error {
			for _, w := range spec.(*propertiesSpec).Show {
				if !contains(propertyParts, w) {
					return d.errAt(c.Line, "kl-properties: show: %q is not one of %s", w, strings.Join(propertyParts, ", "))
				}
			}
			return nil
		},
		render: func(b *builder, pc *pageCtx, c *cell, spec any) (string, error) {
			return b.propertiesCell(pc, c, spec.(*propertiesSpec))
		},
	})
}

type propertiesSpec struct {
	Device string   `yaml:"device" json:"device,omitempty"`
	Show   []string `yaml:"show" json:"show,omitempty"`
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

func (b *builder) propertiesCell(pc *pageCtx, c *cell, s *propertiesSpec) (string, error) {
	show := s.Show
	if len(show) == 0 {
		show = defaultParts
	}
	devs, err := b.extraDevices(pc, c, s.Device, show...)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	out.WriteString(`<figure class="cell cell-properties">`)
	if len(devs) == 0 {
		out.WriteString(b.emptyCell(tr(pc.lang, "noprops")))
	}
	for _, d := range devs {
		out.WriteString(`<div class="device-block">`)
		out.WriteString(b.deviceHead(pc, d.Files[firstLab(d)]))
		out.WriteString(b.propertiesHTML(pc.lang, d, pc.ch.Name, show))
		out.WriteString("</div>\n")
	}
	out.WriteString("</figure>\n")
	return out.String(), nil
}

func firstLab(d *device) string {
	names := make([]string, 0, len(d.Files))
	for n := range d.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names[0]
}

// propertiesHTML renders a device's property tables: the identity and limits, memory, peaks and
// NVML in full, the list of every attribute folded.
func (b *builder) propertiesHTML(L string, d *device, preferLab string, show []string) string {
	var out strings.Builder
	for _, part := range show {
		v := b.property(d.Slug, preferLab, part)
		if v == nil {
			continue
		}
		table := valueTable(L, v)
		switch part {
		case "attributes":
			n := 0
			if a, ok := v.([]any); ok {
				n = len(a)
			} else if m, ok := v.(*omap); ok {
				n = len(m.Keys)
			}
			fmt.Fprintf(&out, `<details class="attributes"><summary>%s (%d)</summary>%s</details>`, esc(tr(L, "attributes")), n, table)
		case "properties":
			out.WriteString(table)
		default:
			fmt.Fprintf(&out, `<p class="cell-caption">%s</p>%s`, esc(tr(L, "part_"+part)), table)
		}
	}
	return out.String()
}

// valueTable renders lab-specific data: an object as a key/value table, a list of objects as a
// table with a column per key.
func valueTable(L string, v any) string {
	var out strings.Builder
	out.WriteString(`<div class="table-scroll">`)
	switch x := v.(type) {
	case *omap:
		fmt.Fprintf(&out, `<table class="kv"><thead><tr><th>%s</th><th>%s</th></tr></thead><tbody>`, esc(tr(L, "property")), esc(tr(L, "value")))
		var rows func(prefix string, m *omap, depth int)
		rows = func(prefix string, m *omap, depth int) {
			for _, k := range m.Keys {
				val := m.Vals[k]
				if sub, ok := val.(*omap); ok {
					if isValueUnit(sub) {
						val = joinValueUnit(sub)
					} else if depth < 2 && len(sub.Keys) > 0 {
						rows(prefix+k+" · ", sub, depth+1)
						continue
					}
				}
				fmt.Fprintf(&out, `<tr><th scope="row">%s</th><td>%s</td></tr>`, esc(prefix+k), esc(firstLine(fmtValue(val), 240)))
			}
		}
		rows("", x, 0)
		out.WriteString("</tbody></table>")
	case []any:
		var cols []string
		for _, e := range x {
			if m, ok := e.(*omap); ok {
				for _, k := range m.Keys {
					if !contains(cols, k) {
						cols = append(cols, k)
					}
				}
			}
		}
		if len(cols) == 0 {
			out.WriteString(`<p>` + esc(fmtValue(x)) + `</p>`)
			break
		}
		out.WriteString(`<table class="results"><thead><tr>`)
		for _, c := range cols {
			fmt.Fprintf(&out, `<th>%s</th>`, esc(c))
		}
		out.WriteString("</tr></thead><tbody>")
		for _, e := range x {
			m, _ := e.(*omap)
			out.WriteString("<tr>")
			for _, c := range cols {
				val, _ := m.Get(c)
				fmt.Fprintf(&out, `<td>%s</td>`, esc(fmtValue(val)))
			}
			out.WriteString("</tr>")
		}
		out.WriteString("</tbody></table>")
	default:
		out.WriteString(`<p>` + esc(fmtValue(v)) + `</p>`)
	}
	out.WriteString("</div>")
	return out.String()
}

func isValueUnit(m *omap) bool {
	_, hv := m.Get("value")
	if !hv {
		return false
	}
	for _, k := range m.Keys {
		if k != "value" && k != "unit" {
			return false
		}
	}
	return true
}

func joinValueUnit(m *omap) string {
	v, _ := m.Get("value")
	u, _ := m.Get("unit")
	s := fmtValue(v)
	if us, ok := u.(string); ok && us != "" {
		s += " " + us
	}
	return s
}
