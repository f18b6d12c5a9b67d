package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu"
	"github.com/kernel-labs/kernellabs/internal/grade"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/site"
	"github.com/kernel-labs/kernellabs/internal/term"
)

// runFlags are the flags of `labrun run`. A new flag is a field here and a line in addRunFlags;
// its check goes in check, its use in the lab.Options that cmdRun fills.
type runFlags struct {
	variants          listFlag
	problems, suites  repeatFlag
	params            listFlag
	quick             bool
	backend           string
	device            int
	asJSON            bool
	seed              uint64
	set               string
	timeout           time.Duration
	noSave, record    bool
	emuDevices        int
	emuWarp           int
	ranks             int
	graph             bool
	noExercises       bool
	noSite, inProcess bool
	custom            map[string]string // the lab's custom-problem flags given, by name
}

func addRunFlags(fs *flags) *runFlags {
	r := &runFlags{custom: map[string]string{}}
	fs.Var(&r.variants, "variant", "run only these variants (repeat the flag or separate with commas)")
	fs.Var(&r.problems, "problem", "run only this problem of the set, by name (repeat the flag for more; names may hold commas)")
	fs.Var(&r.suites, "suite", "run only this suite (repeat the flag for more)")
	fs.BoolVar(&r.quick, "quick", false, "run the quick subset of problems with a shorter timing budget")
	fs.StringVar(&r.backend, "backend", "auto", "cuda, emu, or auto (a GPU when there is one, else the CPU emulator)")
	fs.IntVar(&r.device, "device", 0, "device index")
	fs.BoolVar(&r.asJSON, "json", false, "write one JSON document to stdout (progress still goes to stderr)")
	fs.Uint64Var(&r.seed, "seed", 0, "seed of the random inputs (default: a new one, printed)")
	fs.StringVar(&r.set, "set", "", "problem set: gpu, emu or grade (default: emu on the emulator, else gpu)")
	fs.DurationVar(&r.timeout, "timeout", 0, "time limit of one variant on one problem (default: the lab's, usually 60s)")
	fs.BoolVar(&r.noSave, "no-save", false, "do not write the results file")
	fs.BoolVar(&r.record, "record", false, "on the emulator: write the course's tracked results/emulator/ (what the site shows)\ninstead of results/local/emulator/, which git ignores")
	fs.IntVar(&r.emuDevices, "emu-devices", 0, "how many devices the CPU emulator shows (default 2)")
	fs.IntVar(&r.ranks, "ranks", 0, "labs 04 and 05: how many rank processes, one per GPU (default: the GPUs of the machine; 2 on the emulator;\nmore ranks than GPUs share them, for correctness only)")
	fs.BoolVar(&r.graph, "graph", false, "labs 04 and 05: capture each batch of timed collectives in a CUDA graph")
	fs.IntVar(&r.emuWarp, "emu-warp", 0, "lanes of a warp on the CPU emulator: 32 (NVIDIA, the default) or 64 (AMD's wave64;\nNVIDIA-only variants are skipped, the results are not saved)")
	fs.BoolVar(&r.noExercises, "no-exercises", false, "leave out the lab's exercise variants (in a student edition they hold the student's code; CI checks the rest)")
	fs.BoolVar(&r.noSite, "no-site", false, "do not rebuild the site (site/public) after the run")
	fs.BoolVar(&r.inProcess, "in-process", false, "run the kernels in labrun's own process, for profilers that do not follow its\nworker processes (ncu, nsys, compute-sanitizer): no time limit, and a crash ends the run")
	return r
}

// check refuses values that make no sense, before anything is built; fs tells which were given.
func (r *runFlags) check(fs *flags) error {
	switch {
	case r.timeout < 0:
		return fmt.Errorf("--timeout %s: give a positive duration (e.g. 2m), or leave it out for the lab's", r.timeout)
	case r.emuDevices < 0 || r.emuDevices == 0 && fs.Changed("emu-devices"):
		return fmt.Errorf("--emu-devices %d: give at least 1", r.emuDevices)
	case r.emuWarp != 0 && r.emuWarp != 32 && r.emuWarp != 64:
		return fmt.Errorf("--emu-warp %d: an emulated warp has 32 lanes (NVIDIA) or 64 (AMD's wave64)", r.emuWarp)
	case r.device < 0:
		return fmt.Errorf("--device %d: devices are numbered from 0", r.device)
	case r.set != "" && !slices.Contains(lab.ProblemSets, r.set):
		msg := fmt.Sprintf("--set %s: the problem sets are %s", r.set, strings.Join(lab.ProblemSets, ", "))
		if s := term.Suggest(r.set, lab.ProblemSets); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return errors.New(msg)
	}
	return nil
}

