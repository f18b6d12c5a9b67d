package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/font"
)

func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "the SVG is well-formed XML")
	}
}

func TestFigures(t *testing.T) {
	tests := []struct {
		name  string
		draw  func() ([]byte, error)
		texts []string
	}{
		{"bars", (&Bars{
			Title: "FP32 矩阵乘：相对基线的加速比", XLabel: "相对 cublas 的加速比（倍）",
			Categories: []string{"naive", "tiled", "cublas"},
			Groups:     []BarGroup{{Name: "1024³", Values: []float64{0.03, 0.2, 1}}, {Name: "4096³", Values: []float64{0.02, math.NaN(), 1}}},
			Reference:  1, ReferenceLabel: "cublas",
		}).SVG, []string{"FP32 矩阵乘：相对基线的加速比", "naive", "4096³", "cublas"}},
		{"lines", (&Lines{
			Title: "Memory bandwidth", XLabel: "problem size (bytes)", YLabel: "GB/s", LogX: true,
			Series: []Series{{Name: "copy_f4", Points: []Point{{1 << 20, 1000}, {1 << 30, 3300}}}, {Name: "memcpy", Points: []Point{{1 << 20, 900}, {0, 5}}}},
		}).SVG, []string{"Memory bandwidth", "copy_f4", "1G"}},
		{"roofline", (&Roofline{
			Title: "屋顶线", XLabel: "算术强度（FLOP/字节）", YLabel: "TFLOP/s",
			Series:  []Series{{Name: "tiled", Points: []Point{{30, 12}}}},
			Memory:  []Roof{{Name: "HBM 3300 GB/s（实测）", Value: 3300}},
			Compute: []Roof{{Name: "FP32 58.5 TFLOP/s", Value: 58.5}},
		}).SVG, []string{"屋顶线", "HBM 3300 GB/s（实测）", "FP32 58.5 TFLOP/s", "tiled"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg, err := tc.draw()
			require.NoError(t, err)
			wellFormed(t, svg)
			s := string(svg)
			assert.Contains(t, s, `viewBox="0 0 `, "scales with its <img>")
			assert.NotContains(t, s, "@font-face", "no font is embedded: the browser draws the text")
			assert.NotContains(t, s, "font-family:Liberation Sans;", "every text names the whole font stack")
			assert.Contains(t, s, "'Noto Sans CJK SC'")
			for _, want := range tc.texts {
				assert.Contains(t, s, ">"+want+"<")
			}
		})
	}
}

// TestWideTextIsCentred: a label with CJK characters is anchored at the centre gonum computed,
// with a width that counts each CJK character as one em.
func TestWideTextIsCentred(t *testing.T) {
	svg, err := (&Lines{Title: "吞吐量与问题规模", XLabel: "bytes", YLabel: "GB/s",
		Series: []Series{{Name: "a", Points: []Point{{1, 1}, {2, 2}}}}}).SVG()
	require.NoError(t, err)
	m := regexp.MustCompile(`<text x="([0-9.]+)" y="[-0-9.]+" text-anchor="middle"[^>]*>吞吐量与问题规模</text>`).FindSubmatch(svg)
	require.NotNil(t, m, "the Chinese title is centre-anchored")
	x, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	assert.InDelta(t, Width.Points()/2, x, 4, "the title is centred on the figure")
	latin := regexp.MustCompile(`<text x="[0-9.]+" y="[-0-9.]+" transform[^>]*>GB/s</text>`)
	assert.Regexp(t, latin, string(svg), "Latin text keeps gonum's own placement")
}

func TestTextWidth(t *testing.T) {
	face := font.DefaultCache.Lookup(sans, 10)
	assert.InDelta(t, 40, textWidth(face, "吞吐量与").Points(), 1e-9, "one em per CJK character")
	assert.Equal(t, face.Width("GB/s"), textWidth(face, "GB/s"))
	assert.InDelta(t, (face.Width("HBM ") + 20 + face.Width(" x")).Points(), textWidth(face, "HBM 实测 x").Points(), 1e-9)
}

func TestNoData(t *testing.T) {
	_, err := (&Bars{}).SVG()
	assert.Error(t, err)
	_, err = (&Lines{Series: []Series{{Name: "x", Points: []Point{{0, 1}}}}, LogX: true}).SVG()
	assert.Error(t, err, "no point can be drawn on a log axis")
	_, err = (&Roofline{}).SVG()
	assert.Error(t, err)
	_, err = (&Bars{Categories: []string{"a"}, Groups: []BarGroup{{Values: []float64{1, 2}}}}).SVG()
	assert.Error(t, err, "values must match the categories")
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.05: "0.05", 1: "1", 25: "25", 1000: "1000", 12500: "12.5k",
		1 << 20: "1.05M", 1e9: "1G", 2.5e12: "2.5T", 0.333333: "0.333"} {
		assert.Equal(t, want, FormatNumber(v), "%g", v)
	}
}
