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
	"context"
	"encoding/json"
	"fmt"
	"github.com/kernel-labs/kernellabs/internal/selfexec"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	_ "github.com/kernel-labs/kernellabs/internal/gpu/cuda"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	gemm "github.com/kernel-labs/kernellabs/labs/02_gemm"
)

const workerEnv = "KL_GEMM_WORKER"

func TestMain(m *testing.M) {
	if code, ok := selfexec.Dispatch(); ok {
		os.Exit(code)
	}
	if os.Getenv(workerEnv) == "1" {
		os.Exit(lab.RunWorkerFromEnv())
	}
	os.Exit(m.Run())
}

func TestGPURun(t *testing.T) {
	if os.Getenv("KL_GEMM_GPU") != "1" {
		t.Skip("set KL_GEMM_GPU=1 to run the lab on the GPU through the engine (minutes of GPU time)")
	}
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	o := lab.Options{Root: root, Lab: gemm.LabDir, Backend: "cuda", Progress: os.Stdout,
		NoSave: os.Getenv("KL_GEMM_SAVE") != "1", Quick: os.Getenv("KL_GEMM_QUICK") == "1",
		Set: os.Getenv("KL_GEMM_SET")}
	if b := os.Getenv("KL_GEMM_BACKEND"); b != "" {
		o.Backend = b
	}
	if v := os.Getenv("KL_GEMM_VARIANTS"); v != "" {
		o.Variants = strings.Split(v, ",")
	}
	if s := os.Getenv("KL_GEMM_SEED"); s != "" {
		o.Seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		o.SeedSet = true
	}
	if d := os.Getenv("KL_GEMM_TIMEOUT"); d != "" {
		o.Timeout, err = time.ParseDuration(d)
		require.NoError(t, err)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	o.Worker = func() *exec.Cmd {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), workerEnv+"=1")
		return cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	out, err := lab.Run(ctx, o)
	require.NoError(t, err)
	if p := os.Getenv("KL_GEMM_JSON"); p != "" {
		b, err := json.MarshalIndent(out.Results, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	fmt.Println()
	fmt.Println(summaryTable(out.Results.Entries))
	failed := 0
	for _, e := range out.Results.Entries {
		if e.Status != results.StatusOK && e.Status != results.StatusSkipped && !strings.Contains(e.Error, "skipped:") {
			failed++
			t.Errorf("%s/%s %s: %s: %s", e.Suite, e.Variant, e.Problem, e.Status, firstLine(e.Error))
		}
	}
	t.Logf("%d entries, %d failed (refusals not counted)", len(out.Results.Entries), failed)
}

// summaryTable is one line per entry: TFLOP/s, ratio to the baseline, the check's error.
func summaryTable(es []results.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-22s %-22s %-8s %9s %7s %9s %s\n", "suite", "variant", "problem", "status", "TFLOP/s", "×base", "rel_err", "regs")
	for _, e := range es {
		rel, regs := "", ""
		if e.Check != nil {
			rel = fmt.Sprintf("%.1e", e.Check.RelErr)
		}
		if e.Kernel != nil {
			regs = strconv.Itoa(e.Kernel.NumRegs)
		}
		status := e.Status
		if e.Status != results.StatusOK && strings.Contains(e.Error, "skipped:") {
			status = "refused"
		}
		fmt.Fprintf(&b, "%-10s %-22s %-22s %-8s %9.2f %7.2f %9s %s\n", e.Suite, e.Variant, e.Problem, status, e.TFLOPs, e.Speedup, rel, regs)
	}
	return b.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
