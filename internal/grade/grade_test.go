package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
)

func TestStripSolutions(t *testing.T) {
	tests := []struct {
		name, in, want string
		regions        int
	}{
		{"c++ region", "a\n    // BEGIN SOLUTION\n    x = 1;\n    y = 2;\n    // END SOLUTION\nb\n",
			"a\n    // TODO: your code here (see the instructions above).\nb\n", 1},
		{"stub lines", "int f() {\n  // BEGIN SOLUTION\n  return 42;\n  // STUB: return 0;\n  // END SOLUTION\n}\n",
			"int f() {\n  // TODO: your code here (see the instructions above).\n  return 0;\n}\n", 1},
		{"markdown", "x\n<!-- BEGIN SOLUTION -->\nthe answer\n<!-- END SOLUTION -->\n",
			"x\n<!-- TODO: your code here (see the instructions above). -->\n", 1},
		{"python style and two regions", "# BEGIN SOLUTION\nA\n# END SOLUTION\nk\n# BEGIN SOLUTION\nB\n# END SOLUTION\n",
			"# TODO: your code here (see the instructions above).\nk\n# TODO: your code here (see the instructions above).\n", 2},
		{"prose that mentions the markers is kept", "Regions are marked `// BEGIN SOLUTION` and `// END SOLUTION`.\n",
			"Regions are marked `// BEGIN SOLUTION` and `// END SOLUTION`.\n", 0},
		{"crlf", "a\r\n// BEGIN SOLUTION\r\nx\r\n// END SOLUTION\r\n", "a\r\n// TODO: your code here (see the instructions above).\r\n", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, n, err := StripSolutions("f", []byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(out))
			assert.Equal(t, tc.regions, n)
			assert.False(t, HasSolution(out))
		})
	}
	for _, bad := range []struct{ in, want string }{
		{"x\n// BEGIN SOLUTION\ny\n", "f:2: BEGIN SOLUTION is never closed"},
		{"// END SOLUTION\n", "f:1: END SOLUTION without BEGIN SOLUTION"},
		{"// BEGIN SOLUTION\n// BEGIN SOLUTION\n// END SOLUTION\n", "f:2: BEGIN SOLUTION inside the region opened at line 1"},
	} {
		_, _, err := StripSolutions("f", []byte(bad.in))
		require.Error(t, err)
		assert.Contains(t, err.Error(), bad.want)
	}
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
}

func TestHiddenSeed(t *testing.T) {
	assert.NotEqual(t, HiddenSeed(1, "a"), HiddenSeed(1, "b"))
	assert.NotEqual(t, HiddenSeed(1, "a"), HiddenSeed(2, "a"))
	assert.Equal(t, HiddenSeed(7, "s"), HiddenSeed(7, "s"))
	assert.NotEqual(t, uint64(7), HiddenSeed(7, ""))
}

func sampleSummary() *Summary {
	return &Summary{Labs: []*Report{{
		Lab: "02_gemm", Title: "GEMM", Device: gpu.DeviceInfo{Name: "Kernel Labs CPU emulator", Emulated: true},
		Seed: 42, Score: 3, MaxScore: 5, PassMark: 0.6, Passed: true, Speed: "not graded: no GPU", ElapsedS: 1.5,
		Tests: []TestResult{
			{Name: "ex1 / a & <b>", Exercise: "ex1", Kind: KindCorrectness, Score: 3, MaxScore: 3, Status: StatusPassed, Visibility: "visible"},
			{Name: "ex1 / c", Exercise: "ex1", Kind: KindCorrectness, MaxScore: 2, Status: StatusFailed, Reason: lab.ReasonWrong,
				Output: "c: wrong result\n  first wrong elements: [0]: 1, 2 ]]> <x>", Visibility: "visible", TimeS: 0.2},
			{Name: "ex1 / hidden: d", Exercise: "ex1", Kind: KindCorrectness, MaxScore: 2, Status: StatusFailed, Reason: lab.ReasonStale,
				Hidden: true, Visibility: "after_published", Output: "d: failed"},
			{Name: "ex1 / speed", Exercise: "ex1", Kind: KindSpeed, MaxScore: 2, Status: StatusNotGraded, Output: "GPU only", Visibility: "visible"},
		},
	}}}
}

