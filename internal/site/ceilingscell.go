package site

import (
	"fmt"
	"sort"
	"strings"
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

// ceilingOrder is the order of the known ceilings in tables.
var ceilingOrder = []string{"hbm_gbps", "l2_gbps", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
	"launch_us", "launch_sync_us", "h2d_gbps", "d2h_gbps"}

// ceilings finds a device's measured ceilings: the "ceilings" object of its results, or the
// top-level entries shaped like a ceiling ({"unit", "measured", ...}), in the named lab's results
// first and then in the other labs' in name order (the site knows no lab by name).
func (b *builder) ceilings(slug, preferLab string) (*omap, *devResults) {
	if v, dr := b.c.extraFor(slug, preferLab, "ceilings"); v != nil {
		if m, ok := v.(*omap); ok {
			return m, dr
		}
	}
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
	labs := append([]string{preferLab}, others...)
	for _, n := range labs {
		dr := d.Files[n]
		if dr == nil || dr.Extra == nil {
			continue
		}
		out := &omap{Vals: map[string]any{}}
		for _, k := range dr.Extra.Keys {
			if m, ok := dr.Extra.Vals[k].(*omap); ok {
				_, hasUnit := m.Get("unit")
				_, hasMeasured := m.Get("measured")
				if hasUnit && hasMeasured {
					out.Vals[k] = m
				}
			}
		}
		if len(out.Vals) == 0 {
			continue
		}
		for _, k := range ceilingOrder {
			if _, ok := out.Vals[k]; ok {
				out.Keys = append(out.Keys, k)
			}
		}
		var rest []string
		for k := range out.Vals {
			if !contains(ceilingOrder, k) {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		out.Keys = append(out.Keys, rest...)
		return out, dr
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

func unitOf(key string, v any) string {
	if m, ok := v.(*omap); ok {
		if u, ok := first(m.Get("unit")).(string); ok && u != "" {
			if u == "us" {
				return "µs"
			}
			return u
		}
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

// ceilingsTable renders the measured ceilings: measured (and how), the peak it is compared with
// (and where that comes from), and the ratio.
func ceilingsTable(L string, m *omap) string {
	var out strings.Builder
	fmt.Fprintf(&out, `<div class="table-scroll"><table class="results ceilings"><thead><tr><th>%s</th><th class="num">%s</th><th class="num">%s</th><th class="num">%s</th><th>%s</th></tr></thead><tbody>`,
		esc(tr(L, "ceiling")), esc(tr(L, "measured")), esc(tr(L, "peak")), esc(tr(L, "ofpeak")), esc(tr(L, "source")))
	for _, k := range m.Keys {
		v := m.Vals[k]
		unit := unitOf(k, v)
		withUnit := func(f float64) string {
			if f <= 0 {
				return "–"
			}
			return strings.TrimSpace(fmtSig(f) + " " + unit)
		}
		var measured, peak, ratio float64
		var how []string
		switch x := v.(type) {
		case *omap:
			if f, ok := num(first(x.Get("measured"))); ok {
				measured = f
			}
			if f, ok := num(first(x.Get("peak"))); ok {
				peak = f
			}
			if f, ok := num(first(x.Get("ratio"))); ok {
				ratio = f
			}
			variant, _ := first(x.Get("variant")).(string)
			problem, _ := first(x.Get("problem")).(string)
			if variant != "" {
				w := variant
				if problem != "" {
					w += " @ " + problem
				}
				how = append(how, w)
			}
			if note, ok := first(x.Get("note")).(string); ok && note != "" {
				how = append(how, note)
			}
			if src, ok := first(x.Get("source")).(string); ok && src != "" {
				how = append(how, tr(L, "peak")+": "+src)
			}
		default:
			if f, ok := num(x); ok {
				measured = f
			}
		}
		if ratio == 0 && measured > 0 && peak > 0 {
			ratio = measured / peak
		}
		r := "–"
		if ratio > 0 {
			r = fmt.Sprintf("%.0f%%", ratio*100)
		}
		fmt.Fprintf(&out, `<tr><th scope="row">%s<br><small class="muted"><code>%s</code></small></th><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td><td><small>%s</small></td></tr>`,
			esc(ceilingName(L, k)), esc(k), esc(withUnit(measured)), esc(withUnit(peak)), esc(r), esc(strings.Join(how, "; ")))
	}
	out.WriteString("</tbody></table></div>")
	return out.String()
}

func first(v any, _ bool) any { return v }
