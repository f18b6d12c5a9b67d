package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/solution"
)

// The student edition strips through internal/solution, whose TestStrip has the cases; here
// only that the grader's names reach it.
func TestStripSolutions(t *testing.T) {
	in := "a\n    // BEGIN SOLUTION\n    x = 1;\n    // END SOLUTION\nb\n"
	out, n, err := StripSolutions("f", []byte(in))
	require.NoError(t, err)
	want, _, _ := solution.Strip("f", []byte(in))
	assert.Equal(t, string(want), string(out))
	assert.Equal(t, 1, n)
	assert.True(t, HasSolution([]byte(in)))
	assert.False(t, HasSolution(out))
	_, _, err = StripSolutions("f", []byte("// END SOLUTION\n"))
	assert.ErrorContains(t, err, "f:1: END SOLUTION without BEGIN SOLUTION")
}

func TestConstParams(t *testing.T) {
	src := `#include "kl.cuh"
// ex1(int M, float* X) in a comment is not the signature
__device__ void helper(const float* a);
extern "C" __global__ void __launch_bounds__(256)
ex1(int M, int N, float alpha, const float* __restrict__ A, float const* B, float beta,
    float* __restrict__ C, const float* const* tables, float* const* outs, const Params p /* by value */) {
}`
	ro, err := ConstParams(src, "ex1")
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false, true, true, false, false, true, true, false}, ro)
	_, err = ConstParams(src, "helper")
	assert.Error(t, err, "helper is not a __global__ function")
	_, err = ConstParams(src, "nope")
	assert.Error(t, err)

	// The exercise files of the course parse.
	root := courseRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "labs", "02_gemm", "exercises", "ex1_smem_tiling.cu"))
	require.NoError(t, err)
	ro, err = ConstParams(string(b), "ex1_smem_tiling")
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false, false, true, true, false, false}, ro)
}

func TestResolveSubmission(t *testing.T) {
	root := courseRoot(t)
	m, err := lab.Load(root, "02")
	require.NoError(t, err)
	g, _ := GradingOf(m)
	exs := g.Exercises
	require.GreaterOrEqual(t, len(exs), 2)

	files, subs, err := resolveSubmission(root, m, exs, "")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(m.Dir, exs[0].V.File), files[exs[0].V.File], "the course's own exercise files are built hermetically too")
	assert.Equal(t, filepath.Join("labs", "02_gemm", exs[0].V.File), subs[0].File)

	// A folder of exercise files by base name; the second exercise is missing.
	dir := t.TempDir()
	mine := filepath.Join(dir, filepath.Base(exs[0].V.File))
	require.NoError(t, os.WriteFile(mine, []byte("// mine\n"), 0o644))
	files, subs, err = resolveSubmission(root, m, exs, dir)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{exs[0].V.File: mine}, files)
	assert.False(t, subs[0].Missing)
	assert.True(t, subs[1].Missing)

	// A student's repository.
	repo := t.TempDir()
	p := filepath.Join(repo, "labs", "02_gemm", filepath.FromSlash(exs[1].V.File))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("// mine\n"), 0o644))
	files, _, err = resolveSubmission(root, m, exs, repo)
	require.NoError(t, err)
	assert.Equal(t, p, files[exs[1].V.File])

	// One file, named like an exercise.
	files, subs, err = resolveSubmission(root, m, exs, mine)
	require.NoError(t, err)
	assert.Equal(t, mine, files[exs[0].V.File])
	assert.True(t, subs[1].Missing)
	other := filepath.Join(dir, "whatever.cu")
	require.NoError(t, os.WriteFile(other, nil, 0o644))
	_, _, err = resolveSubmission(root, m, exs, other)
	var ue *lab.UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "name the file like one of them")

	// Lab 05's exercise 1 is one file with an fp32 and a bf16 entry: one file, whatever its name,
	// is submitted for both.
	m, err = lab.Load(root, "05")
	require.NoError(t, err)
	g, _ = GradingOf(m)
	require.Len(t, g.Exercises, 2)
	require.Equal(t, g.Exercises[0].V.File, g.Exercises[1].V.File)
	for _, name := range []string{filepath.Base(g.Exercises[0].V.File), "missing_wait.cu"} {
		f := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(f, []byte("// mine\n"), 0o644))
		files, subs, err = resolveSubmission(root, m, g.Exercises, f)
		require.NoError(t, err, name)
		assert.Equal(t, map[string]string{g.Exercises[0].V.File: f}, files, name)
		for _, sub := range subs {
			assert.False(t, sub.Missing, "%s: %s", name, sub.Exercise)
			assert.Equal(t, f, sub.File, name)
		}
	}
}

