package gemm_test

// The GPU run of the lab through the real engine, from a test binary: it builds the kernels with
// nvcc, runs every selected variant × problem in worker processes (this same binary, re-executed),
// checks and times them, and prints the engine's progress. It is skipped unless KL_GEMM_GPU=1,
// since a full run takes minutes of GPU time. Build it where Go is, run it where the GPU is:
//
//	go test -c -o bin/gemm.test ./labs/02_gemm
//	KL_GEMM_GPU=1 ./bin/gemm.test -test.run TestGPURun -test.v -test.timeout 30m
//
// Options (environment): KL_GEMM_VARIANTS=a,b (only these), KL_GEMM_QUICK=1 (the quick subset),
// KL_GEMM_SET=gpu|emu|grade, KL_GEMM_SEED=n, KL_GEMM_TIMEOUT=20s (per job), KL_GEMM_BACKEND=cuda|emu|auto (default cuda),
// KL_GEMM_SAVE=1 (write results/<device>/02_gemm.json), KL_GEMM_JSON=path (write this run's
// results there).

import (
	"testing"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	"github.com/kernel-labs/kernellabs/internal/labtest"
	"github.com/kernel-labs/kernellabs/internal/results"
	gemm "github.com/kernel-labs/kernellabs/labs/02_gemm"
)

func TestMain(m *testing.M) { labtest.Main(m) }

func TestGPURun(t *testing.T) {
	out := labtest.RunOnGPU(t, gemm.LabDir, "KL_GEMM")
	failed := 0
	for _, e := range out.Results.Entries {
		if e.Status != results.StatusOK && e.Status != results.StatusSkipped && !labtest.Refused(e) {
			failed++
			t.Errorf("%s/%s %s: %s: %s", e.Suite, e.Variant, e.Problem, e.Status, labtest.FirstLine(e.Error))
		}
	}
	t.Logf("%d entries, %d failed (refusals not counted)", len(out.Results.Entries), failed)
}
