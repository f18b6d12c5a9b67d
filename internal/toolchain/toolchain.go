// Package toolchain compiles kernel files: nvcc for CUDA (a cubin for the detected device), the
// host C++ compiler for the CPU emulator (emu*.go). Builds are cached by a hash of the source,
// the flags and the compiler's version, checked against every file the compiler read
// (depcache.go); files submitted for grading are built hermetically (hermetic.go). Compile errors
// come back as file:line with the compiler's own message.
package toolchain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Artifact is a compiled kernel image.
type Artifact struct {
	Path   string // cubin, or the emulator's shared object
	Log    string // the compiler's report (ptxas -v: registers, shared memory, spills)
	Cached bool
}

// Diagnostic is one compiler message located in a source file.
type Diagnostic struct {
	File    string
	Line    int
	Kind    string // "error", "warning"
	Message string
}

func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", d.File, d.Line, d.Kind, d.Message)
}

// CompileError is a failed compile: the located errors first, then the compiler's full output.
type CompileError struct {
	Source      string
	Command     string
	Diagnostics []Diagnostic
	Output      string
	Stage       string // what failed when it is not the compile itself ("the device-code check")
}

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "compiling %s failed", e.Source)
	if e.Stage != "" {
		fmt.Fprintf(&b, " (%s)", e.Stage)
	}
	n := 0
	for _, d := range e.Diagnostics {
		if d.Kind != "error" {
			continue
		}
		if n == 0 {
			b.WriteString(":")
		}
		b.WriteString("\n  " + d.String())
		n++
	}
	if n == 0 {
		out := strings.TrimSpace(e.Output)
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		b.WriteString(":\n" + out)
	}
	return b.String()
}

// First returns the first located error, for one-line reports.
func (e *CompileError) First() (Diagnostic, bool) {
	for _, d := range e.Diagnostics {
		if d.Kind == "error" {
			return d, true
		}
	}
	return Diagnostic{}, false
}

// nvcc writes "file.cu(12): error: ..."; gcc and clang write "file.cu:12:5: error: ...".
var (
	nvccDiagRE = regexp.MustCompile(`(?m)^(.+?)\((\d+)\): (error|warning)[^:]*: (.*)$`)
	gccDiagRE  = regexp.MustCompile(`(?m)^(.+?):(\d+):(?:\d+:)? (error|fatal error|warning): (.*)$`)
)

// ParseDiagnostics finds file:line messages in compiler output (nvcc and gcc styles).
func ParseDiagnostics(output string) []Diagnostic {
	var ds []Diagnostic
	for _, re := range []*regexp.Regexp{nvccDiagRE, gccDiagRE} {
		for _, m := range re.FindAllStringSubmatch(output, -1) {
			line, _ := strconv.Atoi(m[2])
			kind := m[3]
			if kind == "fatal error" {
				kind = "error"
			}
			ds = append(ds, Diagnostic{File: m[1], Line: line, Kind: kind, Message: strings.TrimSpace(m[4])})
		}
	}
	return ds
}

// CacheDir is where compiled kernels are kept: $LABRUN_CACHE, else the user cache folder.
func CacheDir() string {
	if d := os.Getenv("LABRUN_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kernellabs")
	}
	return filepath.Join(os.TempDir(), "kernellabs-cache")
}

var (
	versionMu sync.Mutex
	versions  = map[string]string{}
)

// CompilerVersion runs `compiler --version` once per process and returns its output's last
// non-empty line ("Cuda compilation tools, release 13.0, V13.0.48" for nvcc).
func CompilerVersion(compiler string) (string, error) {
	versionMu.Lock()
	defer versionMu.Unlock()
	if v, ok := versions[compiler]; ok {
		return v, nil
	}
	out, err := exec.Command(compiler, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", compiler, err)
	}
	v := ""
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			v = l
			if compiler != "nvcc" && !strings.HasSuffix(compiler, "/nvcc") {
				break // gcc's first line names the version
			}
		}
	}
	versions[compiler] = v
	return v, nil
}

