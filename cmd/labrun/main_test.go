package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/labtest/coursedir"
	"github.com/kernel-labs/kernellabs/internal/term"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// course makes a course folder with one lab, 07_demo, whose manifest is body, and points labrun
// at it.
func course(t *testing.T, body string) string {
	t.Helper()
	root := coursedir.Write(t, "07_demo", map[string]string{"lab.yaml": body})
	t.Setenv("LABRUN_ROOT", root)
	return root
}

const demo = `id: "07"
title: {en: Demo, zh: 演示}
suites:
  - name: s
    metric: us
    baseline: lib
    problems: {gpu: [{n: 1}]}
    variants: [{name: lib, library: x}]
`

// demoKernel is the demo lab with a kernel variant beside its library one.
var demoKernel = strings.Replace(demo, "variants: [{name: lib, library: x}]",
	"variants: [{name: lib, library: x}, {name: k, file: kernels/k.cu, entry: k}]", 1)

// runCLI runs labrun with args; stdout and stderr are returned apart.
func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLIUsageErrors(t *testing.T) {
	course(t, demo)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"unknown lab", []string{"42"}, exitUsage, `unknown lab "42": the labs are 07_demo`},
		{"unknown lab via run", []string{"run", "nope_lab"}, exitUsage, "unknown lab"},
		{"run without lab", []string{"run"}, exitUsage, "which lab?"},
		{"bad flag", []string{"07", "--frob"}, exitUsage, "labrun run: unknown flag --frob; 'labrun 07 --help' lists the flags\n"},
		{"mistyped flag", []string{"07", "--quik"}, exitUsage, "unknown flag --quik (did you mean --quick?)"},
		{"single-dash flag", []string{"07", "-backnd", "emu"}, exitUsage, "unknown flag --backnd (did you mean --backend?)"},
		{"bad value", []string{"07", "--seed", "x"}, exitUsage, `invalid value "x" for flag --seed: must be a non-negative integer`},
		{"bad duration", []string{"07", "--timeout", "soon"}, exitUsage, `invalid value "soon" for flag --timeout`},
		{"bad number", []string{"07", "--device", "one"}, exitUsage, `invalid value "one" for flag --device: must be an integer`},
		{"negative timeout", []string{"07", "--timeout", "-5s"}, exitUsage, "--timeout -5s: give a positive duration"},
		{"flag without value", []string{"07", "--backend"}, exitUsage, "flag --backend needs a value"},
		{"unknown problem set", []string{"07", "--set", "gpx"}, exitUsage, "--set gpx: the problem sets are gpu, emu, grade (did you mean gpu?)"},
		{"negative device", []string{"07", "--device", "-1"}, exitUsage, "--device -1: devices are numbered from 0"},
		{"undeclared custom flag", []string{"07", "--shape", "1x2x3"}, exitUsage, "unknown flag --shape"},
		{"mistyped command", []string{"lsit"}, exitUsage, `unknown command "lsit" (did you mean list?)`},
		{"unknown variant", []string{"07", "--variant", "zzz", "--backend", "cuda"}, exitUsage, `no variant "zzz"; its variants are: lib`},
		{"mistyped variant", []string{"07", "--variant", "lbi", "--backend", "cuda"}, exitUsage, `no variant "lbi" (did you mean lib?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(tc.args...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "a bad request is one line: %q", stderr)
		})
	}
}

func TestCLIHelp(t *testing.T) {
	code, out, _ := runCLI("help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "labrun doctor")
	code, out, _ = runCLI()
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, "Usage:")
	for _, cmd := range []string{"run", "list", "doctor", "compare", "site", "grade", "export"} {
		code, out, stderr := runCLI(cmd, "--help")
		assert.Equal(t, exitOK, code, cmd)
		assert.Empty(t, stderr, "help goes to stdout")
		assert.Contains(t, out, "Usage: labrun "+cmd)
		assert.NotRegexp(t, `(?m)^\s+-[a-z]`, out, "flags are shown as --flag")
		for _, l := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, term.DisplayWidth(l), term.DefaultWidth, "%s --help: %q", cmd, l)
		}
	}
	_, out, _ = runCLI("run", "--help")
	assert.Contains(t, out, "  --quick\n")
	assert.Contains(t, out, "  --backend string\n")
}

// A lab's custom-problem flags come from its lab.yaml: `labrun NN --help` lists them, and a run
// takes them wherever they stand on the command line.
func TestCLILabFlagsFromTheManifest(t *testing.T) {
	course(t, demo+`custom_flags:
  - name: size
    help: {en: "the demo's n"}
    sets: [n]
`)
	code, out, stderr := runCLI("07", "--help")
	require.Equal(t, exitOK, code, stderr)
	_, list, _ := runCLI("list")
	assert.Contains(t, list, "    custom problems: --size, --param KEY=VALUE (labrun 07 --help)\n")
	_, list, _ = runCLI("list", "--json")
	assert.Contains(t, list, `"custom_flags": [`)
	assert.Contains(t, out, "Custom problem of lab 07_demo (custom_flags in its lab.yaml")
	assert.Contains(t, out, "  --size SIZE\n      the demo's n; sets n\n")
	assert.Contains(t, out, "  --param KEY=VALUE\n      sets a parameter of the custom problem, KEY=VALUE,")
	assert.Less(t, strings.Index(out, "--in-process"), strings.Index(out, "--size"), "the command's own flags come first")

	_, out, _ = runCLI("run", "--help")
	assert.Contains(t, out, "labrun NN --help lists lab NN's own flags")
	assert.NotContains(t, out, "--size")

	// Before the lab, after it, and as --flag=value: the flag is known; the demo has no driver.
	for _, args := range [][]string{{"run", "--size", "5", "07"}, {"07", "--size=5"}, {"07", "-size", "5"}} {
		code, _, stderr = runCLI(append(args, "--backend", "cuda")...)
		assert.Equal(t, exitUsage, code, stderr)
		assert.Contains(t, stderr, "has no Go driver registered", "%v", args)
	}
}

func TestCLICustomFlagThatIsACommandFlag(t *testing.T) {
	root := course(t, demo+"custom_flags:\n  - {name: seed, help: {en: n}, sets: [n]}\n")
	code, _, stderr := runCLI("07", "--help")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, filepath.Join(root, "labs", "07_demo", "lab.yaml")+":10: custom flag --seed is a flag of labrun run already")
}

func TestCLIVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, _ := runCLI(args...)
		assert.Equal(t, exitOK, code)
		assert.Regexp(t, `^labrun github.com/kernel-labs/kernellabs \S+, commit .+, go1\.`, out)
	}
}

func TestCLIMalformedManifestShowsFileLine(t *testing.T) {
	root := course(t, "id: \"07\"\ntitle: {en: Demo, zh: 演示}\nsuites:\n  - name: s\n    metric: furlongs\n    problems: {gpu: [{n: 1}]}\n    variants: [{name: lib, library: x}]\n")
	code, _, stderr := runCLI("07")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, filepath.Join(root, "labs", "07_demo", "lab.yaml")+":4:")
	assert.Contains(t, stderr, `metric "furlongs"`)

	code, out, _ := runCLI("list")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, "manifest error")
}

func TestCLIList(t *testing.T) {
	course(t, demo)
	code, out, _ := runCLI("list")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "07_demo  Demo — 演示")
	code, out, _ = runCLI("list", "--json")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, `"lab": "07_demo"`)
	assert.NotRegexp(t, `"[A-Z]\w*":`, out, "JSON keys are snake_case")
}

func TestCLINoBackendIsAnEnvironmentError(t *testing.T) {
	course(t, demo)
	code, _, stderr := runCLI("07", "--backend", "nosuch")
	assert.Equal(t, exitEnv, code)
	assert.Contains(t, stderr, "--backend emu")
}

func TestDoctorRunsWithoutAGPU(t *testing.T) {
	findings, _ := diagnose()
	names := map[string]bool{}
	for _, f := range findings {
		names[f.Name] = true
		if !f.Found {
			assert.NotEmpty(t, f.Fix, "a missing %s must say how to fix it", f.Name)
		}
	}
	for _, n := range []string{"CUDA driver", "nvcc", "NVML", "cuBLAS", "cuBLASLt", "NCCL", "C++ compiler (emulator)", "Boost.Context (emulator)"} {
		assert.True(t, names[n], "doctor checks %s", n)
	}
}

func TestEmuDevicesFlag(t *testing.T) {
	course(t, demo)
	code, _, stderr := runCLI("07", "--emu-devices", "0x", "--backend", "emu")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "invalid value")
	for _, n := range []string{"-1", "0"} {
		code, _, stderr = runCLI("07", "--emu-devices", n, "--backend", "emu")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, stderr, "--emu-devices "+n+": give at least 1")
	}
}

func TestEmuWarpFlag(t *testing.T) {
	course(t, demo)
	code, _, stderr := runCLI("07", "--emu-warp", "48", "--backend", "emu")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "32 lanes (NVIDIA) or 64")
}

func TestHIPCheckFlags(t *testing.T) {
	code, _, stderr := runCLI("hip-check", "--targets", "gfx1100")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "known: gfx90a, gfx942")
	code, _, stderr = runCLI("hip-check", "--jobs", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "give at least 1")
}

func TestFlagsOnBothSidesOfTheLab(t *testing.T) {
	course(t, demo)
	// --backend after the lab name is parsed even when a flag comes first.
	code, _, stderr := runCLI("run", "--quick", "07", "--backend", "nosuch")
	assert.Equal(t, exitEnv, code, stderr)
	assert.Contains(t, stderr, `unknown backend "nosuch"`)
	code, _, stderr = runCLI("run", "07", "08")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `unexpected argument "08"`)
}

// A run whose results folder cannot be written loses nothing: the results go elsewhere, the run
// says where, and labrun exits 4. The folder's path is taken by a file, which stops root too.
func TestCLIUnwritableResultsFolderExits4(t *testing.T) {
	emutest.Need(t)
	repo := repoRoot(t)
	t.Setenv("LABRUN_CACHE", toolchain.CacheDir()) // the compiled kernels stay where they are cached
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := t.TempDir()
	for _, d := range []string{"labs/common", "labs/02_gemm", "emu"} {
		require.NoError(t, os.CopyFS(filepath.Join(root, d), os.DirFS(filepath.Join(repo, d))))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "results"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "results", "local"), []byte("not a folder"), 0o644))
	t.Setenv("LABRUN_ROOT", root)
	code, _, stderr := runCLI("02", "--backend", "emu", "--variant", "naive", "--problem", "16³", "--no-site")
	assert.Equal(t, exitSave, code, stderr)
	assert.Regexp(t, `this run's results were saved to\s+\S+/02_gemm\.new-\S+\.json\n`, stderr)
}