// The reports validate: JUnit XML parses with the counts, results.json has Gradescope's fields.
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
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(raw, &doc))
	assert.Equal(t, 4, doc.Tests)
	assert.Equal(t, 2, doc.Failures)
	assert.Equal(t, 1, doc.Skipped)
	require.Len(t, doc.Suites, 1)
	assert.Equal(t, "02_gemm", doc.Suites[0].Name)
	assert.Equal(t, "ex1 / a & <b>", doc.Suites[0].Cases[0].Name)
	require.NotNil(t, doc.Suites[0].Cases[1].Failure)
	assert.Equal(t, "wrong", doc.Suites[0].Cases[1].Failure.Type)
	assert.Contains(t, doc.Suites[0].Cases[1].Failure.Body, "]]> <x>")
	assert.NotNil(t, doc.Suites[0].Cases[3].Skipped)
	props := map[string]string{}
	for _, p := range doc.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	assert.Equal(t, "3", props["score"])
	assert.Equal(t, "5", props["max_score"])

	raw, err = os.ReadFile(filepath.Join(dir, "out", FileGradescope))
	require.NoError(t, err)
	validateGradescope(t, raw)
	var gs map[string]any
	require.NoError(t, json.Unmarshal(raw, &gs))
	assert.Equal(t, 3.0, gs["score"])
	assert.Equal(t, 5.0, gs["max_score"])
	tests := gs["tests"].([]any)
	assert.Equal(t, "after_published", tests[2].(map[string]any)["visibility"])
	assert.Equal(t, 0.0, tests[3].(map[string]any)["max_score"], "tests not graded here count for nothing")

	md, err := os.ReadFile(stepSummary)
	require.NoError(t, err)
	assert.Contains(t, string(md), "| ex1 / c | 0 / 2 | ❌ wrong result |")
	assert.Contains(t, string(md), "| ex1 / a &amp; &lt;b&gt; | 3 / 3 | ✅ passed |")
	assert.Contains(t, string(md), "<details><summary>ex1 / c</summary>")
	assert.NotContains(t, string(md), "<summary>ex1 / a")

	var text bytes.Buffer
	s.WriteText(&text)
	assert.Contains(t, text.String(), "FAIL  ex1 / c")
	assert.Contains(t, text.String(), "score 3 / 5 (60%), pass mark 60%: PASSED")
}

// validateGradescope checks a results.json against Gradescope's format: score and max_score
// numbers, tests with name, score, max_score, output and a known visibility.
func validateGradescope(t *testing.T, raw []byte) {
	t.Helper()
	var gs struct {
		Score    *float64 `json:"score"`
		MaxScore *float64 `json:"max_score"`
		Tests    []struct {
			Name       *string  `json:"name"`
			Score      *float64 `json:"score"`
			MaxScore   *float64 `json:"max_score"`
			Output     *string  `json:"output"`
			Visibility string   `json:"visibility"`
			Status     string   `json:"status"`
		} `json:"tests"`
	}
	require.NoError(t, json.Unmarshal(raw, &gs))
	require.NotNil(t, gs.Score)
	require.NotNil(t, gs.MaxScore)
	require.NotEmpty(t, gs.Tests)
	sum := 0.0
	for _, tc := range gs.Tests {
		require.NotNil(t, tc.Name)
		require.NotNil(t, tc.Score)
		require.NotNil(t, tc.MaxScore)
		require.NotNil(t, tc.Output)
		assert.Contains(t, []string{"visible", "hidden", "after_due_date", "after_published"}, tc.Visibility)
		assert.Contains(t, []string{"passed", "failed"}, tc.Status)
		assert.LessOrEqual(t, *tc.Score, *tc.MaxScore+1e-9)
		sum += *tc.Score
	}
	assert.InDelta(t, *gs.Score, sum, 1e-6)
}

// A graded report of a real run validates too.
func TestRealReportValidates(t *testing.T) {
	needEmulator(t)
	needSolutions(t)
	file := filepath.Join(courseRoot(t), "internal", "grade", "testdata", "cheats", "partial.cu")
	rep := gradeFixture(t, file, Options{})
	var buf bytes.Buffer
	require.NoError(t, (&Summary{Labs: []*Report{rep}}).WriteGradescope(&buf))
	validateGradescope(t, buf.Bytes())
	buf.Reset()
	require.NoError(t, (&Summary{Labs: []*Report{rep}}).WriteJUnit(&buf))
	var v any
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &v))
}

