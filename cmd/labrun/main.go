// Command labrun runs the Kernel Labs course: it builds a lab's kernels, checks every variant
// against a reference, times it against the vendor baseline, records the results and renders
// the site.
//
// Exit codes:
//
//	0  everything that ran was correct
//	1  a variant was wrong, failed, crashed or timed out (the others still ran and were recorded);
//	   labrun grade: a lab scored below its pass mark
//	2  bad input: unknown command, lab or variant, bad flag, malformed lab.yaml
//	3  the environment lacks something: no GPU or driver, no compiler, no library
//	4  the results could not be saved where they belong (a corrupt results file is kept as it
//	   was; this run's results were written beside it), or the grade reports could not be written
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/selfexec"
	"github.com/kernel-labs/kernellabs/internal/term"
)

const (
	exitOK       = 0
	exitFailures = 1
	exitUsage    = 2
	exitEnv      = 3
	exitSave     = 4
)

const usage = `labrun — Kernel Labs (算子实验室): build, check, time and record GPU kernels.

Usage:
  labrun NN [flags]          run lab NN (same as labrun run NN)
  labrun run NN [flags]      run a lab: build its kernels, check every variant, time it
                             against the vendor baseline, write results/<device>/NN_*.json
  labrun list [--json]       list the labs, their suites and variants
  labrun doctor [--json]     say which GPUs, drivers, compilers and libraries are present
                             and how to install what is missing
  labrun site [--out DIR]    render the course site (notes, kernels, results) into site/public/
  labrun grade NN|all [--submission DIR|FILE]
                             grade exercise files: correctness on fresh inputs (and speed on a
                             GPU), reports for CI (JUnit XML, Gradescope results.json, summary)
  labrun export DIR          write the student edition: solutions replaced by TODO stubs, plus
                             a GitHub Actions workflow that grades it
  labrun profile NN [--variant V] [--problem P]
                             profile variants under Nsight Compute (ncu): throughput, occupancy,
                             stalls, bank conflicts, cache hit rates, in NN_*.profile.json
  labrun hip-check [LAB...]  compile every portable kernel (no needs: [nvidia]) for AMD GPUs:
                             gfx90a with hipcc, gfx942 with clang-19 (device code, nothing runs)
  labrun compare OLD NEW     compare two results files (or a file and a fresh run of a lab):
                             ratios per variant and problem, changes within the noise marked ~
  labrun help [COMMAND]      show help
  labrun --version           the commit and Go module version of this labrun

Run 'labrun COMMAND --help' for a command's flags.

Exit codes: 0 all correct; 1 a variant failed (others still ran), or a grade below the
pass mark; 2 bad input; 3 missing GPU, driver, compiler or library; 4 results (or grade
reports) could not be saved.
`

// commands are the names labrun answers to, for "did you mean".
var commands = []string{"run", "list", "doctor", "site", "grade", "export", "compare", "help", "version"}

func main() {
	if code, ok := selfexec.Dispatch(); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// subcommands run the commands that take their own arguments (after the command's name), each
// with a flag set of its own named after it.
var subcommands = map[string]func(fs *flags, args []string, stdout, stderr io.Writer) int{
	"list":      cmdList,
	"doctor":    cmdDoctor,
	"run":       cmdRun,
	"profile":   cmdProfile,
	"compare":   cmdCompare,
	"site":      cmdSite,
	"grade":     cmdGrade,
	"export":    cmdExport,
	"hip-check": cmdHIPCheck,
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case lab.WorkerArg:
		return lab.RunWorkerFromEnv()
	case "help", "-h", "--help":
		if len(rest) > 0 {
			return run([]string{rest[0], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	case "version", "--version", "-version", "-v":
		return cmdVersion(stdout)
	}
	if c, ok := subcommands[cmd]; ok {
		return c(newFlags(cmd, stdout, stderr), rest, stdout, stderr)
	}
	if isLabName(cmd) {
		return cmdRun(newFlags("run", stdout, stderr), args, stdout, stderr)
	}
	msg := fmt.Sprintf("labrun: unknown command %q", cmd)
	if strings.HasPrefix(cmd, "-") {
		msg = fmt.Sprintf("labrun: unknown flag %s before a command", cmd)
	}
	if s := term.Suggest(strings.TrimLeft(cmd, "-"), commands); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	fmt.Fprintf(stderr, "%s; 'labrun help' lists the commands\n", msg)
	return exitUsage
}

// isLabName accepts "1", "01", "01_device_props".
func isLabName(s string) bool {
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// exitFor maps an error to an exit code and prints it.
func exitFor(err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "labrun: %v\n", err)
	var ue *lab.UsageError
	var ul *lab.UnknownLabError
	var me *lab.FileError
	var ee *lab.EnvError
	switch {
	case errors.As(err, &ue), errors.As(err, &ul), errors.As(err, &me):
		return exitUsage
	case errors.As(err, &ee):
		return exitEnv
	}
	if strings.Contains(err.Error(), "lab.yaml") {
		return exitUsage
	}
	return exitEnv
}

// interruptible is the context of a command's work: an interrupt (Ctrl-C) cancels it, and the
// engine then stops between jobs and keeps what it measured.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// writeJSON writes v to w as indented JSON: the output of every --json.
func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func findRoot(stderr io.Writer) (string, int) {
	wd, _ := os.Getwd()
	root, err := lab.FindRoot(wd)
	if err != nil {
		fmt.Fprintf(stderr, "labrun: %v\n", err)
		return "", exitUsage
	}
	return root, exitOK
}

// parseArgs parses a command's flags, which may stand before or after its one positional
// argument ("labrun grade 02 --json" or "labrun grade --json 02"). It returns the argument ("" when
// there is none), or ok false with the exit code when the command should stop (--help, a bad flag).
func parseArgs(fs *flags, args []string) (arg string, code int, ok bool) {
	if code, ok := fs.parse(args); !ok {
		return "", code, false
	}
	switch fs.NArg() {
	case 0:
		return "", exitOK, true
	case 1:
		return fs.Arg(0), exitOK, true
	}
	fmt.Fprintf(fs.stderr, "labrun %s: unexpected argument %q ('labrun %s --help' shows how to call it)\n", fs.Name(), fs.Arg(1), fs.Name())
	return "", exitUsage, false
}

// requiredArg is parseArgs for a command that cannot do without its argument: when it is missing
// the command stops with exit status 2 and "labrun NAME: " + missing (what to give, with an example).
func requiredArg(fs *flags, args []string, missing string) (arg string, code int, ok bool) {
	arg, code, ok = parseArgs(fs, args)
	if ok && arg == "" {
		fmt.Fprintf(fs.stderr, "labrun %s: %s\n", fs.Name(), missing)
		return "", exitUsage, false
	}
	return arg, code, ok
}
