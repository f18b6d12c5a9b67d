package grouped

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
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
			usesPTX := strings.Contains(string(src), "grouped_mma.cuh") || strings.Contains(string(src), "grouped_sm90.cuh") ||
				strings.Contains(string(src), "asm volatile")
			if usesPTX {
				assert.NotEmpty(t, v.EmuSkip, "%s uses inline PTX: it needs emu_skip", name)
				assert.Contains(t, v.Needs, "gpu", name)
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
