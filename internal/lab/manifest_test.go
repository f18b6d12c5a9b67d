package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseManifestGood(t *testing.T) {
	root := newCourse(t, testManifest)
	m, err := LoadManifest(filepath.Join(root, "labs", "99_test"))
	require.NoError(t, err)
	assert.Equal(t, "99", m.ID)
	assert.Equal(t, "99_test", m.Name)
	assert.Equal(t, "引擎测试", m.Title.ZH)
	s := m.Suite("scale")
	require.NotNil(t, s)
	assert.Equal(t, "lib", s.Baseline)
	require.Len(t, s.Problems.GPU, 3)
	assert.Equal(t, int64(4096), s.Problems.GPU[1].Params["n"])
	assert.True(t, s.Problems.GPU[0].Quick)
	assert.Equal(t, s, s.Variant("good").Suite)
	assert.False(t, s.Variant("lib").IsKernel())
}

func TestParseFileErrorsCarryFileAndLine(t *testing.T) {
	tests := []struct {
		name, body, want string
		line             int
	}{
		{"syntax", "id: \"01\"\ntitle: {en: a, zh: b\n", "did not find expected", 0},
		{"wrong type", "id: \"01\"\ntitle: {en: a, zh: b}\ntimeout: soon\n", `timeout: "soon" is not a duration (such as 90s or 2m)`, 3},
		{"wrong type deep", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    tolerance: tight\n",
			`suites[0].tolerance: "tight" is not a number`, 6},
		{"list for a scalar", "id: \"01\"\ntitle: {en: a, zh: b}\nranks: {emu: [1, 2]}\n", "emu must be a single value (a whole number), not a list", 3},
		{"scalar for a list", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites: many\n", `suites must be a list`, 3},
		{"bad quick", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems:\n      gpu:\n        - {n: 1, quick: maybe}\n",
			`quick must be true or false, not "maybe"`, 8},
		{"bad title line", "id: \"01\"\n\ntitle: {en: a}\n", "title needs both en and zh", 3},
		{"negative timeout", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 1}]}\n    variants: [{name: v, library: x}]\ntimeout: -5s\n",
			"timeout: -5s is negative", 8},
		{"problem name twice", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{name: a, n: 1}, {name: a, n: 2}]}\n    variants: [{name: v, library: x}]\n",
			`suite s: two problems of problems.gpu are named "a"`, 4},
		{"problem title without zh", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems:\n      gpu:\n        - {name: few rows, n: 1, title: {en: few rows}}\n",
			"a problem's title is {zh: ...}", 8},
		{"problem title key", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems:\n      gpu:\n        - {name: few rows, n: 1, title: {zh: 少量行, fr: x}}\n",
			`unknown key "fr" in title; the keys allowed there are: en, zh`, 8},
		{"key twice", "id: \"01\"\ntitle: {en: a, zh: b}\nid: \"02\"\n", `key "id" given twice in the top level`, 3},
		{"unknown metric", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: speed\n    problems: {gpu: [{n: 1}]}\n    variants: [{name: v, library: x}]\n",
			"metric \"speed\"", 4},
		{"variant without kernel or library", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 1}]}\n    variants:\n      - name: v\n",
			"set file and entry", 8},
		{"missing kernel file", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 1}]}\n    variants:\n      - {name: v, file: nope.cu, entry: k}\n",
			"nope.cu not found", 8},
		{"bad baseline", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    baseline: zz\n    problems: {gpu: [{n: 1}]}\n    variants: [{name: v, library: x}]\n",
			"baseline \"zz\"", 4},
		{"bad size", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 12XB}]}\n    variants: [{name: v, library: x}]\n",
			"12XB", 6},
		{"no title", "id: \"01\"\nsuites: []\n", "title needs both en and zh", 1},
		{"unknown need", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 1}]}\n    variants:\n      - {name: v, library: x, needs: [amd]}\n",
			"unknown need \"amd\"", 8},
		{"NVIDIA architecture without nvidia", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 1}]}\n    variants:\n      - {name: v, library: x, needs: [gpu, sm_90a]}\n",
			"add nvidia to its needs", 8},
		// Strict keys: a typo anywhere is an error at its line that lists the allowed keys.
		{"unknown top-level key", "id: \"01\"\ntitle: {en: a, zh: b}\ntimout: 5s\n",
			"unknown key \"timout\" in the top level; the keys allowed there are: custom_flags, grading, helpers, id, ranks, ", 3},
		{"unknown key in a title", "id: \"01\"\ntitle: {en: a, zh: b, fr: c}\n", "unknown key \"fr\" in title; the keys allowed there are: en, zh", 2},
		{"unknown suite key", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    tolerence: 0.1\n",
			"unknown key \"tolerence\" in suites[0]", 6},
		{"unknown variant key", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    variants:\n      - {name: v, library: x, emuskip: y}\n",
			"unknown key \"emuskip\" in suites[0].variants[0]; the keys allowed there are: emu_skip, entry, file, ", 7},
		{"unknown problem set", "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{n: 1}], grading: [{n: 1}]}\n",
			"unknown key \"grading\" in suites[0].problems; the keys allowed there are: emu, gpu, grade", 6},
		{"hiden in a grading test", "id: \"01\"\ntitle: {en: a, zh: b}\ngrading:\n  exercises:\n    - variant: v\n      tests:\n        - {problem: p, points: 1, hiden: true}\n",
			"unknown key \"hiden\" in grading.exercises[0].tests[0]; the keys allowed there are: hidden, ", 7},
		{"unknown grading key", "id: \"01\"\ntitle: {en: a, zh: b}\ngrading:\n  passmark: 0.5\n",
			"unknown key \"passmark\" in grading; the keys allowed there are: emulator, exercises, pass_mark, ", 4},
	}
	custom := "id: \"01\"\ntitle: {en: a, zh: b}\nsuites:\n  - name: s\n    metric: us\n    problems: {gpu: [{m: 1, n: 1}]}\n    variants: [{name: v, library: x}]\ncustom_flags:\n"
	for _, c := range []struct{ name, flag, want string }{
		{"custom flag without help", "  - {name: mn, sets: [m, n]}\n", "custom flag --mn: give help: {en: ...}"},
		{"custom flag of no parameter", "  - {name: q, help: {en: q}, sets: [q]}\n", "custom flag --q sets q, which no problem of the lab has (its parameters: m, n)"},
		{"custom flag without sets", "  - {name: q, help: {en: q}}\n", "sets: lists the problem parameters"},
		{"custom flag --param", "  - {name: param, help: {en: q}, sets: [m]}\n", "--param is every lab's already"},
		{"custom flag badly named", "  - {name: Shape, help: {en: q}, sets: [m]}\n", `custom flag "Shape": a name is lower-case`},
		{"custom flag twice", "  - {name: m, help: {en: q}, sets: [m]}\n  - {name: m, help: {en: q}, sets: [m]}\n", "custom flag --m declared twice"},
	} {
		tests = append(tests, struct {
			name, body, want string
			line             int
		}{c.name, custom + c.flag, c.want, strings.Count(custom+c.flag, "\n")})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "lab.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			_, err := LoadManifest(dir)
			require.Error(t, err)
			var me *FileError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, path, me.File)
			if tc.line > 0 {
				assert.Equal(t, tc.line, me.Line, err.Error())
			}
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), path+":")
		})
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{"12": 12, "1KiB": 1024, "4 MiB": 4 << 20, "2GiB": 2 << 30, "3K": 3000, "1Mi": 1 << 20, "-1": -1}
	for in, want := range good {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "x", "1.5GiB", "1 XB", "GiB"} {
		_, err := ParseSize(bad)
		assert.Error(t, err, bad)
	}
}

