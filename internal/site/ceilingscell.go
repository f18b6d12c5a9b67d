package site

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The kl-ceilings cell: a device's measured ceilings, beside the peaks they are compared with.

type ceilingsSpec struct {
	Device string `yaml:"device" json:"device,omitempty"`
}

// ceilings finds a device's measured ceilings (results.CeilingsIn) in the named lab's results
// first and then in the other labs' in name order (the site knows no lab by name).
func (b *builder) ceilings(slug, preferLab string) ([]results.NamedCeiling, *devResults) {
	d := b.c.bySlug[slug]
	if d == nil {
		return nil, nil
	}
	var others []string
	for n := range d.Files {
		if n != preferLab {
			others = append(others, n)
		}
	}
	sort.Strings(others)
	for _, n := range append([]string{preferLab}, others...) {
		dr := d.Files[n]
		if dr == nil || dr.File == nil {
			continue
		}
		if cs := results.CeilingsIn(dr.File.Extra); len(cs) > 0 {
			return cs, dr
		}
	}
	return nil, nil
}

var _ = defineTemplates(`
{{- define "kl-ceilings"}}<figure class="cell cell-ceilings">{{with .Empty}}{{template "empty" .}}{{end}}
{{- range .Devices}}<div class="device-block">{{template "devicehead" .Head}}{{template "ceilings" .Table}}</div>
{{end}}</figure>
{{end}}
{{- define "ceilings"}}<div class="table-scroll"><table class="results ceilings"><thead><tr>
{{- range $i, $h := .Head}}<th{{if and $i (lt $i 4)}} class="num"{{end}}>{{$h}}</th>{{end}}</tr></thead><tbody>
{{- range .Rows}}<tr><th scope="row">{{.Name}}<br><small class="muted"><code>{{.Key}}</code></small></th><td class="num">{{.Measured}}</td><td class="num">{{.Peak}}</td><td class="num">{{.Ratio}}</td><td><small>{{.How}}</small></td></tr>
{{- end}}</tbody></table></div>{{end}}`)

type ceilingsView struct {
	Empty   emptyMsg
	Devices []struct {
		Head  deviceHeadView
		Table ceilingsTableView
	}
}

// ceilingsTableView is the table of a device's measured ceilings (the "ceilings" template).
type ceilingsTableView struct {
	Head []string
	Rows []ceilingRow
}

type ceilingRow struct{ Name, Key, Measured, Peak, Ratio, How string }

func (b *builder) ceilingsCell(pc *pageCtx, c *cell, s *ceilingsSpec) (string, error) {
	devs, err := b.extraDevices(pc, c, s.Device, "ceilings")
	if err != nil {
		return "", err
	}
	var v ceilingsView
	if len(devs) == 0 {
		v.Empty = emptyCell(tr(pc.lang, "noceilings"))
	}
	for _, d := range devs {
		m, dr := b.ceilings(d.Slug, pc.ch.Name)
		v.Devices = append(v.Devices, struct {
			Head  deviceHeadView
			Table ceilingsTableView
		}{b.deviceHead(pc, dr), ceilingsTable(pc.lang, m, b.manifestOf(dr))})
	}
	return execCell("kl-ceilings", v)
}

// manifestOf is the manifest of the lab whose results dr is (nil when no lab has that name).
func (b *builder) manifestOf(dr *devResults) *lab.Manifest {
	if dr == nil {
		return nil
	}
	if ch := b.c.chapter(dr.File.Lab); ch != nil {
		return ch.Manifest
	}
	return nil
}

func unitOf(key string, c results.Ceiling) string {
	if c.Unit != "" {
		if c.Unit == "us" {
			return "µs"
		}
		return c.Unit
	}
	switch {
	case strings.HasSuffix(key, "_gbps"):
		return "GB/s"
	case strings.HasSuffix(key, "_tflops"):
		return "TFLOP/s"
	case strings.HasSuffix(key, "_us"):
		return "µs"
	case strings.HasSuffix(key, "_ms"):
		return "ms"
	}
	return ""
}

// value is a figure of a ceiling, 0 when it is absent.
func value(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// ceilingsTable is the measured ceilings: measured (and how), the peak it is compared with
// (and where that comes from), and the ratio.
func ceilingsTable(L string, cs []results.NamedCeiling, m *lab.Manifest) ceilingsTableView {
	v := ceilingsTableView{Head: []string{tr(L, "ceiling"), tr(L, "measured"), tr(L, "peak"), tr(L, "ofpeak"), tr(L, "source")}}
	for _, c := range cs {
		unit := unitOf(c.Key, c.Ceiling)
		withUnit := func(f float64) string {
			if f <= 0 {
				return "–"
			}
			return strings.TrimSpace(fmtSig(f) + " " + unit)
		}
		measured, peak, ratio := value(c.Measured), value(c.Peak), value(c.Ratio)
		var how []string
		if c.Variant != "" {
			w := c.Variant
			if c.Problem != "" {
				w += " @ " + problemLabelIn(L, m, c.Problem)
			}
			how = append(how, w)
		}
		if c.Note != "" {
			how = append(how, runtimeText(L, c.Note))
		}
		if c.Source != "" {
			how = append(how, tr(L, "peak")+tr(L, "colon")+runtimeText(L, c.Source))
		}
		if ratio == 0 && measured > 0 && peak > 0 {
			ratio = measured / peak
		}
		r := "–"
		if ratio > 0 {
			r = fmt.Sprintf("%.0f%%", ratio*100)
		}
		v.Rows = append(v.Rows, ceilingRow{Name: ceilingName(L, c.Key), Key: c.Key, Measured: withUnit(measured),
			Peak: withUnit(peak), Ratio: r, How: strings.Join(how, tr(L, "listsep"))})
	}
	return v
}