// addCustomFlags registers the custom-problem flags of lab m (from its lab.yaml) and --param,
// which every lab takes, under their own heading of the help. m is nil when the command line
// names no lab: the help then says where the lab's own flags are.
func addCustomFlags(fs *flags, r *runFlags, m *lab.Manifest) error {
	heading := "Custom problem (labrun NN --help lists lab NN's own flags for it):"
	if m != nil {
		if err := m.CheckCustomFlagNames(fs.Name(), func(n string) bool { return fs.Lookup(n) != nil || n == "help" }); err != nil {
			return err
		}
		fs.helpCommand = "labrun " + m.ID
		heading = fmt.Sprintf("Custom problem of lab %s (custom_flags in its lab.yaml; recorded as \"custom ...\"):", m.Name)
	}
	fs.section(heading, func() {
		if m != nil {
			for _, f := range m.CustomFlags {
				name := f.Name
				fs.Func(name, fmt.Sprintf("%s; sets %s", f.Help.EN, strings.Join(f.Sets, ", ")), func(v string) error {
					if v = strings.TrimSpace(v); v == "" {
						return fmt.Errorf("--%s needs a value", name)
					}
					r.custom[name] = v
					return nil
				})
			}
		}
		fs.Var(&r.params, lab.ParamFlag, "sets a parameter of the custom problem, `KEY=VALUE`, any that the lab's problems use\n(repeat the flag, or separate with commas)")
	})
	return nil
}

// labArgument finds the lab a command line names before its flags are parsed (a lab's
// custom-problem flags depend on it): the first argument that is neither a flag of the command
// nor a flag's value. Flags it does not know yet (the lab's own) are skipped with their values.
func labArgument(args []string, declare func(*flags)) string {
	scan := newFlags("scan", io.Discard, io.Discard)
	declare(scan)
	scan.ParseErrorsAllowlist.UnknownFlags = true
	_ = scan.Parse(longFlags(scan.FlagSet, args)) // errors are reported by the real parse
	if scan.NArg() > 0 {
		return scan.Arg(0)
	}
	return ""
}

