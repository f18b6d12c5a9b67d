package grouped

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/site"
)

func TestManifestSuites(t *testing.T) {
	m := labtest.Manifest(t)
	assert.Equal(t, "03", m.ID)
	assert.Equal(t, LabDir, m.Name)
	for name, base := range map[string]string{"fp32": LibLoop, "bf16_vs_loop": LibLoop, "bf16_moe": LibGrouped,
		"timeline": "tiled_loop_tl", "bf16_timeline": "mma_loop_tl"} {
		s := m.Suite(name)
		require.NotNil(t, s, "suite %s", name)
		assert.Equal(t, base, s.Baseline, "suite %s", name)
	}
	assert.Equal(t, lab.FP32, lab.PrecisionOf(m.Suite("fp32")))
	assert.Equal(t, lab.BF16, lab.PrecisionOf(m.Suite("bf16_moe")))
	assert.Equal(t, lab.FP32, lab.PrecisionOf(m.Suite("timeline")))
}

// Every kernel variant's entry is an extern "C" __global__ function of its file, with launch
// parameters the driver accepts; GPU-only variants say why the emulator skips them; library
// variants name a call the driver knows; timeline variants are debug builds.
func TestManifestVariants(t *testing.T) {
	m := labtest.Manifest(t)
	entryRE := func(entry string) *regexp.Regexp {
		return regexp.MustCompile(`extern "C" __global__ void ((__\w+__|KL_LAUNCH_BOUNDS)\([^)]*\)\s*)*` + regexp.QuoteMeta(entry) + `\(`)
	}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			name := s.Name + "/" + v.Name
			if v.Library != "" {
				assert.Contains(t, []string{LibLoop, LibGrouped, LibDense}, v.Library, name)
				assert.Contains(t, v.Needs, "cublas", name)
				continue
			}
			if v.IsPeer() { // a Python script: the manifest reader checks it exists and needs torch
				continue
			}
			src, err := os.ReadFile(filepath.Join(m.Dir, v.File))
			require.NoError(t, err)
			assert.Regexp(t, entryRE(v.Entry), string(src), "%s: entry %s in %s", name, v.Entry, v.File)
			assert.True(t, strings.HasPrefix(string(src), `#include "kl.cuh"`), "%s includes kl.cuh first", v.File)
			ls, err := shapeOf(v)
			require.NoError(t, err, name)
			usesPTX, gpuOnly, err := labtest.PTXOnGPUOnly(filepath.Join(m.Dir, v.File), filepath.Join(m.Dir, "..", "common"))
			require.NoError(t, err)
			if usesPTX {
				assert.Contains(t, v.Needs, "nvidia", "%s uses inline PTX: it is NVIDIA-only", name)
			}
			if gpuOnly {
				assert.NotEmpty(t, v.EmuSkip, "%s uses inline PTX that has no emulator form: it needs emu_skip", name)
				assert.Contains(t, v.Needs, "gpu", name)
			} else {
				assert.Empty(t, v.EmuSkip, "%s runs on the emulator", name)
			}
			if ls.TMA {
				assert.Contains(t, v.Needs, "sm_90a", name)
				assert.Equal(t, 256, ls.BN, "%s: kernel 06's tile is 128×256", name)
			}
			if ls.Smem > 0 {
				assert.LessOrEqual(t, ls.Smem+4100, 227<<10, "%s: dynamic + static shared memory within Hopper's 227 KiB", name)
			}
			timelineBuild := len(v.Flags) == 1 && v.Flags[0] == "-DKL_TIMELINE"
			assert.Equal(t, timelineBuild, ls.Timeline, "%s: timeline: 1 exactly for the -DKL_TIMELINE builds", name)
			assert.Equal(t, strings.HasSuffix(v.Name, "_tl"), ls.Timeline, "%s: timeline variants end in _tl", name)
			// The launch parameters match what the kernel takes (Run passes these arguments).
			sig := func(params string) *regexp.Regexp {
				return regexp.MustCompile(regexp.QuoteMeta(v.Entry) + `\(` + strings.ReplaceAll(regexp.QuoteMeta(params), " ", `\s+`) + `\)`)
			}
			switch {
			case ls.Loop:
				e := "float"
				if lab.PrecisionOf(s) == lab.BF16 {
					e = "__nv_bfloat16"
				}
				assert.Regexp(t, sig(fmt.Sprintf("const %[1]s* __restrict__ A, const %[1]s* __restrict__ B, %[1]s* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc, unsigned long long* tl, int tile_base, int group", e)), string(src), name)
			case ls.TMAStore:
				assert.Regexp(t, sig("const int* __restrict__ offs, int E, int N, int K, __nv_bfloat16* __restrict__ Y, const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, const __grid_constant__ CUtensorMap tmY, unsigned long long* tl"), string(src), name)
			case ls.TMA:
				assert.Regexp(t, sig("const int* __restrict__ offs, int E, int N, int K, __nv_bfloat16* __restrict__ Y, const __grid_constant__ CUtensorMap tmX, const __grid_constant__ CUtensorMap tmW, unsigned long long* tl"), string(src), name)
			case ls.Decode:
				assert.Regexp(t, sig("const kl_bf16* __restrict__ X, const kl_bf16* __restrict__ W, kl_bf16* __restrict__ Y, const int* __restrict__ offs, int E, int N, int K, float* ws, int* counters, int smax"), string(src), name)
			case ls.Gather:
				assert.Regexp(t, sig("const float* __restrict__ Xtok, const int* __restrict__ rows, const float* __restrict__ W, float* __restrict__ Y, const int* __restrict__ offs, int E, int N, int K, unsigned long long* tl"), string(src), name)
			case ls.MoE:
				assert.Regexp(t, sig("const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y, const int* __restrict__ offs, int E, int N, int K, unsigned long long* tl"), string(src), name)
			case ls.Dynamic:
				assert.Regexp(t, sig("const kl_group* __restrict__ groups, int G, int* counters, unsigned long long* tl"), string(src), name)
			default:
				assert.Regexp(t, sig("const kl_group* __restrict__ groups, int G, unsigned long long* tl"), string(src), name)
			}
		}
	}
}

