package grouped_test

// The lab through the real engine, from this test binary: it builds the kernels, runs every
// selected variant × problem in worker processes (this same binary, re-executed), checks and times
// them, exactly as `labrun 03` does.
//
// TestEmulatorRun runs every emulator problem of every variant the emulator can run (and
// TestEmulatorGrade the grade set of those variants) on the CPU emulator; it is skipped when g++
// or Boost.Context is missing. TestGPURun is the recorded run on a GPU, skipped unless
// KL_GROUPED_GPU=1. Build it where Go is, run it where the GPU is:
//
//	go test -c -o bin/grouped.test ./labs/03_grouped_gemm
//	KL_GROUPED_GPU=1 ./bin/grouped.test -test.run TestGPURun -test.v -test.timeout 60m
//
// Options (environment): KL_GROUPED_VARIANTS=a,b (only these), KL_GROUPED_QUICK=1 (the quick
// subset), KL_GROUPED_SET=gpu|emu|grade, KL_GROUPED_SEED=n, KL_GROUPED_TIMEOUT=60s (per job),
// KL_GROUPED_BACKEND=cuda|emu|auto (default cuda), KL_GROUPED_SAVE=1 (write
// results/<device>/03_grouped_gemm.json), KL_GROUPED_JSON=path (write this run's results there).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	_ "github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/grade"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
	grouped "github.com/kernel-labs/kernellabs/labs/03_grouped_gemm"
)

func TestMain(m *testing.M) { labtest.Main(m) }

func workerCmd(t *testing.T) func() *exec.Cmd { return labtest.Worker(t) }

// emuVariants are the kernel variants the emulator runs (no inline PTX).
func emuVariants(t *testing.T) []string {
	m := labtest.Manifest(t)
	var names []string
	seen := map[string]bool{}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			gpuOnly := v.EmuSkip != "" || v.Library != "" || v.IsPeer()
			for _, n := range v.Needs {
				gpuOnly = gpuOnly || n == "gpu" || n == "cublas"
			}
			if !gpuOnly && !seen[v.Name] && !labtest.LeftOut(t, m, v) {
				seen[v.Name] = true
				names = append(names, v.Name)
			}
		}
	}
	return names
}

// runOnEmulator runs a set of the lab on four emulated SMs (the timelines then show the scheduling
// picture of the chapter), with the kernel variants the emulator runs.
func runOnEmulator(t *testing.T, set string) *lab.Outcome {
	t.Helper()
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	return labtest.RunOnEmulatorWith(t, root, grouped.LabDir, set, 2, func(o *lab.Options) {
		o.Seed, o.Variants = 3, emuVariants(t)
	})
}

func TestEmulatorRun(t *testing.T) {
	out := runOnEmulator(t, "emu")
	m := out.Manifest
	// Every emulator problem of every variant the emulator can run: one entry each, all correct.
	want := 0
	runnable := map[string]bool{}
	for _, v := range emuVariants(t) {
		runnable[v] = true
	}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if runnable[v.Name] {
				want += len(s.Problems.Emu)
			}
		}
	}
	ok := 0
	timelines := 0
	for _, e := range out.Results.Entries {
		if !runnable[e.Variant] {
			continue
		}
		if alignSkip(t, m, e) || assert.Equal(t, results.StatusOK, e.Status, "%s/%s %s: %s", e.Suite, e.Variant, e.Problem, e.Error) {
			ok++
		}
		if strings.HasSuffix(e.Variant, "_tl") && e.OK() {
			timelines++
			tl := timelineOf(t, e)
			assert.Zero(t, tl.Missing, "%s %s: every tile leaves a record", e.Variant, e.Problem)
			assert.LessOrEqual(t, tl.SMs, 4)
			for _, r := range tl.Tiles {
				assert.True(t, r[0] >= 0 && r[0] < int64(tl.SMs), "SM id %d of %d", r[0], tl.SMs)
				assert.LessOrEqual(t, r[1], r[2], "a tile ends after it starts")
			}
			if e.Problem == "3 GEMMs of 4, 6 and 2 tiles" {
				assert.Len(t, tl.Tiles, 12)
				if e.Variant == "tiled_loop_tl" {
					assert.Equal(t, 3, tl.Launches)
				} else {
					assert.Equal(t, 1, tl.Launches)
				}
			}
		}
	}
	assert.Equal(t, want, ok, "every emulator problem of every portable variant passes (or is one it cannot copy)")
	assert.Equal(t, 6, timelines, "3 timeline variants × 2 problems")
	assert.Zero(t, out.Failures)
}

