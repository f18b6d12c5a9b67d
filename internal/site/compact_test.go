package site

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// resultsCells returns the HTML of each results cell of a page.
func resultsCells(html string) []string {
	return regexp.MustCompile(`(?s)<figure class="cell cell-results".*?</figure>`).FindAllString(html, -1)
}

func TestResultsCellIsOneCompactTable(t *testing.T) {
	_, out := built(t, fixture(t), true)
	cells := resultsCells(read(t, out, "en/labs/02_gemm.html"))
	require.NotEmpty(t, cells)
	c := cells[0]
	assert.Equal(t, 1, strings.Count(c, `class="device-block"`), "the emulator's table is not shown beside a GPU's")
	assert.Contains(t, c, "Synthetic GPU")
	assert.NotContains(t, c, "emulator")
	assert.Equal(t, 1, strings.Count(c, `<table class="results compact">`), "one compact table")
	assert.Regexp(t, `<td class="num"><strong>\d+\.\d\d×</strong></td>`, c, "the key figure is the speedup")
	assert.Contains(t, c, "Speedup over cublas")
	// The details fold behind a disclosure: min–max and every figure.
	i := strings.Index(c, `<details class="cell-details">`)
	require.Positive(t, i)
	assert.Contains(t, c[i:], "Median (min–max)")
	assert.NotContains(t, c[:i], "Median (min–max)", "the compact table has no min–max")
}

func TestEmulatorOnlyResultsCollapseSkips(t *testing.T) {
	root := fixture(t)
	// A cell that asks for the emulator's results (the page shows it whatever else exists).
	editNotes(t, root, "02_gemm", func(_, s string) string { return s + "\n```kl-results\nsuite: sgemm\ndevice: emulator\n```\n" })
	_, out := built(t, root, false)
	for _, tc := range []struct{ lang, skipped, wrong string }{
		{"en", "Skipped on this device:", ">wrong<"},
		{"zh", "在该设备上跳过：", ">结果错误<"},
	} {
		cells := resultsCells(read(t, out, tc.lang+"/labs/02_gemm.html"))
		require.NotEmpty(t, cells)
		c := cells[len(cells)-1]
		compact := c[:strings.Index(c, "<details")]
		assert.Equal(t, 1, strings.Count(compact, tc.skipped), "%s: one line for the skipped variant", tc.lang)
		assert.NotContains(t, compact, "<code>cublas</code></th>", "%s: a variant skipped everywhere has no column", tc.lang)
		assert.Contains(t, compact, tc.wrong, "%s: a failed check shows its status", tc.lang)
		assert.Regexp(t, `<td class="num">\d\.\de-\d\d</td>`, compact, "%s: the emulator's key figure is the relative error", tc.lang)
	}
}

func TestCompactTableFitsTheColumn(t *testing.T) {
	s := &lab.Suite{Name: "s", Metric: "tflops", Baseline: "library_baseline"}
	var entries []*results.Entry
	for v := 0; v < 12; v++ {
		name := fmt.Sprintf("variant_with_a_long_name_%02d", v)
		if v == 0 {
			name = s.Baseline
		}
		s.Variants = append(s.Variants, &lab.Variant{Name: name})
		for p := 0; p < 12; p++ {
			pn := fmt.Sprintf("%d×%d×4096", 1000+p, 2000+p)
			if v == 0 {
				s.Problems.GPU = append(s.Problems.GPU, lab.Problem{Name: pn})
			}
			entries = append(entries, &results.Entry{Suite: "s", Variant: name, Problem: pn, Status: results.StatusOK,
				TFLOPs: 10, Speedup: 1.5, Time: &bench.Stats{MedianMs: float64(p)}})
		}
	}
	b := &builder{}
	tbl, _ := b.compactTable("en", s, entries, false)
	require.NotNil(t, tbl)
	assert.LessOrEqual(t, tbl.width(), float64(compactBudget))
	assert.Less(t, len(tbl.Cols), 12, "not every problem fits")
	assert.Len(t, tbl.Rows, 12, "a row per variant")
	assert.Equal(t, "1011×2011×4096", tbl.Cols[len(tbl.Cols)-1].Name, "the heaviest problems are kept, in the suite's order")
	assert.Contains(t, tbl.Note, "heaviest of its 12 problems")

	few, _ := b.compactTable("en", s, entries[:24], false) // two variants: a column each
	assert.Equal(t, "Problem", few.Corner)
	assert.Len(t, few.Rows, 12)
	assert.NotContains(t, few.Note, "heaviest")
}
