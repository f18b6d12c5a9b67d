package main

import (
	"fmt"
	"io"
	"os"

	"github.com/kernel-labs/kernellabs/internal/grade"
)

func cmdExport(fs *flags, args []string, stdout, stderr io.Writer) int {
	force := fs.Bool("force", false, "write into DIR even if it is not empty")
	noCheck := fs.Bool("no-check", false, "do not compile the exported exercise files (on the CPU emulator) to prove that the stubs compile")
	fs.intro = `Usage: labrun export DIR [flags]

Writes the student edition of the course into DIR (a folder outside the course): every file that
git tracks (results and the site's sources included; untracked files, reports and caches never)
with every BEGIN SOLUTION … END SOLUTION region replaced by a TODO stub that compiles (lines
"// STUB: code" inside a region become the stub's code). The instructor's README, workflows and
cheat fixtures stay behind; in their place the edition gets the student's README (README.md,
README.zh.md), .github/workflows/grade.yml (feedback on every push from 'labrun grade' on an
ordinary runner, not the grade) and .student-edition (the commit it came from; the course's
tests of the reference solutions skip where it exists). The export fails if any file it wrote
still holds three consecutive code lines of a solution region (a shipped kernel that solves an
exercise). Grade the students with scripts/grade-of-record.sh at that commit.

Flags:
`
	dir, code, ok := requiredArg(fs, args, "where to? e.g. labrun export ../kernellabs-student")
	if !ok {
		return code
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		fmt.Fprintf(stderr, "labrun export: %s is a file: give a folder for the student edition\n", dir)
		return exitUsage
	}
	root, code := findRoot(stderr)
	if code != exitOK {
		return code
	}
	ctx, stop := interruptible()
	defer stop()
	rep, err := grade.Export(ctx, root, dir, grade.ExportOptions{Force: *force, NoCheck: *noCheck})
	if err != nil {
		return exitFor(err, stderr)
	}
	rep.WriteText(stdout)
	return exitOK
}
