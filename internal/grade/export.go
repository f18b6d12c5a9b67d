package grade

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kernel-labs/kernellabs/internal/gpu/emu/emucc"
	"github.com/kernel-labs/kernellabs/internal/lab"
	"github.com/kernel-labs/kernellabs/internal/solution"
	"github.com/kernel-labs/kernellabs/internal/toolchain"
)

// The student edition: `labrun export DIR` writes every file that git tracks in the course,
// with every solution region (package solution) replaced by its TODO stub, into DIR. Instructor
// material stays behind: the grader's cheat fixtures (they hold near-solutions), the site's and
// the instructor's workflows, and the instructor's README. Generated in their place: the
// student's README (README.md, README.zh.md), a grading workflow that gives feedback only, and
// the marker file (solution.EditionFile) that tells the course's tests that the exercises are
// stubs. Untracked files, reports and caches are never carried, and the export fails when any
// file it wrote still holds the code of a solution region.

// WorkflowPath is where the student repository's grading workflow goes.
const WorkflowPath = ".github/workflows/grade.yml"

//go:embed workflow.yml
var workflowYAML string

//go:embed student/README.md
var studentReadmeEN string

//go:embed student/README.zh.md
var studentReadmeZH string

// ExportReport says what an export did.
type ExportReport struct {
	Dir      string
	Commit   string   // the course's commit (HEAD) the edition comes from
	Modified []string // tracked files that differ from that commit: exported as they are on disk
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

// instructorOnly are tracked paths (relative, slash-separated; a folder covers what is under it)
// that stay in the instructor's tree. The edition's .github holds only the generated workflow.
var instructorOnly = []string{".github", "internal/grade/testdata/cheats", "scripts/grade-of-record.sh", "README.md", "README.zh.md"}

// Export writes the student edition of the course at root into dir.
func Export(ctx context.Context, root, dir string, o ExportOptions) (*ExportReport, error) {
	root, err := realPath(root)
	if err != nil {
		return nil, err
	}
	dir, err = realPath(dir)
	if err != nil {
		return nil, err
	}
	if dir == root || strings.HasPrefix(root, dir+string(filepath.Separator)) {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("export: %s is the course itself (or holds it); choose another folder", dir)}
	}
	if strings.HasPrefix(dir, root+string(filepath.Separator)) {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("export: %s lies inside the course tree %s; choose a folder outside it (e.g. ../kernellabs-student)", dir, root)}
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 && !o.Force {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("export: %s is not empty (use --force to write into it anyway)", dir)}
	}
	if err := checkSolutionRegions(root); err != nil {
		return nil, err
	}
	tracked, err := gitTracked(ctx, root)
	if err != nil {
		return nil, err
	}
	rep := &ExportReport{Dir: dir}
	rep.Commit, rep.Modified, err = gitState(ctx, root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, rel := range tracked {
		if under(rel, instructorOnly) {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree: not part of the course as it stands
		}
		if err != nil {
			return rep, err
		}
		if !info.Mode().IsRegular() {
			return rep, fmt.Errorf("export: %s is tracked but is not a regular file (a link?); the student edition holds plain files only", rel)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return rep, err
		}
		if isText(data) && solution.Has(data) {
			out, n, err := StripSolutions(rel, data)
			if err != nil {
				return rep, err
			}
			if n > 0 {
				data = out
				rep.Stubbed = append(rep.Stubbed, rel)
				rep.Regions += n
			}
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(rel)), data, info.Mode().Perm()); err != nil {
			return rep, err
		}
		rep.Files++
	}
	readmeEN, readmeZH, err := studentReadmes(dir)
	if err != nil {
		return rep, err
	}
	marker := fmt.Sprintf("This is the student edition of Kernel Labs, written by `labrun export` from commit %s.\n"+
		"Its exercise files hold TODO stubs; the course's tests of the reference solutions skip here.\n", rep.Commit)
	for rel, text := range map[string]string{WorkflowPath: workflowYAML, "README.md": readmeEN, "README.zh.md": readmeZH,
		solution.EditionFile: marker} {
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
			return rep, err
		}
	}
	// Nothing of a solution may remain: no marker, and no solution's code in any file (a shipped
	// kernel or note that holds an exercise's answer).
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && isText(b) && solution.Has(b) {
			return fmt.Errorf("export: %s still holds a %q marker", p, lab.SolutionMarker)
		}
		return err
	})
	if err != nil {
		return rep, err
	}
	if err := solution.Check(root, dir); err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	if !o.NoCheck {
		rep.Compiled, rep.Skipped, err = compileExercises(ctx, dir)
	}
	return rep, err
}

