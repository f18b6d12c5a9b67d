package site

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/results"
)

// The kl-ceilings cell: a device's measured ceilings, beside the peaks they are compared with.

func init() {
	registerCell("kl-ceilings", cellKind{
		newSpec: func() any { return &ceilingsSpec{} },
		render: func(b *builder, pc *pageCtx, c *cell, spec any) (string, error) {
			return b.ceilingsCell(pc, c, spec.(*ceilingsSpec))
		},
	})
}

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

func (b *builder) ceilingsCell(pc *pageCtx, c *cell, s *ceilingsSpec) (string, error) {
	devs, err := b.extraDevices(pc, c, s.Device, "ceilings")
	if err != nil {
		return "", err
	}
	var out strings.Builder
	out.WriteString(`<figure class="cell cell-ceilings">`)
	if len(devs) == 0 {
		out.WriteString(b.emptyCell(tr(pc.lang, "noceilings")))
	}
	for _, d := range devs {
		m, dr := b.ceilings(d.Slug, pc.ch.Name)
		out.WriteString(`<div class="device-block">`)
		out.WriteString(b.deviceHead(pc, dr))
		out.WriteString(ceilingsTable(pc.lang, m))
		out.WriteString("</div>\n")
	}
	out.WriteString("</figure>\n")
	return out.String(), nil
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

// ceilingsTable renders the measured ceilings: measured (and how), the peak it is compared with
// (and where that comes from), and the ratio.
func ceilingsTable(L string, cs []results.NamedCeiling) string {
	var out strings.Builder
	fmt.Fprintf(&out, `<div class="table-scroll"><table class="results ceilings"><thead><tr><th>%s</th><th class="num">%s</th><th class="num">%s</th><th class="num">%s</th><th>%s</th></tr></thead><tbody>`,
		esc(tr(L, "ceiling")), esc(tr(L, "measured")), esc(tr(L, "peak")), esc(tr(L, "ofpeak")), esc(tr(L, "source")))
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
				w += " @ " + c.Problem
			}
			how = append(how, w)
		}
		if c.Note != "" {
			how = append(how, c.Note)
		}
		if c.Source != "" {
			how = append(how, tr(L, "peak")+": "+c.Source)
		}
		if ratio == 0 && measured > 0 && peak > 0 {
			ratio = measured / peak
		}
		r := "–"
		if ratio > 0 {
			r = fmt.Sprintf("%.0f%%", ratio*100)
		}
		fmt.Fprintf(&out, `<tr><th scope="row">%s<br><small class="muted"><code>%s</code></small></th><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td><td><small>%s</small></td></tr>`,
			esc(ceilingName(L, c.Key)), esc(c.Key), esc(withUnit(measured)), esc(withUnit(peak)), esc(r), esc(strings.Join(how, "; ")))
	}
	out.WriteString("</tbody></table></div>")
	return out.String()
}
