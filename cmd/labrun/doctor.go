package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/gpu/backends"
	"github.com/kernel-labs/kernellabs/internal/term"
)

// finding is one line of `labrun doctor`.
type finding struct {
	Backend string `json:"backend"` // the backend that needs it ("cuda", "emu")
	Name    string `json:"name"`
	Found   bool   `json:"found"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

func cmdDoctor(fs *flags, args []string, stdout, stderr io.Writer) int {
	asJSON := fs.Bool("json", false, "write JSON to stdout")
	fs.intro = "Usage: labrun doctor [--json]\n\nSays which GPUs, drivers, compilers and libraries labrun can use, and how to install what is missing.\nExit status 0 when at least one backend (a GPU or the emulator) can run labs, else 3.\n\nFlags:\n"
	if code, ok := fs.parse(args); !ok {
		return code
	}
	checks, usable := diagnose()
	current := currentBackend(usable)
	if *asJSON {
		writeJSON(stdout, map[string]any{"checks": checks, "usable_backends": usable, "current_backend": current})
	} else {
		printDoctor(term.NewWrapWriter(stdout, term.Width()), checks, usable, current)
	}
	if len(usable) == 0 {
		return exitEnv
	}
	return exitOK
}

// printDoctor prints the checks of the backend that labrun uses here first, then the others.
func printDoctor(w *term.WrapWriter, checks []finding, usable []string, current string) {
	defer w.Flush()
	order := []string{current}
	for _, reg := range registered() {
		if reg.Name != current {
			order = append(order, reg.Name)
		}
	}
	for i, b := range order {
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := b
		if reg, err := backends.Lookup(b); err == nil {
			title = reg.Title
		}
		switch {
		case b == current && slices.Contains(usable, b):
			fmt.Fprintf(w, "%s: what labrun uses here\n", title)
		case b == current:
			fmt.Fprintf(w, "%s: what labrun would use here, once the missing parts are installed\n", title)
		case slices.Contains(usable, b):
			fmt.Fprintf(w, "%s: also usable here\n", title)
		default:
			fmt.Fprintf(w, "%s: not usable here; needed only to run labs on it\n", title)
		}
		for _, f := range checks {
			if f.Backend != b {
				continue
			}
			mark := "ok     "
			if !f.Found {
				mark = "MISSING"
			}
			fmt.Fprintf(w, "  %s %s: %s\n", mark, f.Name, f.Detail)
			if !f.Found && f.Fix != "" {
				fmt.Fprintf(w, "          fix: %s\n", f.Fix)
			}
		}
	}
	if len(usable) == 0 {
		fmt.Fprintf(w, "\nNo backend can run labs here: install what %s lacks (each MISSING line says how; make setup installs the emulator's packages).\n", current)
	} else {
		fmt.Fprintf(w, "\nBackends that can run labs: %s (labrun picks the first with --backend auto)\n", strings.Join(usable, ", "))
	}
}

// registered lists the backends labrun carries, in the order --backend auto tries them: what
// each registers (internal/gpu/backends) is what doctor checks.
func registered() []backends.Registration {
	var out []backends.Registration
	for _, name := range gpu.Preference() {
		if reg, err := backends.Lookup(name); err == nil {
			out = append(out, reg)
		}
	}
	return out
}

// diagnose runs every registered backend's checks. It returns them and the backends that can
// run labs here, in the order --backend auto tries them.
func diagnose() (checks []finding, usable []string) {
	for _, reg := range registered() {
		cs, ok := reg.Doctor()
		for _, c := range cs {
			checks = append(checks, finding{Backend: reg.Name, Name: c.Name, Found: c.Found, Detail: c.Detail, Fix: c.Fix})
		}
		if ok {
			usable = append(usable, reg.Name)
		}
	}
	return checks, usable
}

// currentBackend is the backend --backend auto picks here: the first usable one, or when none
// is, the last it tries (the emulator), the one that needs the least to install.
func currentBackend(usable []string) string {
	if len(usable) > 0 {
		return usable[0]
	}
	regs := registered()
	if len(regs) == 0 {
		return ""
	}
	return regs[len(regs)-1].Name
}
