package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kernel-labs/kernellabs/internal/bench"
	"github.com/kernel-labs/kernellabs/internal/check"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/term"
)

// outcome is a run of one suite: a baseline, a kernel timed against it on two problems, a
// variant skipped on both and one that failed to compile (so failed on both).
func outcome(emulated bool) *lab.Outcome {
	var es []results.Entry
	for _, p := range []string{"8 experts, Zipf, 2 empty", "3 groups"} {
		es = append(es,
			results.Entry{Suite: "fp32", Variant: "cublas_loop", Problem: p, Status: results.StatusOK, Emulated: emulated,
				Time: &bench.Stats{MedianMs: 2}, TFLOPs: 40, Check: &check.Report{Checked: 10, RelErr: 1e-7, Tolerance: 1e-5}},
			results.Entry{Suite: "fp32", Variant: "persistent", Problem: p, Status: results.StatusOK, Emulated: emulated,
				Time: &bench.Stats{MedianMs: 1}, TFLOPs: 80, Speedup: 2, Baseline: "cublas_loop",
				Check: &check.Report{Checked: 10, RelErr: 2e-7, Tolerance: 1e-5}},
			results.Entry{Suite: "fp32", Variant: "mma_loop", Problem: p, Status: results.StatusSkipped, Emulated: emulated,
				Error: "not on the emulator: inline PTX (cp.async, ldmatrix, mma.sync) runs on NVIDIA GPUs only"},
			results.Entry{Suite: "fp32", Variant: "tiled_loop", Problem: p, Status: results.StatusFailed, Emulated: emulated,
				Error: "compile: kernels/01_loop.cu:12: error: identifier \"tile\" is undefined, and a very long tail"},
		)
	}
	return &lab.Outcome{Manifest: &lab.Manifest{}, Results: &results.File{Entries: es}}
}

func TestRunTableFitsAndSaysWhatMatters(t *testing.T) {
	for _, emulated := range []bool{false, true} {
		for _, width := range []int{40, 80, 100} {
			var b bytes.Buffer
			printTable(&b, outcome(emulated), width)
			out := b.String()
			for _, l := range strings.Split(out, "\n") {
				assert.LessOrEqual(t, term.DisplayWidth(l), width, "%q", l)
				assert.Equal(t, strings.TrimRight(l, " "), l, "trailing spaces in %q", l)
			}
			assert.Equal(t, 1, strings.Count(out, "skipped: mma_loop (not on the emulator"), "one skip line per suite:\n%s", out)
			if width < 80 {
				continue // it fits; what it says is read at a usable width
			}
			assert.Equal(t, 1, strings.Count(out, "tiled_loop"), "a variant failing alike on every problem is one row:\n%s", out)
			if width >= 100 {
				assert.Contains(t, out, "all 2 problems")
			}
			if emulated {
				assert.Contains(t, out, "rel error")
				assert.Contains(t, out, "2.0e-07")
				assert.NotContains(t, out, "TFLOP/s", "no rates from the emulator")
				assert.Equal(t, 1, strings.Count(out, "emulated"), "says once that times are emulated:\n%s", out)
			} else {
				assert.Contains(t, out, "speedup: over cublas_loop")
				assert.Contains(t, out, "2.00×")
				assert.Contains(t, out, "80.00 TFLOP/s")
				assert.NotContains(t, out, "emulated")
			}
		}
	}
}
