package site

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/plot"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// The kl-plot cell: a figure of a suite's results (speedup, throughput, roofline, SM timeline).

type plotSpec struct {
	Kind     string   `yaml:"kind" json:"kind"`
	Suite    string   `yaml:"suite" json:"suite"`
	Device   string   `yaml:"device" json:"device,omitempty"`
	Problems []string `yaml:"problems" json:"problems,omitempty"`
	Variants []string `yaml:"variants" json:"variants,omitempty"`
	X        string   `yaml:"x" json:"x,omitempty"`
	Roofs    []string `yaml:"roofs" json:"roofs,omitempty"`
}

// check: a plot names its suite and a kind of plot the site draws.
func (s *plotSpec) check(d *notesDoc, c *cell) error {
	if s.Suite == "" {
		return d.errAt(c.Line, "kl-plot needs suite:")
	}
	switch s.Kind {
	case "speedup", "throughput", "roofline", "timeline":
	default:
		return d.errAt(c.Line, "kl-plot: kind %q must be speedup, throughput, roofline or timeline", s.Kind)
	}
	return nil
}

func (b *builder) plotCell(pc *pageCtx, c *cell, s *plotSpec) (string, error) {
	sel, err := b.selectResults(pc, c, s.Suite, s.Variants, s.Problems, s.Device)
	if err != nil {
		return "", err
	}
	L := pc.lang
	devices := sel.devices
	if s.Device == "" {
		// Emulated timings are not performance figures: plot them only when no GPU has results.
		var real []*devResults
		for _, dr := range devices {
			if !b.c.bySlug[dr.Slug].Emulated {
				real = append(real, dr)
			}
		}
		if len(real) > 0 {
			devices = real
		}
	}
	if len(devices) == 0 {
		return execCell("kl-plot", plotView{Empty: emptyCell(tr(L, "noresults", pc.ch.Num))})
	}
	suiteTitle := pick(L, sel.suite.Title)
	if suiteTitle == "" {
		suiteTitle = sel.suite.Name
	}
	hash := sha256.Sum256([]byte(c.Canon))
	var v plotView
	for _, dr := range devices {
		dev := b.c.bySlug[dr.Slug]
		entries := sel.entries(dr)
		var svg []byte
		var perr error
		switch s.Kind {
		case "speedup":
			svg, perr = b.speedupPlot(L, sel, entries, suiteTitle)
		case "throughput":
			svg, perr = b.throughputPlot(L, sel, entries, suiteTitle, s.X, pc, c)
		case "roofline":
			svg, perr = b.rooflinePlot(L, sel, entries, suiteTitle, dr, s.Roofs, pc, c)
		case "timeline":
			svg, perr = b.timelinePlot(L, sel, entries, s.Problems)
		}
		var le *lab.FileError
		if errors.As(perr, &le) {
			return "", perr
		}
		fig := plotFigure{Head: b.deviceHead(pc, dr)}
		if perr != nil {
			fig.Empty = emptyCell(perr.Error())
			v.Figures = append(v.Figures, fig)
			continue
		}
		if dev.Emulated {
			svg = markEmulated(svg, tr(L, "emulatedlong"))
		}
		name := fmt.Sprintf("%s-%s-%s-%s.%s.svg", sel.suite.Name, s.Kind, dr.Slug, hex.EncodeToString(hash[:3]), L)
		rel := path.Join("plots", pc.ch.Name, name)
		b.writeFile(rel, svg)
		b.plots++
		fig.Src, fig.Kind = b.rel(pc.pageDir, rel), s.Kind
		fig.Alt = tr(L, "plotalt", suiteTitle+" ("+s.Kind+")", dev.Name)
		v.Figures = append(v.Figures, fig)
	}
	return execCell("kl-plot", v)
}

var _ = defineTemplates(`
{{- define "kl-plot"}}{{with .Empty}}<figure class="cell plot plot-empty">{{template "empty" .}}</figure>
{{end}}
{{- range .Figures}}<figure class="cell plot">{{template "devicehead" .Head}}
{{- with .Empty}}{{template "empty" .}}{{else}}<img class="plot-img" src="{{.Src}}" alt="{{.Alt}}" width="640" loading="eager" data-kind="{{.Kind}}">{{end -}}
</figure>
{{end}}{{end}}
{{- define "emulatedmark"}}<text x="99%" y="99%" text-anchor="end" style="font-family:{{.Font}};font-size:9px;fill:#9a6700">{{.Label}}</text>
{{end}}`)

