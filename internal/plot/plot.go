// Package plot draws the course's figures as SVG with gonum/plot: speedup bars, throughput (or
// time) against problem size, and rooflines.
//
// The figures take their labels from the caller, already in the reader's language, so a page in
// Chinese gets a figure labelled in Chinese. gonum lays text out with the metrics of the
// Liberation fonts, which have no CJK glyphs; the SVG does not embed a font. Text is drawn by the
// browser with its own fonts: every <text> names a font stack that starts with Liberation Sans
// (and its metric twins Arial and Helvetica, so Latin text lands where gonum measured it) and
// goes on to the usual CJK system fonts. A label that holds wide (CJK) characters is anchored at
// the centre gonum computed for it, so a wider glyph run still sits centred on its axis or title.
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// FontStack is the CSS font-family list written into every SVG text element.
const FontStack = `'Liberation Sans',Arial,Helvetica,'Noto Sans CJK SC','Source Han Sans SC',` +
	`'PingFang SC','Hiragino Sans GB','Microsoft YaHei','WenQuanYi Micro Hei','Noto Sans SC',sans-serif`

// Width is the width of every figure; heights vary with the content.
const Width = 16 * vg.Centimeter

// Point is one data point.
type Point struct {
	X, Y float64
}

// Series is a named sequence of points (a variant's results, say).
type Series struct {
	Name   string
	Points []Point
}

// Bars is a horizontal grouped bar chart: one row per category, one bar per group in each row.
type Bars struct {
	Title  string
	XLabel string // the value axis (horizontal)
	// Categories are the rows, top to bottom (variants).
	Categories []string
	// Groups are the bars of each row (one per problem); Values[i] belongs to Categories[i];
	// NaN or a value ≤ 0 draws no bar.
	Groups []BarGroup
	// Reference draws a vertical line at this value (1 for "the baseline"); 0 draws none.
	Reference      float64
	ReferenceLabel string
}

// BarGroup is one bar per category.
type BarGroup struct {
	Name   string
	Values []float64
}

// Lines plots series as lines with points.
type Lines struct {
	Title          string
	XLabel, YLabel string
	LogX, LogY     bool
	Series         []Series
}

// Roof is one ceiling of a roofline: a bandwidth in GB/s or a compute rate in TFLOP/s.
type Roof struct {
	Name  string
	Value float64
}

// Roofline plots achieved TFLOP/s against arithmetic intensity (FLOP/byte) on log-log axes,
// under the device's bandwidth and compute ceilings.
type Roofline struct {
	Title          string
	XLabel, YLabel string
	Series         []Series // X: FLOP/byte, Y: TFLOP/s
	Memory         []Roof   // GB/s
	Compute        []Roof   // TFLOP/s
}

// palette is Okabe–Ito, readable by colour-blind readers, then a few more.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{0, 158, 115, 255},   // green
	color.RGBA{204, 121, 167, 255}, // purple
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{86, 180, 233, 255},  // sky
	color.RGBA{120, 120, 120, 255}, // grey
	color.RGBA{240, 228, 66, 255},  // yellow
	color.RGBA{0, 0, 0, 255},
}

func colorAt(i int) color.Color { return palette[i%len(palette)] }

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// mu serialises gonum drawing: its font cache and text handler are shared package state.
var mu sync.Mutex

func newPlot(title string) *plot.Plot {
	p := plot.New()
	h := wideText{text.Plain{Fonts: font.DefaultCache}}
	p.TextHandler = h
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 11)
	p.Title.TextStyle.Handler = h
	p.Title.Padding = 6
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Label.TextStyle.Handler = h
		a.Tick.Label.Font = font.From(sans, 9)
		a.Tick.Label.Handler = h
		a.Padding = 2
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.TextStyle.Handler = h
	p.Legend.Padding = 2
	p.Legend.ThumbnailWidth = 14
	return p
}

