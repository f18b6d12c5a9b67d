package grade

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The student edition: `labrun export DIR` copies the course into DIR with every solution region
//
//	// BEGIN SOLUTION
//	…the solution…
//	// STUB: return 0.0f;      (optional: code the stub needs to compile, uncommented on export)
//	// END SOLUTION
//
// replaced by a TODO comment with the region's indentation and comment style, followed by the
// region's STUB lines uncommented. The markers work with any line comment (//, #, --) and with
// <!-- … --> in markdown. Results and the site's sources are kept; build outputs (bin/,
// site/public/, .cache/), .git and the grader's cheat fixtures (they hold near-solutions) are not.

// WorkflowPath is where the student repository's grading workflow goes.
const WorkflowPath = ".github/workflows/grade.yml"

//go:embed workflow.yml
var workflowYAML string

// Workflow returns the GitHub Actions workflow written into the student edition.
func Workflow() string { return workflowYAML }

// ExportReport says what an export did.
type ExportReport struct {
	Dir      string
	Files    int      // files copied
	Stubbed  []string // files whose solution regions were replaced (relative paths)
	Regions  int      // solution regions replaced
	Compiled []string // exercise files compiled for the emulator after the export
	Skipped  string   // why the compile check did not run ("" when it did)
}

// ExportOptions tune an export.
type ExportOptions struct {
	Force   bool // write into a folder that is not empty
	NoCheck bool // do not compile the exported exercise files
}

// excluded paths (relative, slash-separated) that are never exported.
var excluded = []string{".git", "bin", "site/public", ".cache", "internal/grade/testdata/cheats"}

// Export writes the student edition of the course at root into dir.
func Export(ctx context.Context, root, dir string, o ExportOptions) (*ExportReport, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if dir == root || strings.HasPrefix(root, dir+string(filepath.Separator)) {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("export: %s is the course itself (or holds it); choose another folder", dir)}
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 && !o.Force {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("export: %s is not empty (use --force to write into it anyway)", dir)}
	}
	if err := checkSolutionRegions(root); err != nil {
		return nil, err
	}
	ign := readGitignore(root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rep := &ExportReport{Dir: dir}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		relp, _ := filepath.Rel(root, p)
		slash := filepath.ToSlash(relp)
		if relp == "." {
			return nil
		}
		if p == dir || skipPath(slash, d.IsDir(), ign) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dir, relp)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // links and devices are not part of the course
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if isText(data) && (HasSolution(data) || bytes.Contains(data, []byte(lab.EndSolutionMarker))) {
			out, n, err := StripSolutions(slash, data)
			if err != nil {
				return err
			}
			if n > 0 {
				data = out
				rep.Stubbed = append(rep.Stubbed, slash)
				rep.Regions += n
			}
		}
		rep.Files++
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		return rep, err
	}
	wf := filepath.Join(dir, filepath.FromSlash(WorkflowPath))
	if err := os.MkdirAll(filepath.Dir(wf), 0o755); err != nil {
		return rep, err
	}
	if err := os.WriteFile(wf, []byte(workflowYAML), 0o644); err != nil {
		return rep, err
	}
	// Nothing of a solution may remain.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && isText(b) && HasSolution(b) {
			return fmt.Errorf("export: %s still holds a %q marker", p, lab.SolutionMarker)
		}
		return err
	})
	if err != nil {
		return rep, err
	}
	if !o.NoCheck {
		rep.Compiled, rep.Skipped, err = compileExercises(ctx, dir)
	}
	return rep, err
}

func skipPath(rel string, isDir bool, ign []ignoreRule) bool {
	for _, e := range excluded {
		if rel == e || strings.HasPrefix(rel, e+"/") {
			return true
		}
	}
	for _, r := range ign {
		if r.match(rel, isDir) {
			return true
		}
	}
	return false
}

// ignoreRule is one pattern of the course's top-level .gitignore (the simple forms it uses:
// "/dir/", "dir/", "*.ext", "name").
type ignoreRule struct {
	pat      string
	anchored bool
	dirOnly  bool
}

