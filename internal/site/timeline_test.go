package site

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timelineCourse is the fixture with lab 03 given these notes, the lab.yaml and results of
// testdata/timeline: suite grouped with two variants; on 8 groups, loop ran its 4 tiles
// ([sm, start_ns, end_ns, group]) in 2 launches and 40 µs, persistent in 1 launch and 20 µs;
// loop on 3 groups has no timeline.
func timelineCourse(t *testing.T, notes string) string {
	t.Helper()
	root := fixture(t)
	for _, rel := range []string{"labs/03_grouped_gemm/lab.yaml", "results/synthetic-gpu/03_grouped_gemm.json"} {
		writeFile(t, root, rel, read(t, "testdata/timeline", rel))
	}
	for _, lang := range Langs {
		writeFile(t, root, notesPath("03_grouped_gemm", lang), notes)
	}
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

// withKinds rewrites the fixture's results so that the timelines of the variants named have record
// kinds (lab 05's form): kinds named as given, each tile's fourth number a kind (its group mod 3).
func withKinds(t *testing.T, root string, kinds []string, variants ...string) {
	t.Helper()
	const rel = "results/synthetic-gpu/03_grouped_gemm.json"
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(read(t, root, rel)), &doc))
	for _, e := range doc["entries"].([]any) {
		e := e.(map[string]any)
		data, _ := e["data"].(map[string]any)
		tl, ok := data["timeline"].(map[string]any)
		if !ok || !slices.Contains(variants, e["variant"].(string)) {
			continue
		}
		tl["kinds"] = kinds
		for _, r := range tl["tiles"].([]any) {
			r := r.([]any)
			r[3] = float64(int(r[3].(float64)) % 3)
		}
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	writeFile(t, root, rel, string(b))
}

func TestTimelineCellColoursKinds(t *testing.T) {
	notes := "# G\n\n```kl-plot\nkind: timeline\nsuite: grouped\nproblems: [\"8 groups\"]\n```\n"
	root := timelineCourse(t, notes)
	withKinds(t, root, []string{"compute", "copy", "wait"}, "loop", "persistent")
	_, out := built(t, root, true)
	svgs := siteFiles(t, out, "plots/03_grouped_gemm/grouped-timeline-*.en.svg")
	require.Len(t, svgs, 1)
	en := read(t, out, svgs[0])
	assert.Contains(t, en, ">8 groups: what each SM ran, when<")
	assert.Contains(t, en, ">loop: 40.0 µs, 2 launch(es), 4 records<")
	for _, name := range []string{">GEMM tile<", ">copy of a block of rows<", ">wait for a ready flag<"} {
		assert.Contains(t, en, name, "every kind in the legend, even one no record has")
	}
	assert.NotContains(t, en, ">group 0<", "kinds, not groups")
	zh := read(t, out, siteFiles(t, out, "plots/03_grouped_gemm/grouped-timeline-*.zh.svg")[0])
	for _, name := range []string{"GEMM 分块", "行块拷贝", "等待就绪标志", "各 SM 在何时运行了什么"} {
		assert.Contains(t, zh, name)
	}

	// One figure, one colour key: panels with and without kinds are refused, and so is a kind the
	// site cannot name; the cell says why in place of the figure.
	root = timelineCourse(t, notes)
	withKinds(t, root, []string{"compute", "copy", "wait"}, "loop")
	_, out = built(t, root, true)
	assert.Contains(t, read(t, out, "en/labs/03_grouped_gemm.html"), "one figure, one colour key")
	root = timelineCourse(t, notes)
	withKinds(t, root, []string{"compute", "copy", "prefetch"}, "loop", "persistent")
	_, out = built(t, root, true)
	assert.Contains(t, read(t, out, "en/labs/03_grouped_gemm.html"), "kind &#34;prefetch&#34;")
}