// newChart is a plot with its axes labelled and a light grid: the bar, line and roofline charts.
func newChart(title, xLabel, yLabel string) *plot.Plot {
	p := newPlot(title)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{225}
	g.Horizontal.Color = color.Gray{225}
	p.Add(g)
	return p
}

// SVG draws the bar chart.
func (b *Bars) SVG() ([]byte, error) {
	if len(b.Categories) == 0 || len(b.Groups) == 0 {
		return nil, errors.New("plot: bar chart with no data")
	}
	mu.Lock()
	defer mu.Unlock()
	p := newChart(b.Title, b.XLabel, "")
	var leg legend
	p.X.Min = 0
	p.X.Tick.Marker = linearTicks{}
	n := len(b.Categories)
	ng := len(b.Groups)
	// Row height: bars of the groups side by side.
	barW := vg.Length(11)
	if ng > 3 {
		barW = 7
	}
	maxV := 0.0
	for gi, g := range b.Groups {
		if len(g.Values) != n {
			return nil, fmt.Errorf("plot: group %q has %d values for %d categories", g.Name, len(g.Values), n)
		}
		vals := make(plotter.Values, n)
		for i := range n {
			// Rows go top to bottom: gonum puts index 0 at the bottom.
			v := g.Values[n-1-i]
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				v = 0
			}
			vals[i] = v
			maxV = math.Max(maxV, v)
		}
		bc, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, err
		}
		bc.Horizontal = true
		bc.Color = colorAt(gi)
		bc.LineStyle.Width = 0
		bc.Offset = vg.Length(float64(ng-1)/2-float64(gi)) * barW
		p.Add(bc)
		if ng > 1 || g.Name != "" {
			leg.add(g.Name, bc)
		}
	}
	if b.Reference > 0 {
		ref, err := plotter.NewLine(plotter.XYs{{X: b.Reference, Y: -0.5}, {X: b.Reference, Y: float64(n) - 0.5}})
		if err != nil {
			return nil, err
		}
		ref.LineStyle.Color = color.Gray{60}
		ref.LineStyle.Width = 1
		ref.LineStyle.Dashes = []vg.Length{4, 3}
		p.Add(ref)
		if b.ReferenceLabel != "" {
			leg.add(b.ReferenceLabel, ref)
		}
		maxV = math.Max(maxV, b.Reference)
	}
	p.X.Max = maxV * 1.05 // the legend is drawn below the axes, not over the bars
	if p.X.Max == 0 {
		p.X.Max = 1
	}
	names := make([]string, n)
	for i := range n {
		names[i] = b.Categories[n-1-i]
	}
	p.NominalY(names...)
	rowH := barW*vg.Length(ng) + 8
	h := vg.Length(60) + rowH*vg.Length(n)
	return render(p, &leg, Width, h)
}

// SVG draws the line chart.
func (l *Lines) SVG() ([]byte, error) {
	if len(l.Series) == 0 {
		return nil, errors.New("plot: line chart with no series")
	}
	mu.Lock()
	defer mu.Unlock()
	p := newChart(l.Title, l.XLabel, l.YLabel)
	var leg legend
	if l.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if l.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	} else {
		p.Y.Min = 0
		p.Y.Tick.Marker = linearTicks{}
	}
	any := false
	for i, s := range l.Series {
		xys := clean(s.Points, l.LogX, l.LogY)
		if len(xys) == 0 {
			continue
		}
		any = true
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		line.Color = colorAt(i)
		line.Width = 1.5
		pts.Color = colorAt(i)
		pts.Shape = shapeAt(i)
		pts.Radius = 2.5
		p.Add(line, pts)
		leg.add(s.Name, line, pts)
	}
	if !any {
		return nil, errors.New("plot: no finite positive points to draw")
	}
	if l.LogX {
		padLog(&p.X, l.Series, pointX)
	}
	if l.LogY {
		padLog(&p.Y, l.Series, pointY)
	}
	return render(p, &leg, Width, 8*vg.Centimeter)
}