func cmdRun(fs *flags, args []string, stdout, stderr io.Writer) int {
	r := addRunFlags(fs)
	fs.intro = `Usage: labrun run NN [flags]   (or: labrun NN [flags])

Builds lab NN's kernels, checks every variant against a reference on fresh random inputs,
times it with device events against the lab's baseline (cuBLAS, the driver's memcpy, NCCL)
and merges the results into results/<device>/NN_name.json (an emulator run: into
results/local/emulator/, which git ignores, unless --record). A variant that crashes or hangs
is recorded as failed and the run goes on.

Flags:
`
	// The lab comes first: its lab.yaml declares its custom-problem flags.
	var man *lab.Manifest
	root := ""
	if name := labArgument(args, func(f *flags) { addRunFlags(f) }); name != "" {
		var code int
		if root, man, code = loadLab(name, stderr); code != exitOK {
			return code
		}
	}
	if err := addCustomFlags(fs, r, man); err != nil {
		return exitFor(err, stderr)
	}
	name, code, ok := requiredArg(fs, args, "which lab? e.g. labrun run 01 (labrun list shows them)")
	if !ok {
		return code
	}
	if man == nil || root == "" { // the scan and the parse disagree only on odd command lines ("--")
		var code int
		if root, man, code = loadLab(name, stderr); code != exitOK {
			return code
		}
	}
	if err := r.check(fs); err != nil {
		fmt.Fprintf(stderr, "labrun run: %v\n", err)
		return exitUsage
	}
	// Progress and messages fit the terminal: long lines wrap at spaces, nothing is cut.
	fit := term.NewWrapWriter(stderr, term.Width())
	defer fit.Flush()
	stderr = fit
	if len(r.params) > 0 {
		r.custom[lab.ParamFlag] = strings.Join(r.params, ",")
	}
	if r.emuDevices != 0 {
		// The worker processes inherit the setting through the environment.
		os.Setenv(emu.EnvDevices, strconv.Itoa(r.emuDevices))
	}
	if r.emuWarp != 0 {
		os.Setenv(emu.EnvWarp, strconv.Itoa(r.emuWarp))
	}
	if w, err := emu.WarpSize(); err == nil && w != 32 && !r.noSave && r.backend != "cuda" {
		// results/emulator holds the default (32-lane) runs; a wave64 run checks portability.
		fmt.Fprintf(stderr, "labrun run: %d-lane warps: the results are not saved (results/ holds 32-lane runs)\n", w)
		r.noSave = true
	}
	variants := r.variants
	if r.noExercises {
		variants = withoutExercises(man, variants)
		if len(variants) == 0 {
			fmt.Fprintf(stderr, "labrun run: lab %s has no variant but its exercises\n", man.Name)
			return exitUsage
		}
	}

	ctx, stop := interruptible()
	defer stop()
	started := time.Now()
	out, err := lab.Run(ctx, lab.Options{Root: root, Lab: name, Variants: variants, Problems: r.problems, Suites: r.suites, Quick: r.quick,
		Backend: r.backend, Device: r.device, Seed: r.seed, SeedSet: fs.Changed("seed"), Set: r.set, Custom: r.custom, Timeout: r.timeout,
		NoSave: r.noSave, Record: r.record, InProcess: r.inProcess, Ranks: r.ranks, Graph: r.graph, Progress: stderr})
	if err != nil {
		return exitFor(err, stderr)
	}
	if r.asJSON {
		doc := map[string]any{"lab": out.Manifest.Name, "device": out.Device, "seed": out.Seed,
			"results_path": out.Path, "saved_to": out.SavedTo, "failures": out.Failures, "entries": out.Results.Entries,
			"extra": out.Results.Extra}
		if out.SaveError != nil {
			doc["save_error"] = out.SaveError.Error()
		}
		writeJSON(stdout, doc)
	} else {
		printTable(stdout, out, term.Width())
	}
	fmt.Fprintf(stderr, "done in %.1fs", time.Since(started).Seconds())
	if out.SavedTo != "" && out.SaveError == nil {
		fmt.Fprintf(stderr, "; results in %s", relPath(root, out.SavedTo))
		if out.Local {
			fmt.Fprint(stderr, " (not tracked by git and not on the site; --record writes results/emulator/)")
		}
	}
	fmt.Fprintln(stderr)
	if ctx.Err() != nil {
		switch {
		case out.SavedTo != "" && out.SaveError == nil:
			fmt.Fprintf(stderr, "labrun: interrupted; the results measured so far were saved, the %d jobs not finished were not (the file keeps their earlier results)\n", out.Unfinished)
		case out.SaveError != nil:
			fmt.Fprintf(stderr, "labrun: interrupted, and saving the results measured so far failed: %v\n", out.SaveError)
		case len(out.Results.Entries) > out.Unfinished: // --no-save
			fmt.Fprintf(stderr, "labrun: interrupted with %d jobs not finished; nothing was saved (--no-save)\n", out.Unfinished)
		default:
			fmt.Fprintln(stderr, "labrun: interrupted before any result was measured; nothing was saved")
		}
		return exitFailures
	}
	if out.SavedTo == out.Path && out.SaveError == nil && !out.Local && !r.noSite {
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

// printTable prints the results suite by suite, each table fitted to width columns. On a GPU
// a row shows the median time, the rate and the speedup over the suite's baseline; on the
// emulator, whose times are not performance figures, it shows what the emulator does measure:
// the check's relative error against its tolerance. Skipped variants become one line per suite,
// and a variant that failed the same way on every problem (a compile error) one row.
func printTable(w io.Writer, out *lab.Outcome, width int) {
	emulated, shared := false, false
	var suites []string
	bySuite := map[string][]*results.Entry{}
	for i := range out.Results.Entries {
		e := &out.Results.Entries[i]
		if !out.Finished(e) {
			continue // an interrupted run's unfinished job: no result (the run says how many)
		}
		emulated = emulated || e.Emulated
		shared = shared || lab.SharedGPU(e)
		if _, ok := bySuite[e.Suite]; !ok {
			suites = append(suites, e.Suite)
		}
		bySuite[e.Suite] = append(bySuite[e.Suite], e)
	}
	for i, name := range suites {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := name
		if s := out.Manifest.Suite(name); s != nil && s.Title.EN != "" {
			title = s.Title.EN
		}
		fmt.Fprintln(w, term.Elide("== "+title, width))
		suiteTable(bySuite[name], emulated || shared).Write(w, width)
	}
	if shared && len(suites) > 0 {
		fmt.Fprintln(w)
		for _, l := range term.Wrap("Several ranks shared a GPU ("+lab.SharedGPULabel+"): the tables show each check's "+
			"relative error against its tolerance. Run one rank per GPU for times, rates and speedups.", width, "") {
			fmt.Fprintln(w, l)
		}
	}
	if emulated && len(suites) > 0 {
		fmt.Fprintln(w)
		for _, l := range term.Wrap("On the CPU emulator the times are emulated, not performance figures: it checks "+
			"correctness, so the tables show each check's relative error against its tolerance. "+
			"Run on a GPU for times, rates and speedups.", width, "") {
			fmt.Fprintln(w, l)
		}
	}
}

// suiteTable builds one suite's table.
func suiteTable(entries []*results.Entry, emulated bool) *term.Table {
	t := &term.Table{}
	baseline := ""
	for _, e := range entries {
		if e.Baseline != "" {
			baseline = e.Baseline
		}
	}
	if emulated {
		t.Header = []string{"variant", "problem", "status", "rel error", "tolerance", "note"}
		t.Elide = map[int]bool{1: true, 5: true}
	} else {
		t.Header = []string{"variant", "problem", "status", "median", "rate", "speedup", "note"}
		t.Elide = map[int]bool{1: true, 6: true}
	}
	problems := map[string]bool{}
	for _, e := range entries {
		problems[e.Problem] = true
	}
	// Failures that repeat on every problem the variant ran, with the same message: one row.
	type failure struct{ variant, status, msg string }
	count := map[failure]int{}
	for _, e := range entries {
		if e.Status != results.StatusOK && e.Status != results.StatusSkipped {
			count[failure{e.Variant, e.Status, e.Error}]++
		}
	}
	shown := map[failure]bool{}
	var skips skippedLine
	for _, e := range entries {
		if e.Status == results.StatusSkipped {
			skips.add(e.Variant, e.Error)
			continue
		}
		problem := e.Problem
		f := failure{e.Variant, e.Status, e.Error}
		if n := count[f]; n > 1 {
			if shown[f] {
				continue
			}
			shown[f] = true
			problem = fmt.Sprintf("%d problems", n)
			if n == len(problems) {
				problem = fmt.Sprintf("all %d problems", n)
			}
		}
		note := ""
		if e.Status != results.StatusOK {
			note = firstLine(e.Error)
		}
		if emulated {
			t.Row(e.Variant, problem, status(e), relErr(e), tolerance(e), note)
		} else {
			t.Row(e.Variant, problem, status(e), median(e), rate(e), speedup(e), note)
		}
	}
	if baseline != "" {
		t.Line("speedup: over " + baseline + ", the suite's baseline, measured in the same run")
	}
	if line := skips.String(); line != "" {
		t.Line(line)
	}
	return t
}

// skippedLine collects the skipped variants of a suite by reason, in order, for its one line.
type skippedLine struct {
	reasons []string
	by      map[string][]string
}

func (s *skippedLine) add(variant, reason string) {
	if s.by == nil {
		s.by = map[string][]string{}
	}
	vs, seen := s.by[reason]
	if !seen {
		s.reasons = append(s.reasons, reason)
	}
	for _, v := range vs {
		if v == variant {
			return
		}
	}
	s.by[reason] = append(vs, variant)
}

// String is one line: "skipped: a, b (reason); c (other reason)", or "" when nothing was skipped.
func (s *skippedLine) String() string {
	if len(s.reasons) == 0 {
		return ""
	}
	var parts []string
	for _, r := range s.reasons {
		parts = append(parts, strings.Join(s.by[r], ", ")+" ("+r+")")
	}
	return "skipped: " + strings.Join(parts, "; ")
}

func status(e *results.Entry) string {
	if e.Status == results.StatusOK {
		return "ok"
	}
	return strings.ToUpper(e.Status)
}

func relErr(e *results.Entry) string {
	if e.Check == nil || e.Check.Checked == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1e", e.Check.RelErr)
}

func tolerance(e *results.Entry) string {
	if e.Check == nil || e.Check.Tolerance == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0e", e.Check.Tolerance)
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
		return "-"
	}
	return fmt.Sprintf("%.2f×", e.Speedup)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

// withoutExercises are the variants of m (among only, when given) that are not exercises.
func withoutExercises(m *lab.Manifest, only []string) []string {
	keep := map[string]bool{}
	for _, n := range only {
		keep[n] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, s := range m.Suites {
		for _, v := range s.Variants {
			if grade.IsExercise(m, v) || seen[v.Name] || len(only) > 0 && !keep[v.Name] {
				continue
			}
			seen[v.Name] = true
			out = append(out, v.Name)
		}
	}
	return out
}

// relPath shows a path under the course root relative to it.
func relPath(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// loadLab finds the course root and loads the lab named on the command line.
func loadLab(name string, stderr io.Writer) (root string, man *lab.Manifest, code int) {
	if root, code = findRoot(stderr); code != exitOK {
		return "", nil, code
	}
	m, err := lab.Load(root, name)
	if err != nil {
		return "", nil, exitFor(err, stderr)
	}
	return root, m, exitOK
}