func TestResolve(t *testing.T) {
	root := newCourse(t, testManifest)
	for _, name := range []string{"99", "99_test", "test"} {
		d, err := Resolve(root, name)
		require.NoError(t, err, name)
		assert.Equal(t, "99_test", d)
	}
	_, err := Resolve(root, "7")
	var ul *UnknownLabError
	require.ErrorAs(t, err, &ul)
	assert.Equal(t, []string{"99_test"}, ul.Known)
}

func TestFindRoot(t *testing.T) {
	root := newCourse(t, testManifest)
	deep := filepath.Join(root, "labs", "99_test")
	got, err := FindRoot(deep)
	require.NoError(t, err)
	assert.Equal(t, root, got)
	_, err = FindRoot(t.TempDir())
	assert.ErrorContains(t, err, "not inside the course folder")
}

func TestPortableKernels(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.cu", "b.cu", "h.cu", "ptx.cu"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("// kernel\n"), 0o644))
	}
	body := `id: "01"
title: {en: a, zh: b}
helpers:
  - {file: h.cu, entry: fill}
  - {file: ptx.cu, entry: probe, needs: [nvidia]}
suites:
  - name: s
    metric: us
    problems: {gpu: [{n: 1}]}
    variants:
      - {name: lib, library: x, needs: [cublas]}
      - {name: a1, file: a.cu, entry: ka}
      - {name: a2, file: a.cu, entry: kb}
      - {name: a3, file: a.cu, entry: ka, flags: ["-DX"]}
      - {name: b, file: b.cu, entry: kb, needs: [gpu]}
      - {name: p, file: ptx.cu, entry: kp, needs: [nvidia, sm_80]}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lab.yaml"), []byte(body), 0o644))
	m, err := LoadManifest(dir)
	require.NoError(t, err)
	assert.Equal(t, []KernelBuild{
		{File: "h.cu", Entries: []string{"fill"}},
		{File: "a.cu", Entries: []string{"ka", "kb"}},
		{File: "a.cu", Flags: []string{"-DX"}, Entries: []string{"ka"}},
		{File: "b.cu", Entries: []string{"kb"}},
	}, m.PortableKernels())
	assert.False(t, m.Suite("s").Variant("p").Portable())
	assert.False(t, m.Suite("s").Variant("lib").Portable())
}

// The course's promise (issue 21): every fp32 kernel of labs 01-03 and every kernel of lab 04 is
// portable, so labrun hip-check compiles it for AMD GPUs and CI runs it with 64-lane warps; and
// no kernel that the emulator skips for its inline PTX is marked portable.
func TestCourseKernelsArePortable(t *testing.T) {
	root, err := FindRoot(".")
	require.NoError(t, err)
	dirs, err := LabDirs(root)
	require.NoError(t, err)
	for _, d := range dirs {
		m, err := LoadManifest(filepath.Join(root, "labs", d))
		require.NoError(t, err)
		for _, s := range m.Suites {
			for _, v := range s.Variants {
				if !v.IsKernel() {
					continue
				}
				if strings.Contains(v.EmuSkip, "PTX") {
					assert.False(t, v.Portable(), "%s %s: inline PTX but not needs: [nvidia]", d, v.Key())
				}
				// Lab 04's kernels on NCCL's device API are NVIDIA-only like its NCCL baselines.
				mustPort := (m.ID <= "03" && strings.HasPrefix(s.Name, "fp32")) || (m.ID == "04" && !slices.Contains(v.Needs, NeedNCCLDevice))
				if mustPort {
					assert.True(t, v.Portable(), "%s %s must compile for AMD GPUs", d, v.Key())
				}
			}
		}
	}
}

// The course's own manifests hold no key the strict reading refuses.
func TestCourseManifestsLoad(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root, err := FindRoot(wd)
	require.NoError(t, err)
	dirs, err := LabDirs(root)
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, d := range dirs {
		_, err := LoadManifest(filepath.Join(root, "labs", d))
		assert.NoError(t, err, d)
	}
}

// All lists the three sets in order, a problem in two sets twice.
func TestProblemSetAll(t *testing.T) {
	a, b, c := Problem{Name: "a"}, Problem{Name: "b"}, Problem{Name: "c"}
	assert.Equal(t, []Problem{a, b, b, c}, ProblemSet{GPU: []Problem{a, b}, Emu: []Problem{b}, Grade: []Problem{c}}.All())
	assert.Empty(t, ProblemSet{}.All())
}