// SVG draws the roofline.
func (r *Roofline) SVG() ([]byte, error) {
	mu.Lock()
	defer mu.Unlock()
	p := newChart(r.Title, r.XLabel, r.YLabel)
	var leg legend
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}

	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	var all []plotter.XYs
	for _, s := range r.Series {
		xys := clean(s.Points, true, true)
		all = append(all, xys)
		for _, pt := range xys {
			xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
			ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
		}
	}
	maxC, maxM := 0.0, 0.0
	for _, c := range r.Compute {
		maxC = math.Max(maxC, c.Value)
	}
	for _, m := range r.Memory {
		maxM = math.Max(maxM, m.Value)
	}
	// Ridge points: where a bandwidth roof meets a compute roof (TFLOP/s·1000 / GB/s = FLOP/B).
	for _, c := range r.Compute {
		if c.Value > 0 {
			ymax = math.Max(ymax, c.Value)
			ymin = math.Min(ymin, c.Value)
			if maxM > 0 {
				ridge := c.Value * 1000 / maxM
				xmin, xmax = math.Min(xmin, ridge), math.Max(xmax, ridge)
			}
		}
	}
	for _, m := range r.Memory {
		if m.Value > 0 && maxC > 0 {
			ridge := maxC * 1000 / m.Value
			xmin, xmax = math.Min(xmin, ridge), math.Max(xmax, ridge)
		}
	}
	if math.IsInf(xmin, 0) || math.IsInf(ymin, 0) {
		return nil, errors.New("plot: roofline with no points and no ceilings")
	}
	xmin, xmax = xmin/4, xmax*4
	if maxM > 0 {
		// Show where the slanted roofs start.
		ymin = math.Min(ymin, maxM*xmin/1000)
	}
	ymin, ymax = ymin/2, ymax*2
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = ymin, ymax

	// ceiling draws one roof, grey, each with its own dashes, and names it in the legend.
	ci := 0
	ceiling := func(name string, xys plotter.XYs) error {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = color.Gray{70}
		l.Width = 1.5
		l.Dashes = dashAt(ci)
		ci++
		p.Add(l)
		leg.add(name, l)
		return nil
	}
	for _, m := range r.Memory {
		if m.Value <= 0 {
			continue
		}
		end := xmax
		if maxC > 0 {
			end = math.Min(xmax, maxC*1000/m.Value)
		}
		if err := ceiling(m.Name, plotter.XYs{{X: xmin, Y: m.Value * xmin / 1000}, {X: end, Y: m.Value * end / 1000}}); err != nil {
			return nil, err
		}
	}
	for _, c := range r.Compute {
		if c.Value <= 0 {
			continue
		}
		start := xmin
		if maxM > 0 {
			start = math.Max(xmin, c.Value*1000/maxM)
		}
		if err := ceiling(c.Name, plotter.XYs{{X: start, Y: c.Value}, {X: xmax, Y: c.Value}}); err != nil {
			return nil, err
		}
	}
	for i, xys := range all {
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.Color = colorAt(i)
		sc.Shape = shapeAt(i)
		sc.Radius = 3
		p.Add(sc)
		leg.add(r.Series[i].Name, sc)
	}
	return render(p, &leg, Width, 9*vg.Centimeter)
}

// padLog widens a log axis a little beyond the data so that end points are not on the frame;
// coord picks the axis's coordinate of a point (X or Y).
func padLog(a *plot.Axis, series []Series, coord func(Point) float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			if v := coord(p); v > 0 && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo <= hi {
		a.Min, a.Max = lo/1.5, hi*1.5
	}
}

func pointX(p Point) float64 { return p.X }
func pointY(p Point) float64 { return p.Y }

func dashAt(i int) []vg.Length {
	switch i % 3 {
	case 1:
		return []vg.Length{5, 3}
	case 2:
		return []vg.Length{2, 2}
	}
	return nil
}

