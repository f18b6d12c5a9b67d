package site

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// timelineCourse is the fixture with lab 03 given notes and results with timelines: two
// variants of suite grouped, one of them with an emulated copy too.
func timelineCourse(t *testing.T, notes string) string {
	t.Helper()
	root := fixture(t)
	manifest := `id: "03"
title: { en: "Grouped GEMM", zh: "分组 GEMM" }
suites:
  - name: grouped
    metric: tflops
    baseline: loop
    variants:
      - { name: loop, file: kernels/01_loop.cu, entry: gemm_loop }
      - { name: persistent, file: kernels/01_loop.cu, entry: gemm_loop }
    problems:
      gpu:
        - { name: "8 groups", title: { zh: "8 组" }, groups: 8 }
        - { name: "3 groups", title: { zh: "3 组" }, groups: 3 }
`
	writeFile(t, root, "labs/03_grouped_gemm/lab.yaml", manifest)
	for _, lang := range Langs {
		writeFile(t, root, notesPath("03_grouped_gemm", lang), notes)
	}
	tl := func(sms int, spans [][4]float64, launches int) map[string]any {
		tiles := make([]any, len(spans))
		for i, s := range spans {
			tiles[i] = []any{s[0], s[1], s[2], s[3]}
		}
		return map[string]any{"timeline": map[string]any{"sms": float64(sms), "launches": float64(launches), "tiles": tiles}}
	}
	entry := func(variant, problem string, data map[string]any, speedup float64) results.Entry {
		return results.Entry{Suite: "grouped", Variant: variant, Problem: problem, Status: results.StatusOK, TFLOPs: 100,
			Time: nil, Speedup: speedup, Data: data, RunAt: time.Date(2025, 11, 20, 10, 0, 0, 0, time.UTC)}
	}
	f := &results.File{Lab: "03_grouped_gemm", Time: time.Date(2025, 11, 20, 10, 0, 0, 0, time.UTC),
		Device: gpu.DeviceInfo{Backend: "cuda", Name: "Synthetic GPU", ComputeMajor: 9, SMs: 132},
		Entries: []results.Entry{
			entry("loop", "8 groups", tl(132, [][4]float64{{0, 0, 20000, 0}, {1, 0, 20000, 0}, {0, 20500, 40000, 1}, {5, 20500, 30000, 1}}, 2), 0),
			entry("persistent", "8 groups", tl(132, [][4]float64{{0, 0, 20000, 0}, {1, 0, 20000, 0}, {2, 0, 19000, 1}, {3, 0, 10000, 1}}, 1), 2),
			entry("loop", "3 groups", nil, 0),
		}}
	require.NoError(t, results.Save(filepath.Join(root, "results", "synthetic-gpu", "03_grouped_gemm.json"), f))
	return root
}

func TestTimelineCell(t *testing.T) {
	notes := "# Grouped GEMM\n\n## Timelines {#timelines}\n\n```kl-plot\nkind: timeline\nsuite: grouped\n```\n\n" +
		"```kl-plot\nkind: timeline\nsuite: grouped\nproblems: [\"8 groups\"]\nvariants: [persistent]\n```\n\n" +
		"```kl-plot\nkind: timeline\nsuite: grouped\nproblems: [\"3 groups\"]\n```\n"
	root := timelineCourse(t, notes)
	rep, out := built(t, root, true)
	require.NoError(t, CheckSite(out))
	assert.Contains(t, rep.Pages, "en/labs/03_grouped_gemm.html")
	page := read(t, out, "en/labs/03_grouped_gemm.html")
	assert.Equal(t, 2, strings.Count(page, `data-kind="timeline"`), "two cells have timelines, the third says there is none")
	assert.Contains(t, page, "no timeline recorded for 3 groups")
	svgs := siteFiles(t, out, "plots/03_grouped_gemm/grouped-timeline-*.en.svg")
	require.Len(t, svgs, 2)
	both := ""
	for _, p := range svgs {
		s := read(t, out, p)
		if strings.Contains(s, ">loop: 40.0 µs, 2 launch(es), 4 tiles<") {
			both = s
		}
	}
	require.NotEmpty(t, both, "the first cell draws both variants, each with its total time")
	assert.Contains(t, both, ">persistent: 20.0 µs, 1 launch(es), 4 tiles<")
	assert.Contains(t, both, ">8 groups: which SM ran which tile, when<")
	assert.Contains(t, both, ">group 1<", "few groups: a legend")
	zh := read(t, out, "zh/labs/03_grouped_gemm.html")
	assert.Contains(t, zh, `data-kind="timeline"`)
	zsvgs := siteFiles(t, out, "plots/03_grouped_gemm/grouped-timeline-*.zh.svg")
	require.NotEmpty(t, zsvgs)
	assert.Contains(t, read(t, out, zsvgs[0]), "哪个 SM 在何时运行了哪个分块")
}

func TestTimelineCellPicksAProblem(t *testing.T) {
	// Candidates in order: the first with timelines on the device is drawn.
	root := timelineCourse(t, "# G\n\n```kl-plot\nkind: timeline\nsuite: grouped\nproblems: [\"3 groups\", \"8 groups\"]\n```\n")
	_, out := built(t, root, true)
	svgs := siteFiles(t, out, "plots/03_grouped_gemm/grouped-timeline-*.en.svg")
	require.Len(t, svgs, 1)
	assert.Contains(t, read(t, out, svgs[0]), ">8 groups: which SM ran which tile, when<")

	root = timelineCourse(t, "# G\n\n```kl-plot\nkind: gantt\nsuite: grouped\n```\n")
	_, _, err := build(t, root, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "speedup, throughput, roofline or timeline")
}