func TestHiddenSeed(t *testing.T) {
	assert.NotEqual(t, HiddenSeed(1, "a"), HiddenSeed(1, "b"))
	assert.NotEqual(t, HiddenSeed(1, "a"), HiddenSeed(2, "a"))
	assert.Equal(t, HiddenSeed(7, "s"), HiddenSeed(7, "s"))
	assert.NotEqual(t, uint64(7), HiddenSeed(7, ""))
}

func sampleSummary() *Grades {
	return &Grades{Labs: []*Report{{
		Lab: "02_gemm", Title: "GEMM", Device: gpu.DeviceInfo{Name: "Kernel Labs CPU emulator", Emulated: true},
		Seed: 42, Score: 3, MaxScore: 7, PassMark: 0.6, Passed: false, Speed: "not graded: no GPU", ElapsedS: 1.5,
		Tests: []TestResult{
			{Name: "ex1 / a & <b>", Exercise: "ex1", Kind: KindCorrectness, Score: 3, MaxScore: 3, Status: StatusPassed, Visibility: "visible"},
			{Name: "ex1 / c", Exercise: "ex1", Kind: KindCorrectness, MaxScore: 2, Status: StatusFailed, Reason: ReasonWrong,
				Output: "c: wrong result\n  first wrong elements: [0]: 1, 2 ]]> <x>", Visibility: "visible", TimeS: 0.2},
			{Name: "ex1 / hidden: d", Exercise: "ex1", Kind: KindCorrectness, MaxScore: 2, Status: StatusFailed, Reason: ReasonStale,
				Hidden: true, Visibility: "after_published", Output: "d: failed"},
			{Name: "ex1 / speed", Exercise: "ex1", Kind: KindSpeed, MaxScore: 2, Status: StatusNotGraded,
				Output: "speed is graded on a GPU only; this runner checked correctness", Visibility: "visible"},
		},
	}, {
		Lab: "04_collectives", Title: "Collectives", Device: gpu.DeviceInfo{Name: "NVIDIA H200"}, Seed: 42, PassMark: 0.6,
		NotGraded: "needs 2 GPUs; this runner has 1", ElapsedS: 0.1,
		Tests: []TestResult{{Name: "ex1 / one element", Exercise: "ex1", Kind: KindCorrectness, MaxScore: 2, Status: StatusNotGraded,
			Output: "not graded here (needs 2 GPUs; this runner has 1)", Visibility: "visible"}},
	}}}
}

