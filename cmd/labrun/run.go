package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/site"
)

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var variants listFlag
	fs.Var(&variants, "variant", "run only these variants (repeat the flag or separate with commas)")
	quick := fs.Bool("quick", false, "run the quick subset of problems with a shorter timing budget")
	backend := fs.String("backend", "auto", "cuda, emu, or auto (a GPU when there is one, else the CPU emulator)")
	device := fs.Int("device", 0, "device index")
	asJSON := fs.Bool("json", false, "write one JSON document to stdout (progress still goes to stderr)")
	seed := fs.Uint64("seed", 0, "seed of the random inputs (default: a new one, printed)")
	set := fs.String("set", "", "problem set: gpu, emu or grade (default: emu on the emulator, else gpu)")
	timeout := fs.Duration("timeout", 0, "time limit of one variant on one problem (default: the lab's, usually 60s)")
	noSave := fs.Bool("no-save", false, "do not write the results file")
	emuDevices := fs.Int("emu-devices", 0, "how many devices the CPU emulator shows (default 2; labs 04 and 05 use several)")
	emuWarp := fs.Int("emu-warp", 0, "lanes of a warp on the CPU emulator: 32 (NVIDIA, the default) or 64 (AMD's wave64;\nNVIDIA-only variants are skipped, the results are not saved)")
	noSite := fs.Bool("no-site", false, "do not rebuild the site (site/public) after the run")
	inProcess := fs.Bool("in-process", false, "run the kernels in labrun's own process, for profilers that do not follow its\nworker processes (ncu, nsys, compute-sanitizer): no time limit, and a crash ends the run")
	// Custom problems: each flag given becomes a parameter of the problem (see the README).
	custom := map[string]string{}
	var params listFlag
	fs.Var(&params, "param", "a custom problem's parameter KEY=VALUE (repeat, or separate with commas), e.g. beta0=1")
	for _, c := range []struct{ name, usage string }{
		{"shape", "a custom problem: MxNxK for the GEMM labs (labrun 02 --shape 4096x14336x4096)"},
		{"bytes", "a custom problem: the size in bytes, with KiB/MiB/GiB suffixes (labrun 01 --bytes 64MiB)"},
		{"experts", "a custom problem: the number of experts (labrun 03)"},
		{"tokens", "a custom problem: tokens, or a distribution such as zipf:17480 (labrun 03)"},
		{"m", "a custom problem: the M dimension"},
		{"n", "a custom problem: the N dimension"},
		{"k", "a custom problem: the K dimension"},
	} {
		name := c.name
		fs.Func(name, c.usage, func(v string) error {
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("--%s needs a value", name)
			}
			custom[name] = strings.TrimSpace(v)
			return nil
		})
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: labrun run NN [flags]   (or: labrun NN [flags])

Builds lab NN's kernels, checks every variant against a reference on fresh random inputs,
times it with device events against the lab's baseline (cuBLAS, the driver's memcpy, NCCL)
and merges the results into results/<device>/NN_name.json. A variant that crashes or hangs is
recorded as failed and the run goes on.