// The MoE-form variants, the TMA kernel and the dense GEMM can describe every problem of their
// suites: one N and K for all groups (multiples of 8 for TMA). They would refuse another problem
// (recorded as skipped), which would leave holes in the suite's table: the suites avoid it.
func TestMoESuitesFitTheirVariants(t *testing.T) {
	m := labtest.Manifest(t)
	for _, s := range m.Suites {
		needsMoE, needsTMA := false, false
		for _, v := range s.Variants {
			if v.Library == LibDense || v.Int(ParamMoE, 0) != 0 {
				needsMoE = true
			}
			needsTMA = needsTMA || v.Int(ParamTMA, 0) != 0
		}
		if !needsMoE {
			continue
		}
		// A MoE-form variant skips problems whose groups differ in N or K (the suite of the loop
		// comparison has such squares); it must fit most of the GPU problems, and every GPU
		// problem it does run must suit TMA.
		problems := s.Problems.GPU
		fitting := 0
		for _, p := range problems {
			shapes, err := GroupsOf(p)
			require.NoError(t, err)
			if !SharedNK(shapes) {
				continue
			}
			fitting++
			if needsTMA && len(shapes) > 0 {
				assert.True(t, shapes[0].N%8 == 0 && shapes[0].K%8 == 0, "%s %s: TMA needs N, K multiples of 8", s.Name, p.Name)
			}
		}
		assert.Greater(t, 2*fitting, len(problems), "%s: most problems must suit its MoE-form variants", s.Name)
	}
}