// The reports validate, and each gives one account of every test: a test not graded here is
// left out of results.json, <skipped> without a score in junit.xml and "not graded here" in
// summary.md, and counts for nothing; summary.md ends with the total and the pass mark.
func TestReportsValidate(t *testing.T) {
	s := sampleSummary()
	dir := t.TempDir()
	stepSummary := filepath.Join(dir, "step.md")
	t.Setenv("GITHUB_STEP_SUMMARY", stepSummary)
	written, err := s.WriteAll(filepath.Join(dir, "out"))
	require.NoError(t, err)
	assert.Len(t, written, 5)

	raw, err := os.ReadFile(filepath.Join(dir, "out", FileJUnit))
	require.NoError(t, err)
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []struct {
			Name       string `xml:"name,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Type string `xml:"type,attr"`
					Body string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(raw, &doc))
	assert.Equal(t, 5, doc.Tests)
	assert.Equal(t, 2, doc.Failures)
	assert.Equal(t, 2, doc.Skipped)
	require.Len(t, doc.Suites, 2)
	assert.Equal(t, "02_gemm", doc.Suites[0].Name)
	assert.Equal(t, "ex1 / a & <b>", doc.Suites[0].Cases[0].Name)
	require.NotNil(t, doc.Suites[0].Cases[1].Failure)
	assert.Equal(t, "wrong", doc.Suites[0].Cases[1].Failure.Type)
	assert.Contains(t, doc.Suites[0].Cases[1].Failure.Body, "]]> <x>")
	for _, c := range []int{3} {
		sk := doc.Suites[0].Cases[c]
		require.NotNil(t, sk.Skipped)
		assert.Equal(t, "not graded here (speed is graded on a GPU only; this runner checked correctness)", sk.Skipped.Message)
		assert.NotContains(t, sk.SystemOut, "score", "a test not graded here has no score")
	}
	require.NotNil(t, doc.Suites[1].Cases[0].Skipped)
	assert.Equal(t, "not graded here (needs 2 GPUs; this runner has 1)", doc.Suites[1].Cases[0].Skipped.Message)
	props := map[string]string{}
	for _, p := range doc.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	assert.Equal(t, "3", props["score"])
	assert.Equal(t, "7", props["max_score"])

	raw, err = os.ReadFile(filepath.Join(dir, "out", FileGradescope))
	require.NoError(t, err)
	validateGradescope(t, raw)
	var gs map[string]any
	require.NoError(t, json.Unmarshal(raw, &gs))
	assert.Equal(t, 3.0, gs["score"])
	assert.Equal(t, 7.0, gs["extra_data"].(map[string]any)["max_score"])
	tests := gs["tests"].([]any)
	require.Len(t, tests, 3, "the tests not graded here are not listed")
	assert.Equal(t, "after_published", tests[2].(map[string]any)["visibility"])
	for _, tc := range tests {
		assert.NotContains(t, tc.(map[string]any)["name"], "speed")
	}
	assert.Contains(t, gs["output"], "Not graded on this runner, left out of the tests and the total: ex1 / speed.")
	assert.Contains(t, gs["output"], "Lab 04_collectives: not graded here (needs 2 GPUs; this runner has 1).")

	md, err := os.ReadFile(stepSummary)
	require.NoError(t, err)
	assert.Contains(t, string(md), "| ex1 / c | 0 / 2 | ❌ wrong result |")
	assert.Contains(t, string(md), "| ex1 / a &amp; &lt;b&gt; | 3 / 3 | ✅ passed |")
	assert.Contains(t, string(md), "| ex1 / speed | – | ➖ not graded here (speed is graded on a GPU only; this runner checked correctness) |")
	assert.Contains(t, string(md), "## Lab 04_collectives — Collectives: ➖ not graded here\n\nNeeds 2 GPUs; this runner has 1.")
	assert.Contains(t, string(md), "<details><summary>ex1 / c</summary>")
	assert.NotContains(t, string(md), "<summary>ex1 / a")
	assert.True(t, strings.HasSuffix(string(md), "**Total 3 / 7 (43%) over 02_gemm; pass mark 60% of the points graded in each lab: NOT PASSED**\n\n"+
		"Not graded here: lab 04_collectives (needs 2 GPUs; this runner has 1)\n"), "summary.md ends with the total and the pass mark:\n%s", md)

	var text bytes.Buffer
	s.WriteText(&text)
	assert.Contains(t, text.String(), "FAIL  ex1 / c")
	assert.Regexp(t, `----  ex1 / speed\s+–\s+not graded here \(speed is graded on a GPU only`, text.String())
	assert.Contains(t, text.String(), "score 3 / 7 (43%), pass mark 60%: NOT PASSED")
	assert.Contains(t, text.String(), "not graded here (needs 2 GPUs; this runner has 1)")
	assert.Contains(t, text.String(), "total 3 / 7 (43%) over 02_gemm")
	assert.False(t, s.Passed())

	// The verdict covers the labs graded here: a passed lab and one not graded here pass; a
	// grade with nothing graded here passes nothing (labrun grade exits 3).
	passed := &Report{Lab: "03_grouped_gemm", Score: 5, MaxScore: 5, PassMark: 0.6, Passed: true}
	both := &Grades{Labs: []*Report{passed, s.Labs[1]}}
	assert.True(t, both.Passed())
	assert.Equal(t, "total 5 / 5 (100%) over 03_grouped_gemm; pass mark 60% of the points graded in each lab: PASSED\n"+
		"not graded here: lab 04_collectives (needs 2 GPUs; this runner has 1)", both.TotalLine())
	none := &Grades{Labs: []*Report{s.Labs[1]}}
	assert.False(t, none.Passed())
	assert.Empty(t, none.Graded())
}

// gradescopeTop and gradescopeTest are the fields of Gradescope's documented results format
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/#output-format), with the JSON
// type each must have.
var (
	gradescopeTop = map[string]string{"score": "number", "execution_time": "number", "output": "string",
		"output_format": "string", "test_output_format": "string", "test_name_format": "string", "visibility": "string",
		"stdout_visibility": "string", "extra_data": "object", "tests": "array", "leaderboard": "array"}
	gradescopeTest = map[string]string{"score": "number", "max_score": "number", "status": "string", "name": "string",
		"name_format": "string", "number": "string", "output": "string", "output_format": "string", "tags": "array",
		"visibility": "string", "extra_data": "object"}
	gradescopeVisibility = []string{"hidden", "after_due_date", "after_published", "visible"}
)

func jsonType(v any) string {
	switch v.(type) {
	case float64:
		return "number"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case bool:
		return "boolean"
	}
	return "null"
}

// validateGradescope checks a results.json against Gradescope's documented format: only its
// fields, with their types and values; the score is the total of the tests listed.
func validateGradescope(t *testing.T, raw []byte) {
	t.Helper()
	var top map[string]any
	require.NoError(t, json.Unmarshal(raw, &top))
	for k, v := range top {
		want, ok := gradescopeTop[k]
		if assert.True(t, ok, "results.json: %q is not a field of Gradescope's format", k) {
			assert.Equal(t, want, jsonType(v), "results.json: %s", k)
		}
	}
	require.Contains(t, top, "score", "the total score (there is no per-test score to add up otherwise)")
	assert.Contains(t, gradescopeVisibility, top["visibility"])
	assert.Contains(t, gradescopeVisibility, top["stdout_visibility"])
	tests, _ := top["tests"].([]any)
	require.NotEmpty(t, tests)
	sum := 0.0
	for i, raw := range tests {
		tc, ok := raw.(map[string]any)
		require.True(t, ok, "test %d is an object", i)
		for k, v := range tc {
			want, ok := gradescopeTest[k]
			if assert.True(t, ok, "test %d: %q is not a field of Gradescope's format", i, k) {
				assert.Equal(t, want, jsonType(v), "test %d: %s", i, k)
			}
		}
		for _, k := range []string{"name", "score", "max_score", "status", "output", "visibility"} {
			assert.Contains(t, tc, k, "test %d", i)
		}
		assert.Contains(t, gradescopeVisibility, tc["visibility"])
		assert.Contains(t, []any{"passed", "failed"}, tc["status"])
		score, max := tc["score"].(float64), tc["max_score"].(float64)
		assert.Positive(t, max, "test %d: a test with no points is not part of the grade and is not listed", i)
		assert.LessOrEqual(t, score, max+1e-9)
		assert.Equal(t, tc["status"] == "passed", score >= max-1e-9, "test %d: passed exactly when it has all its points", i)
		sum += score
	}
	assert.InDelta(t, top["score"].(float64), sum, 1e-6)
}

// A graded report of a real run validates too.
func TestRealReportValidates(t *testing.T) {
	emutest.Need(t)
	needSolutions(t)
	file := filepath.Join(courseRoot(t), "internal", "grade", "testdata", "cheats", "partial.cu")
	rep := gradeFixture(t, file, Options{})
	var buf bytes.Buffer
	require.NoError(t, (&Grades{Labs: []*Report{rep}}).WriteGradescope(&buf))
	validateGradescope(t, buf.Bytes())
	buf.Reset()
	require.NoError(t, (&Grades{Labs: []*Report{rep}}).WriteJUnit(&buf))
	var v any
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &v))
}

// newMiniCourse writes a course with one lab whose exercise has a solution region, as a git
// repository: what git tracks is the course; build outputs, reports and scratch files are not.
func newMiniCourse(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the export writes what git tracks")
	}
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	write("labs/common/kl.cuh", "#pragma once\n")
	write("labs/07_demo/lab.yaml", `id: "07"
title: {en: Demo, zh: 演示}
suites:
  - name: s
    metric: us
    tolerance: 1e-5
    problems: {gpu: [{n: 1}], grade: [{name: one, n: 1}]}
    variants:
      - {name: ex, file: exercises/ex.cu, entry: ex}
`)
	write("labs/07_demo/exercises/ex.cu", miniExercise)
	write("labs/07_demo/notes.en.md", "Regions are marked `// BEGIN SOLUTION`.\n")
	write("results/emulator/07_demo.json", "{}\n")
	write("site/theme/page.html", "<html></html>\n")
	write(".gitignore", "/bin/\n/site/public/\n*.tmp\n")
	write(".github/workflows/site.yml", "name: site\n")
	write("README.md", "# The instructor's README\n")
	write("README.zh.md", "# 教师版说明\n")
	write("internal/grade/testdata/cheats/zeros.cu", "near-solution\n")
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "course")
	// Not tracked: build outputs, reports, scratch files, caches.
	write("bin/labrun", "binary\n")
	write("site/public/index.html", "generated\n")
	write("labs/07_demo/x.tmp", "scratch\n")
	write("grade-report/results.json", "{\"score\": 10}\n")
	write("labs/07_demo/notes.draft.md", "untracked draft\n")
	return root
}

const miniExercise = "extern \"C\" __global__ void ex(float* y, const float* x, int n) {\n    // BEGIN SOLUTION\n" +
	"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * x[i] + 1.0f;\n" +
	"    if (i == 0) y[n] = x[n - 1];\n    // END SOLUTION\n}\n"

func TestExportWritesTheStudentEdition(t *testing.T) {
	root := newMiniCourse(t)
	out := filepath.Join(t.TempDir(), "student")
	rep, err := Export(context.Background(), root, out, ExportOptions{NoCheck: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"labs/07_demo/exercises/ex.cu"}, rep.Stubbed)
	assert.Equal(t, 1, rep.Regions)
	assert.Len(t, rep.Commit, 40)
	b, err := os.ReadFile(filepath.Join(out, "labs", "07_demo", "exercises", "ex.cu"))
	require.NoError(t, err)
	assert.Equal(t, "extern \"C\" __global__ void ex(float* y, const float* x, int n) {\n    // TODO: your code here (see the instructions above).\n}\n", string(b))
	for _, kept := range []string{"results/emulator/07_demo.json", "site/theme/page.html", "labs/07_demo/notes.en.md", WorkflowPath,
		".gitignore", solution.EditionFile} {
		assert.FileExists(t, filepath.Join(out, filepath.FromSlash(kept)))
	}
	for _, gone := range []string{".git", "bin", "site/public", "labs/07_demo/x.tmp", "internal/grade/testdata/cheats", "grade-report",
		"labs/07_demo/notes.draft.md", ".github/workflows/site.yml"} {
		assert.NoFileExists(t, filepath.Join(out, filepath.FromSlash(gone)))
		assert.NoDirExists(t, filepath.Join(out, filepath.FromSlash(gone)))
	}
	assert.True(t, solution.IsStudentEdition(out))
	assert.False(t, solution.IsStudentEdition(root))
	require.NoError(t, solution.Check(root, out), "the rule of the student edition")
	wf, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(WorkflowPath)))
	require.NoError(t, err)
	for _, want := range []string{"runs-on: ubuntu-latest", "actions/setup-go", "sudo apt-get install -y g++ libboost-context-dev clang",
		"go build -o bin/labrun ./cmd/labrun", "bin/labrun grade", "actions/upload-artifact", "feedback only"} {
		assert.Contains(t, string(wf), want)
	}
	// The student's README, in both languages, with the exercises of the course.
	for _, f := range []string{"README.md", "README.zh.md"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		readme := string(b)
		assert.NotContains(t, readme, "instructor's README")
		assert.NotContains(t, readme, "教师版说明")
		assert.Contains(t, readme, "`labs/07_demo/exercises/ex.cu`")
		assert.Contains(t, readme, "labrun grade 07")
		assert.NotContains(t, readme, "{{")
		assert.NotContains(t, readme, lab.SecretSeedEnv, "no hidden-test internals")
	}

	// The folder must be empty unless --force; the course itself, a folder above it and one
	// inside it are refused.
	_, err = Export(context.Background(), root, out, ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "not empty")
	_, err = Export(context.Background(), root, out, ExportOptions{NoCheck: true, Force: true})
	assert.NoError(t, err)
	_, err = Export(context.Background(), root, root, ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "the course itself")
	_, err = Export(context.Background(), root, filepath.Join(root, "student"), ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "inside the course tree")

	// A shipped file that holds the solution's code (here re-indented, in a kernel) fails the export.
	kernel := filepath.Join(root, "labs", "07_demo", "kernels", "k.cu")
	require.NoError(t, os.MkdirAll(filepath.Dir(kernel), 0o755))
	require.NoError(t, os.WriteFile(kernel, []byte("void k() {\nint i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i] + 1.0f;\nif (i == 0) y[n] = x[n - 1];\n}\n"), 0o644))
	cmd := exec.Command("git", "-C", root, "add", "labs/07_demo/kernels/k.cu")
	require.NoError(t, cmd.Run())
	_, err = Export(context.Background(), root, t.TempDir(), ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "labs/07_demo/kernels/k.cu:2 holds the solution of labs/07_demo/exercises/ex.cu:2")
	require.NoError(t, exec.Command("git", "-C", root, "rm", "-q", "--cached", "labs/07_demo/kernels/k.cu").Run())

	// An exercise without a solution region would ship its solution.
	require.NoError(t, os.WriteFile(filepath.Join(root, "labs", "07_demo", "exercises", "ex.cu"), []byte("// all of it\n"), 0o644))
	_, err = Export(context.Background(), root, t.TempDir(), ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "would ship the solution")

	// Only a git checkout can be exported: it says what is tracked.
	require.NoError(t, os.WriteFile(filepath.Join(root, "labs", "07_demo", "exercises", "ex.cu"), []byte(miniExercise), 0o644))
	require.NoError(t, os.RemoveAll(filepath.Join(root, ".git")))
	_, err = Export(context.Background(), root, t.TempDir(), ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "not a git checkout")
}