func TestEmulatorGrade(t *testing.T) {
	out := runOnEmulator(t, "grade")
	runnable := map[string]bool{}
	for _, v := range emuVariants(t) {
		runnable[v] = true
	}
	m := out.Manifest
	n := 0
	for _, e := range out.Results.Entries {
		if !runnable[e.Variant] {
			continue
		}
		n++
		if alignSkip(t, m, e) {
			continue
		}
		assert.Equal(t, results.StatusOK, e.Status, "%s/%s %s: %s", e.Suite, e.Variant, e.Problem, e.Error)
	}
	assert.Positive(t, n)
}

// alignSkip says whether entry e is a kernel that copies rows in chunks (align: in lab.yaml)
// refused a problem whose N or K it cannot copy, with the reason.
func alignSkip(t *testing.T, m *lab.Manifest, e results.Entry) bool {
	align := m.Suite(e.Suite).Variant(e.Variant).Int(grouped.ParamAlign, 1)
	if e.Status != results.StatusSkipped || align == 1 || (e.Params["n"]%align == 0 && e.Params["k"]%align == 0) {
		return false
	}
	return assert.Contains(t, e.Error, fmt.Sprintf("must be multiples of %d", align))
}

// timelineOf decodes an entry's timeline (a map after the JSON round trip from the worker).
func timelineOf(t *testing.T, e results.Entry) results.Timeline {
	t.Helper()
	tl, ok := results.TimelineOf(&e)
	require.True(t, ok, "%s %s has a timeline", e.Variant, e.Problem)
	return *tl
}

// TestEmulatorGrading grades the exercise with the real grader on the emulator: the reference
// solution scores full marks, the student edition (solution regions stripped) fails.
func TestEmulatorGrading(t *testing.T) {
	labtest.NeedsSolutions(t)
	if testing.Short() {
		t.Skip("-short: grading builds and runs the exercise on the emulator")
	}
	emutest.Need(t)
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	m := labtest.Manifest(t)
	ex := m.Suite("fp32_moe").Variant("ex1_moe_gather")
	src, err := os.ReadFile(ex.File)
	require.NoError(t, err)
	stub, n, err := grade.StripSolutions(ex.File, src)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	stubFile := filepath.Join(t.TempDir(), "ex1_moe_gather.cu")
	require.NoError(t, os.WriteFile(stubFile, stub, 0o644))

	for _, tc := range []struct {
		submission string
		full       bool
	}{{"", true}, {stubFile, false}} {
		o := grade.Options{Root: root, Lab: grouped.LabDir, Backend: "emu", Submission: tc.submission, Seed: 5, SeedSet: true,
			Secret: "test-secret", Rounds: 1, Worker: workerCmd(t)}
		if testing.Verbose() {
			o.Progress = os.Stdout
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		rep, err := grade.Grade(ctx, o)
		cancel()
		if err != nil && strings.Contains(err.Error(), "cgo") {
			t.Skipf("the emulator backend is not available: %v", err)
		}
		require.NoError(t, err)
		b, _ := json.Marshal(rep)
		if tc.full {
			assert.Equal(t, rep.MaxScore, rep.Score, "the reference scores full marks: %s", b)
			assert.Positive(t, rep.MaxScore)
		} else {
			assert.Less(t, rep.Score, rep.PassMark*rep.MaxScore, "the student edition fails: %s", b)
		}
	}
}

func TestGPURun(t *testing.T) {
	out := labtest.RunOnGPU(t, grouped.LabDir, "KL_GROUPED")
	for _, e := range out.Results.Entries {
		if e.Status != results.StatusOK && e.Status != results.StatusSkipped {
			t.Errorf("%s/%s %s: %s: %s", e.Suite, e.Variant, e.Problem, e.Status, labtest.FirstLine(e.Error))
		}
	}
}
