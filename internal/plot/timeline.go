package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Span is one bar of a timeline: work that ran on a row (an SM) from Start to End. Color picks
// its colour (lab 03 passes the tile's group): equal numbers, equal colours.
type Span struct {
	Row        int
	Start, End float64
	Color      int
}

// TimelinePanel is one Gantt chart: the rows (SMs) of one run and what ran on them.
type TimelinePanel struct {
	Name  string
	Rows  int
	Spans []Span
}

// Timeline draws one Gantt chart per panel, stacked, on one shared time axis, so that two
// schedules of the same work can be compared by eye: the shorter panel finished sooner, and white
// is an idle SM. Spans that overlap on one row (several blocks resident on one SM) share the row
// in thinner lanes.
type Timeline struct {
	Title          string
	XLabel, YLabel string
	Panels         []TimelinePanel
	// ColorNames, when set, names the colours in a legend (at most 8: beyond that the colours
	// repeat and only tell neighbours apart).
	ColorNames []string
}

// timelineColor is colour i: the Okabe–Ito palette for the first eight, then hues spread by the
// golden angle.
func timelineColor(i int, many bool) color.Color {
	if !many && i < 8 {
		return palette[i]
	}
	h := math.Mod(float64(i)*0.618033988749895, 1)
	return hsv(h, 0.55, 0.85)
}

func hsv(h, s, v float64) color.Color {
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-f*s), v*(1-(1-f)*s)
	var r, g, b float64
	switch int(i) % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return color.RGBA{uint8(r * 255), uint8(g * 255), uint8(b * 255), 255}
}

// bar is a rectangle in data coordinates.
type bar struct {
	x0, x1, y0, y1 float64
	c              color.Color
}

// gantt is a gonum plotter of filled rectangles.
type gantt struct {
	bars       []bar
	xmax, ymax float64
}

func (g *gantt) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range g.bars {
		x0, x1 := trX(b.x0), trX(b.x1)
		if x1-x0 < 0.4 {
			x1 = x0 + 0.4 // a very short tile stays visible
		}
		y0, y1 := trY(b.y0), trY(b.y1)
		pts := c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		if len(pts) > 0 {
			c.FillPolygon(b.c, pts)
		}
	}
}

func (g *gantt) DataRange() (xmin, xmax, ymin, ymax float64) { return 0, g.xmax, 0, g.ymax }

// lanes assigns each span of a row to the lowest lane free at its start and returns the lane of
// each span and the lanes each row needs.
func lanes(spans []Span, rows int) ([]int, []int) {
	lane := make([]int, len(spans))
	need := make([]int, rows)
	byRow := map[int][]int{}
	for i, s := range spans {
		byRow[s.Row] = append(byRow[s.Row], i)
	}
	for row, idx := range byRow {
		sort.Slice(idx, func(a, b int) bool { return spans[idx[a]].Start < spans[idx[b]].Start })
		var ends []float64 // the end of the last span in each lane
		for _, i := range idx {
			l := 0
			for l < len(ends) && ends[l] > spans[i].Start {
				l++
			}
			if l == len(ends) {
				ends = append(ends, 0)
			}
			ends[l] = spans[i].End
			lane[i] = l
		}
		if row >= 0 && row < rows {
			need[row] = len(ends)
		}
	}
	return lane, need
}

