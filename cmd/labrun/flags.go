package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kernel-labs/kernellabs/internal/term"
)

// flags is a command's flag set, parsed by pflag: flags and arguments may be interspersed, help
// goes to stdout with every flag written as --flag, and a bad flag is one line on stderr with a
// suggestion, not the whole usage.
type flags struct {
	*pflag.FlagSet
	intro          string // the help text above the list of flags
	stdout, stderr io.Writer
	sections       []string // headings of the later groups of flags (a lab's custom-problem flags)
	helpCommand    string   // the command whose --help lists these flags ("labrun 02"); default "labrun NAME"
}

// sectionKey is the annotation that puts a flag under one of the help's later headings.
const sectionKey = "labrun-section"

func newFlags(name string, stdout, stderr io.Writer) *flags {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false     // help lists the flags in the order they are declared
	fs.SetOutput(io.Discard) // parse errors are reported by flagError, help by help()
	fs.Usage = func() {}     // pflag calls it for --help too
	return &flags{FlagSet: fs, stdout: stdout, stderr: stderr}
}

// section puts the flags that add declares under heading: the help lists them after the
// command's own flags.
func (f *flags) section(heading string, add func()) {
	before := map[string]bool{}
	f.VisitAll(func(fl *pflag.Flag) { before[fl.Name] = true })
	add()
	f.VisitAll(func(fl *pflag.Flag) {
		if !before[fl.Name] {
			fl.Annotations = map[string][]string{sectionKey: {heading}}
		}
	})
	f.sections = append(f.sections, heading)
}

func (f *flags) help() {
	w := term.NewWrapWriter(f.stdout, term.Width())
	fmt.Fprint(w, f.intro)
	w.Flush()
	f.printFlags("")
	for _, s := range f.sections {
		fmt.Fprintln(w)
		fmt.Fprintln(w, s)
		w.Flush()
		f.printFlags(s)
	}
}

// printFlags lists the flags of one section ("": the command's own) as "--name TYPE" with the
// usage wrapped underneath.
func (f *flags) printFlags(section string) {
	width := term.Width()
	f.VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden || sectionOf(fl) != section {
			return
		}
		kind, usage := pflag.UnquoteUsage(fl)
		switch kind {
		case "value", "func": // a list or a custom problem's flag: name the value after the flag
			kind = strings.ToUpper(fl.Name)
		case "float":
			kind = "number"
		}
		head := "  --" + fl.Name
		if kind != "" {
			head += " " + kind
		}
		fmt.Fprintln(f.stdout, head)
		// The default, unless it is a zero value or the usage says it in words ("default: the lab's").
		if def := fl.DefValue; def != "" && def != "false" && def != "0" && def != "0s" && def != "[]" && !strings.Contains(usage, "(default") {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		for _, para := range strings.Split(usage, "\n") {
			for _, l := range term.Wrap("      "+strings.TrimSpace(para), width, "      ") {
				fmt.Fprintln(f.stdout, l)
			}
		}
	})
}

func sectionOf(fl *pflag.Flag) string {
	if s := fl.Annotations[sectionKey]; len(s) > 0 {
		return s[0]
	}
	return ""
}

// flagError turns pflag's parse error into one line: the flag written as --flag, a "did you
// mean" for an unknown one, what a value should look like, and where the full list is.
func (f *flags) flagError(err error) string {
	fs := f.FlagSet
	var (
		notExist *pflag.NotExistError
		invalid  *pflag.InvalidValueError
		required *pflag.ValueRequiredError
	)
	msg := err.Error()
	switch {
	case errors.As(err, &notExist):
		bad := notExist.GetSpecifiedName()
		var names []string
		fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		sort.Strings(names)
		msg = "unknown flag --" + bad
		if s := term.Suggest(bad, names); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	case errors.As(err, &invalid):
		fl := invalid.GetFlag()
		msg = fmt.Sprintf("invalid value %q for flag --%s", invalid.GetValue(), fl.Name)
		if cause := invalid.Unwrap(); cause != nil { // pflag says what a value must be ("must be an integer")
			msg += ": " + cause.Error()
		}
	case errors.As(err, &required):
		msg = fmt.Sprintf("flag --%s needs a value", required.GetSpecifiedName())
	}
	help := f.helpCommand
	if help == "" {
		help = "labrun " + fs.Name()
	}
	return fmt.Sprintf("labrun %s: %s; '%s --help' lists the flags", fs.Name(), msg, help)
}

// parse parses args; ok is false when the command should stop with code (after --help, or a bad
// flag, which it reports on stderr).
func (f *flags) parse(args []string) (code int, ok bool) {
	if err := f.Parse(longFlags(f.FlagSet, args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			f.help()
			return exitOK, false
		}
		fmt.Fprintln(f.stderr, f.flagError(err))
		return exitUsage, false
	}
	return exitOK, true
}

// longFlags rewrites "-name" as "--name": labrun's flags have no one-letter forms, and the
// standard library's flag package (which labrun used before) took both spellings. A flag's value
// is left alone ("--rounds -1" stays as it is), and so is -h, pflag's help.
func longFlags(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && isLetter(a[1]) {
			a = "-" + a
		}
		out = append(out, a)
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(name, "=") {
			if fl := fs.Lookup(name); fl != nil && fl.NoOptDefVal == "" && i+1 < len(args) {
				i++ // the next argument is this flag's value
				out = append(out, args[i])
			}
		}
	}
	return out
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// listFlag collects a flag given several times or with commas: --variant a,b --variant c.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Type() string   { return "value" }
func (l *listFlag) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// repeatFlag collects a flag given several times, each value whole (problem names hold commas).
type repeatFlag []string

func (l *repeatFlag) String() string { return strings.Join(*l, "; ") }
func (l *repeatFlag) Type() string   { return "value" }
func (l *repeatFlag) Set(s string) error {
	if s = strings.TrimSpace(s); s == "" {
		return fmt.Errorf("needs a value")
	}
	*l = append(*l, s)
	return nil
}
