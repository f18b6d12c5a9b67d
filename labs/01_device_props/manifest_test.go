package devprops

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
)

// VariantCublasBF16 is the tensor suite's one variant (Derive takes the best of the suite).
const VariantCublasBF16 = "cublas_bf16"

func TestManifestLoads(t *testing.T) {
	m := labtest.Manifest(t)
	assert.Equal(t, "01", m.ID)
	assert.Equal(t, LabDir, m.Name)
	assert.Equal(t, 120*time.Second, m.Timeout)
	assert.NotEmpty(t, m.Summary.EN)
	assert.NotEmpty(t, m.Summary.ZH)

	var names []string
	for _, s := range m.Suites {
		names = append(names, s.Name)
	}
	assert.Equal(t, []string{SuiteHBM, SuiteL2, SuiteFMA, SuiteTensor, SuiteLaunch, SuiteHostLink}, names)

	known := map[string]bool{LibMemcpyDtoD: true, LibMemcpyHtoD: true, LibMemcpyDtoH: true, LibCublasGemmEx: true}
	for _, s := range m.Suites {
		assert.NotEmpty(t, s.Title.EN, s.Name)
		assert.NotEmpty(t, s.Title.ZH, s.Name)
		assert.NotEmpty(t, s.Baseline, s.Name)
		assert.False(t, s.FlushL2, "%s: lab 01 flushes nothing (see the comments in lab.yaml)", s.Name)
		for _, set := range [][]lab.Problem{s.Problems.GPU, s.Problems.Emu} {
			require.NotEmpty(t, set, s.Name)
			quick := 0
			for _, p := range set {
				if p.Quick {
					quick++
				}
			}
			assert.Positive(t, quick, "%s: every problem set has a --quick subset", s.Name)
		}
		assert.NotEmpty(t, s.Problems.Grade, s.Name)
		for _, v := range s.Variants {
			assert.NotEmpty(t, v.Title.EN, v.Name)
			assert.NotEmpty(t, v.Title.ZH, v.Name)
			if !v.IsKernel() {
				assert.True(t, known[v.Library], "%s: library %q is not one the driver calls", v.Name, v.Library)
			}
		}
	}
	tv := m.Suite(SuiteTensor).Variant(VariantCublasBF16)
	require.NotNil(t, tv)
	assert.Equal(t, []string{"cublas", "gpu"}, tv.Needs)
	assert.NotEmpty(t, tv.EmuSkip)
	assert.Equal(t, LibCublasGemmEx, tv.Library)

	// The variants Summarize looks for exist.
	for suite, v := range map[string]string{SuiteHBM: VariantMemcpyDtoD, SuiteLaunch: VariantLaunchSync,
		SuiteHostLink: VariantD2HPinned} {
		assert.NotNil(t, m.Suite(suite).Variant(v), v)
	}
	assert.NotNil(t, m.Suite(SuiteLaunch).Variant(VariantLaunch))
	assert.NotNil(t, m.Suite(SuiteHostLink).Variant(VariantH2DPinned))
}

// The HBM problems span L2-resident to far beyond L2, and reach at least 1 GiB.
func TestCopyProblemsSpanTheL2Cliff(t *testing.T) {
	m := labtest.Manifest(t)
	var sizes []int64
	for _, p := range m.Suite(SuiteHBM).Problems.GPU {
		b := p.Int("bytes", 0)
		require.Zero(t, b%8, p.Name)
		got, err := lab.ParseSize(p.Name)
		require.NoError(t, err, "problem names are sizes, Summarize falls back on them")
		assert.Equal(t, b, got, p.Name)
		sizes = append(sizes, b)
	}
	assert.LessOrEqual(t, sizes[0], int64(1<<20))
	assert.GreaterOrEqual(t, sizes[len(sizes)-1], int64(4<<30))
}

var templateRE = regexp.MustCompile(`(\w+)<(\d+)>\(`)

// Every kernel variant names an entry that its file defines; the FMA variants' params.chains
// equals the template argument their entry instantiates; every kernel file starts with the
// portability header and a comment.
func TestKernelFiles(t *testing.T) {
	m := labtest.Manifest(t)
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if !v.IsKernel() {
				continue
			}
			entries, err := parseEntries(filepath.Join(m.Dir, v.File))
			require.NoError(t, err)
			assert.Contains(t, entries, v.Entry, "%s: %s", v.Name, v.File)
		}
	}
	src, err := os.ReadFile("kernels/02_fma.cu")
	require.NoError(t, err)
	for _, v := range m.Suite(SuiteFMA).Variants {
		body := string(src)[strings.Index(string(src), "void "+v.Entry+"("):]
		mm := templateRE.FindStringSubmatch(body)
		require.NotNil(t, mm, v.Entry)
		n, _ := strconv.Atoi(mm[2])
		assert.Equal(t, int64(n), v.Params["chains"], v.Name)
	}
	files, _ := filepath.Glob("kernels/*.cu")
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		lines := strings.Split(string(b), "\n")
		assert.Equal(t, `#include "kl.cuh"`, lines[0], f)
		assert.Contains(t, string(b), "// "+filepath.Base(f)+" — ", "%s: a header comment says what it teaches", f)
		assert.NotContains(t, string(b), "<<<", f)
		assert.NotContains(t, string(b), "asm(", "%s: no inline PTX in lab 01", f)
		assert.NotContains(t, string(b), "asm volatile", f)
	}
	entries, err := parseEntries("kernels/00_fill.cu")
	require.NoError(t, err)
	assert.Contains(t, entries, FillEntry)
}

// The two chapters are in step, and every cell points at something that exists.
func TestNotesCellsPointAtRealThings(t *testing.T) {
	cells := labtest.NotesInStep(t)
	m := labtest.Manifest(t)
	kinds := map[string]int{}
	for _, c := range cells {
		kinds[c.Kind]++
		switch c.Kind {
		case "kl-results", "kl-plot":
			assert.NotNil(t, m.Suite(c.Body["suite"]), "cell %s names suite %q", c.Kind, c.Body["suite"])
			if c.Kind == "kl-plot" {
				assert.Equal(t, "throughput", c.Body["kind"])
			}
		case "kl-source":
			src, err := os.ReadFile(filepath.Join(m.Dir, c.Body["file"]))
			require.NoError(t, err, "cell kl-source names %q", c.Body["file"])
			if fn := c.Body["function"]; fn != "" {
				assert.Contains(t, string(src), " "+fn+"(", "function %s in %s", fn, c.Body["file"])
			}
		case "kl-properties", "kl-ceilings", "kl-profile", "kl-figure":
		default:
			t.Errorf("unknown cell kind %q", c.Kind)
		}
	}
	assert.Equal(t, 1, kinds["kl-properties"])
	assert.Equal(t, 1, kinds["kl-ceilings"])
	// Every suite has its results table.
	for _, s := range m.Suites {
		found := false
		for _, c := range cells {
			found = found || (c.Kind == "kl-results" && c.Body["suite"] == s.Name)
		}
		assert.True(t, found, "suite %s has no kl-results cell", s.Name)
	}
}
