package site

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/solution"
)

func TestBuildFixture(t *testing.T) {
	rep, out := built(t, fixture(t), true)
	require.NoError(t, CheckSite(out))

	for _, p := range []string{"en/index.html", "zh/index.html", "en/about.html", "zh/about.html",
		"en/labs/01_device_props.html", "zh/labs/01_device_props.html", "en/labs/02_gemm.html", "zh/labs/02_gemm.html",
		"en/devices/index.html", "en/devices/synthetic-gpu.html", "zh/devices/emulator.html"} {
		assert.Contains(t, rep.Pages, p)
	}
	assert.Equal(t, 10, rep.Plots, "5 plot cells × 2 languages (emulator results are not plotted beside a GPU's)")
	assert.Equal(t, []string{"synthetic-gpu", "emulator"}, rep.Devices, "real devices first")
	var ready, prep []string
	for _, c := range rep.Chapters {
		if c.Ready {
			ready = append(ready, c.Name)
		} else {
			prep = append(prep, c.Name)
		}
	}
	assert.Equal(t, []string{"01_device_props", "02_gemm"}, ready)
	// 03 has a lab.yaml and no notes, 04 is an empty folder: both are listed as in preparation.
	// (course.yaml lists no planned chapter today: every chapter of the course has a lab.yaml.)
	assert.Equal(t, []string{"03_grouped_gemm", "04_collectives"}, prep, "chapters without notes are listed")

	index := read(t, out, "en/index.html")
	assert.Contains(t, index, `href="labs/01_device_props.html"`)
	assert.NotContains(t, index, `03_grouped_gemm.html`, "a chapter in preparation is not linked")
	assert.Contains(t, index, "in preparation")
	assert.Contains(t, index, "Memory bandwidth: copy_f4 3350 GB/s at 256 MiB, 1.02× memcpy_dtod in the same run",
		"headline: the best kernel of the course, against the baseline")
	assert.NotContains(t, index, "6500 GB/s", "a copy that fits in L2 (16 MiB of 50 MiB) is not a memory-bandwidth headline")
	assert.NotContains(t, index, "empty_launch", "a library call is never a headline")
	assert.Contains(t, read(t, out, "zh/index.html"), "编写中")

	en := read(t, out, "en/labs/01_device_props.html")
	zh := read(t, out, "zh/labs/01_device_props.html")
	assert.Contains(t, en, `<html lang="en">`)
	assert.Contains(t, zh, `<html lang="zh-CN">`)
	assert.Contains(t, en, `class="lang-switch" href="../../zh/labs/01_device_props.html"`)
	assert.Contains(t, zh, `class="lang-switch" href="../../en/labs/01_device_props.html"`)
	assert.Contains(t, en, "Emulated, not a performance figure")
	assert.Contains(t, zh, "模拟结果，不代表性能")
	assert.Contains(t, en, `id="goal"`)
	assert.Contains(t, zh, `id="goal"`, "explicit ids are kept")
	assert.Contains(t, zh, `id="measuring-bandwidth"`, "a Chinese heading takes the id of its English twin")
	assert.Contains(t, en, `src="../../files/labs/01_device_props/img/diagram.svg"`, "images are copied")
	assert.Contains(t, en, `href="02_gemm.html#goal"`, "links to another chapter's notes become its page")
	assert.Contains(t, zh, `href="02_gemm.html#goal"`)
	// Properties from the engine's layout (info, nvml) and from the brief's (properties).
	assert.Contains(t, en, "max_shared_per_block_optin")
	assert.Contains(t, en, "device · pcie_gen")
	assert.Contains(t, en, "All device attributes (4)")
	// Ceilings: measured, peak and ratio.
	assert.Contains(t, en, "HBM bandwidth")
	assert.Contains(t, en, "99%")
	assert.Contains(t, zh, "HBM 带宽")
	assert.Contains(t, zh, "1 个线程块", "a problem named in words shows its Chinese title")
	assert.NotContains(t, zh, ">1 block<")

	// kl-source with function: only that function, with its comment and its line numbers.
	fig := between(en, `<figure class="cell cell-source">`, `</figure>`)
	assert.Contains(t, fig, "copy_f4")
	assert.Contains(t, fig, "One float4 per thread")
	assert.NotContains(t, fig, "copy_f32")
	assert.Contains(t, fig, `counter-reset:ln 17`)
	assert.Contains(t, fig, `<span class="hl-k">extern</span>`)

	gemm := read(t, out, "en/labs/02_gemm.html")
	assert.Contains(t, gemm, `sgemm_tiled`)
	assert.Contains(t, gemm, `0.24× cublas`)
	assert.Contains(t, gemm, `class="hl-b">__syncthreads</span>`)
	assert.Contains(t, gemm, `rel="prev" href="01_device_props.html"`)
	assert.Regexp(t, `src="../../plots/02_gemm/sgemm-roofline-synthetic-gpu-[0-9a-f]{6}\.en\.svg"`, gemm)
	zhGemm := read(t, out, "zh/labs/02_gemm.html")
	assert.Regexp(t, `src="../../plots/02_gemm/sgemm-roofline-synthetic-gpu-[0-9a-f]{6}\.zh\.svg"`, zhGemm)

	// Chinese plots carry Chinese labels, drawn by the browser with a CJK-capable font stack.
	svgs := siteFiles(t, out, "plots/02_gemm/*roofline*.zh.svg")
	require.Len(t, svgs, 1)
	svg := read(t, out, svgs[0])
	assert.Contains(t, svg, "算术强度")
	assert.Contains(t, svg, "Noto Sans CJK SC")
	assert.Contains(t, svg, `text-anchor="middle"`)
	assert.NotContains(t, svg, "font-face", "no font is embedded")

	dev := read(t, out, "en/devices/synthetic-gpu.html")
	assert.Contains(t, dev, "Measured ceilings")
	assert.Contains(t, dev, "132")
	assert.Contains(t, read(t, out, "en/devices/emulator.html"), "Emulated, not a performance figure")
}

