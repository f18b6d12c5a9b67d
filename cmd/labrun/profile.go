package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/profile"
)

func cmdProfile(fs *flags, args []string, stdout, stderr io.Writer) int {
	var variants listFlag
	var problems, suites repeatFlag
	fs.Var(&variants, "variant", "profile these variants (repeat the flag or separate with commas; default: every kernel variant)")
	fs.Var(&problems, "problem", "on this problem of the GPU set (repeat for more; default: each variant's first --quick problem)")
	fs.Var(&suites, "suite", "only in this suite (repeat for more; a variant can be in several)")
	kernel := fs.String("kernel", "", "ncu's kernel filter, e.g. regex:gemm (default: the variant's kernel entry; needed for library variants)")
	count := fs.Int("launches", 1, "kernel launches to profile per variant and problem")
	kind := fs.String("kind", "", "metric set: memory, compute or latency (default: by the suite's metric: GB/s, TFLOP/s, µs)")
	backend := fs.String("backend", "auto", "cuda or auto (profiling needs a GPU)")
	device := fs.Int("device", 0, "device index")
	seed := fs.Uint64("seed", 0, "seed of the random inputs (default: a new one)")
	logDir := fs.String("log-dir", "", "keep each variant's ncu log and program output in this folder")
	asJSON := fs.Bool("json", false, "write the recorded profiles as one JSON document to stdout")
	fs.intro = `Usage: labrun profile NN [flags]

Runs the chosen variants of lab NN in labrun's own process (a lab of ranks as a world of one
rank) under Nsight Compute (ncu, from PATH
or NCU=/path/to/ncu, with --clock-control none: the GPU keeps its clocks), collects a metric set
for the kind of kernel (throughput as % of peak for SM, DRAM and L2; achieved occupancy and what
limits it; registers and shared memory; warp stall reasons; shared-memory bank conflicts; L2 hit
rate; instructions issued) and merges it into results/<device>/NN_name.profile.json, written
atomically after every variant. The notes show it with a kl-profile cell.

Exit codes: 0 recorded; 1 a variant failed its check under the profiler; 2 bad input;
3 no GPU, no ncu, no permission to read the counters, or a kernel ncu could not profile
(what was recorded before stays recorded); 4 the profile file could not be written.

Flags:
`
	name, code, ok := requiredArg(fs, args, "which lab? e.g. labrun profile 02 --variant smem_tiled")
	if !ok {
		return code
	}
	var k profile.Kind
	if *kind != "" {
		var err error
		if k, err = profile.ParseKind(*kind); err != nil {
			fmt.Fprintf(stderr, "labrun profile: --kind: %v\n", err)
			return exitUsage
		}
	}
	if *count < 1 {
		fmt.Fprintln(stderr, "labrun profile: --launches must be at least 1")
		return exitUsage
	}
	// Bad input first, then the environment: a typo is reported even where ncu is missing.
	root, man, code := loadLab(name, stderr)
	if code != exitOK {
		return code
	}
	if _, err := profile.Plan(man, suites, variants, problems, *kernel); err != nil {
		return exitFor(err, stderr)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "labrun profile: cannot find labrun's own executable for ncu to start: %v\n", err)
		return exitEnv
	}
	s := *seed
	seedSet := fs.Changed("seed")
	if !seedSet {
		s = rand.Uint64() >> 16
	}
	ctx, stop := interruptible()
	defer stop()
	out, err := profile.Run(ctx, profile.Options{Root: root, Lab: name, Suites: suites, Variants: variants, Problems: problems,
		Kernel: *kernel, Count: *count, Kind: k, Backend: *backend, Device: *device, Seed: s, Self: self,
		Progress: stderr, LogDir: *logDir, Commit: lab.GitCommit(root)})
	if err != nil && out == nil {
		return exitFor(err, stderr)
	}
	if *asJSON {
		writeJSON(stdout, map[string]any{"lab": man.Name, "path": out.Path, "saved_to": out.SavedTo, "profiles": out.Recorded,
			"failed": failures(out.Failed)})
	} else {
		printProfiles(stdout, out.Recorded)
	}
	if err != nil {
		fmt.Fprintf(stderr, "labrun profile: saving the profiles: %v\n", err)
		return exitSave
	}
	if out.SavedTo != "" {
		fmt.Fprintf(stderr, "profiles in %s\n", out.SavedTo)
	}
	code = exitOK
	for _, f := range out.Failed {
		fmt.Fprintf(stderr, "labrun profile: %s/%s on %s: %v\n", f.Job.Suite.Name, f.Job.Variant.Name, f.Job.Problem, f.Err)
		var le *profile.LogError
		if errors.As(f.Err, &le) || strings.Contains(f.Err.Error(), "interrupted") {
			code = exitEnv
		} else if code == exitOK {
			code = exitFailures
		}
	}
	if len(out.Failed) > 0 && len(out.Recorded) > 0 {
		fmt.Fprintf(stderr, "labrun profile: %d profile(s) recorded, %d variant × problem pair(s) not\n", len(out.Recorded), len(out.Failed))
	}
	return code
}

func failures(fs []profile.JobError) []map[string]string {
	var out []map[string]string
	for _, f := range fs {
		out = append(out, map[string]string{"suite": f.Job.Suite.Name, "variant": f.Job.Variant.Name,
			"problem": f.Job.Problem, "error": f.Err.Error()})
	}
	return out
}

// printProfiles prints one line per profiled launch: the figures a reader looks at first.
func printProfiles(w io.Writer, ps []profile.Profile) {
	if len(ps) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tproblem\tkernel\ttime\tSM %\tDRAM %\tL2 %\tL2 hit\toccupancy\tregs\ttop stall\t")
	for _, p := range ps {
		num := func(name, format string, scale float64) string {
			if m, ok := p.Metrics[name]; ok && m.Text == "" {
				return fmt.Sprintf(format, m.Base()*scale)
			}
			return "-"
		}
		stall := "-"
		if st := profile.TopStalls(p.Metrics, 1); len(st) > 0 {
			stall = fmt.Sprintf("%s %.1f", st[0].Reason, st[0].Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Variant, p.Problem, p.Kernel,
			num("gpu__time_duration.sum", "%.1f µs", 1e6),
			num("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%.1f", 1),
			num(profile.DRAMThroughput(p), "%.1f", 1),
			num("lts__throughput.avg.pct_of_peak_sustained_elapsed", "%.1f", 1),
			num("lts__t_sector_hit_rate.pct", "%.1f%%", 1),
			num("sm__warps_active.avg.pct_of_peak_sustained_active", "%.1f%%", 1),
			num("launch__registers_per_thread", "%.0f", 1), stall)
	}
	tw.Flush()
}