func TestDerivedGrading(t *testing.T) {
	root := newMiniCourse(t)
	m, err := lab.Load(root, "07")
	require.NoError(t, err)
	g, derived := GradingOf(m)
	require.NotNil(t, g)
	assert.True(t, derived)
	require.Len(t, g.Exercises, 1)
	assert.Equal(t, "ex", g.Exercises[0].V.Name)
	assert.Equal(t, lab.DefaultPassMark, g.PassMark)
	labs, err := Labs(root)
	require.NoError(t, err)
	assert.Equal(t, []string{"07_demo"}, labs)
	assert.True(t, strings.HasPrefix(rules(g, 3)[0], "A correctness test"))
}

// A grade in which nothing can be graded here (only speed tests, on the emulator) is never
// "0/0 passed": the lab is not graded here, and says why (the CLI exits 3 when no lab is).
func TestNothingGradedIsNotAPass(t *testing.T) {
	emutest.Need(t)
	o := Options{Root: courseRoot(t), Lab: "02", Backend: "emu", Problems: []string{"2048³"}, Worker: testWorker}
	deviceCheck(t, &o)
	rep, err := Grade(context.Background(), o)
	require.NoError(t, err)
	assert.False(t, rep.Passed)
	assert.Zero(t, rep.MaxScore)
	assert.Contains(t, rep.NotGraded, "no test of the selection is graded on this runner")
}