func readGitignore(root string) []ignoreRule {
	f, err := os.Open(filepath.Join(root, ".gitignore"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var rules []ignoreRule
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "!") {
			continue
		}
		r := ignoreRule{pat: l}
		if strings.HasSuffix(r.pat, "/") {
			r.dirOnly, r.pat = true, strings.TrimSuffix(r.pat, "/")
		}
		if strings.HasPrefix(r.pat, "/") || strings.Contains(r.pat, "/") {
			r.anchored, r.pat = true, strings.TrimPrefix(r.pat, "/")
		}
		rules = append(rules, r)
	}
	return rules
}

func (r ignoreRule) match(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if r.anchored {
		ok, _ := filepath.Match(r.pat, rel)
		return ok
	}
	ok, _ := filepath.Match(r.pat, filepath.Base(rel))
	return ok
}

func isText(b []byte) bool {
	n := min(len(b), 8000)
	return !bytes.Contains(b[:n], []byte{0})
}

// StripSolutions replaces the solution regions of a file's text by TODO stubs and returns the
// new text and the number of regions. name is used in error messages (file:line).
func StripSolutions(name string, data []byte) ([]byte, int, error) {
	lines := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	regions := 0
	inRegion := false
	var begin int
	var indent, prefix, suffix string
	var stub []string
	for i, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		trimmed := strings.TrimSpace(body)
		isBegin := markerLine(trimmed, lab.SolutionMarker)
		isEnd := markerLine(trimmed, lab.EndSolutionMarker)
		switch {
		case isBegin:
			if inRegion {
				return nil, 0, fmt.Errorf("%s:%d: %s inside the region opened at line %d", name, i+1, lab.SolutionMarker, begin)
			}
			inRegion, begin, stub = true, i+1, nil
			indent = body[:len(body)-len(strings.TrimLeft(body, " \t"))]
			k := strings.Index(trimmed, lab.SolutionMarker)
			prefix = strings.TrimSpace(trimmed[:k])
			suffix = strings.TrimSpace(trimmed[k+len(lab.SolutionMarker):])
		case isEnd:
			if !inRegion {
				return nil, 0, fmt.Errorf("%s:%d: %s without %s", name, i+1, lab.EndSolutionMarker, lab.SolutionMarker)
			}
			nl := "\n"
			if strings.HasSuffix(l, "\r\n") {
				nl = "\r\n"
			}
			todo := strings.TrimSpace(prefix + " TODO: your code here (see the instructions above). " + suffix)
			out.WriteString(indent + todo + nl)
			for _, s := range stub {
				out.WriteString(s + nl)
			}
			inRegion = false
			regions++
		case inRegion:
			if s, ok := stubLine(body, prefix); ok {
				stub = append(stub, s)
			}
		default:
			out.WriteString(l)
		}
	}
	if inRegion {
		return nil, 0, fmt.Errorf("%s:%d: %s is never closed by %s", name, begin, lab.SolutionMarker, lab.EndSolutionMarker)
	}
	return []byte(out.String()), regions, nil
}

// markerLine says whether a trimmed line is a marker: a comment that holds only the marker, such
// as "// BEGIN SOLUTION" or "<!-- END SOLUTION -->" (not code or prose that mentions it).
func markerLine(trimmed, marker string) bool {
	k := strings.Index(trimmed, marker)
	if k < 0 {
		return false
	}
	pre := strings.TrimSpace(trimmed[:k])
	post := strings.TrimSpace(trimmed[k+len(marker):])
	switch pre {
	case "//", "///", "#", "--", ";", "%", "<!--", "/*":
	default:
		return false
	}
	return post == "" || post == "-->" || post == "*/"
}

// HasSolution reports whether a file's text has a solution region marker line.
func HasSolution(data []byte) bool {
	if !bytes.Contains(data, []byte(lab.SolutionMarker)) {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		if t := strings.TrimSpace(l); markerLine(t, lab.SolutionMarker) {
			return true
		}
	}
	return false
}