// plotView is a plot cell (the "kl-plot" template): a figure per device, or why there is none.
type plotView struct {
	Empty   emptyMsg
	Figures []plotFigure
}

type plotFigure struct {
	Head           deviceHeadView
	Empty          emptyMsg // why this device has no plot
	Src, Alt, Kind string
}

// markEmulated adds the emulator's label to the bottom of a figure.
func markEmulated(svg []byte, label string) []byte {
	i := bytes.LastIndex(svg, []byte("</svg>"))
	if i < 0 {
		return svg
	}
	txt, err := execTemplate("emulatedmark", struct {
		Font  template.CSS // the plots' own font stack, a constant
		Label string
	}{template.CSS(plot.FontStack), label})
	if err != nil {
		return svg
	}
	return append(append(append([]byte{}, svg[:i]...), txt...), svg[i:]...)
}

func (b *builder) speedupPlot(L string, sel *selection, entries []*results.Entry, title string) ([]byte, error) {
	var variants, problems []string
	okCount := map[string]int{}
	for _, e := range entries {
		if !contains(variants, e.Variant) {
			variants = append(variants, e.Variant)
		}
		if e.OK() {
			okCount[e.Problem]++
		}
	}
	for _, p := range problemNames(sel.suite) {
		if okCount[p] > 0 {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return nil, errors.New(tr(L, "noplotdata"))
	}
	if sel.problems == nil && len(problems) > 3 {
		problems = problems[len(problems)-3:] // the largest ones
	}
	groups := make([]plot.BarGroup, len(problems))
	for gi, p := range problems {
		vals := make([]float64, len(variants))
		for vi, v := range variants {
			vals[vi] = math.NaN()
			for _, e := range entries {
				if e.Variant == v && e.Problem == p && e.OK() {
					switch {
					case e.Speedup > 0:
						vals[vi] = e.Speedup
					case v == sel.suite.Baseline:
						vals[vi] = 1
					}
				}
			}
		}
		groups[gi] = plot.BarGroup{Name: problemLabel(L, sel.suite, p), Values: vals}
	}
	base := sel.suite.Baseline
	bars := &plot.Bars{
		Title:          tr(L, "speeduptitle", title, base),
		XLabel:         tr(L, "speedupx", base),
		Categories:     variants,
		Groups:         groups,
		Reference:      1,
		ReferenceLabel: base,
	}
	return bars.SVG()
}

// sizeOf is the x value of a problem for throughput plots, and the axis name.
func sizeOf(params map[string]int64, x string) (float64, string) {
	if x != "" {
		return float64(params[x]), x
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if _, ok := params["bytes"]; ok {
		return float64(params["bytes"]), "bytes"
	}
	prod := 1.0
	for _, k := range keys {
		prod *= float64(params[k])
	}
	return prod, strings.Join(keys, "·")
}

func (b *builder) throughputPlot(L string, sel *selection, entries []*results.Entry, title, x string, pc *pageCtx, c *cell) ([]byte, error) {
	if x != "" {
		found := false
		for _, p := range problemNames(sel.suite) {
			if _, ok := problemParams(sel.suite, p)[x]; ok {
				found = true
			}
		}
		if !found {
			return nil, pc.doc.errAt(c.Line, "kl-plot: x: %s is not a parameter of suite %s's problems", x, sel.suite.Name)
		}
	}
	metric := sel.suite.Metric
	var series []plot.Series
	axis := ""
	for _, e := range entries {
		if !e.OK() {
			continue
		}
		params := e.Params
		if len(params) == 0 {
			params = problemParams(sel.suite, e.Problem)
		}
		xv, name := sizeOf(params, x)
		axis = name
		y, _ := metricValue(e, metric)
		if y <= 0 {
			continue
		}
		if len(series) == 0 || series[len(series)-1].Name != e.Variant {
			series = append(series, plot.Series{Name: e.Variant})
		}
		series[len(series)-1].Points = append(series[len(series)-1].Points, plot.Point{X: xv, Y: y})
	}
	if len(series) == 0 {
		return nil, errors.New(tr(L, "noplotdata"))
	}
	for i := range series {
		sort.Slice(series[i].Points, func(a, b int) bool { return series[i].Points[a].X < series[i].Points[b].X })
	}
	ylabel := metricUnit(metric)
	if metric == "us" {
		ylabel = tr(L, "perop_us")
	}
	lines := &plot.Lines{
		Title:  tr(L, "throughput", title, metricUnit(metric)),
		XLabel: tr(L, "problemsize", axis),
		YLabel: ylabel,
		// Sizes and rates both span decades: on a linear axis every small problem sits at 0.
		LogX:   true,
		LogY:   true,
		Series: series,
	}
	return lines.SVG()
}

// ceilingValue is the figure a roof is drawn at: the measured one, else the peak.
func ceilingValue(c *results.Ceiling) (value float64, measured bool, ok bool) {
	if c.Measured != nil && *c.Measured > 0 {
		return *c.Measured, true, true
	}
	if c.Peak != nil && *c.Peak > 0 {
		return *c.Peak, false, true
	}
	return 0, false, false
}

func (b *builder) rooflinePlot(L string, sel *selection, entries []*results.Entry, title string, dr *devResults, roofs []string, pc *pageCtx, c *cell) ([]byte, error) {
	var series []plot.Series
	for _, e := range entries {
		if !e.OK() || e.TFLOPs <= 0 || e.GBps <= 0 {
			continue
		}
		ai := e.TFLOPs * 1000 / e.GBps
		if len(series) == 0 || series[len(series)-1].Name != e.Variant {
			series = append(series, plot.Series{Name: e.Variant})
		}
		series[len(series)-1].Points = append(series[len(series)-1].Points, plot.Point{X: ai, Y: e.TFLOPs})
	}
	hasRates := false
	for _, e := range entries {
		if e.OK() {
			hasRates = true
		}
	}
	if len(series) == 0 && hasRates {
		return nil, pc.doc.errAt(c.Line, "kl-plot: roofline needs results with both TFLOP/s and GB/s; suite %s records %s only",
			sel.suite.Name, metricUnit(sel.suite.Metric))
	}
	r := &plot.Roofline{
		Title:  tr(L, "roofline", title),
		XLabel: tr(L, "intensity"),
		YLabel: tr(L, "achieved"),
		Series: series,
	}
	cm, _ := b.ceilings(dr.Slug, pc.ch.Name)
	var available []string
	for _, c := range cm {
		available = append(available, c.Key)
	}
	want := roofs
	if len(want) == 0 {
		for _, k := range available {
			if k == "h2d_gbps" || k == "d2h_gbps" {
				continue
			}
			if strings.HasSuffix(k, "_gbps") || strings.HasSuffix(k, "_tflops") {
				want = append(want, k)
			}
		}
	}
	for _, k := range want {
		v := results.FindCeiling(cm, k)
		if v == nil {
			if len(roofs) > 0 {
				list := strings.Join(available, ", ")
				if list == "" {
					list = "none: no lab has recorded ceilings on this device"
				}
				return nil, pc.doc.errAt(c.Line, "kl-plot: roof %s is not among the device's ceilings (%s)", k, list)
			}
			continue
		}
		val, measured, ok := ceilingValue(v)
		if !ok {
			continue
		}
		how := tr(L, "peakroof")
		if measured {
			how = tr(L, "measuredroof")
		}
		switch {
		case strings.HasSuffix(k, "_gbps"):
			label := fmt.Sprintf("%s %s GB/s (%s)", ceilingName(L, k), fmtSig(val), how)
			r.Memory = append(r.Memory, plot.Roof{Name: label, Value: val})
		case strings.HasSuffix(k, "_tflops"):
			label := fmt.Sprintf("%s %s TFLOP/s (%s)", ceilingName(L, k), fmtSig(val), how)
			r.Compute = append(r.Compute, plot.Roof{Name: label, Value: val})
		default:
			if len(roofs) > 0 {
				return nil, pc.doc.errAt(c.Line, "kl-plot: roof %s is neither a bandwidth (_gbps) nor a compute rate (_tflops)", k)
			}
		}
	}
	if len(series) == 0 {
		return nil, errors.New(tr(L, "noplotdata"))
	}
	return r.SVG()
}