// TestCellErrors: a cell that names something that does not exist fails the build with
// notes-file:line.
func TestCellErrors(t *testing.T) {
	tests := []struct {
		name, cell, want string
	}{
		{"missing file", "```kl-source\nfile: kernels/09_nope.cu\n```", "file kernels/09_nope.cu does not exist"},
		{"missing function", "```kl-source\nfile: kernels/01_copy.cu\nfunction: copy_f8\n```",
			"function copy_f8 is not defined in kernels/01_copy.cu (functions there: copy_body, copy_f32, copy_f4)"},
		{"library variant", "```kl-source\nvariant: memcpy_dtod\n```", "library call"},
		{"missing suite", "```kl-results\nsuite: l2_bandwidth\n```", "suite l2_bandwidth does not exist"},
		{"missing variant", "```kl-results\nsuite: hbm_bandwidth\nvariants: [copy_f8]\n```", "variant copy_f8 is not in suite hbm_bandwidth"},
		{"missing problem", "```kl-plot\nkind: speedup\nsuite: hbm_bandwidth\nproblems: [\"3 GiB\"]\n```", `problem "3 GiB" is not in suite hbm_bandwidth`},
		{"missing device", "```kl-results\nsuite: hbm_bandwidth\ndevice: nvidia-b200\n```", "device nvidia-b200 has no results for 01_device_props (devices with results: synthetic-gpu, emulator)"},
		{"device without that suite", "```kl-plot\nkind: throughput\nsuite: launch_latency\ndevice: emulator\n```", "device emulator has no results for suite launch_latency"},
		{"unknown kind", "```kl-table\nsuite: x\n```", "unknown cell kl-table"},
		{"unknown key", "```kl-results\nsuite: hbm_bandwidth\nsorted: true\n```", `unknown key "sorted"`},
		{"bad plot kind", "```kl-plot\nkind: pie\nsuite: hbm_bandwidth\n```", `kind "pie"`},
		{"roofline without FLOPs", "```kl-plot\nkind: roofline\nsuite: hbm_bandwidth\n```", "roofline needs results with both TFLOP/s and GB/s"},
		{"unknown roof", "```kl-plot\nkind: roofline\nsuite: fp32_fma\nroofs: [smem_gbps]\n```", "roof smem_gbps is not among the device's ceilings"},
		{"missing ceilings device", "```kl-ceilings\ndevice: nvidia-b200\n```", "device nvidia-b200 has no ceilings"},
		{"missing image", "![x](img/nope.png)", `image "img/nope.png": labs/01_device_props/img/nope.png does not exist`},
		{"link to a chapter in preparation", "[next](../03_grouped_gemm/notes.en.md)", "chapter 03_grouped_gemm has no pages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fixture(t)
			// Insert the cell after the first section heading; it lands on line `line`.
			withText(t, root, tc.cell, tc.cell)
			line := lineOfCell(t, root, notesPath("01_device_props", "en"), strings.SplitN(tc.cell, "\n", 2)[0])
			if tc.name == "unknown key" {
				line += 2 // a YAML error names the line of the key
			}
			_, _, err := build(t, root, false)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Regexp(t, regexp.QuoteMeta("labs/01_device_props/notes.en.md:")+`\d+: `, err.Error())
			assert.Contains(t, err.Error(), "labs/01_device_props/notes.en.md:"+strconv.Itoa(line)+":", "the error names the cell's line")
		})
	}
}