// stubLine turns "<indent>// STUB: code" into "<indent>code".
func stubLine(body, prefix string) (string, bool) {
	t := strings.TrimLeft(body, " \t")
	ind := body[:len(body)-len(t)]
	if prefix == "" || !strings.HasPrefix(t, prefix) {
		return "", false
	}
	rest := strings.TrimSpace(strings.TrimPrefix(t, prefix))
	if !strings.HasPrefix(rest, "STUB:") {
		return "", false
	}
	code := strings.TrimPrefix(rest, "STUB:")
	code = strings.TrimPrefix(code, " ")
	return ind + code, true
}

// compileExercises builds the exported exercise files for the emulator, when it is installed, to
// prove that the stubs compile.
func compileExercises(ctx context.Context, dir string) ([]string, string, error) {
	if err := toolchain.CheckEmu(); err != nil {
		return nil, "the emulator's compiler is not installed here: " + firstLine(err.Error()), nil
	}
	labs, err := lab.LabDirs(dir)
	if err != nil {
		return nil, "", err
	}
	var done []string
	for _, d := range labs {
		m, err := lab.LoadManifest(filepath.Join(dir, "labs", d))
		if err != nil {
			return done, "", err
		}
		g, _ := GradingOf(m)
		if g == nil {
			continue
		}
		seen := map[string]bool{}
		for _, ex := range g.Exercises {
			if seen[ex.V.File] || ex.V.EmuSkip != "" {
				continue
			}
			seen[ex.V.File] = true
			src := filepath.Join(m.Dir, ex.V.File)
			_, err := toolchain.Build(ctx, "c++", toolchain.Request{Source: src,
				IncludeDirs: []string{filepath.Join(dir, "labs", "common"), m.Dir}, Flags: ex.V.Flags})
			if err != nil {
				return done, "", fmt.Errorf("export: the student edition of %s does not compile: %w\n(give the solution region STUB lines that make it compile)",
					filepath.Join("labs", d, ex.V.File), err)
			}
			done = append(done, filepath.ToSlash(filepath.Join("labs", d, ex.V.File)))
		}
	}
	return done, "", nil
}

// checkSolutionRegions refuses to export a course whose graded exercise files have no solution
// region: the student edition would ship the solution.
func checkSolutionRegions(root string) error {
	labs, err := lab.LabDirs(root)
	if err != nil {
		return err
	}
	for _, d := range labs {
		m, err := lab.LoadManifest(filepath.Join(root, "labs", d))
		if err != nil {
			return err
		}
		g, _ := GradingOf(m)
		if g == nil {
			continue
		}
		for _, ex := range g.Exercises {
			b, err := os.ReadFile(filepath.Join(m.Dir, ex.V.File))
			if err != nil {
				return err
			}
			if !HasSolution(b) {
				return fmt.Errorf("export: exercise %s of lab %s: %s has no %q region, so the student edition would ship the solution",
					ex.V.Name, d, ex.V.File, lab.SolutionMarker)
			}
		}
	}
	return nil
}

// WriteText prints an export report.
func (r *ExportReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "exported the student edition to %s: %d files, %d solution region(s) replaced by stubs in %d file(s)\n",
		r.Dir, r.Files, r.Regions, len(r.Stubbed))
	for _, f := range r.Stubbed {
		fmt.Fprintf(w, "  stubbed %s\n", f)
	}
	switch {
	case len(r.Compiled) > 0:
		fmt.Fprintf(w, "the stubs compile (CPU emulator): %s\n", strings.Join(r.Compiled, ", "))
	case r.Skipped != "":
		fmt.Fprintf(w, "the stubs were not compiled: %s\n", r.Skipped)
	}
	fmt.Fprintf(w, "grading workflow: %s (runs `labrun grade all` on an ordinary GitHub runner)\n",
		filepath.Join(r.Dir, filepath.FromSlash(WorkflowPath)))
}