// newMiniCourse writes a course with one lab whose exercise has a solution region.
func newMiniCourse(t *testing.T) string {
	t.Helper()
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
	write("labs/07_demo/exercises/ex.cu", "extern \"C\" __global__ void ex(float* y) {\n    // BEGIN SOLUTION\n    y[0] = 1;\n    // END SOLUTION\n}\n")
	write("labs/07_demo/notes.en.md", "Regions are marked `// BEGIN SOLUTION`.\n")
	write("results/emulator/07_demo.json", "{}\n")
	write("site/theme/page.html", "<html></html>\n")
	write(".gitignore", "/bin/\n/site/public/\n*.tmp\n")
	write(".git/HEAD", "ref: refs/heads/main\n")
	write("bin/labrun", "binary\n")
	write("site/public/index.html", "generated\n")
	write("labs/07_demo/x.tmp", "scratch\n")
	write("internal/grade/testdata/cheats/zeros.cu", "near-solution\n")
	return root
}

func TestExportWritesTheStudentEdition(t *testing.T) {
	root := newMiniCourse(t)
	out := filepath.Join(t.TempDir(), "student")
	rep, err := Export(context.Background(), root, out, ExportOptions{NoCheck: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"labs/07_demo/exercises/ex.cu"}, rep.Stubbed)
	assert.Equal(t, 1, rep.Regions)
	b, err := os.ReadFile(filepath.Join(out, "labs", "07_demo", "exercises", "ex.cu"))
	require.NoError(t, err)
	assert.Equal(t, "extern \"C\" __global__ void ex(float* y) {\n    // TODO: your code here (see the instructions above).\n}\n", string(b))
	for _, kept := range []string{"results/emulator/07_demo.json", "site/theme/page.html", "labs/07_demo/notes.en.md", WorkflowPath} {
		assert.FileExists(t, filepath.Join(out, filepath.FromSlash(kept)))
	}
	for _, gone := range []string{".git", "bin", "site/public", "labs/07_demo/x.tmp", "internal/grade/testdata/cheats"} {
		assert.NoFileExists(t, filepath.Join(out, filepath.FromSlash(gone)))
		assert.NoDirExists(t, filepath.Join(out, filepath.FromSlash(gone)))
	}
	wf, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(WorkflowPath)))
	require.NoError(t, err)
	for _, want := range []string{"runs-on: ubuntu-latest", "actions/setup-go", "sudo apt-get install -y g++ libboost-context-dev clang",
		"go build -o bin/labrun ./cmd/labrun", "bin/labrun grade all", "actions/upload-artifact", "LABRUN_SECRET_SEED: ${{ secrets.LABRUN_SECRET_SEED }}"} {
		assert.Contains(t, string(wf), want)
	}

	// The folder must be empty unless --force; the course itself is refused.
	_, err = Export(context.Background(), root, out, ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "not empty")
	_, err = Export(context.Background(), root, out, ExportOptions{NoCheck: true, Force: true})
	assert.NoError(t, err)
	_, err = Export(context.Background(), root, root, ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "the course itself")

	// An exercise without a solution region would ship its solution.
	require.NoError(t, os.WriteFile(filepath.Join(root, "labs", "07_demo", "exercises", "ex.cu"), []byte("// all of it\n"), 0o644))
	_, err = Export(context.Background(), root, t.TempDir(), ExportOptions{NoCheck: true})
	assert.ErrorContains(t, err, "would ship the solution")
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

// A grade in which nothing can be graded here (only speed tests, on the emulator) is an error,
// never "0/0 passed".
func TestNothingGradedIsAnError(t *testing.T) {
	needEmulator(t)
	o := Options{Root: courseRoot(t), Lab: "02", Backend: "emu", Problems: []string{"2048³"}, Worker: testWorker}
	deviceCheck(t, &o)
	_, err := Grade(context.Background(), o)
	var ng *NothingGradedError
	require.ErrorAs(t, err, &ng)
	assert.Contains(t, err.Error(), "no test could be graded here")
	assert.Contains(t, err.Error(), "speed is graded on a GPU only")
}

// Without clang the emulator's grade stops and says how to install it, unless the check is
// waived; the report then says so.
func TestDeviceCheckNeedsClang(t *testing.T) {
	needEmulator(t)
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
