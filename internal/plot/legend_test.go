package plot

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var svgTextRE = regexp.MustCompile(`(?s)<text x="([-0-9.e+]+)" y="([-0-9.e+]+)"[^>]*>([^<]*)</text>`)

// texts maps each text of a figure to its height above the bottom edge (vgsvg flips y).
func texts(t *testing.T, svg []byte) map[string]float64 {
	out := map[string]float64{}
	for _, m := range svgTextRE.FindAllStringSubmatch(string(svg), -1) {
		y, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		out[m[3]] = -y
	}
	return out
}

func TestLegendsSitBelowTheAxes(t *testing.T) {
	var series []Series
	var roofs []Roof
	for i := range 12 {
		series = append(series, Series{Name: fmt.Sprintf("variant_%02d", i), Points: []Point{{X: 10, Y: float64(i + 1)}, {X: 1000, Y: float64(10 * (i + 1))}}})
	}
	roofs = append(roofs, Roof{Name: "HBM 4242 GB/s", Value: 4242}, Roof{Name: "L2 5141 GB/s", Value: 5141})
	figures := map[string]func() ([]byte, error){
		"lines": (&Lines{Title: "t", XLabel: "problem size (bytes)", YLabel: "GB/s", LogX: true, LogY: true, Series: series}).SVG,
		"roofline": (&Roofline{Title: "t", XLabel: "problem size (bytes)", YLabel: "TFLOP/s", Series: series,
			Memory: roofs, Compute: []Roof{{Name: "FP32 63.6 TFLOP/s", Value: 63.6}}}).SVG,
		"bars": (&Bars{Title: "t", XLabel: "problem size (bytes)", Categories: []string{"a", "b"},
			Groups: []BarGroup{{Name: "variant_00", Values: []float64{1, 2}}, {Name: "variant_01", Values: []float64{2, 1}}}, Reference: 1, ReferenceLabel: "variant_02"}).SVG,
		"timeline": (&Timeline{Title: "t", XLabel: "problem size (bytes)", YLabel: "SM", ColorNames: []string{"variant_00", "variant_01"},
			Panels: []TimelinePanel{{Name: "a", Rows: 2, Spans: []Span{{Row: 0, Start: 0, End: 1}, {Row: 1, Start: 0, End: 2, Color: 1}}}}}).SVG,
	}
	for name, draw := range figures {
		t.Run(name, func(t *testing.T) {
			svg, err := draw()
			require.NoError(t, err)
			tx := texts(t, svg)
			axis, ok := tx["problem size (bytes)"]
			require.True(t, ok, "the x axis label is drawn")
			n := 0
			for s, y := range tx {
				if strings.HasPrefix(s, "variant_") || strings.Contains(s, "GB/s") && s != "GB/s" || strings.Contains(s, "TFLOP/s ") {
					assert.Less(t, y, axis, "%s: legend entry %q is below the x axis label, not over the data", name, s)
					n++
				}
			}
			assert.Positive(t, n)
		})
	}
}

func TestTitlesWrapToTheFigure(t *testing.T) {
	long := "FP32 on the CUDA cores, against cuBLAS SGEMM: speedup over the baseline (cublas_sgemm), all the problems of the suite"
	svg, err := (&Lines{Title: long, XLabel: "x", YLabel: "y", Series: []Series{{Name: "a", Points: []Point{{X: 1, Y: 1}, {X: 2, Y: 2}}}}}).SVG()
	require.NoError(t, err)
	var lines []string
	for _, m := range svgTextRE.FindAllStringSubmatch(string(svg), -1) {
		if strings.Contains(long, m[3]) && len(m[3]) > 10 {
			lines = append(lines, m[3])
			x, _ := strconv.ParseFloat(m[1], 64)
			assert.GreaterOrEqual(t, x, 0.0, "the title line %q starts inside the figure", m[3])
		}
	}
	require.GreaterOrEqual(t, len(lines), 2, "a long title wraps")
	assert.Equal(t, long, strings.Join(lines, " "), "nothing of the title is lost")

	zh := strings.Repeat("相对基线的加速比，", 12)
	wrapped := wrapText(zh, newPlot("").Title.TextStyle, Width-12)
	assert.Greater(t, strings.Count(wrapped, "\n"), 0, "Chinese wraps between characters")
	assert.Equal(t, zh, strings.ReplaceAll(wrapped, "\n", ""), "without adding spaces")
}