func shapeAt(i int) draw.GlyphDrawer {
	switch i % 5 {
	case 1:
		return draw.SquareGlyph{}
	case 2:
		return draw.TriangleGlyph{}
	case 3:
		return draw.PyramidGlyph{}
	case 4:
		return draw.CrossGlyph{}
	}
	return draw.CircleGlyph{}
}

// clean drops points that cannot be drawn (NaN, Inf, and non-positive values on a log axis).
func clean(pts []Point, logX, logY bool) plotter.XYs {
	var out plotter.XYs
	for _, p := range pts {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) || math.IsInf(p.X, 0) || math.IsInf(p.Y, 0) {
			continue
		}
		if (logX && p.X <= 0) || (logY && p.Y <= 0) {
			continue
		}
		out = append(out, plotter.XY{X: p.X, Y: p.Y})
	}
	return out
}

// logTicks marks powers of ten with labels like 1k, 10M or 0.01, and 2 and 5 in between when the
// range is narrow.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= 0 || min >= max {
		return nil
	}
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	decades := hi - lo
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		base := math.Pow(10, e)
		for _, m := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} {
			v := base * m
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			labelled := m == 1 || (decades <= 2 && (m == 2 || m == 5))
			t := plot.Tick{Value: v}
			if labelled {
				t.Label = FormatNumber(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// linearTicks are gonum's default ticks with compact labels (50, not 50.00).
type linearTicks struct{}

func (linearTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = FormatNumber(ticks[i].Value)
		}
	}
	return ticks
}

// FormatNumber writes v compactly: 1, 20, 0.5, 4k, 16M, 2G.
func FormatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e12:
		return trim(v/1e12) + "T"
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

// trim keeps three significant digits without an exponent: 1000, 0.05, 12.5.
func trim(v float64) string {
	if v == 0 {
		return "0"
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// render draws the plot w wide: the title wrapped to the width, the axes and data in h, and the
// legend below them in as many columns as fit, so that it never covers the data.
func render(p *plot.Plot, leg *legend, w, h vg.Length) ([]byte, error) {
	p.Title.Text = wrapText(p.Title.Text, p.Title.TextStyle, w-12)
	h += p.Title.TextStyle.Height(p.Title.Text) - p.Title.TextStyle.Height("M")
	sty := p.Legend.TextStyle
	legH := leg.height(sty, w-8)
	c := vgsvg.New(w, h+legH)
	if err := safeDraw(p, leg, c, legH, w-8); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return fixText(buf.Bytes()), nil
}

// safeDraw turns a gonum panic (it panics on some degenerate ranges) into an error.
func safeDraw(p *plot.Plot, leg *legend, c *vgsvg.Canvas, legH, legW vg.Length) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot: drawing failed: %v", r)
		}
	}()
	// A little margin: CJK glyphs rise above Liberation's ascent, and labels may touch the edge.
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 3, -3, 2+legH, -4))
	if legH > 0 {
		strip := draw.Crop(dc, 4, -4, 2, 0)
		strip.Max.Y = strip.Min.Y + legH
		leg.draw(strip, p.Legend.TextStyle, legW)
	}
	return nil
}

var (
	textRE   = regexp.MustCompile(`(?s)<text x="([-0-9.e+]+)" y="([-0-9.e+]+)"([^>]*)>([^<]*)</text>`)
	familyRE = regexp.MustCompile(`font-family:[^;"]*`)
	sizeRE   = regexp.MustCompile(`font-size:([0-9.]+)px`)
)

