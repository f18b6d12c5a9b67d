package toolchain

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Workspace is one build in progress, in a scratch folder of its own, for any backend's compiler:
// the steps every build shares. Two processes (or goroutines) may build the same file at once,
// each in its own scratch folder; objects are named by what they were built from, so either
// result is right. A submission (Request.Submission) is copied there alone, its compilers run
// sandboxed (Run), and what they read is audited (Audit).
type Workspace struct {
	Dir    string // the scratch folder
	Source string // the file to compile: the request's, or a submission's copy in Dir
	Orig   string // the file as the request names it, for messages

	cacheDir string
	sub      *Submission
	pol      compilePolicy
	deps     []string
	hashed   []depFile // the files read, with their hashes (DepHash)
}

// NewWorkspace makes a scratch folder in cacheDir for building src. For a submission it refuses
// includes by path (ScanIncludes), copies the file alone into the folder and sets the sandbox's
// policy: readable are the system, includeDirs and extraRead (the compiler's own installation).
// Close removes the folder.
func NewWorkspace(cacheDir, src string, sub *Submission, includeDirs, extraRead []string) (*Workspace, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	w := &Workspace{Source: src, Orig: src, cacheDir: cacheDir, sub: sub}
	if sub != nil {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("submitted file: %w", err)
		}
		if ds := ScanIncludes(src, data); len(ds) > 0 {
			return nil, &CompileError{Source: src, Command: "include scan", Diagnostics: ds, Output: diagText(ds), Stage: "include refused"}
		}
	}
	dir, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return nil, err
	}
	w.Dir = dir
	if sub != nil {
		if w.Source, _, err = hermeticCopy(src, dir); err != nil {
			w.Close()
			return nil, err
		}
		w.pol = submissionPolicy(dir, includeDirs, sub)
		w.pol.Read = append(w.pol.Read, extraRead...)
	}
	return w, nil
}

// Close removes the scratch folder.
func (w *Workspace) Close() { os.RemoveAll(w.Dir) }

// Run runs one compiler command and returns its stdout and stderr: a submission's under its
// sandbox policy (runCompiler), anything else as a plain child process.
func (w *Workspace) Run(ctx context.Context, name string, args []string) (stdout, stderr string, err error) {
	if w.sub != nil {
		return runCompiler(ctx, w.pol, name, args)
	}
	var so, se bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	return so.String(), se.String(), err
}

// Relocate rewrites the scratch folder's path in compiler output to the source's own folder, so
// that messages name the student's file.
func (w *Workspace) Relocate(out string) string { return relocate(out, w.Dir, filepath.Dir(w.Orig)) }

// Fail is the *CompileError of a failed command, its messages located in the source's folder.
func (w *Workspace) Fail(name string, args []string, out string) *CompileError {
	out = w.Relocate(out)
	return &CompileError{Source: w.Orig, Command: name + " " + strings.Join(args, " "), Diagnostics: ParseDiagnostics(out), Output: out}
}

// ReadDeps adds the files a command listed in its dependency file (-MD -MF) to those the build
// read.
func (w *Workspace) ReadDeps(depFile string) error {
	d, err := readDeps(depFile)
	if err != nil {
		return err
	}
	w.deps = append(w.deps, d...)
	return nil
}

// Audit checks, for a submission, that every file the build read lies in the scratch folder or
// one of allowed, or outside the protected trees (Submission.Protect and the build cache).
func (w *Workspace) Audit(allowed []string) error {
	if w.sub == nil {
		return nil
	}
	protect := append(append([]string{}, w.sub.Protect...), w.cacheDir, CacheDir())
	msgs := AuditDeps(w.deps, w.Dir, append([]string{w.Dir}, allowed...), protect)
	if len(msgs) == 0 {
		return nil
	}
	return &CompileError{Source: w.Orig, Command: "dependency audit", Stage: "it read the course tree",
		Diagnostics: []Diagnostic{{File: w.Orig, Line: 1, Kind: "error", Message: msgs[0]}}, Output: strings.Join(msgs, "\n")}
}

// DepHash hashes the files the build read (the scratch folder's own files left out), for the
// object's name; Commit records them.
func (w *Workspace) DepHash() (string, error) {
	hashed, h, err := hashDeps(w.deps, w.Dir, []string{w.Dir})
	w.hashed = hashed
	return h, err
}

// Commit puts the built object tmp at out, with the compiler's report beside it (out+".log"),
// and writes the cache's index, which lists every file the build read with its hash.
func (w *Workspace) Commit(index, tmp, out, log string) error {
	if w.hashed == nil {
		if _, err := w.DepHash(); err != nil {
			return err
		}
	}
	if err := os.WriteFile(out+".log", []byte(log), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	return writeIndex(index, out, w.hashed)
}

// Cached returns the object an index describes, with its report, while no file it was built
// from has changed (depcache.go).
func Cached(index string) (Artifact, bool) {
	obj, ok := cachedObject(index)
	if !ok {
		return Artifact{}, false
	}
	log, _ := os.ReadFile(obj + ".log")
	return Artifact{Path: obj, Log: string(log), Cached: true}, true
}

func diagText(ds []Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}