// SVG draws the stacked Gantt charts.
func (t *Timeline) SVG() ([]byte, error) {
	if len(t.Panels) == 0 {
		return nil, errors.New("plot: timeline with no panels")
	}
	xmax := 0.0
	spans := 0
	for _, p := range t.Panels {
		for _, s := range p.Spans {
			if math.IsNaN(s.Start) || math.IsNaN(s.End) || s.End < s.Start {
				return nil, fmt.Errorf("plot: timeline %q has a span from %g to %g", p.Name, s.Start, s.End)
			}
			xmax = math.Max(xmax, s.End)
		}
		spans += len(p.Spans)
	}
	if spans == 0 {
		return nil, errors.New("plot: timeline with no spans")
	}
	if xmax <= 0 {
		xmax = 1
	}
	mu.Lock()
	defer mu.Unlock()
	many := len(t.ColorNames) == 0 || len(t.ColorNames) > 8
	var plots [][]*plot.Plot
	var total vg.Length
	leg := &legend{}
	for pi, panel := range t.Panels {
		rows := panel.Rows
		for _, s := range panel.Spans {
			rows = max(rows, s.Row+1)
		}
		rows = max(rows, 1)
		p := newPlot(panel.Name)
		p.Title.TextStyle.Font.Size = 10
		if pi == 0 && t.Title != "" {
			// The figure's title heads the first panel, wrapped to the figure's width.
			p.Title.TextStyle.Font.Size = 11
			title := wrapText(t.Title, p.Title.TextStyle, Width-12)
			total += p.Title.TextStyle.Height(title) - p.Title.TextStyle.Height("M")
			p.Title.Text = title + "\n" + panel.Name
		}
		p.X.Min, p.X.Max = 0, xmax*1.01
		p.Y.Min, p.Y.Max = 0, float64(rows)
		p.X.Tick.Marker = linearTicks{}
		p.Y.Tick.Marker = rowTicks{}
		p.Y.Label.Text = t.YLabel
		if pi == len(t.Panels)-1 {
			p.X.Label.Text = t.XLabel
		}
		lane, need := lanes(panel.Spans, rows)
		g := &gantt{xmax: xmax, ymax: float64(rows)}
		for i, s := range panel.Spans {
			if s.Row < 0 {
				continue
			}
			n := float64(max(need[s.Row], 1))
			h := 0.9 / n // rows keep a thin white line between them
			y0 := float64(s.Row) + 0.05 + float64(lane[i])*h
			g.bars = append(g.bars, bar{x0: s.Start, x1: s.End, y0: y0, y1: y0 + h, c: timelineColor(s.Color, many)})
		}
		p.Add(g)
		plots = append(plots, []*plot.Plot{p})
		// Each panel: its rows (1.6 points an SM, within bounds), an axis and a title.
		total += vg.Length(math.Min(math.Max(float64(rows)*1.6, 56), 210) + 40)
	}
	if !many {
		// The colours' key sits under the panels, as the other figures' legends do, never on the data.
		for i, name := range t.ColorNames {
			sw, err := plotter.NewBarChart(plotter.Values{0}, 1)
			if err != nil {
				return nil, err
			}
			sw.Color = timelineColor(i, false)
			sw.LineStyle.Width = 0
			leg.add(name, sw)
		}
	}
	sty := plots[0][0].Legend.TextStyle
	legH := leg.height(sty, Width-8)
	total += 40 // the figure's title and the time axis's label
	c := vgsvg.New(Width, total+legH)
	if err := drawStack(plots, leg, sty, legH, c); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return fixText(buf.Bytes()), nil
}

// drawStack draws the panels one above the other with plot.Align, which sizes and places their
// data areas evenly whatever their titles and axes take, and the legend legH high under them.
func drawStack(plots [][]*plot.Plot, leg *legend, sty text.Style, legH vg.Length, c *vgsvg.Canvas) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot: drawing failed: %v", r)
		}
	}()
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: 6}
	canvases := plot.Align(plots, tiles, draw.Crop(dc, 3, -3, 4+legH, -4))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	if legH > 0 {
		strip := draw.Crop(dc, 4, -4, 2, 0)
		strip.Max.Y = strip.Min.Y + legH
		leg.draw(strip, sty, Width-8)
	}
	return nil
}

// rowTicks labels a few SM numbers on the rows axis.
type rowTicks struct{}

func (rowTicks) Ticks(min, max float64) []plot.Tick {
	n := int(max - min)
	step := 1
	for _, s := range []int{1, 2, 4, 8, 16, 32, 64} {
		step = s
		if n/s <= 8 {
			break
		}
	}
	var ticks []plot.Tick
	for r := 0; r < n; r += step {
		ticks = append(ticks, plot.Tick{Value: float64(r) + 0.5, Label: fmt.Sprint(r)})
	}
	return ticks
}