// FindNVCC locates nvcc: $NVCC, then PATH, then /usr/local/cuda/bin.
func FindNVCC() (string, error) {
	if p := os.Getenv("NVCC"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("nvcc"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/local/cuda/bin/nvcc", "/opt/cuda/bin/nvcc"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("nvcc not found: install the CUDA toolkit (or put nvcc on PATH, or set NVCC=/path/to/nvcc)")
}

// Key hashes everything a build depends on.
func Key(parts []string, files []string) (string, error) {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "file %s;", filepath.Base(f))
		_, err = io.Copy(h, fh)
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// Request is one kernel file to build for CUDA.
type Request struct {
	Source      string   // the .cu file
	IncludeDirs []string // labs/common and the lab's own folder
	Arch        string   // "sm_90", or "sm_90a" for Hopper-only instructions
	Flags       []string // extra nvcc flags from the manifest
	// Submission, when set, builds Source as a file submitted for grading: hermetically, alone in
	// an empty folder, with only IncludeDirs (labs/common) and the emulator's headers to include
	// (hermetic.go).
	Submission *Submission
}

// NVCCArgs is the nvcc command line for r (without the program name).
func NVCCArgs(r Request, out string) []string {
	arch := strings.TrimPrefix(r.Arch, "sm_")
	args := []string{"-cubin", "-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v",
		fmt.Sprintf("-gencode=arch=compute_%s,code=sm_%s", arch, arch)}
	for _, d := range r.IncludeDirs {
		args = append(args, "-I", d)
	}
	args = append(args, r.Flags...)
	return append(args, "-o", out, r.Source)
}

// BuildCUDA compiles r to a cubin, reusing a cached one while nothing it read changed (the
// compiler's dependency list, depcache.go). A submission (r.Submission) is built hermetically.
func BuildCUDA(ctx context.Context, r Request) (Artifact, error) {
	nvcc, err := FindNVCC()
	if err != nil {
		return Artifact{}, err
	}
	ver, err := CompilerVersion(nvcc)
	if err != nil {
		return Artifact{}, err
	}
	parts := append([]string{"cuda-2", ver, r.Arch, strings.Join(r.IncludeDirs, "\x00")}, r.Flags...)
	if r.Submission != nil {
		parts = append(parts, "submission", filepath.Base(r.Source))
	} else {
		parts = append(parts, r.Source)
	}
	key, err := Key(parts, []string{r.Source})
	if err != nil {
		return Artifact{}, err
	}
	base := strings.TrimSuffix(filepath.Base(r.Source), filepath.Ext(r.Source))
	dir := filepath.Join(CacheDir(), "cuda")
	index := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.deps.json", base, r.Arch, key))
	if obj, ok := cachedObject(index); ok {
		log, _ := os.ReadFile(obj + ".log")
		return Artifact{Path: obj, Log: string(log), Cached: true}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Artifact{}, err
	}
	// Two processes (or goroutines) may build the same file at once: each in its own scratch
	// folder; objects are named by what they were built from, so either result is right.
	scratch, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return Artifact{}, err
	}
	defer os.RemoveAll(scratch)
	req, orig := r, r.Source
	if r.Submission != nil {
		data, err := os.ReadFile(orig)
		if err != nil {
			return Artifact{}, fmt.Errorf("submitted file: %w", err)
		}
		if ds := ScanIncludes(orig, data); len(ds) > 0 {
			return Artifact{}, &CompileError{Source: orig, Command: "include scan", Diagnostics: ds, Output: diagText(ds), Stage: "include refused"}
		}
		if req.Source, _, err = hermeticCopy(orig, scratch); err != nil {
			return Artifact{}, err
		}
	}
	tmp := filepath.Join(scratch, base+".cubin")
	depFile := filepath.Join(scratch, "build.d")
	args := append(NVCCArgs(req, tmp), "-MD", "-MF", depFile)
	var stderr bytes.Buffer
	if r.Submission != nil {
		// nvcc's own tools and headers live in the CUDA toolkit's folder: readable too.
		pol := submissionPolicy(scratch, r.IncludeDirs, r.Submission)
		pol.Read = append(pol.Read, filepath.Dir(filepath.Dir(nvcc)))
		so, se, rerr := runCompiler(ctx, pol, nvcc, args)
		stderr.WriteString(so + se)
		err = rerr
	} else {
		cmd := exec.CommandContext(ctx, nvcc, args...)
		cmd.Stdout = &stderr
		cmd.Stderr = &stderr
		err = cmd.Run()
	}
	if err != nil {
		out := relocate(stderr.String(), scratch, filepath.Dir(orig))
		return Artifact{}, &CompileError{Source: orig, Command: nvcc + " " + strings.Join(args, " "),
			Diagnostics: ParseDiagnostics(out), Output: out}
	}
	log := relocate(stderr.String(), scratch, filepath.Dir(orig))
	deps, err := readDeps(depFile)
	if err != nil {
		return Artifact{}, err
	}
	if r.Submission != nil {
		if msgs := AuditDeps(deps, scratch, append([]string{scratch}, r.IncludeDirs...), append(append([]string{}, r.Submission.Protect...), CacheDir())); len(msgs) > 0 {
			return Artifact{}, &CompileError{Source: orig, Command: "dependency audit", Stage: "it read the course tree",
				Diagnostics: []Diagnostic{{File: orig, Line: 1, Kind: "error", Message: msgs[0]}}, Output: strings.Join(msgs, "\n")}
		}
	}
	hashed, depHash, err := hashDeps(deps, scratch, []string{scratch})
	if err != nil {
		return Artifact{}, err
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-%s-%s-%s.cubin", base, r.Arch, key, depHash))
	if err := os.WriteFile(out+".log", []byte(log), 0o644); err != nil {
		return Artifact{}, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return Artifact{}, err
	}
	if err := writeIndex(index, out, hashed); err != nil {
		return Artifact{}, err
	}
	return Artifact{Path: out, Log: log}, nil
}