// realPath is p made absolute with its links resolved (for a path that does not exist yet, those
// of its nearest existing parent), so that a destination inside the course is seen through links.
func realPath(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest), nil
		}
		if filepath.Dir(cur) == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

func under(rel string, paths []string) bool {
	for _, e := range paths {
		if rel == e || strings.HasPrefix(rel, e+"/") {
			return true
		}
	}
	return false
}

func writeFile(p string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, perm)
}

// gitTracked lists the files git tracks in the course at root (slash-separated, relative).
func gitTracked(ctx context.Context, root string) ([]string, error) {
	out, err := git(ctx, root, "ls-files", "-z", "--cached", "--", ".")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, &lab.UsageError{Msg: fmt.Sprintf("export: git tracks no file in %s; commit the course first", root)}
	}
	return files, nil
}

// gitState is the commit the course stands at and its tracked files that differ from it.
func gitState(ctx context.Context, root string) (commit string, modified []string, err error) {
	commit, err = git(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		return "", nil, err
	}
	st, err := git(ctx, root, "status", "--porcelain=v1", "-z", "--untracked-files=no", "--", ".")
	if err != nil {
		return "", nil, err
	}
	for _, e := range strings.Split(st, "\x00") {
		if len(e) > 3 {
			modified = append(modified, e[3:])
		}
	}
	return strings.TrimSpace(commit), modified, nil
}

func git(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", &lab.EnvError{Err: fmt.Errorf("export: git is not installed; the export writes what git tracks (install git)")}
		}
		return "", &lab.UsageError{Msg: fmt.Sprintf("export: %s is not a git checkout of the course (git %s: %s); the export writes only what git tracks, so export from a clone",
			root, args[0], strings.TrimSpace(stderr.String()))}
	}
	return string(out), nil
}

func isText(b []byte) bool { return solution.IsText(b) }

// StripSolutions replaces the solution regions of a file's text by TODO stubs and returns the
// new text and the number of regions (solution.Strip). name is used in error messages.
func StripSolutions(name string, data []byte) ([]byte, int, error) {
	return solution.Strip(name, data)
}

// HasSolution reports whether a file's text has a BEGIN SOLUTION marker line.
func HasSolution(data []byte) bool { return solution.HasBegin(data) }

// compileExercises builds the exported exercise files for the emulator, when it is installed, to
// prove that the stubs compile.
func compileExercises(ctx context.Context, dir string) ([]string, string, error) {
	if err := emucc.Check(); err != nil {
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
			_, err := emucc.Build(ctx, toolchain.Request{Source: src,
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
	fmt.Fprintf(w, "from commit %s of the course: grade it with scripts/grade-of-record.sh %s STUDENT (tag it to keep it)\n",
		r.Commit, r.Commit)
	if len(r.Modified) > 0 {
		fmt.Fprintf(w, "note: %d tracked file(s) differ from that commit and were exported as they are: %s (commit them, so that the grade of record uses what the students got)\n",
			len(r.Modified), strings.Join(r.Modified, ", "))
	}
	fmt.Fprintf(w, "feedback workflow for the students: %s (runs `labrun grade` on an ordinary GitHub runner; not a grade)\n",
		filepath.Join(r.Dir, filepath.FromSlash(WorkflowPath)))
}