// lineOfCell is the number of the first line after the "Measured ceilings" heading of a notes
// file (rel, below root) that starts with text.
func lineOfCell(t *testing.T, root, rel, text string) int {
	t.Helper()
	after := false
	for i, l := range strings.Split(read(t, root, rel), "\n") {
		after = after || l == "## Measured ceilings"
		if after && strings.HasPrefix(l, text) {
			return i + 1
		}
	}
	t.Fatalf("%q not in %s", text, rel)
	return 0
}

// TestParity: the two languages of a lab must have the same sections and cells, in order.
func TestParity(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(zh string) string
		want   string
		strict bool
	}{
		{"missing section", func(s string) string { return strings.Replace(s, "## 练习\n", "练习：\n", 1) },
			"notes.en.md has 6 headings and labs/01_device_props/notes.zh.md has 5", true},
		{"section level", func(s string) string { return strings.Replace(s, "## 练习\n", "### 练习\n", 1) },
			`section 6 differs between languages: labs/01_device_props/notes.en.md:65 "Exercises" (level 2) and labs/01_device_props/notes.zh.md:64 "练习" (level 3)`, true},
		{"cell body", func(s string) string {
			return strings.Replace(s, "kind: speedup\nsuite: hbm_bandwidth\nproblems: [\"1 GiB\"]", "kind: speedup\nsuite: hbm_bandwidth", 1)
		}, "cell 6 differs between languages: labs/01_device_props/notes.en.md:42 kl-plot", true},
		{"cell missing", func(s string) string { return strings.Replace(s, "```kl-ceilings\n```\n", "", 1) },
			"has 7 cells and labs/01_device_props/notes.zh.md has 6", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fixture(t)
			editFile(t, root, notesPath("01_device_props", "zh"), tc.edit)

			_, _, err := build(t, root, true)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)

			rep, _, err := build(t, root, false)
			require.NoError(t, err, "without --strict the site is still built")
			assert.NotEmpty(t, rep.Warnings)
		})
	}
}

func TestOneLanguageOnlyIsInPreparation(t *testing.T) {
	root := fixture(t)
	require.NoError(t, os.Remove(filepath.Join(root, "labs", "02_gemm", "notes.zh.md")))
	// Lab 01 links to lab 02: remove the links so that only the missing translation remains.
	editNotes(t, root, "01_device_props", func(_, s string) string {
		return regexp.MustCompile(`\[GEMM\]\([^)]*\)`).ReplaceAllString(s, "GEMM")
	})
	_, _, err := build(t, root, true)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "notes.zh.md is missing")
	rep, out, err := build(t, root, false)
	require.NoError(t, err)
	assert.NotContains(t, rep.Pages, "en/labs/02_gemm.html")
	require.NoError(t, CheckSite(out))
}

func TestNoResultsYet(t *testing.T) {
	root := fixture(t)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "results")))
	// A cell that names a device needs that device's results: drop the name.
	editNotes(t, root, "02_gemm", func(_, s string) string { return strings.Replace(s, "device: synthetic-gpu\n", "", 1) })
	rep, out := built(t, root, true)
	assert.Zero(t, rep.Plots)
	assert.Empty(t, rep.Devices)
	en := read(t, out, "en/labs/02_gemm.html")
	assert.Contains(t, en, "No results for this suite yet")
	require.NoError(t, CheckSite(out))
}

