package plot

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeline(t *testing.T) {
	loop := TimelinePanel{Name: "loop — 40 µs", Rows: 4}
	pers := TimelinePanel{Name: "persistent — 22 µs", Rows: 4}
	// The seed's picture: three GEMMs of 4, 6 and 2 tiles on 4 SMs.
	at := 0.0
	for g, tiles := range []int{4, 6, 2} {
		for i := 0; i < tiles; i++ {
			wave := float64(i / 4)
			loop.Spans = append(loop.Spans, Span{Row: i % 4, Start: at + wave*5, End: at + wave*5 + 5, Color: g})
		}
		at += float64((tiles+3)/4) * 5
	}
	for i := 0; i < 12; i++ {
		pers.Spans = append(pers.Spans, Span{Row: i % 4, Start: float64(i/4) * 5, End: float64(i/4)*5 + 5, Color: i % 3})
	}
	// Two blocks on one SM at once share the row.
	pers.Spans = append(pers.Spans, Span{Row: 0, Start: 1, End: 3, Color: 1})
	tl := &Timeline{Title: "Which SM ran which tile", XLabel: "time (µs)", YLabel: "SM", Panels: []TimelinePanel{loop, pers},
		ColorNames: []string{"gemm0", "gemm1", "gemm2"}}
	svg, err := tl.SVG()
	require.NoError(t, err)
	wellFormed(t, svg)
	s := string(svg)
	for _, want := range []string{"Which SM ran which tile", "loop — 40 µs", "persistent — 22 µs", "time (µs)", "gemm1"} {
		assert.Contains(t, s, ">"+want+"<")
	}
	assert.Contains(t, s, "'Noto Sans CJK SC'")
	// One filled path per bar at least (13 + 12 spans), in the first palette colours.
	assert.GreaterOrEqual(t, len(regexp.MustCompile(`<path[^>]*(?i:fill:#0072b2)`).FindAllString(s, -1)), 4)
	if os.Getenv("KL_PLOT_OUT") != "" {
		require.NoError(t, os.WriteFile(os.Getenv("KL_PLOT_OUT"), svg, 0o644))
	}

	// Many groups: no legend, colours spread over the hue circle.
	many := TimelinePanel{Name: "64 groups", Rows: 132}
	for i := 0; i < 400; i++ {
		many.Spans = append(many.Spans, Span{Row: i % 132, Start: float64(i / 132), End: float64(i/132) + 0.9, Color: i % 64})
	}
	svg, err = (&Timeline{Title: "时间线", XLabel: "时间（微秒）", YLabel: "SM", Panels: []TimelinePanel{many}}).SVG()
	require.NoError(t, err)
	wellFormed(t, svg)
	assert.Contains(t, string(svg), ">时间线<")
}

func TestTimelineRefusesBadData(t *testing.T) {
	_, err := (&Timeline{}).SVG()
	assert.Error(t, err)
	_, err = (&Timeline{Panels: []TimelinePanel{{Name: "x", Rows: 2}}}).SVG()
	assert.Error(t, err, "no spans")
	_, err = (&Timeline{Panels: []TimelinePanel{{Name: "x", Rows: 2, Spans: []Span{{Row: 0, Start: 2, End: 1}}}}}).SVG()
	assert.Error(t, err, "a span that ends before it starts")
}

func TestLanes(t *testing.T) {
	spans := []Span{{Row: 0, Start: 0, End: 4}, {Row: 0, Start: 1, End: 2}, {Row: 0, Start: 2, End: 5}, {Row: 1, Start: 0, End: 1}, {Row: 0, Start: 4, End: 6}}
	lane, need := lanes(spans, 2)
	assert.Equal(t, []int{0, 1, 1, 0, 0}, lane)
	assert.Equal(t, []int{2, 1}, need)
}
