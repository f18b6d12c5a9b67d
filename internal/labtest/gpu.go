package labtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
)

// RunOnGPU is a lab's recorded run on a GPU through the real engine, from its test binary (the
// test package must use Main). It is skipped unless <prefix>_GPU=1, since a full run takes minutes
// of GPU time. Options (environment): <prefix>_VARIANTS=a,b (only these), <prefix>_QUICK=1 (the
// quick subset), <prefix>_SET=gpu|emu|grade, <prefix>_SEED=n, <prefix>_TIMEOUT=20s (per job),
// <prefix>_BACKEND=cuda|emu|auto (default cuda), <prefix>_SAVE=1 (write
// results/<device>/<lab>.json), <prefix>_JSON=path (write this run's results there). It prints
// one line per entry and returns the outcome, for the lab's own verdict on its entries.
func RunOnGPU(t *testing.T, labDir, prefix string) *lab.Outcome {
	t.Helper()
	env := func(name string) string { return os.Getenv(prefix + "_" + name) }
	if env("GPU") != "1" {
		t.Skipf("set %s_GPU=1 to run the lab on the GPU through the engine (minutes of GPU time)", prefix)
	}
	root, err := lab.FindRoot(".")
	require.NoError(t, err)
	o := lab.Options{Root: root, Lab: labDir, Backend: "cuda", Progress: os.Stdout,
		NoSave: env("SAVE") != "1", Quick: env("QUICK") == "1", Set: env("SET"), Worker: Worker(t)}
	if b := env("BACKEND"); b != "" {
		o.Backend = b
	}
	if v := env("VARIANTS"); v != "" {
		o.Variants = strings.Split(v, ",")
	}
	if s := env("SEED"); s != "" {
		o.Seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		o.SeedSet = true
	}
	if d := env("TIMEOUT"); d != "" {
		o.Timeout, err = time.ParseDuration(d)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	out, err := lab.Run(ctx, o)
	require.NoError(t, err)
	if p := env("JSON"); p != "" {
		b, err := json.MarshalIndent(out.Results, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	fmt.Println()
	fmt.Println(SummaryTable(out.Results.Entries))
	return out
}

// Refused reports whether an entry that is not OK was refused by its variant (an error that says
// "skipped:") rather than failed.
func Refused(e results.Entry) bool {
	return e.Status != results.StatusOK && strings.Contains(e.Error, "skipped:")
}

// SummaryTable is one line per entry: TFLOP/s, ratio to the baseline, the check's error, registers.
func SummaryTable(es []results.Entry) string {
	head := []string{"suite", "variant", "problem", "status", "TFLOP/s", "×base", "rel_err", "regs"}
	rows := [][]string{head}
	for _, e := range es {
		rel, regs := "", ""
		if e.Check != nil {
			rel = fmt.Sprintf("%.1e", e.Check.RelErr)
		}
		if e.Kernel != nil {
			regs = strconv.Itoa(e.Kernel.NumRegs)
		}
		status := e.Status
		if Refused(e) {
			status = "refused"
		}
		rows = append(rows, []string{e.Suite, e.Variant, e.Problem, status,
			fmt.Sprintf("%.2f", e.TFLOPs), fmt.Sprintf("%.2f", e.Speedup), rel, regs})
	}
	width := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			switch {
			case i == len(r)-1:
				b.WriteString(c)
			case i >= 4: // numbers, right-aligned
				b.WriteString(pad + c + " ")
			default:
				b.WriteString(c + pad + " ")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// FirstLine is the first line of an error's text.
func FirstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