func TestRebuildReplacesOnlyASiteFolder(t *testing.T) {
	root := fixture(t)
	out := filepath.Join(t.TempDir(), "public")
	_, err := Build(root, out, Options{})
	require.NoError(t, err)
	writeFile(t, out, "stale.html", "old")
	_, err = Build(root, out, Options{})
	require.NoError(t, err, "an earlier build is replaced")
	assert.NoFileExists(t, filepath.Join(out, "stale.html"))

	other := t.TempDir()
	writeFile(t, other, "thesis.tex", "precious")
	_, err = Build(root, other, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not empty and is not an earlier site build")
	assert.FileExists(t, filepath.Join(other, "thesis.tex"))

	// A failed build leaves the previous site as it was.
	editFile(t, root, notesPath("02_gemm", "en"), func(s string) string { return s + "\n```kl-results\nsuite: nope\n```\n" })
	_, err = Build(root, out, Options{})
	require.Error(t, err)
	assert.FileExists(t, filepath.Join(out, "en", "labs", "02_gemm.html"))
}

func TestCheckSiteFindsProblems(t *testing.T) {
	_, out := built(t, fixture(t), true)
	editFile(t, out, "en/about.html", func(s string) string {
		return strings.Replace(s, "</main>",
			`<a href="nope.html">x</a><img src="https://cdn.example.com/x.png"><a href="/en/index.html">y</a><a href="index.html#no-such-id">z</a></main>`, 1)
	})
	require.NoError(t, os.Remove(filepath.Join(out, "zh", "devices", "emulator.html")))
	err := CheckSite(out)
	require.Error(t, err)
	for _, want := range []string{
		`en/about.html: broken link "nope.html"`,
		`loads "https://cdn.example.com/x.png" from outside the site`,
		`link "/en/index.html" is absolute`,
		`index.html has no element with id "no-such-id"`,
		`en/devices/emulator.html: no page zh/devices/emulator.html in the other language`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}

// TestRealCourse renders the repository's own labs/ and results/ and checks the result: the CI
// check of the real notes (both languages in step, every cell valid, no broken links).
func TestRealCourse(t *testing.T) {
	rep, out := built(t, realCourse(t), true)
	require.NoError(t, CheckSite(out))
	assert.Len(t, rep.Chapters, len(rep.Chapters))
	t.Logf("real course: %d pages, %d plots, chapters %v, devices %v", len(rep.Pages), rep.Plots, rep.Chapters, rep.Devices)
}

func TestRelLink(t *testing.T) {
	tests := []struct{ from, to, want string }{
		{"", "en/index.html", "en/index.html"},
		{"en", "en/index.html", "index.html"},
		{"en", "assets/style.css", "../assets/style.css"},
		{"en/labs", "en/labs/02_gemm.html", "02_gemm.html"},
		{"en/labs", "zh/labs/02_gemm.html", "../../zh/labs/02_gemm.html"},
		{"en/labs", "en/devices/x.html", "../devices/x.html"},
		{"en/labs", "files/labs/01/k.cu", "../../files/labs/01/k.cu"},
		{"en/devices", "en/index.html", "../index.html"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, relLink(tc.from, tc.to), "%s → %s", tc.from, tc.to)
	}
}

// TestEmulatorOnly: with results from the emulator alone, plots are drawn, and labelled.
func TestEmulatorOnly(t *testing.T) {
	root := fixture(t)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "results", "synthetic-gpu")))
	editNotes(t, root, "02_gemm", func(_, s string) string {
		return strings.Replace(s, "```kl-plot\nkind: roofline\nsuite: sgemm\ndevice: synthetic-gpu\n```\n", "", 1)
	})
	rep, out := built(t, root, true)
	assert.Positive(t, rep.Plots)
	svgs := siteFiles(t, out, "plots/02_gemm/*emulator*.zh.svg")
	require.NotEmpty(t, svgs)
	for _, p := range svgs {
		assert.Contains(t, read(t, out, p), "模拟结果，不代表性能")
	}
	require.NoError(t, CheckSite(out))
}

