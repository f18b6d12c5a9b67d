package site

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// syntheticCourse writes a course of five labs, each with two suites of eight variants on six
// problems, notes in both languages with source, results and plot cells, and synthetic results
// on two GPUs and the emulator: the size of the finished course, for the build-time benchmark.
func syntheticCourse(tb testing.TB) string {
	tb.Helper()
	root := filepath.Join(tb.TempDir(), "course")
	write := func(rel, s string) { writeFile(tb, root, rel, s) }
	write("labs/common/kl.cuh", "#pragma once\n")
	names := []string{"01_device_props", "02_gemm", "03_grouped_gemm", "04_collectives", "05_overlap"}
	devices := []gpu.DeviceInfo{
		{Backend: "cuda", Name: "Synthetic GPU A", ComputeMajor: 9, SMs: 132, MemoryBytes: 80 << 30},
		{Backend: "cuda", Name: "Synthetic GPU B", ComputeMajor: 8, SMs: 108, MemoryBytes: 40 << 30},
		{Backend: "emu", Name: "emulator", Emulated: true},
	}
	const nVariants, nProblems = 8, 6
	for li, name := range names {
		var kernel, yaml strings.Builder
		kernel.WriteString("#include \"kl.cuh\"\n\n")
		for v := range nVariants {
			fmt.Fprintf(&kernel, "// k%d: variant %d of the synthetic lab.\nextern \"C\" __global__ void k%d(const float* a, float* b, int n) {\n", v, v, v)
			for j := range 40 {
				fmt.Fprintf(&kernel, "    if (threadIdx.x + %d < n) b[threadIdx.x] += a[blockIdx.x * blockDim.x + %d] * %d.0f; // line %d\n", j, j, j, j)
			}
			kernel.WriteString("}\n\n")
		}
		write("labs/"+name+"/kernels/k.cu", kernel.String())
		fmt.Fprintf(&yaml, "id: \"%02d\"\ntitle: {en: \"Synthetic lab %d\", zh: \"合成实验 %d\"}\nsummary: {en: \"A synthetic lab.\", zh: \"合成的实验。\"}\nsuites:\n", li+1, li+1, li+1)
		for _, suite := range []string{"alpha", "beta"} {
			fmt.Fprintf(&yaml, "  - name: %s\n    title: {en: \"Suite %s\", zh: \"测试组 %s\"}\n    metric: tflops\n    baseline: v0\n    variants:\n", suite, suite, suite)
			for v := range nVariants {
				fmt.Fprintf(&yaml, "      - {name: v%d, title: {en: \"variant %d\", zh: \"变体 %d\"}, file: kernels/k.cu, entry: k%d}\n", v, v, v, v)
			}
			yaml.WriteString("    problems:\n      gpu:\n")
			for p := range nProblems {
				fmt.Fprintf(&yaml, "        - {name: \"n%d\", m: %d, n: %d, k: %d}\n", p, 256<<p, 256<<p, 256<<p)
			}
		}
		write("labs/"+name+"/lab.yaml", yaml.String())
		for _, lang := range Langs {
			var notes strings.Builder
			fmt.Fprintf(&notes, "# Synthetic lab %d (%s)\n\n", li+1, lang)
			for s, suite := range []string{"alpha", "beta"} {
				fmt.Fprintf(&notes, "## Section %d\n\n%s\n\n", s, strings.Repeat("Some prose about the kernels, with `code` and *emphasis*. ", 40))
				for v := range 3 {
					fmt.Fprintf(&notes, "```kl-source\nfile: kernels/k.cu\nfunction: k%d\n```\n\n", v)
				}
				fmt.Fprintf(&notes, "```kl-results\nsuite: %s\n```\n\n", suite)
				for _, kind := range []string{"speedup", "throughput", "roofline"} {
					fmt.Fprintf(&notes, "```kl-plot\nkind: %s\nsuite: %s\n```\n\n", kind, suite)
				}
				notes.WriteString("```go\nfunc main() { fmt.Println(\"hello\") }\n```\n\n")
			}
			write("labs/"+name+"/notes."+lang+".md", notes.String())
		}
		for di, d := range devices {
			f := &results.File{Schema: results.Schema, Lab: name, Device: d, Time: time.Date(2025, 11, 20, 0, 0, 0, 0, time.UTC)}
			for _, suite := range []string{"alpha", "beta"} {
				for v := range nVariants {
					for p := range nProblems {
						tf := float64(1+v) * float64(1+p) / float64(1+di)
						f.Entries = append(f.Entries, results.Entry{Suite: suite, Variant: fmt.Sprintf("v%d", v), Problem: fmt.Sprintf("n%d", p),
							Params: map[string]int64{"m": 256 << p, "n": 256 << p, "k": 256 << p}, Status: results.StatusOK,
							Time: &bench.Stats{N: 10, MedianMs: 1 / tf, MinMs: 0.9 / tf, MaxMs: 1.1 / tf}, TFLOPs: tf, GBps: tf * 30,
							Baseline: "v0", Speedup: float64(1 + v), Emulated: d.Emulated})
					}
				}
			}
			if name == "01_device_props" {
				f.Extra = map[string]any{
					"info":        d,
					"hbm_gbps":    map[string]any{"unit": "GB/s", "measured": 3000.0, "peak": 3350.0, "source": "synthetic"},
					"fp32_tflops": map[string]any{"unit": "TFLOP/s", "measured": 60.0, "peak": 67.0, "source": "synthetic"},
				}
			}
			data, err := json.Marshal(f)
			require.NoError(tb, err)
			write("results/"+results.DeviceSlug(d)+"/"+name+".json", string(data))
		}
	}
	return root
}

// BenchmarkBuild builds the whole site of a five-lab course with results on three devices.
// The goal is ≤ 5 s per build on a 2-core machine.
func BenchmarkBuild(b *testing.B) {
	root := syntheticCourse(b)
	out := filepath.Join(b.TempDir(), "public")
	var rep *Report
	b.ResetTimer()
	for b.Loop() {
		var err error
		rep, err = Build(root, out, Options{Strict: true})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rep.Pages)), "pages")
	b.ReportMetric(float64(rep.Plots), "plots")
}

// TestSyntheticCourseBuilds keeps the benchmark's course valid (it runs once, untimed).
func TestSyntheticCourseBuilds(t *testing.T) {
	root := syntheticCourse(t)
	rep, out, err := build(t, root, true)
	require.NoError(t, err)
	require.Len(t, rep.Pages, 1+2*(5+3+3)) // the language chooser; per language the labs, devices, index, about, devices index
	require.Equal(t, 5*2*3*2*2, rep.Plots)
	require.NoError(t, CheckSite(out))
}