// Without clang the emulator's grade stops and says how to install it, unless the check is
// waived; the report then says so.
func TestDeviceCheckNeedsClang(t *testing.T) {
	emutest.Need(t)
	t.Setenv("LABRUN_CLANG", "no-such-clang++")
	o := Options{Root: courseRoot(t), Lab: "02", Backend: "emu", Exercises: []string{"ex1_smem_tiling"},
		Problems: []string{"1×1×1"}, Rounds: 1, Worker: testWorker}
	_, err := Grade(context.Background(), o)
	var ee *lab.EnvError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "device-code check")
	assert.Contains(t, err.Error(), "apt-get install clang")

	o.NoDeviceCheck = true
	rep, err := Grade(context.Background(), o)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "the device-code check did not run")
}

// A speed problem held to the reference's time on another problem (an odd size against the
// aligned one) scores by that time, and its line says which problem the bar came from.
func TestSpeedAgainstAnotherProblem(t *testing.T) {
	ex := &lab.Exercise{Speed: &lab.SpeedRule{FullWithin: 1.2, Against: map[string]string{"1 MiB + 1": "1 MiB"}}}
	planned := []results.Entry{
		{Variant: "ex", Status: results.StatusOK, Time: &bench.Stats{N: 10, MedianMs: 0.30}},
		{Variant: "ref", Problem: "1 MiB", Status: results.StatusOK, Time: &bench.Stats{N: 10, MedianMs: 0.10}},
	}
	tt := &test{ex: ex, jobs: []int{0}, refJobs: []int{1}, problems: []string{"1 MiB + 1"}, res: TestResult{MaxScore: 2}}
	scoreSpeed(tt, planned, true)
	assert.Equal(t, StatusPartial, tt.res.Status)
	assert.InDelta(t, 2*1.2/3, tt.res.Score, 0.01) // 3× the bar's time: 1.2/3 of the points
	assert.Contains(t, tt.res.Output, "against ref on 1 MiB 0.100 ms")
}