func TestChineseLineBreaks(t *testing.T) {
	src := "# 标题\n\n第一行，\n第二行接着\n写 GPU\n内核。English\nwords stay apart.\n\n```go\n// 注释\n// 注释\n```\n"
	d, err := parseNotesBytes("", "x.zh.md", "zh", []byte(src))
	require.NoError(t, err)
	assignIDs(d, nil)
	html, err := d.render()
	require.NoError(t, err)
	assert.Contains(t, html, "第一行，第二行接着写 GPU\n内核。English\nwords stay apart.", "a break between Chinese and Latin stays a space")
	assert.Contains(t, html, "注释</span>\n<span class=\"hl-c\">// 注释", "code keeps its lines")
}

func TestChineseBreaksAcrossInlineNodes(t *testing.T) {
	tests := []struct{ src, want string }{
		{"**重点**\n继续。", "<strong>重点</strong>继续。"},
		{"前面\n*强调*。", "前面<em>强调</em>。"},
		{"**在 GPU 上。** 安装驱动", "<strong>在 GPU 上。</strong>安装驱动"},
		{"运行 `make`\n命令", "运行 <code>make</code>\n命令"}, // Latin, then Chinese: a space
		{"见[文档](x.md)\n第二节", "见<a href=\"x.md\">文档</a>第二节"},
		{"*动态*调度器按需发放，**每个**分块", "<em>动态</em>调度器按需发放，<strong>每个</strong>分块"}, // emphasis inside Chinese "words"
		{"耗时 t_comm 与 2 * 3 * 4", "耗时 t_comm 与 2 * 3 * 4"},
	}
	for _, tc := range tests {
		d, err := parseNotesBytes("", "x.zh.md", "zh", []byte(tc.src+"\n"))
		require.NoError(t, err)
		html, err := d.render()
		require.NoError(t, err)
		assert.Contains(t, html, tc.want, tc.src)
	}
	assert.Equal(t, "第一行第二行 GPU 内核", joinCJKText("第一行 第二行 GPU 内核"), "folded YAML: a space between Chinese characters goes")
}

func TestCellAndHeadingLines(t *testing.T) {
	src := "# T\n\n## A\n\n````md\n```kl-results\nsuite: shown\n```\n````\n\nSetext\n------\n\n- item\n\n  ```kl-plot\n  kind: speedup\n  ```\n\n### B `code`\n\n~~~kl-results\nsuite: s\n~~~\n"
	d, err := parseNotesBytes("/x/notes.en.md", "notes.en.md", "en", []byte(src))
	require.NoError(t, err)
	require.Len(t, d.Cells, 2, "a cell shown inside another block is not a cell")
	assert.Equal(t, 16, d.Cells[0].Line)
	assert.Equal(t, 22, d.Cells[1].Line)
	var lines []int
	for _, h := range d.Headings {
		lines = append(lines, h.Line)
	}
	assert.Equal(t, []int{1, 3, 0, 20}, lines, "a setext heading has no line")
}

func TestNotesWithBareCodeBlocks(t *testing.T) {
	src := "# T\n\n## A\n\n```\nplain fence\n```\n\n    indented code\n\ntext\n"
	d, err := parseNotesBytes("/x/notes.en.md", "notes.en.md", "en", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Cells) != 0 {
		t.Fatalf("bare code blocks are not cells, got %d", len(d.Cells))
	}
	if html, _ := d.render(); !strings.Contains(html, "plain fence") || !strings.Contains(html, "indented code") {
		t.Fatalf("bare code blocks are rendered as code, got %s", html)
	}
}

// TestRealCourseGivesNoSolutionAway builds the real course's site and checks the rule that no
// page or file of it holds the code of an exercise's solution region (solution.Check); the
// student edition is checked by the same function (internal/grade).
func TestRealCourseGivesNoSolutionAway(t *testing.T) {
	root := realCourse(t)
	regions, err := solution.CourseRegions(root)
	require.NoError(t, err)
	if len(regions) == 0 {
		t.Skip("this tree has no solution region (a student edition): nothing to give away")
	}
	_, out := built(t, root, false)
	require.NoError(t, solution.Check(root, out))
	// The rule is not vacuous: the exercise files are on the site, as their stubs.
	stubs := 0
	require.NoError(t, filepath.WalkDir(filepath.Join(out, "files"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, err := os.ReadFile(p)
			if err == nil && strings.Contains(string(b), solution.Todo) {
				stubs++
			}
		}
		return err
	}))
	assert.Positive(t, stubs, "the exercise files shown on the site are their stubs")
}