Flags:
`)
		fs.PrintDefaults()
	}
	name, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if name == "" {
		fmt.Fprintln(stderr, "labrun run: which lab? e.g. labrun run 01 (labrun list shows them)")
		return exitUsage
	}
	root, code := findRoot(stderr)
	if code != exitOK {
		return code
	}
	if len(params) > 0 {
		custom["param"] = strings.Join(params, ",")
	}
	if *emuDevices != 0 {
		if *emuDevices < 1 {
			fmt.Fprintf(stderr, "labrun run: --emu-devices %d: give at least 1\n", *emuDevices)
			return exitUsage
		}
		// The worker processes inherit the setting through the environment.
		os.Setenv(emu.EnvDevices, strconv.Itoa(*emuDevices))
	}
	if *emuWarp != 0 {
		if *emuWarp != 32 && *emuWarp != 64 {
			fmt.Fprintf(stderr, "labrun run: --emu-warp %d: an emulated warp has 32 lanes (NVIDIA) or 64 (AMD's wave64)\n", *emuWarp)
			return exitUsage
		}
		os.Setenv(emu.EnvWarp, strconv.Itoa(*emuWarp))
	}
	if w, err := emu.WarpSize(); err == nil && w != 32 && !*noSave && *backend != "cuda" {
		// results/emulator holds the default (32-lane) runs; a wave64 run checks portability.
		fmt.Fprintf(stderr, "labrun run: %d-lane warps: the results are not saved (results/ holds 32-lane runs)\n", w)
		*noSave = true
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	started := time.Now()
	out, err := lab.Run(ctx, lab.Options{Root: root, Lab: name, Variants: variants, Quick: *quick, Backend: *backend,
		Device: *device, Seed: *seed, SeedSet: seedSet, Set: *set, Custom: custom, Timeout: *timeout, NoSave: *noSave, InProcess: *inProcess,
		Progress: stderr})
	if err != nil {
		return exitFor(err, stderr)
	}
	if *asJSON {
		doc := map[string]any{"lab": out.Manifest.Name, "device": out.Device, "seed": out.Seed,
			"results_path": out.Path, "saved_to": out.SavedTo, "failures": out.Failures, "entries": out.Results.Entries,
			"extra": out.Results.Extra}
		if out.SaveError != nil {
			doc["save_error"] = out.SaveError.Error()
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(doc)
	} else {
		printTable(stdout, out)
	}
	fmt.Fprintf(stderr, "done in %.1fs", time.Since(started).Seconds())
	if out.SavedTo != "" && out.SaveError == nil {
		fmt.Fprintf(stderr, "; results in %s", out.SavedTo)
	}
	fmt.Fprintln(stderr)
	if ctx.Err() != nil {
		switch {
		case out.SavedTo != "" && out.SaveError == nil:
			fmt.Fprintf(stderr, "labrun: interrupted; the results measured so far were saved, the %d jobs not finished were not (the file keeps their earlier results)\n", out.Unfinished)
		case out.SaveError != nil:
			fmt.Fprintf(stderr, "labrun: interrupted, and saving the results measured so far failed: %v\n", out.SaveError)
		default:
			fmt.Fprintln(stderr, "labrun: interrupted before any result was measured; nothing was saved")
		}
		return exitFailures
	}
	if out.SavedTo == out.Path && out.SaveError == nil && !*noSite {
		// The chapter's tables and plots come from the results just written.
		if rep, err := site.Build(root, site.DefaultOutDir(root), site.Options{}); err != nil {
			fmt.Fprintf(stderr, "labrun: the results were saved, but the site was not rebuilt:\n%v\n", err)
		} else {
			fmt.Fprintf(stderr, "site rebuilt: %s\n", filepath.Join(rep.OutDir, "index.html"))
		}
	}
	if out.SaveError != nil {
		fmt.Fprintf(stderr, "labrun: %v\n", out.SaveError)
		return exitSave
	}
	if out.Failures > 0 {
		fmt.Fprintf(stderr, "labrun: %d variant × problem pair(s) did not pass; see the table above\n", out.Failures)
		return exitFailures
	}
	return exitOK
}

// printTable prints the results suite by suite.
func printTable(w io.Writer, out *lab.Outcome) {
	suite := ""
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := range out.Results.Entries {
		e := &out.Results.Entries[i]
		if e.Suite != suite {
			if suite != "" {
				fmt.Fprintln(tw)
			}
			suite = e.Suite
			title := suite
			if s := out.Manifest.Suite(suite); s != nil && s.Title.EN != "" {
				title = s.Title.EN
			}
			fmt.Fprintf(tw, "== %s\n", title)
			fmt.Fprintln(tw, "variant\tproblem\tstatus\tmedian\trate\tvs baseline\t")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", e.Variant, e.Problem, status(e), median(e), rate(e), speedup(e))
	}
	tw.Flush()
	if len(out.Results.Entries) > 0 && out.Results.Entries[0].Emulated {
		fmt.Fprintln(w, "\nTimes above are emulated, not performance figures: the CPU emulator checks correctness.")
	}
}

func status(e *results.Entry) string {
	if e.Status == results.StatusOK {
		return "ok"
	}
	return strings.ToUpper(e.Status)
}

func median(e *results.Entry) string {
	if e.Time == nil {
		return "-"
	}
	if e.Ops > 1 {
		return fmt.Sprintf("%.2f µs/op", e.PerOpUs)
	}
	if e.Time.MedianMs < 1 {
		return fmt.Sprintf("%.1f µs", e.Time.MedianMs*1e3)
	}
	return fmt.Sprintf("%.3f ms", e.Time.MedianMs)
}

func rate(e *results.Entry) string {
	switch {
	case e.TFLOPs > 0:
		return fmt.Sprintf("%.2f TFLOP/s", e.TFLOPs)
	case e.GBps > 0:
		return fmt.Sprintf("%.1f GB/s", e.GBps)
	}
	return "-"
}

func speedup(e *results.Entry) string {
	if e.Speedup <= 0 {
		if e.Status != results.StatusOK {
			return firstLine(e.Error, 60)
		}
		return "-"
	}
	return fmt.Sprintf("%.2f× %s", e.Speedup, e.Baseline)
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
