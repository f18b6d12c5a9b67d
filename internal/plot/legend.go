package plot

import (
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legend is a figure's key, drawn under the axes in columns (gonum's own legend sits inside the
// data area, where it covers bars, points and roofs).
type legend struct {
	entries []legendEntry
}

type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// fontSlack is how much wider than Liberation Sans (whose metrics lay the figure out) a reader's
// font may draw the same text: DejaVu Sans, the usual fallback on Linux, is about 12% wider.
const fontSlack = 1.15

const (
	legendThumb = 14 // thumbnail width
	legendGap   = 14 // between columns
	legendPad   = 2  // between rows
)

func (l *legend) add(name string, thumbs ...plot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{name: name, thumbs: thumbs})
}

// columns is how many columns of entries fit in width.
func (l *legend) columns(sty text.Style, width vg.Length) int {
	var widest vg.Length
	for _, e := range l.entries {
		widest = max(widest, legendThumb+sty.Width(" "+e.name)*fontSlack)
	}
	n := int(math.Floor(float64((width + legendGap) / (widest + legendGap))))
	return max(1, min(n, len(l.entries)))
}

func (l *legend) rowHeight(sty text.Style) vg.Length {
	return sty.Height("M") + legendPad
}

// height is the room the legend takes under the axes (0 without entries).
func (l *legend) height(sty text.Style, width vg.Length) vg.Length {
	if len(l.entries) == 0 {
		return 0
	}
	cols := l.columns(sty, width)
	rows := (len(l.entries) + cols - 1) / cols
	return vg.Length(rows)*l.rowHeight(sty) + 6
}

// draw lays the entries out in columns, top to bottom and then left to right, in c.
func (l *legend) draw(c draw.Canvas, sty text.Style, width vg.Length) {
	if len(l.entries) == 0 {
		return
	}
	cols := l.columns(sty, width)
	rows := (len(l.entries) + cols - 1) / cols
	colW := (width + legendGap) / vg.Length(cols)
	rowH := l.rowHeight(sty)
	em := sty.Width(" ")
	for i, e := range l.entries {
		col, row := i/rows, i%rows
		x := c.Min.X + vg.Length(col)*colW
		top := c.Max.Y - vg.Length(row)*rowH
		icon := &draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: top - rowH + legendPad},
			Max: vg.Point{X: x + legendThumb, Y: top},
		}}
		for _, t := range e.thumbs {
			t.Thumbnail(icon)
		}
		s := sty
		s.YAlign = draw.YCenter
		c.FillText(s, vg.Point{X: x + legendThumb + em, Y: top - (rowH-legendPad)/2}, e.name)
	}
}

// wrapText breaks s into lines no wider than width: at spaces, and between CJK characters,
// which may break anywhere. gonum draws each "\n"-separated line.
func wrapText(s string, sty text.Style, width vg.Length) string {
	width /= fontSlack
	if s == "" || sty.Width(s) <= width {
		return s
	}
	var lines []string
	line := ""
	for _, tok := range breakTokens(s) {
		next := line + tok
		if line != "" && sty.Width(strings.TrimSpace(next)) > width {
			lines = append(lines, strings.TrimSpace(line))
			next = strings.TrimLeft(tok, " ")
		}
		line = next
	}
	if strings.TrimSpace(line) != "" {
		lines = append(lines, strings.TrimSpace(line))
	}
	return strings.Join(lines, "\n")
}

// breakTokens splits s where a line may break: before a space (the space stays with the next
// word) and around each wide character.
func breakTokens(s string) []string {
	var toks []string
	cur := ""
	for _, r := range s {
		switch {
		case r == ' ':
			if cur != "" {
				toks = append(toks, cur)
			}
			cur = " "
		case isWide(r):
			if strings.TrimSpace(cur) != "" {
				toks = append(toks, cur)
				cur = ""
			}
			toks = append(toks, cur+string(r))
			cur = ""
		default:
			cur += string(r)
		}
	}
	if cur != "" {
		toks = append(toks, cur)
	}
	return toks
}