// The two chapters are in step (the same sections with the same ids, the same cells), and every
// cell points at something that exists.
func TestNotesCellsPointAtRealThings(t *testing.T) {
	cells := labtest.NotesInStep(t)
	m := labtest.Manifest(t)
	kinds := map[string]int{}
	plotted := map[string]bool{}
	for _, c := range cells {
		kinds[c.Kind+" "+c.Body["kind"]]++
		switch c.Kind {
		case "kl-results", "kl-plot":
			s := m.Suite(c.Body["suite"])
			require.NotNil(t, s, "cell %s names suite %q", c.Kind, c.Body["suite"])
			if c.Kind == "kl-plot" {
				assert.Contains(t, []string{"speedup", "timeline"}, c.Body["kind"])
				plotted[s.Name] = true
			}
			if p := c.Body["problems"]; p != "" {
				var names []string
				require.NoError(t, json.Unmarshal([]byte(p), &names), "problems: %s", p)
				for _, n := range names {
					found := false
					for _, q := range s.Problems.All() {
						found = found || q.Name == n
					}
					assert.True(t, found, "suite %s has problem %q", s.Name, n)
				}
			}
		case "kl-source":
			src, err := os.ReadFile(filepath.Join(m.Dir, c.Body["file"]))
			require.NoError(t, err, "cell kl-source names %q", c.Body["file"])
			if fn := c.Body["function"]; fn != "" {
				assert.Regexp(t, `\b`+fn+`\(`, string(src), "function %s in %s", fn, c.Body["file"])
			}
			assert.NotContains(t, c.Body["file"], "exercises/", "the notes do not show the exercise's solution")
		case "kl-profile", "kl-figure": // the site build checks their variants and files
		default:
			t.Errorf("unknown cell kind %q", c.Kind)
		}
	}
	for _, s := range m.Suites {
		found := false
		for _, c := range cells {
			found = found || (c.Kind == "kl-results" && c.Body["suite"] == s.Name)
		}
		assert.True(t, found, "suite %s has no kl-results cell", s.Name)
	}
	assert.True(t, plotted["timeline"] && plotted["bf16_timeline"], "the timelines are drawn")
	assert.GreaterOrEqual(t, kinds["kl-plot timeline"], 3)
}

// The chapter renders in the site's strict mode, with results that hold timelines (a synthetic
// results file written for the test, not a measurement) beside the recorded H200 results that
// the prose quotes.
func TestNotesRender(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: renders the chapter")
	}
	root := t.TempDir()
	labRoot, err := lab.FindRoot(".")
	require.NoError(t, err)
	require.NoError(t, os.CopyFS(filepath.Join(root, "labs", LabDir), os.DirFS(".")))
	require.NoError(t, os.CopyFS(filepath.Join(root, "labs", "common"), os.DirFS(filepath.Join(labRoot, "labs", "common"))))
	// The numbers the prose quotes are checked against the recorded GPU results and profiles, and
	// against lab 01's measured HBM bandwidth, which the decode section divides by: lab 01's
	// chapter comes along, since the site reads a ceiling from the chapter that records it.
	const lab01 = "01_device_props"
	require.NoError(t, os.CopyFS(filepath.Join(root, "labs", lab01), os.DirFS(filepath.Join(labRoot, "labs", lab01))))
	for _, name := range []string{LabDir + ".json", LabDir + ".profile.json", lab01 + ".json", lab01 + ".profile.json"} {
		b, err := os.ReadFile(filepath.Join(labRoot, "results", "nvidia-h200", name))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(root, "results", "nvidia-h200"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "results", "nvidia-h200", name), b, 0o644))
	}
	if b, err := os.ReadFile(filepath.Join(labRoot, "README.md")); err == nil {
		require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), b, 0o644))
	}
	m := labtest.Manifest(t)
	f := &results.File{Lab: LabDir, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Command: "synthetic, for a test",
		Device: gpu.DeviceInfo{Backend: "emu", Name: "Kernel Labs CPU emulator", Emulated: true, SMs: 4}}
	for _, s := range m.Suites {
		for _, p := range s.Problems.Emu {
			for _, v := range s.Variants {
				e := results.Entry{Suite: s.Name, Variant: v.Name, Problem: p.Name, Params: p.Params, Status: results.StatusOK,
					Emulated: true, RunAt: f.Time}
				if strings.HasSuffix(v.Name, "_tl") {
					e.Data = map[string]any{results.TimelineKey: map[string]any{"sms": 4.0, "launches": 1.0,
						"tiles": []any{[]any{0.0, 0.0, 1000.0, 0.0}, []any{1.0, 0.0, 1500.0, 1.0}}}}
				}
				f.Entries = append(f.Entries, e)
			}
		}
	}
	require.NoError(t, results.Save(filepath.Join(root, "results", "emulator", LabDir+".json"), f))
	out := filepath.Join(t.TempDir(), "public")
	rep, err := site.Build(root, out, site.Options{Strict: true})
	require.NoError(t, err)
	assert.Contains(t, rep.Pages, "en/labs/"+LabDir+".html")
	assert.Contains(t, rep.Pages, "zh/labs/"+LabDir+".html")
	page, err := os.ReadFile(filepath.Join(out, "en", "labs", LabDir+".html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), `data-kind="timeline"`)
	assert.Contains(t, string(page), "kl_find_group")
}
