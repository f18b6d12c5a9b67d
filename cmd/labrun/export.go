package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/kernel-labs/kernellabs/internal/grade"
)

func cmdExport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("export", stdout, stderr)
	force := fs.Bool("force", false, "write into DIR even if it is not empty")
	noCheck := fs.Bool("no-check", false, "do not compile the exported exercise files (on the CPU emulator) to prove that the stubs compile")
	fs.intro = `Usage: labrun export DIR [flags]

Writes the student edition of the course into DIR: every file of the course (results and the
site's sources included; .git, bin/, site/public/ and build caches left out) with every
BEGIN SOLUTION … END SOLUTION region replaced by a TODO stub that compiles (lines "// STUB: code"
inside a region become the stub's code), plus .github/workflows/grade.yml, a GitHub Actions
workflow that installs what labrun needs on an ordinary runner and runs 'labrun grade all'.

Flags:
`
	dir, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if dir == "" {
		fmt.Fprintln(stderr, "labrun export: where to? e.g. labrun export ../kernellabs-student")
		return exitUsage
	}
	root, code := findRoot(stderr)
	if code != exitOK {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := grade.Export(ctx, root, dir, grade.ExportOptions{Force: *force, NoCheck: *noCheck})
	if err != nil {
		return exitFor(err, stderr)
	}
	rep.WriteText(stdout)
	return exitOK
}
