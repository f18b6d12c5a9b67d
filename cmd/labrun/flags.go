package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/term"
)

// flags is a command's flag set. The standard library parses them (it accepts -flag and --flag
// alike); labrun prints them: help goes to stdout with every flag written as --flag, and a bad
// flag is one line on stderr with a suggestion, not the whole usage.
type flags struct {
	*flag.FlagSet
	intro          string // the help text above the list of flags
	stdout, stderr io.Writer
}

func newFlags(name string, stdout, stderr io.Writer) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are reported by flagError, help by help()
	fs.Usage = func() {}     // the standard library calls it on every error too
	return &flags{FlagSet: fs, stdout: stdout, stderr: stderr}
}

func (f *flags) help() {
	w := term.NewWrapWriter(f.stdout, term.Width())
	fmt.Fprint(w, f.intro)
	w.Flush()
	printFlags(f.stdout, f.FlagSet)
}

// printFlags lists a flag set's flags as "--name TYPE" with the usage wrapped underneath.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	width := term.Width()
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		if kind == "value" { // a list or a custom problem's flag: name the value after the flag
			kind = strings.ToUpper(f.Name)
		}
		head := "  --" + f.Name
		if kind != "" {
			head += " " + kind
		}
		fmt.Fprintln(w, head)
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" && def != "[]" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		for _, para := range strings.Split(usage, "\n") {
			for _, l := range term.Wrap("      "+strings.TrimSpace(para), width, "      ") {
				fmt.Fprintln(w, l)
			}
		}
	})
}

var flagNameRE = regexp.MustCompile(`(^|[ :])-([A-Za-z][A-Za-z0-9-]*)`)

// flagError turns the standard library's parse error into one line: the flag written as --flag,
// a "did you mean" for an unknown one, and where the full list is.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	const unknown = "flag provided but not defined: -"
	if rest, ok := strings.CutPrefix(msg, unknown); ok {
		bad := strings.TrimLeft(rest, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		sort.Strings(names)
		msg = "unknown flag --" + bad
		if s := term.Suggest(bad, names); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	} else {
		msg = flagNameRE.ReplaceAllString(msg, "$1--$2")
	}
	return fmt.Sprintf("labrun %s: %s; 'labrun %s --help' lists the flags", fs.Name(), msg, fs.Name())
}

// parse parses args; ok is false when the command should stop with code (after --help, or a bad
// flag, which it reports on stderr).
func (f *flags) parse(args []string) (code int, ok bool) {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.help()
			return exitOK, false
		}
		fmt.Fprintln(f.stderr, flagError(f.FlagSet, err))
		return exitUsage, false
	}
	return exitOK, true
}