// fixText rewrites vgsvg's text elements: the font stack, and centre anchoring for wide text.
func fixText(svg []byte) []byte {
	svg = bytes.Replace(svg, []byte("<?xml version=\"1.0\"?>\n<!-- Generated by SVGo and Plotinum VG -->\n"), nil, 1)
	return textRE.ReplaceAllFunc(svg, func(m []byte) []byte {
		sm := textRE.FindSubmatch(m)
		x, y, attrs, body := string(sm[1]), string(sm[2]), string(sm[3]), string(sm[4])
		attrs = familyRE.ReplaceAllString(attrs, "font-family:"+FontStack)
		if !strings.Contains(attrs, "font-family") {
			attrs += ` font-family="` + strings.ReplaceAll(FontStack, "'", "") + `"`
		}
		if hasWide(body) {
			size := 12.0
			if s := sizeRE.FindStringSubmatch(attrs); s != nil {
				size, _ = strconv.ParseFloat(s[1], 64)
			}
			xf, err := strconv.ParseFloat(x, 64)
			if err == nil {
				face := font.DefaultCache.Lookup(sans, vg.Length(size))
				width := textWidth(face, unescape(body)).Points()
				x = strconv.FormatFloat(xf+width/2, 'g', 6, 64)
				attrs = ` text-anchor="middle"` + attrs
			}
		}
		return []byte(`<text x="` + x + `" y="` + y + `"` + attrs + `>` + body + `</text>`)
	})
}

var unescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&quot;", `"`)

func unescape(s string) string { return unescaper.Replace(s) }

// hasWide reports whether s holds characters that Liberation Sans lacks and CJK fonts draw wide.
func hasWide(s string) bool {
	for _, r := range s {
		if isWide(r) {
			return true
		}
	}
	return false
}

func isWide(r rune) bool {
	return r >= 0x1100 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) ||
		(r >= 0x3000 && r <= 0x303f) || (r >= 0xff00 && r <= 0xffef))
}

// wideText is gonum's plain text handler with widths that count a wide (CJK) character as one
// em, as CJK fonts draw it, instead of Liberation's missing-glyph box: titles, axis labels and
// legends in Chinese are then laid out for the width the browser will draw.
type wideText struct{ text.Plain }

func (h wideText) Box(txt string, fnt font.Font) (width, height, depth vg.Length) {
	face := h.Fonts.Lookup(fnt, fnt.Size)
	ext := face.Extents()
	return textWidth(face, txt), ext.Ascent, ext.Descent
}

// Draw is text.Plain's Draw with textWidth for the alignment.
func (h wideText) Draw(c vg.Canvas, txt string, sty text.Style, pt vg.Point) {
	txt = strings.TrimRight(txt, "\n")
	if len(txt) == 0 {
		return
	}
	fnt := h.Fonts.Lookup(sty.Font, sty.Font.Size)
	c.SetColor(sty.Color)
	if sty.Rotation != 0 {
		c.Push()
		c.Rotate(sty.Rotation)
	}
	sin64, cos64 := math.Sincos(sty.Rotation)
	cos, sin := vg.Length(cos64), vg.Length(sin64)
	pt.X, pt.Y = pt.Y*sin+pt.X*cos, pt.Y*cos-pt.X*sin
	lines := h.Lines(txt)
	ht := sty.Height(txt)
	pt.Y += ht*vg.Length(sty.YAlign) - fnt.Extents().Ascent
	for i, line := range lines {
		xoffs := vg.Length(sty.XAlign) * textWidth(fnt, line)
		n := vg.Length(len(lines) - i)
		c.FillString(fnt, pt.Add(vg.Point{X: xoffs, Y: n * sty.Font.Size}), line)
	}
	if sty.Rotation != 0 {
		c.Pop()
	}
}

// textWidth measures s with the face's metrics for narrow runs and one em per wide character.
func textWidth(face font.Face, s string) vg.Length {
	if !hasWide(s) {
		return face.Width(s)
	}
	var w vg.Length
	start := 0
	for i, r := range s {
		if isWide(r) {
			if start < i {
				w += face.Width(s[start:i])
			}
			w += face.Font.Size
			start = i + len(string(r))
		}
	}
	if start < len(s) {
		w += face.Width(s[start:])
	}
	return w
}
