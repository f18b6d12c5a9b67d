package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/compare"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/results"
	"github.com/kernel-labs/kernellabs/internal/term"
)

func cmdCompare(fs *flags, args []string, stdout, stderr io.Writer) int {
	failPct := fs.Float64("fail-on-regression", -1, "exit 1 when a variant is slower by more than this percent, outside the noise (default: no check)")
	asJSON := fs.Bool("json", false, "write one JSON document to stdout")
	quick := fs.Bool("quick", false, "when NEW is a lab: run its quick subset")
	backend := fs.String("backend", "auto", "when NEW is a lab: cuda, emu or auto")
	var variants listFlag
	fs.Var(&variants, "variant", "when NEW is a lab: run only these variants")
	fs.intro = `Usage: labrun compare OLD NEW [flags]

Compares two results files of one lab, variant by variant and problem by problem: the ratio of
the median times and the change in percent. A change counts only when the min–max ranges of the
two runs do not overlap; otherwise it is shown as ~ (within the noise), as benchstat does.
NEW may also be a lab (e.g. 02): it is run now, not saved, and compared with OLD.

  labrun compare results/nvidia-h200/02_gemm.json /tmp/02_gemm.json
  labrun compare results/nvidia-h200/02_gemm.json 02 --quick --fail-on-regression 5

Flags:
`
	if code, ok := fs.parse(args); !ok {
		return code
	}
	pos := fs.Args()
	if fs.Changed("fail-on-regression") && *failPct < 0 {
		fmt.Fprintf(stderr, "labrun compare: --fail-on-regression %g: give a percentage of 0 or more (leave the flag out for no check)\n", *failPct)
		return exitUsage
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "labrun compare: give two results files, or a results file and a lab (labrun compare --help)")
		return exitUsage
	}
	old, err := loadResults(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "labrun compare: %v\n", err)
		return exitUsage
	}
	var newer *results.File
	if st, err := os.Stat(pos[1]); err == nil && !st.IsDir() {
		if newer, err = loadResults(pos[1]); err != nil {
			fmt.Fprintf(stderr, "labrun compare: %v\n", err)
			return exitUsage
		}
	} else if isLabName(pos[1]) {
		root, code := findRoot(stderr)
		if code != exitOK {
			return code
		}
		ctx, stop := interruptible()
		defer stop()
		out, err := lab.Run(ctx, lab.Options{Root: root, Lab: pos[1], Quick: *quick, Backend: *backend,
			Variants: variants, NoSave: true, Progress: stderr})
		if err != nil {
			return exitFor(err, stderr)
		}
		newer = out.Results
	} else {
		fmt.Fprintf(stderr, "labrun compare: %s is neither a results file nor a lab\n", pos[1])
		return exitUsage
	}
	if old.Lab != newer.Lab {
		fmt.Fprintf(stderr, "labrun compare: the files are of different labs (%s, %s)\n", old.Lab, newer.Lab)
		return exitUsage
	}
	if old.Device.Name != newer.Device.Name {
		fmt.Fprintf(stderr, "note: comparing different devices (%s, %s)\n", old.Device.Name, newer.Device.Name)
	}
	var emulated []string
	if old.Device.Emulated {
		emulated = append(emulated, "OLD ("+pos[0]+")")
	}
	if newer.Device.Emulated {
		emulated = append(emulated, "NEW ("+pos[1]+")")
	}
	if len(emulated) > 0 {
		w := term.NewWrapWriter(stderr, term.Width())
		fmt.Fprintf(w, "note: %s ran on the CPU emulator: its times are emulated, not performance figures, so no row "+
			"is called faster or slower and --fail-on-regression does not count them\n", strings.Join(emulated, " and "))
		w.Flush()
	}
	rows := compare.Files(old, newer)
	var regs []compare.Row
	if *failPct >= 0 {
		regs = compare.Regressions(rows, *failPct)
	}
	if *asJSON {
		writeJSON(stdout, map[string]any{"lab": old.Lab, "old": pos[0], "new": pos[1], "rows": rows, "regressions": regs})
	} else {
		printComparison(stdout, rows, term.Width())
	}
	if len(regs) > 0 {
		fmt.Fprintf(stderr, "labrun compare: %d regression(s) over %.1f%%:", len(regs), *failPct)
		for _, r := range regs {
			fmt.Fprintf(stderr, " %s/%s %s (+%.1f%%)", r.Suite, r.Variant, r.Problem, r.Change)
		}
		fmt.Fprintln(stderr)
		return exitFailures
	}
	return exitOK
}

func loadResults(path string) (*results.File, error) {
	f, err := results.Load(path)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("%s: no such results file", path)
	}
	return f, nil
}

func printComparison(w io.Writer, rows []compare.Row, width int) {
	t := &term.Table{Header: []string{"suite", "variant", "problem", "old median", "new median", "change", "verdict"},
		Elide: map[int]bool{2: true, 6: true}}
	for _, r := range rows {
		old, nw, change := "-", "-", ""
		if r.Old != nil {
			old = fmt.Sprintf("%.4g ms ±%.0f%%", r.Old.MedianMs, spread(r.Old.MinMs, r.Old.MaxMs, r.Old.MedianMs))
		}
		if r.New != nil {
			nw = fmt.Sprintf("%.4g ms ±%.0f%%", r.New.MedianMs, spread(r.New.MinMs, r.New.MaxMs, r.New.MedianMs))
		}
		if r.Speedup > 0 {
			change = fmt.Sprintf("%+.1f%%", r.Change)
		}
		verdict := r.Verdict
		if r.Note != "" && r.Verdict != compare.Emulated { // the emulator note is said once, above
			verdict += " (" + r.Note + ")"
		}
		t.Row(r.Suite, r.Variant, r.Problem, old, nw, change, verdict)
	}
	t.Write(w, width)
	for _, l := range term.Wrap("±: half the min–max range over the median. ~: the ranges overlap, so the runs show no change.", width, "") {
		fmt.Fprintln(w, l)
	}
}

func spread(min, max, med float64) float64 {
	if med <= 0 {
		return 0
	}
	return (max - min) / 2 / med * 100
}
