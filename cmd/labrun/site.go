package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kernel-labs/kernellabs/internal/site"
)

func cmdSite(fs *flags, args []string, stdout, stderr io.Writer) int {
	out := fs.String("out", "", "folder to write the site into (default: site/public under the course root)")
	rootFlag := fs.String("root", "", "the course folder (default: found from the current folder, or $LABRUN_ROOT)")
	strict := fs.Bool("strict", false, "fail when the languages of a lab are out of step, a lab has notes in one language only, or a results file cannot be read")
	asJSON := fs.Bool("json", false, "write the build report as JSON to stdout")
	fs.intro = `Usage: labrun site [--out DIR] [--root DIR] [--strict] [--json]

Renders the course site from the labs' notes (notes.en.md, notes.zh.md), kernels and results/
into site/public/: a course index, every lab in English and Chinese, a page per device with
results, and how to run the course. The site is self-contained: open site/public/index.html, or
publish the folder anywhere (it uses relative links only).

An error in a notes file (a cell naming a file, function, suite, variant, problem or device that
does not exist) fails the build with file:line; the previous site is left as it was.

Flags:
`
	if code, ok := fs.parse(args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "labrun site: unexpected argument %q (see labrun site --help)\n", fs.Arg(0))
		return exitUsage
	}
	root := *rootFlag
	if root == "" {
		r, code := findRoot(stderr)
		if code != exitOK {
			return code
		}
		root = r
	} else if st, err := os.Stat(filepath.Join(root, "labs")); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "labrun site: --root %s is not the course folder (it has no labs/ folder)\n", root)
		return exitUsage
	}
	dir := *out
	if dir == "" {
		dir = site.DefaultOutDir(root)
	} else if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		fmt.Fprintf(stderr, "labrun site: --out %s is a file: give a folder for the site\n", dir)
		return exitUsage
	}
	rep, err := site.Build(root, dir, site.Options{Strict: *strict, Log: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "labrun site: the site was not built:\n%v\n", err)
		return exitUsage
	}
	if *asJSON {
		writeJSON(stdout, rep)
		return exitOK
	}
	fmt.Fprintf(stdout, "site: %d pages, %d plots in %s (%.2fs)\nopen %s\n", len(rep.Pages), rep.Plots, rep.OutDir,
		rep.Elapsed.Seconds(), filepath.Join(rep.OutDir, "index.html"))
	return exitOK
}
