package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc/emutest"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// writeResults saves a results file with one entry per (variant, median, min, max).
func writeResults(t *testing.T, path string, rows [][4]any) {
	f := &results.File{Lab: "02_gemm", Device: gpu.DeviceInfo{Name: "NVIDIA H200", Backend: "cuda"}}
	for _, r := range rows {
		f.Entries = append(f.Entries, results.Entry{Suite: "fp32", Variant: r[0].(string), Problem: "4096³",
			Status: results.StatusOK, Time: &bench.Stats{N: 10, MedianMs: r[1].(float64), MinMs: r[2].(float64), MaxMs: r[3].(float64)}})
	}
	require.NoError(t, results.Save(path, f))
}

func TestCompareFiles(t *testing.T) {
	dir := t.TempDir()
	old, newer := filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")
	writeResults(t, old, [][4]any{{"tiled", 10.0, 9.9, 10.2}, {"warp", 5.0, 4.8, 5.3}})
	writeResults(t, newer, [][4]any{{"tiled", 11.5, 11.4, 11.7}, {"warp", 5.1, 4.9, 5.4}})

	code, out, _ := runCLI("compare", old, newer)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "+15.0%")
	assert.Contains(t, out, "slower")
	assert.Contains(t, out, "~")

	code, _, stderr := runCLI("compare", old, newer, "--fail-on-regression", "10")
	assert.Equal(t, exitFailures, code)
	assert.Contains(t, stderr, "fp32/tiled 4096³ (+15.0%)")
	assert.NotContains(t, stderr, "warp", "a change within the noise is not a regression")

	code, _, _ = runCLI("compare", old, newer, "--fail-on-regression", "20")
	assert.Equal(t, exitOK, code)

	code, out, _ = runCLI("compare", "--json", old, newer)
	assert.Equal(t, exitOK, code)
	var doc struct {
		Rows []struct {
			Variant, Verdict string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Rows, 2)
	assert.Equal(t, "slower", doc.Rows[0].Verdict)
	assert.Equal(t, "~", doc.Rows[1].Verdict)
}

func TestCompareErrors(t *testing.T) {
	course(t, demo)
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	writeResults(t, old, [][4]any{{"tiled", 10.0, 9.9, 10.2}})
	code, _, stderr := runCLI("compare", old)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "give two results files")
	code, _, stderr = runCLI("compare", old, filepath.Join(dir, "nope.json"))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "neither a results file nor a lab")
	code, _, stderr = runCLI("compare", filepath.Join(dir, "missing.json"), old)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "no such results file")
}

// A custom problem runs end to end on the emulator like a built-in one.
func TestCustomProblemOnTheEmulator(t *testing.T) {
	emutest.Need(t)
	repoRoot(t)
	code, out, stderr := runCLI("02", "--shape", "33x17x65", "--param", "beta0=1", "--backend", "emu",
		"--variant", "coalesced,double_buffer", "--no-save", "--no-site", "--json")
	require.Equal(t, exitOK, code, stderr)
	assert.NotRegexp(t, `"[A-Z]\w*":`, out, "JSON keys are snake_case")
	var doc struct {
		Entries []results.Entry
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Entries, 2)
	for _, e := range doc.Entries {
		assert.Equal(t, "custom 33x17x65 param=beta0=1", e.Problem)
		assert.True(t, e.Custom)
		assert.Equal(t, results.StatusOK, e.Status, e.Error)
		assert.Equal(t, map[string]int64{"m": 33, "n": 17, "k": 65, "beta0": 1}, e.Params)
		require.NotNil(t, e.Check)
		assert.Less(t, e.Check.RelErr, 1e-5)
	}

	code, _, stderr = runCLI("02", "--shape", "33x17", "--backend", "emu", "--no-save", "--no-site")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "give 3 sizes separated by x")
	code, _, stderr = runCLI("01", "--experts", "8", "--backend", "emu", "--no-save", "--no-site")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "unknown flag --experts; 'labrun 01 --help' lists the flags")
	code, _, stderr = runCLI("02", "--shape", "0x10x10", "--backend", "emu", "--no-save", "--no-site")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "m = 0: every problem of this suite has m ≥ 1")
}

func TestCompareEmulatorRunsHasNoVerdicts(t *testing.T) {
	dir := t.TempDir()
	old, newer := filepath.Join(dir, "old.json"), filepath.Join(dir, "new.json")
	writeResults(t, old, [][4]any{{"tiled", 10.0, 9.9, 10.2}})
	writeResults(t, newer, [][4]any{{"tiled", 30.0, 29.0, 31.0}})
	for _, p := range []string{old, newer} {
		f, err := results.Load(p)
		require.NoError(t, err)
		f.Device = gpu.DeviceInfo{Name: "Kernel Labs CPU emulator", Backend: "emu", Emulated: true}
		for i := range f.Entries {
			f.Entries[i].Emulated = true
		}
		require.NoError(t, results.Save(p, f))
	}
	code, out, stderr := runCLI("compare", old, newer, "--fail-on-regression", "5")
	assert.Equal(t, exitOK, code, "emulator noise is never a regression: %s", stderr)
	assert.Contains(t, stderr, "ran on the CPU emulator")
	assert.Contains(t, out, "emulated")
	assert.NotContains(t, out, "slower")
}
